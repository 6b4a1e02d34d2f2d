/**
 * Network faults towards receivers and the upstream, from raw `node:net` servers
 * (test/helpers/faults.ts): a peer that accepts and never answers (`hang`), answers one byte per
 * second (`dribble`) or resets the connection mid-body (`reset`). Every call is bounded by the
 * configured timeout (a channel's `timeoutMs`, `upstream.timeoutMs`); a stuck receiver does not
 * hold up deliveries to a healthy one; once the receiver recovers each delivery is answered once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelConfig } from '../src/config/schema.js';
import type { Notification } from '../src/notify/types.js';
import { createSimulator } from '../src/sim/index.js';
import { createUpstreamClient } from '../src/upstream/client.js';
import { UpstreamError } from '../src/upstream/errors.js';
import { DEFAULT_STALL_MS, SLOW_CHANNEL_SENDS } from '../src/delivery/worker.js';
import { WEBHOOK_SECRET, deliveryHarness, type DeliveryHarness } from './helpers/delivery.js';
import { faultServer, type FaultMode, type FaultServer } from './helpers/faults.js';
import { notification, transition } from './notify-helpers.js';
import { killAll, startDaemon, tempDir, writeConfig } from './helpers/process.js';
import { REDIS_URL, testRedis } from './helpers/redis.js';
import { waitFor } from './helpers/wait.js';

const cleanups: (() => Promise<void>)[] = [];
let h: DeliveryHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function server(mode: FaultMode, target?: { host: string; port: number }) {
  const s = await faultServer(target === undefined ? { mode } : { mode, target });
  cleanups.push(() => s.close());
  return s;
}

function hook(s: FaultServer, timeoutMs: number): ChannelConfig {
  return { type: 'webhook', url: `${s.url}/hook`, secret: WEBHOOK_SECRET, timeoutMs };
}

let seq = 0;
/** One delivery to `channel` with a unique id. */
function delivery(channel: string): Notification {
  seq += 1;
  const id = `tfault${String(seq).padStart(6, '0')}${channel}`;
  // Each its own incident: deliveries of one lifecycle on a channel go out in order, one after
  // the other (src/delivery/order.ts), which these tests are not about.
  const t = transition('incident.opened', { id, subject: `incident:${id}` });
  return notification([t], { id: `${t.id}:subs:${channel}`, channel, createdAt: Date.now() });
}

/** How often each webhook-id was answered 200. */
function answeredCounts(s: FaultServer): Map<string, number> {
  const out = new Map<string, number>();
  for (const id of s.okIds()) out.set(id, (out.get(id) ?? 0) + 1);
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------

describe('the upstream client against a faulty upstream', () => {
  async function world() {
    const sim = createSimulator({ services: 20, seed: 5, rateLimit: false });
    const simUrl = new URL(await sim.listen(0, '127.0.0.1'));
    cleanups.push(() => sim.close());
    const up = await server('proxy', { host: simUrl.hostname, port: Number(simUrl.port) });
    const client = createUpstreamClient({ baseUrl: up.url, timeoutMs: 1000 });
    cleanups.push(() => client.close());
    return { up, client };
  }

  async function timed(p: Promise<unknown>): Promise<{ ms: number; err: UpstreamError | null }> {
    const t0 = performance.now();
    try {
      await p;
      return { ms: performance.now() - t0, err: null };
    } catch (e) {
      expect(e).toBeInstanceOf(UpstreamError);
      return { ms: performance.now() - t0, err: e as UpstreamError };
    }
  }

  it.each([
    ['hang', 'upstream_timeout'],
    ['dribble', 'upstream_timeout'],
    ['reset', 'upstream_network'],
  ] as const)(
    '%s: %s within timeoutMs, and the same client recovers with the upstream',
    async (mode, code) => {
      const { up, client } = await world();
      expect((await client.status()).data.services.length).toBe(20);
      up.mode = mode;
      const calls = await Promise.all([timed(client.status()), timed(client.incidents())]);
      for (const { ms, err } of calls) {
        expect(err?.code).toBe(code);
        expect(err?.retryable).toBe(true);
        // timeoutMs is 1000: an upstream that never finishes costs at most that (plus timer slack).
        expect(ms).toBeLessThan(1000 + 500);
        if (mode !== 'reset') expect(ms).toBeGreaterThanOrEqual(900);
      }
      const faulty = up.requests.filter((r) => r.mode === mode);
      expect(faulty.length).toBeGreaterThanOrEqual(2);
      // The client dropped each faulty connection within its timeout.
      await waitFor(() => faulty.every((r) => r.closedAt !== null), { what: 'closed connections' });
      for (const r of faulty) expect((r.closedAt ?? Infinity) - r.at).toBeLessThan(1000 + 500);
      up.mode = 'proxy';
      expect((await client.status()).data.services.length).toBe(20);
    },
  );
});

// ---------------------------------------------------------------------------------------------

describe('the delivery worker against a faulty receiver', () => {
  it.each([
    ['hang', 'timeout'],
    ['dribble', 'timeout'],
    ['reset-request', 'network'],
  ] as const)(
    '%s: the attempt fails (%s) within timeoutMs, a healthy receiver is served meanwhile, and the delivery is answered once after recovery',
    async (mode, reason) => {
      h = await deliveryHarness(20);
      const bad = await server(mode);
      const good = await server('ok');
      const registry = h.registry({ bad: hook(bad, 1000), good: hook(good, 1000) });
      const w = h.startWorker(() => registry, { backoff: () => 300 });

      const toBad = delivery('bad');
      const toGood = delivery('good');
      const t0 = Date.now();
      await h.queue.enqueue([toBad, toGood]);
      await waitFor(() => good.okIds().includes(toGood.id), { what: 'the healthy delivery' });
      expect(Date.now() - t0, 'the healthy receiver is not held up').toBeLessThan(900);

      const failed = await w.waitForOutcome((o) => o.notification.id === toBad.id, 5000);
      expect(failed).toMatchObject({ outcome: 'retry', reason, attempt: 1 });
      const failedAfter = Date.now() - t0;
      expect(failedAfter).toBeLessThan(1000 + 1000);
      const faulty = bad.requests.filter((r) => r.mode === mode);
      expect(faulty).toHaveLength(1);
      await waitFor(() => faulty[0]?.closedAt != null, { what: 'the faulty connection closed' });
      // undici's connection timers tick about every half second: up to that much late.
      expect((faulty[0]?.closedAt ?? Infinity) - (faulty[0]?.at ?? 0)).toBeLessThan(1000 + 1000);
      if (mode !== 'reset-request') expect(failedAfter).toBeGreaterThanOrEqual(900);

      bad.mode = 'ok';
      await w.waitForOutcome((o) => o.notification.id === toBad.id && o.outcome === 'sent', 10_000);
      await sleep(500); // a second answer would show up here
      expect([...answeredCounts(bad)]).toEqual([[toBad.id, 1]]);
      expect([...answeredCounts(good)]).toEqual([[toGood.id, 1]]);
      expect(w.outcomes.filter((o) => o.outcome === 'dead')).toEqual([]);
    },
    20_000,
  );

  it('reset mid-body after a 200 status: delivered (the status stands), not sent again', async () => {
    h = await deliveryHarness(20);
    const bad = await server('reset');
    const registry = h.registry({ bad: hook(bad, 1000) });
    const w = h.startWorker(() => registry, { backoff: () => 300 });
    const toBad = delivery('bad');
    await h.queue.enqueue([toBad]);
    const sent = await w.waitForOutcome((o) => o.notification.id === toBad.id, 5000);
    expect(sent).toMatchObject({ outcome: 'sent', attempt: 1 });
    await sleep(1000); // a resend would show up here
    expect(bad.requests.map((r) => r.headers['webhook-id'])).toEqual([toBad.id]);
    expect(w.outcomes).toHaveLength(1);
  });

  it('Slack incoming webhook reset mid-body after a 200 status: delivered, not posted again', async () => {
    h = await deliveryHarness(20);
    const bad = await server('reset');
    const registry = h.registry({
      bad: { type: 'slack', webhookUrl: `${bad.url}/hook`, timeoutMs: 1000 },
    });
    const w = h.startWorker(() => registry, { backoff: () => 300 });
    const toBad = delivery('bad');
    await h.queue.enqueue([toBad]);
    const sent = await w.waitForOutcome((o) => o.notification.id === toBad.id, 5000);
    expect(sent).toMatchObject({ outcome: 'sent', attempt: 1 });
    await sleep(1000); // a repost would show up here
    expect(bad.requests).toHaveLength(1);
    expect(w.outcomes).toHaveLength(1);
  });

  it('a receiver answering 200 after 6 s (timeoutMs 9 s): its batch goes on after the stall limit, each delivery is sent once and never re-sent by the job that took it over', async () => {
    h = await deliveryHarness(20);
    const slow = await faultServer({ mode: 'slow', slowMs: 6000 });
    cleanups.push(() => slow.close());
    const good = await server('ok');
    const registry = h.registry({ slow: hook(slow, 9000), good: hook(good, 9000) });
    const w = h.startWorker(() => registry, { backoff: () => 300 });
    const toSlow = [delivery('slow'), delivery('slow'), delivery('slow')];
    const first = delivery('good');
    await h.queue.enqueue([...toSlow, first]);
    await waitFor(() => good.okIds().includes(first.id), { what: 'the healthy delivery' });
    // Past the stall limit the batch no longer waits: the next batch is served at once.
    await sleep(DEFAULT_STALL_MS + 700);
    const second = delivery('good');
    const t0 = Date.now();
    await h.queue.enqueue([second]);
    await waitFor(() => good.okIds().includes(second.id), { what: 'the next healthy delivery' });
    expect(Date.now() - t0).toBeLessThan(500);

    await waitFor(() => toSlow.every((n) => slow.okIds().includes(n.id)), {
      timeoutMs: 10_000,
      what: 'the slow answers',
    });
    // The jobs that took the deliveries over run (and wait for the sends) meanwhile: still one
    // request per delivery, reported sent once, on attempt 1.
    await sleep(5000);
    expect(slow.requests.map((r) => r.headers['webhook-id']).sort()).toEqual(
      toSlow.map((n) => n.id).sort(),
    );
    for (const n of toSlow) {
      expect(w.outcomes.filter((o) => o.notification.id === n.id)).toEqual([
        expect.objectContaining({ outcome: 'sent', attempt: 1 }),
      ]);
      expect(await h.queue.state(n.id)).toBe('sent');
    }
    expect(await h.queue.retries.getJobCounts('waiting', 'delayed', 'active', 'failed')).toEqual({
      waiting: 0,
      delayed: 0,
      active: 0,
      failed: 0,
    });
  }, 30_000);

  it('a hanging receiver does not starve a healthy one: a 40-delivery burst to it, then a stream to both', async () => {
    h = await deliveryHarness(20);
    const bad = await server('hang');
    const good = await server('ok');
    const timeoutMs = 5000;
    const registry = h.registry({ bad: hook(bad, timeoutMs), good: hook(good, timeoutMs) });
    const w = h.startWorker(() => registry, { backoff: () => 300 });
    const queue = h.queue;

    const enqueuedAt = new Map<string, number>();
    const toBad: string[] = [];
    const send = async (channels: string[]): Promise<void> => {
      const batch = channels.map(delivery);
      for (const n of batch) {
        enqueuedAt.set(n.id, Date.now());
        if (n.channel === 'bad') toBad.push(n.id);
      }
      await queue.enqueue(batch);
    };
    // A burst to the stuck receiver alone, more than the worker's 16 sends in flight, before
    // anything is known about it; then deliveries for the healthy one.
    await send(Array.from({ length: 40 }, () => 'bad'));
    await sleep(100);
    for (let i = 0; i < 3; i++) {
      await send(['good']);
      await sleep(200);
    }
    // A stream: every 200 ms one transition for both receivers (one batch, as routing makes it).
    for (let i = 0; i < 16; i++) {
      await send(['bad', 'good']);
      await sleep(200);
    }
    const goodIds = [...enqueuedAt.keys()].filter((id) => id.endsWith(':good'));
    await waitFor(() => goodIds.every((id) => good.okIds().includes(id)), {
      timeoutMs: 10_000,
      what: 'every healthy delivery',
    });
    const latency = goodIds.map((id) => {
      const answered = good.requests.find((r) => r.headers['webhook-id'] === id && r.answered);
      return (answered?.at ?? Infinity) - (enqueuedAt.get(id) ?? 0);
    });
    // Held up at most once, by the stall limit (DEFAULT_STALL_MS), never by the receiver's timeout.
    expect(Math.max(...latency), `latencies ${latency.join(', ')}`).toBeLessThan(
      DEFAULT_STALL_MS + 500,
    );
    // Once its sends have stalled, the stuck receiver holds up nothing.
    const burstAt = Math.min(...toBad.map((id) => enqueuedAt.get(id) ?? Infinity));
    const later = goodIds.filter(
      (id) => (enqueuedAt.get(id) ?? 0) > burstAt + DEFAULT_STALL_MS + 300,
    );
    expect(later.length).toBeGreaterThanOrEqual(3);
    for (const id of later)
      expect(latency[goodIds.indexOf(id)], `latencies ${latency.join(', ')}`).toBeLessThan(500);
    // The stuck receiver never got more connections at once than the worker's 16 sends.
    expect(bad.connections().open).toBeLessThanOrEqual(16 + SLOW_CHANNEL_SENDS);

    bad.mode = 'ok';
    await waitFor(() => toBad.every((id) => answeredCounts(bad).has(id)), {
      timeoutMs: 20_000,
      what: `every delivery to the recovered receiver (${answeredCounts(bad).size}/${toBad.length})`,
    });
    await sleep(500);
    expect([...answeredCounts(bad).values()].every((n) => n === 1)).toBe(true);
    expect(answeredCounts(bad).size).toBe(toBad.length);
    expect([...answeredCounts(good).values()].every((n) => n === 1)).toBe(true);
    expect(w.outcomes.filter((o) => o.outcome === 'dead')).toEqual([]);
  }, 45_000);
});

// ---------------------------------------------------------------------------------------------

describe('the daemon with a faulty upstream link and a hanging receiver', () => {
  it('polls fail within upstream.timeoutMs (hang, dribble, reset), /readyz stays 200, the healthy receiver is served at once, and every transition reaches both receivers once', async () => {
    const clock = {
      now: Date.now(),
      tick(ms = 1000) {
        clock.now += ms;
      },
    };
    const sim = createSimulator({ services: 50, seed: 13, rateLimit: false, now: () => clock.now });
    const simUrl = new URL(await sim.listen(0, '127.0.0.1'));
    cleanups.push(() => sim.close());
    const up = await server('proxy', { host: simUrl.hostname, port: Number(simUrl.port) });
    const stuck = await server('hang');
    const good = await server('ok');
    const tr = await testRedis('netfaults');
    cleanups.push(() => tr.cleanup());
    const tmp = await tempDir();
    cleanups.push(() => tmp.cleanup());
    const upstreamTimeoutMs = 1500;
    const file = await writeConfig(tmp.dir, {
      upstream: { baseUrl: up.url, requestsPerMinute: 600, timeoutMs: upstreamTimeoutMs },
      redis: { url: REDIS_URL, prefix: tr.prefix },
      poll: { status: '1s', incidents: '1s' },
      server: { port: 0 },
      channels: { stuck: hook(stuck, 3000), good: hook(good, 3000) },
      subscriptions: [
        {
          name: 'core',
          services: ['stripe', 'github', 'slack', 'twilio'],
          events: ['incident.opened'],
          channels: ['stuck', 'good'],
        },
      ],
    });
    const d = await startDaemon(file);
    cleanups.push(() => killAll());
    const readyz = async (): Promise<number> =>
      (await fetch(`${d.url}/readyz`, { signal: AbortSignal.timeout(3000) })).status;
    await waitFor(() => up.connections().accepted > 0 && sim.stats.byPath['/api/v1/incidents'], {
      what: 'the first polls',
    });
    await sleep(1500); // the first polls are the (silent) baseline

    // The stuck receiver hangs; the healthy one gets the incident in a poll or two.
    clock.tick();
    const openedAt = Date.now();
    sim.openIncident('stripe', { title: 'Card payments failing' });
    await waitFor(() => good.okIds().some((id) => id.endsWith(':core:good')), {
      what: 'the healthy delivery',
    });
    const healthyMs = Date.now() - openedAt;

    // Each upstream fault in turn, with an incident opening upstream meanwhile.
    const faults = [
      ['hang', 'github'],
      ['dribble', 'slack'],
      ['reset', 'twilio'],
    ] as const;
    for (const [mode, feedId] of faults) {
      up.mode = mode;
      clock.tick();
      sim.openIncident(feedId, { title: `${feedId} is down` });
      await waitFor(
        () => up.requests.filter((r) => r.mode === mode && r.closedAt !== null).length >= 3,
        {
          timeoutMs: 10_000,
          what: `three polls meeting ${mode}`,
        },
      );
      expect(await readyz(), `/readyz during an upstream ${mode}`).toBe(200);
    }
    for (const r of up.requests.filter((x) => x.mode !== 'proxy' && x.closedAt !== null))
      expect((r.closedAt ?? Infinity) - r.at, `a poll meeting ${r.mode}`).toBeLessThan(
        upstreamTimeoutMs + 500,
      );
    up.mode = 'proxy';
    // Deliveries to the healthy receiver were not held up by the stuck one meanwhile.
    expect(good.okIds()).toHaveLength(1);

    await waitFor(() => good.okIds().length >= 4, {
      timeoutMs: 10_000,
      what: 'four healthy deliveries',
    });
    stuck.mode = 'ok';
    await waitFor(() => stuck.okIds().length >= 4, {
      timeoutMs: 30_000,
      what: `four deliveries to the recovered receiver (${stuck.okIds().length})`,
    });
    await sleep(1000); // a late duplicate would show up here
    for (const s of [good, stuck]) {
      const counts = [...answeredCounts(s).values()];
      expect(counts).toEqual([1, 1, 1, 1]);
    }
    const output = d.proc.stdout();
    expect(d.proc.stderr()).toBe('');
    const failed = output.split('\n').filter((l) => l.includes('"event":"poll:failed"'));
    const codes = new Set(failed.map((l) => (JSON.parse(l) as { code: string }).code));
    expect([...codes].sort()).toEqual(['upstream_network', 'upstream_timeout']);
    console.info(
      `upstream faults: healthy delivery after ${healthyMs} ms with the other receiver hanging; ${failed.length} poll:failed lines; ${up.requests.filter((r) => r.mode !== 'proxy').length} faulty polls`,
    );
  }, 60_000);
});
