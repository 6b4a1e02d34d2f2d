import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator, type SimulatorOptions } from '../src/sim/index.js';
import { createUpstreamClient, type UpstreamClient } from '../src/upstream/index.js';
import { Pipeline, type CycleReport, type PollKind } from '../src/pipeline/cycle.js';
import { Handoff } from '../src/pipeline/handoff.js';
import { Poller, STAGGER_ORDER, STAGGER_STEP_MS, staggerMs } from '../src/scheduler/poller.js';
import { silentLogger, type Logger } from '../src/log.js';
import { captureLog } from './helpers/log.js';
import { createRedis } from '../src/redis.js';
import { testRedis, REDIS_URL, type TestRedis } from './helpers/redis.js';
import { waitFor } from './helpers/wait.js';
import type { Redis } from 'ioredis';

interface Replica {
  poller: Poller;
  client: UpstreamClient;
  redis: Redis;
  handoff: Handoff;
  cycles: CycleReport[];
}

let sim: Simulator | undefined;
let tr: TestRedis | undefined;
let replicas: Replica[] = [];

afterEach(async () => {
  for (const r of replicas) {
    await r.poller.stop();
    await r.handoff.close();
    await r.client.close();
    r.redis.disconnect();
  }
  replicas = [];
  await sim?.close();
  sim = undefined;
  await tr?.cleanup();
  tr = undefined;
});

async function setup(simOptions: SimulatorOptions): Promise<string> {
  sim = createSimulator({ services: 100, ...simOptions });
  tr = await testRedis('poll');
  return sim.listen(0, '127.0.0.1');
}

async function replica(
  baseUrl: string,
  intervals: Partial<Record<PollKind, number>>,
  o: {
    apiKey?: string;
    budget?: number;
    log?: Logger;
    refreshCategories?: () => Promise<unknown>;
    leaseMs?: number;
  } = {},
): Promise<Replica> {
  const redis = createRedis(REDIS_URL);
  const client = createUpstreamClient({ baseUrl, apiKey: o.apiKey, timeoutMs: 5000 });
  const handoff = new Handoff(redis, tr!.keys);
  const log = o.log ?? silentLogger();
  const pipeline = new Pipeline({
    client,
    redis,
    keys: tr!.keys,
    handoff,
    log,
    rules: { statusConfirmations: 2, scoreDrop: 5 },
  });
  const poller = new Poller({
    connection: redis,
    keys: tr!.keys,
    pipeline,
    intervals,
    budget: o.budget ?? 30,
    apiKey: o.apiKey,
    log,
    keeperIntervalMs: 1000,
    ...(o.refreshCategories === undefined ? {} : { refreshCategories: o.refreshCategories }),
    ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
  });
  const r: Replica = { poller, client, redis, handoff, cycles: [] };
  poller.on('cycle', (c) => r.cycles.push(c));
  replicas.push(r);
  await poller.start();
  return r;
}

describe('poll scheduling on BullMQ (real Redis, simulator)', () => {
  it('three replicas sharing a 30/min budget poll steadily and never get a 429', async () => {
    const url = await setup({ rateLimit: { public: 30, premium: 120, windowMs: 60_000 } });
    // Asking for far more than the budget (2 polls a second) on purpose: the shared limiter must hold.
    for (let i = 0; i < 3; i++) await replica(url, { status: 500, incidents: 500 });
    const started = Date.now();
    await waitFor(() => replicas.flatMap((r) => r.cycles).length >= 8, {
      timeoutMs: 30_000,
      what: '8 poll cycles',
    });
    const elapsed = Date.now() - started;
    const cycles = replicas.flatMap((r) => r.cycles);
    expect(sim!.stats.byStatus[429] ?? 0).toBe(0);
    expect(cycles.every((c) => c.outcome !== 'failed')).toBe(true);
    // The limiter's 10 s windows allow at most 4 jobs each (30/min budget).
    expect(sim!.stats.requests).toBeLessThanOrEqual(4 * (Math.ceil(elapsed / 10_000) + 1));
  });

  it('a lease release refused by Redis (as mid-failover) does not stop that kind for the lease time', async () => {
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { status: 300 }, { budget: 600 });
    await waitFor(() => r.cycles.some((c) => c.kind === 'status'), { what: 'a first cycle' });
    // The next lease release is refused, as a replica that was just demoted refuses writes.
    const original = r.redis.eval.bind(r.redis) as (...args: unknown[]) => Promise<unknown>;
    let refused = 0;
    const patched = async (...args: unknown[]): Promise<unknown> => {
      if (refused === 0 && String(args[0]).includes("'DEL'")) {
        refused += 1;
        throw new Error("READONLY You can't write against a read only replica.");
      }
      return original(...args);
    };
    Object.assign(r.redis, { eval: patched });
    const before = r.cycles.length;
    await waitFor(() => refused === 1 && r.cycles.length >= before + 4, {
      timeoutMs: 15_000,
      what: 'status cycles going on after the refused release',
    });
  });

  it('a cycle slower than its lease renews it: no second cycle of its kind runs beside it', async () => {
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { status: 200 }, { budget: 6000, leaseMs: 600 });
    await waitFor(() => r.cycles.some((c) => c.kind === 'status'), { what: 'a first cycle' });
    // The next status request is answered after 2.5 s (four leases), with a 503.
    const STATUS = '/api/v1/status';
    const before = sim!.stats.byPath[STATUS] ?? 0;
    sim!.failNext({ path: STATUS, status: 503, delayMs: 2500 });
    const slow = await waitFor(
      () => r.cycles.find((c) => c.kind === 'status' && c.error !== null),
      {
        timeoutMs: 10_000,
        what: 'the slow cycle',
      },
    );
    expect(slow.error?.status).toBe(503);
    // Polls every 200 ms found the lease held meanwhile (one more may have started in the
    // instant between the slow cycle's release and this look).
    expect((sim!.stats.byPath[STATUS] ?? 0) - (before + 1)).toBeLessThanOrEqual(1);
  });

  it('a cycle stuck for more than five leases is no longer renewed: its kind is polled again meanwhile', async () => {
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { status: 200 }, { budget: 6000, leaseMs: 300 });
    await waitFor(() => r.cycles.some((c) => c.kind === 'status'), { what: 'a first cycle' });
    const STATUS = '/api/v1/status';
    const before = sim!.stats.byPath[STATUS] ?? 0;
    // Answered after 6 s: the lease is renewed for five leases (1.5 s), then left to expire.
    sim!.failNext({ path: STATUS, status: 503, delayMs: 6000 });
    await waitFor(() => (sim!.stats.byPath[STATUS] ?? 0) >= before + 2, {
      timeoutMs: 5_000,
      what: 'a status poll beside the stuck one',
    });
    expect(r.cycles.some((c) => c.error?.status === 503)).toBe(false);
  });

  it('N replicas still make one poll per interval', async () => {
    const url = await setup({ rateLimit: false });
    const t0 = Date.now();
    const all: Replica[] = [];
    for (let i = 0; i < 3; i++) all.push(await replica(url, { status: 2000 }, { budget: 600 }));
    await waitFor(() => all.reduce((n, r) => n + r.cycles.length, 0) >= 4, {
      timeoutMs: 15_000,
      what: '4 status cycles',
    });
    const elapsed = Date.now() - t0;
    const polls = sim!.stats.byPath['/api/v1/status'] ?? 0;
    expect(polls).toBeGreaterThanOrEqual(4);
    // One schedule shared by three replicas: one poll per 2 s interval, not three.
    expect(polls).toBeLessThanOrEqual(Math.floor(elapsed / 2000) + 1);
    const schedulers = await all[0]!.poller.queue.getJobSchedulers(0, -1);
    expect(schedulers.map((s) => s.key).sort()).toEqual(['poll-catalog', 'poll-status']);
  });

  it('the categories job looks every minute (a category first named by a subscription is fetched within it), and at once at start', async () => {
    const url = await setup({ rateLimit: false });
    let looks = 0;
    const r = await replica(
      url,
      { status: 60_000 },
      {
        budget: 600,
        refreshCategories: () => {
          looks += 1;
          return Promise.resolve(0);
        },
      },
    );
    await waitFor(() => looks >= 1, { timeoutMs: 10_000, what: 'the first look' });
    const schedulers = await r.poller.queue.getJobSchedulers(0, -1);
    expect(schedulers.find((s) => s.key === 'poll-categories')?.every).toBe(60_000);
  });

  it('poll kinds are staggered: incidents first, status a step later, and their polls stay apart', async () => {
    expect(STAGGER_ORDER).toEqual(['incidents', 'status', 'sla', 'scores']);
    expect(STAGGER_ORDER.map((kind) => staggerMs(kind, 60_000))).toEqual([
      0,
      STAGGER_STEP_MS,
      2 * STAGGER_STEP_MS,
      3 * STAGGER_STEP_MS,
    ]);
    // A short interval: the kinds share it fairly.
    expect(staggerMs('status', 1000)).toBe(250);
    expect(staggerMs('catalog', 1000)).toBe(0);
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { status: 1000, incidents: 1000 }, { budget: 600 });
    const count = (kind: string): number => r.cycles.filter((c) => c.kind === kind).length;
    await waitFor(() => count('status') >= 3 && count('incidents') >= 3, {
      timeoutMs: 15_000,
      what: '3 cycles of each kind',
    });
    const schedulers = await r.poller.queue.getJobSchedulers(0, -1);
    const next = (key: string): number => schedulers.find((s) => s.key === key)?.next ?? NaN;
    // Both every 1 s; status's slots lie 250 ms after the incidents slots (give or take the few
    // ms between the two upserts and BullMQ's own reading of the clock).
    const phase = (((next('poll-status') - next('poll-incidents')) % 1000) + 1000) % 1000;
    expect(phase).toBeGreaterThanOrEqual(200);
    expect(phase).toBeLessThan(400);
  });

  it('a start puts status back a step after incidents when their schedules share slots (made before the stagger)', async () => {
    const url = await setup({ rateLimit: false });
    const every = 60_000;
    const intervals = { status: every, incidents: every };
    const first = await replica(url, intervals, { budget: 600 });
    // As an installation from before the stagger left them: both on the same slots.
    const slot = Date.now() + 30_000;
    for (const kind of ['incidents', 'status'] as const) {
      await first.poller.queue.removeJobScheduler(`poll-${kind}`);
      await first.poller.queue.upsertJobScheduler(
        `poll-${kind}`,
        { every, startDate: slot },
        { name: kind, data: { kind } },
      );
    }
    const phaseOf = async (): Promise<number> => {
      const schedulers = await first.poller.queue.getJobSchedulers(0, -1);
      const next = (key: string): number => schedulers.find((s) => s.key === key)?.next ?? NaN;
      return (((next('poll-status') - next('poll-incidents')) % every) + every) % every;
    };
    expect(await phaseOf()).toBe(0);

    const upgraded = captureLog('info');
    await replica(url, intervals, { budget: 600, log: upgraded.log });
    expect(await phaseOf()).toBe(staggerMs('status', every));
    const moved = upgraded.lines.filter((l) => l.event === 'schedule:realigned');
    expect(moved.map((l) => [l.kind, l.phaseMs, l.wantedMs])).toEqual([
      ['status', 0, STAGGER_STEP_MS],
    ]);

    // Once in phase, the next start moves nothing.
    const again = captureLog('info');
    await replica(url, intervals, { budget: 600, log: again.log });
    expect(again.lines.filter((l) => l.event === 'schedule:realigned')).toEqual([]);
    expect(await phaseOf()).toBe(staggerMs('status', every));
  });

  it('a 429 with Retry-After pauses every replica for that long, and the cycle is not lost', async () => {
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { incidents: 1000 }, { budget: 600 });
    await waitFor(() => r.cycles.some((c) => c.kind === 'incidents' && c.outcome === 'ok'), {
      what: 'a baseline cycle',
    });
    sim!.openIncident('stripe', { title: 'Checkout errors' });
    sim!.failNext({ path: '/api/v1/incidents', status: 429, retryAfter: 2, count: 1 });
    const limitedAt = await waitFor(
      () => ((sim!.stats.byStatus[429] ?? 0) > 0 ? Date.now() : undefined),
      { what: 'the 429' },
    );
    const opened = await waitFor(
      () =>
        r.cycles.find((c) =>
          c.transitions.some((t) => t.kind === 'incident.opened' && t.feedId === 'stripe'),
        ),
      { timeoutMs: 10_000, what: 'incident.opened after the pause' },
    );
    expect(opened.outcome).toBe('ok');
    expect(Date.now() - limitedAt).toBeGreaterThanOrEqual(1900);
    expect(sim!.stats.byStatus[429]).toBe(1);
    const handed = await r.handoff.handedOff(['waiting', 'completed', 'delayed', 'active']);
    expect(handed.map((t) => `${t.kind} ${t.feedId}`)).toEqual(['incident.opened stripe']);
  });

  it('a 403 on a premium poll disables it with upstream.degraded instead of retrying forever', async () => {
    const url = await setup({ rateLimit: false, keys: { 'no-scopes-key-123': { scopes: [] } } });
    const r = await replica(
      url,
      { sla: 500, status: 60_000 },
      { apiKey: 'no-scopes-key-123', budget: 600 },
    );
    const disabled = await new Promise<[string, string]>((resolve) =>
      r.poller.once('poll:disabled', (kind, code) => {
        resolve([kind, code]);
      }),
    );
    expect(disabled).toEqual(['sla', 'upstream_forbidden']);
    await waitFor(
      async () => !(await r.poller.queue.getJobSchedulers(0, -1)).some((s) => s.key === 'poll-sla'),
      { what: 'sla schedule removed' },
    );
    const before = sim!.stats.byPath['/api/v1/sla'] ?? 0;
    await r.poller.syncSchedules(); // a replica's keeper must not bring it back
    expect((await r.poller.queue.getJobSchedulers(0, -1)).map((s) => s.key).sort()).toEqual([
      'poll-catalog',
      'poll-status',
    ]);
    const handed = await r.handoff.handedOff(['waiting', 'completed']);
    expect(handed.map((t) => `${t.kind} ${String(t.current.reason)}`)).toEqual([
      'upstream.degraded upstream_forbidden',
    ]);
    expect(sim!.stats.byPath['/api/v1/sla'] ?? 0).toBe(before);
  });

  it('schedules come back by themselves after Redis loses them', async () => {
    const url = await setup({ rateLimit: false });
    const r = await replica(url, { status: 1000 }, { budget: 600 });
    await waitFor(() => r.cycles.length >= 1, { what: 'a first cycle' });
    await tr!.flush();
    const n = r.cycles.length;
    await waitFor(() => r.cycles.length >= n + 2, {
      timeoutMs: 15_000,
      what: 'polls after the flush',
    });
    expect((await r.poller.queue.getJobSchedulers(0, -1)).map((s) => s.key).sort()).toEqual([
      'poll-catalog',
      'poll-status',
    ]);
  });
});
