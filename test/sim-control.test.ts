/**
 * The simulator's control surface and transport behaviour: rate limits, 503 while initializing,
 * failure injection, stats, determinism, scenarios, and /status speed at 20,000 services.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { errorCode } from '../src/errors.js';
import {
  createSimulator,
  type Scenario,
  type Simulator,
  type SimulatorOptions,
} from '../src/sim/index.js';

const started: Simulator[] = [];

async function start(o: SimulatorOptions): Promise<{ sim: Simulator; api: string }> {
  const sim = createSimulator(o);
  started.push(sim);
  const base = await sim.listen();
  return { sim, api: `${base}/api/v1` };
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

describe('rate limits', () => {
  it('counts per address and per key in fixed windows, with headers on every response and 429 + Retry-After', async () => {
    let clock = Date.UTC(2025, 0, 1, 0, 0, 15);
    const { api } = await start({
      services: 20,
      rateLimit: { public: 3, premium: 5 },
      keys: { k: { scopes: ['sla:read'] } },
      now: () => clock,
    });
    const reset = String(Date.UTC(2025, 0, 1, 0, 1, 0) / 1000);
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${api}/status`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('3');
      expect(res.headers.get('x-ratelimit-reset')).toBe(reset);
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await fetch(`${api}/status`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('45');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(await limited.json()).toMatchObject({ success: false });
    // errors count and carry headers too
    const notFound = await fetch(`${api}/nope`);
    expect(notFound.status).toBe(429);

    const keyed = await fetch(`${api}/sla`, { headers: { 'X-API-Key': 'k' } });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('x-ratelimit-limit')).toBe('5');
    expect(keyed.headers.get('x-ratelimit-remaining')).toBe('4');
    // a wrong key is a public request
    const wrong = await fetch(`${api}/sla`, { headers: { 'X-API-Key': 'nope' } });
    expect(wrong.status).toBe(429);

    clock += 45_000;
    const next = await fetch(`${api}/status`);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it('defaults to 30 public / 120 premium per minute', async () => {
    const { api } = await start({ services: 20, keys: { k: { scopes: [] } } });
    expect((await fetch(`${api}/services`)).headers.get('x-ratelimit-limit')).toBe('30');
    const premium = await fetch(`${api}/sla`, { headers: { 'X-API-Key': 'k' } });
    expect(premium.status).toBe(403);
    expect(premium.headers.get('x-ratelimit-limit')).toBe('120');
  });
});

describe('initializing', () => {
  it('answers 503 for initializingMs after listen, and on demand', async () => {
    let clock = 1_000_000;
    const { sim, api } = await start({ services: 20, initializingMs: 5000, now: () => clock });
    const early = await fetch(`${api}/status`);
    expect(early.status).toBe(503);
    expect(await early.json()).toMatchObject({ success: false });
    expect(early.headers.get('x-ratelimit-limit')).toBe('30');
    clock += 5000;
    expect((await fetch(`${api}/status`)).status).toBe(200);
    sim.setInitializing(true);
    expect((await fetch(`${api}/services`)).status).toBe(503);
    sim.setInitializing(false);
    expect((await fetch(`${api}/services`)).status).toBe(200);
  });
});

describe('failNext', () => {
  it('injects 500, 503, 429 with Retry-After and garbage bodies, then recovers', async () => {
    const { sim, api } = await start({ services: 20, rateLimit: false });
    sim.failNext({ path: '/api/v1/status', status: 500, count: 2 });
    sim.failNext({ path: /^\/api\/v1\/incidents/, status: 429, retryAfter: 7 });
    sim.failNext({ path: '/api/v1/services', status: 200, body: '<html>not json' });
    sim.failNext({ path: '/api/v1/services/stripe', status: 503 });

    expect((await fetch(`${api}/status`)).status).toBe(500);
    const second = await fetch(`${api}/status`);
    expect(second.status).toBe(500);
    expect(await second.json()).toMatchObject({ success: false });
    expect((await fetch(`${api}/status`)).status).toBe(200);

    const limited = await fetch(`${api}/incidents/stripe`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await fetch(`${api}/incidents/stripe`)).status).toBe(200);

    const garbage = await fetch(`${api}/services`);
    expect(garbage.status).toBe(200);
    expect(await garbage.text()).toBe('<html>not json');
    expect((await fetch(`${api}/services/stripe`)).status).toBe(503);
    expect((await fetch(`${api}/services`)).status).toBe(200);
  });

  it('can delay an answer (client timeouts)', async () => {
    const { sim, api } = await start({ services: 20, rateLimit: false });
    sim.failNext({ path: '/api/v1/status', status: 200, delayMs: 2000 });
    await expect(fetch(`${api}/status`, { signal: AbortSignal.timeout(100) })).rejects.toThrow();
  });
});

describe('stats', () => {
  it('counts every request by status and path, and resets', async () => {
    const { sim, api } = await start({ services: 20, rateLimit: false });
    await fetch(`${api}/status`);
    await fetch(`${api}/status?include=details`);
    await fetch(`${api}/status/nope`);
    await fetch(`${api}/sla`);
    await fetch(`${api}/status`, { method: 'POST', body: 'x' });
    expect(sim.stats).toEqual({
      requests: 5,
      byStatus: { 200: 2, 401: 1, 404: 1, 405: 1 },
      byPath: { '/api/v1/status': 3, '/api/v1/status/nope': 1, '/api/v1/sla': 1 },
    });
    sim.resetStats();
    expect(sim.stats).toEqual({ requests: 0, byStatus: {}, byPath: {} });
  });
});

describe('determinism', () => {
  it('serves byte-identical bodies for the same seed and clock, different ones for another seed', async () => {
    const now = (): number => Date.UTC(2025, 5, 1);
    const a = await start({ services: 500, seed: 7, rateLimit: false, now });
    const b = await start({ services: 500, seed: 7, rateLimit: false, now });
    const c = await start({ services: 500, seed: 8, rateLimit: false, now });
    for (const path of ['/services', '/status', '/incidents']) {
      const [ta, tb, tc] = await Promise.all(
        [a, b, c].map(async (s) => (await fetch(`${s.api}${path}`)).text()),
      );
      expect(ta).toBe(tb);
      expect(tc).not.toBe(ta);
    }
    expect(a.sim.openIncident('stripe', { title: 'x' })).toBe(
      b.sim.openIncident('stripe', { title: 'x' }),
    );
  });
});

describe('scenarios', () => {
  it('applyStep changes what the API answers', async () => {
    const { sim, api } = await start({ services: 20, rateLimit: false });
    sim.applyStep({ at: '0s', action: 'status.set', feedId: 'github', status: 'major_outage' });
    const row = (await (await fetch(`${api}/status/github`)).json()) as {
      data: { displayStatus: string };
    };
    expect(row.data.displayStatus).toBe('major_outage');
    sim.applyStep({ at: '0s', action: 'variant.set', variant: 'B' });
    const b = (await (await fetch(`${api}/status/github`)).json()) as {
      data: Record<string, unknown>;
    };
    expect(b.data).toMatchObject({ feedId: 'github', indicator: 'critical' });
    expect(() => {
      sim.applyStep({ at: '0s', action: 'status.set', feedId: 'nope', status: 'degraded' });
    }).toThrow(/unknown feedId: nope/);
  });

  it('plays steps at their offsets and resolves done', async () => {
    const { sim, api } = await start({ services: 20, rateLimit: false });
    const scenario: Scenario = {
      steps: [
        {
          at: '40ms',
          action: 'incident.update',
          feedId: 'stripe',
          incidentId: 'sc-1',
          status: 'monitoring',
          body: 'Fix deployed',
        },
        {
          at: '0ms',
          action: 'incident.open',
          feedId: 'stripe',
          incidentId: 'sc-1',
          title: 'Checkout errors',
        },
        { at: '20ms', action: 'evidence.set', feedId: 'okta', evidence: 'stale' },
      ],
    };
    const t0 = performance.now();
    await sim.play(scenario).done;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(35);
    const inc = (await (await fetch(`${api}/incidents/stripe`)).json()) as {
      data: { id: string; status: string; updates: unknown[] }[];
    };
    expect(inc.data).toEqual([expect.objectContaining({ id: 'sc-1', status: 'monitoring' })]);
    expect(inc.data[0]!.updates).toHaveLength(2);
    const okta = (await (await fetch(`${api}/status/okta`)).json()) as {
      data: { verificationState: string };
    };
    expect(okta.data.verificationState).toBe('stale');
  });

  it('rejects unknown feedIds up front, fails done on a failing step, and stops', async () => {
    const { sim } = await start({ services: 20, rateLimit: false });
    expect(() =>
      sim.play({ steps: [{ at: '0s', action: 'score.set', feedId: 'ghost', score: 10 }] }),
    ).toThrow(/steps\[0\]\.feedId: unknown feedId ghost/);

    const failing = sim.play({
      steps: [
        { at: '0ms', action: 'score.set', feedId: 'stripe', score: 10 },
        { at: '5ms', action: 'incident.resolve', feedId: 'stripe', incidentId: 'never-opened' },
      ],
    });
    const err = await failing.done.then(
      () => new Error('expected a rejection'),
      (e: unknown) => e as Error,
    );
    expect(errorCode(err)).toBe('sim_scenario_step');
    expect(err.message).toMatch(
      /steps\[1\] \(incident.resolve\) failed: unknown incident never-opened/,
    );

    const long = sim.play({
      steps: [{ at: '10m', action: 'score.set', feedId: 'stripe', score: 1 }],
    });
    long.stop();
    await expect(long.done).resolves.toBeUndefined();
  });
});

describe('performance', () => {
  it('answers /status for 20,000 services well under a second, cached until a mutation', async () => {
    const { sim, api } = await start({ services: 20_000, rateLimit: false });
    const timed = async (): Promise<{ wallMs: number; cpuMs: number; bytes: number }> => {
      const cpu = process.cpuUsage();
      const t = performance.now();
      const bytes = (await (await fetch(`${api}/status`)).arrayBuffer()).byteLength;
      const used = process.cpuUsage(cpu);
      return { wallMs: performance.now() - t, cpuMs: (used.user + used.system) / 1000, bytes };
    };
    const first = await timed();
    const cached = await timed();
    expect(first.bytes).toBeGreaterThan(20_000 * 300);
    expect(cached.bytes).toBe(first.bytes);
    // CPU time is what the simulator spends (wall time also measures other processes on the host)
    expect(first.cpuMs).toBeLessThan(800);
    expect(cached.cpuMs).toBeLessThan(first.cpuMs);
    expect(first.wallMs).toBeLessThan(3000);

    sim.setStatus('svc-19999', 'degraded');
    const list = (await (await fetch(`${api}/status`)).json()) as {
      data: Record<string, unknown>[];
      meta: { total: number };
    };
    expect(list.meta.total).toBe(20_000);
    const one = (await (await fetch(`${api}/status/svc-19999`)).json()) as {
      data: Record<string, unknown>;
    };
    expect(list.data.find((r) => r['feedId'] === 'svc-19999')).toEqual(one.data);

    // the alternate wording takes the same fast path (new body after the switch, then cached)
    sim.setWording('alternate');
    const alternate = await timed();
    expect(alternate.cpuMs).toBeLessThan(800);
    expect(alternate.bytes).toBeGreaterThan(20_000 * 300);
    expect(alternate.bytes).not.toBe(first.bytes);
    const altList = (await (await fetch(`${api}/status`)).json()) as {
      data: Record<string, unknown>[];
    };
    const altOne = (await (await fetch(`${api}/status/svc-19999`)).json()) as {
      data: Record<string, unknown>;
    };
    expect(altOne.data['displayStatus']).toBe('performance_issues');
    expect(altList.data.find((r) => r['feedId'] === 'svc-19999')).toEqual(altOne.data);
  });
});
