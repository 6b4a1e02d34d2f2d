import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Transition } from '../src/diff/transition.js';
import type { EventKind } from '../src/config/events.js';
import { ClientCommandCounter } from '../src/bench/support.js';
import { QUEUES } from '../src/queues.js';
import { scripts } from '../src/redis/scripts.js';
import { CLOCK_SKEW_MS } from '../src/delivery/rules.js';
import { ChannelRegistry } from '../src/delivery/channels.js';
import { DeliveryQueue } from '../src/delivery/queue.js';
import { silentLogger } from '../src/log.js';
import { NoiseStore } from '../src/noise/store.js';
import { CategoryStore } from '../src/routing/categories.js';
import { Router } from '../src/routing/router.js';
import { SilenceStore } from '../src/silences/store.js';
import { composeStages } from '../src/stages.js';
import { transition } from './notify-helpers.js';
import { noiseHarness, type NoiseHarness } from './helpers/noise.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';
import { dieHoldingJob } from './helpers/stall.js';
import { waitFor } from './helpers/wait.js';

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);

function incident(kind: EventKind, feedId: string, n = 1): Transition {
  return transition(kind, {
    id: `t${kind.replace('.', '')}${feedId.replace(/[^a-z0-9]/g, '')}${String(n)}`,
    feedId,
    subject: `incident:inc-${feedId}-${String(n)}`,
    service: { feedId, name: `Service ${feedId}`, canonicalUrl: null, officialStatusUrl: null },
    incident: {
      id: `inc-${feedId}-${String(n)}`,
      title: `${feedId} is down`,
      status: kind === 'incident.resolved' ? 'resolved' : 'investigating',
      started: Math.floor(T0 / 1000),
      updateCount: 1,
      latestUpdate: null,
    },
    observedAt: T0,
  });
}

const ALL = { name: 'all', services: ['*'], channels: ['hook'] };

/**
 * The harness's first load of the noise state fails (a Redis error), after it queued the next
 * cycle (`next`): that cycle waits while the failing one is retried.
 */
function failFirstLoad(
  harness: NoiseHarness,
  next: Transition,
): { readonly count: number; first: Promise<void> } {
  const load = harness.store.loadGate.bind(harness.store);
  let failed!: () => void;
  const state = { count: 0, first: new Promise<void>((resolve) => (failed = resolve)) };
  harness.store.loadGate = async (...args) => {
    if (state.count === 0) {
      state.count += 1;
      await harness.handoff.enqueue([next]);
      failed();
      throw new Error('simulated Redis error while loading the noise state');
    }
    return load(...args);
  };
  return state;
}

/** The opening of okta's incident handed off, its routing failing once (`failFirstLoad`). */
async function failingFirstCycle(): Promise<{
  harness: NoiseHarness;
  opened: Transition;
  resolved: Transition;
  failure: ReturnType<typeof failFirstLoad>;
}> {
  h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
    start: T0,
  });
  const harness = h;
  const opened = incident('incident.opened', 'okta');
  const resolved = incident('incident.resolved', 'okta');
  const failure = failFirstLoad(harness, resolved);
  await harness.handoff.enqueue([opened]);
  return { harness, opened, resolved, failure };
}

/** The opening and the closing both reach the webhook (in either order), and nothing is left told. */
async function bothSentNothingTold(harness: NoiseHarness): Promise<void> {
  await waitFor(() => harness.hooks().length === 2, { what: 'the opening and its closing' });
  expect(
    harness
      .hooks()
      .map((b) => b.type)
      .sort(),
  ).toEqual(['incident.opened', 'incident.resolved']);
  expect(await harness.store.allTold()).toEqual(new Map());
}

let h: NoiseHarness | undefined;
let tr: TestRedis | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  // What a test built on the harness's connection closes before the harness does.
  for (const c of closers.splice(0)) await c();
  await h?.close();
  h = undefined;
  await tr?.cleanup();
  tr = undefined;
});

describe('routing a cycle as one batch', () => {
  it('Redis round trips of a routed cycle do not grow with its transitions (1, 100, 5,000)', async () => {
    tr = await testRedis('batch');
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    closers.push(async () => {
      redis.disconnect();
      await Promise.resolve();
    });
    const counter = new ClientCommandCounter(redis);
    const deliveries = new DeliveryQueue(redis, tr.keys);
    closers.push(() => deliveries.close());
    const silences = new SilenceStore(redis, tr.keys, () => T0, { cacheMs: 0 });
    const router = new Router({
      connection: redis,
      keys: tr.keys,
      subscriptions: () => [
        { ...ALL, events: ['incident.opened', 'incident.resolved'] as EventKind[] },
      ],
      categories: new CategoryStore(redis, tr.keys, () => T0),
      deliveries,
      noise: { store: new NoiseStore(redis, tr.keys), silences: () => silences.active() },
      log: silentLogger(),
      now: () => T0,
    });
    // Warm-up: the first routing on a connection may load its Lua scripts (EVALSHA → NOSCRIPT →
    // EVAL) and category sets once; the steady state is what must not grow.
    await silences.active();
    await router.routeBatch([incident('incident.opened', 'warm-up')]);
    const trips: Record<number, number> = {};
    const commands: Record<number, number> = {};
    for (const n of [1, 100, 5000]) {
      const batch = Array.from({ length: n }, (_, i) =>
        incident('incident.opened', `svc-${n}-${i}`),
      );
      counter.reset();
      expect(await router.routeBatch(batch)).toBe(n);
      trips[n] = counter.roundTrips;
      commands[n] = counter.commands;
    }
    expect(trips[100]).toBe(trips[1]);
    // More than one delivery batch: the first is added on its own, before the rest (one more
    // round trip, whatever the size), so delivery starts while the rest are encoded.
    expect(trips[5000]).toBe((trips[1] ?? 0) + 1);
    expect(trips[1]).toBeLessThanOrEqual(6);
    // Commands grow only with the delivery batch jobs (100 deliveries a job).
    expect(commands[5000]).toBeLessThan(400);
    expect(commands[1]).toBeLessThan(40);
    // Routed again (a cycle re-derived after a crash): nothing new is enqueued.
    const again = Array.from({ length: 100 }, (_, i) =>
      incident('incident.opened', `svc-100-${i}`),
    );
    expect(await router.routeBatch(again)).toBe(0);
  }, 60_000);

  it('an opening and its closing inside one batch: both sent, in order, and nothing left open', async () => {
    h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
      start: T0,
    });
    const harness = h;
    await harness.route(
      incident('incident.opened', 'stripe'),
      incident('incident.resolved', 'stripe'),
    );
    await bothSentNothingTold(harness);
  });

  it('a silenced opening and its closing inside one batch: neither is sent', async () => {
    h = await noiseHarness(
      [
        { ...ALL, events: ['incident.opened', 'incident.resolved'] },
        { name: 'other', services: ['github'], events: ['incident.opened'], channels: ['hook'] },
      ],
      { start: T0 },
    );
    const harness = h;
    await harness.silences.add({
      matchers: { services: ['stripe'], events: ['incident.opened'] },
      duration: '1h',
      author: 'sre',
      comment: 'maintenance',
    });
    await harness.route(
      incident('incident.opened', 'stripe'),
      incident('incident.resolved', 'stripe'),
      incident('incident.opened', 'github'),
    );
    // The github opening (a sentinel routed after them) arrives; stripe's two never do.
    await waitFor(() => harness.hooks().length >= 1, { what: 'the sentinel webhook' });
    await harness.route(incident('incident.opened', 'github', 2));
    await waitFor(() => harness.hooks().length >= 4, { what: 'the second sentinel' });
    expect(
      harness
        .hooks()
        .map((b) => `${b.type} ${(b.data.service as { feedId: string }).feedId}`)
        .sort(),
      // Each github opening reaches both subscriptions.
    ).toEqual(Array<string>(4).fill('incident.opened github'));
  });

  it('two replicas route consecutive cycles in order, each delivery once', async () => {
    h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
      start: T0,
    });
    const harness = h;
    // A second replica, built as the daemon builds one: its own router and delivery worker.
    const channels = new ChannelRegistry(harness.config.channels);
    const second = composeStages({
      connection: harness.tr.redis,
      keys: harness.tr.keys,
      log: silentLogger(),
      now: () => harness.clock.now,
      subscriptions: () => harness.config.subscriptions,
      channels: () => channels,
      silenceStore: { cacheMs: 0 },
      premium: () => false,
      manualNoiseTick: true,
    });
    await second.start();
    closers.push(async () => {
      await second.stop();
      await channels.close();
    });
    const feeds = Array.from({ length: 20 }, (_, i) => `svc-${String(i)}`);
    for (const f of feeds) {
      await harness.handoff.enqueue([incident('incident.opened', f)]);
      await harness.handoff.enqueue([incident('incident.resolved', f)]);
    }
    await waitFor(async () => (await harness.handoff.routedCount()) === 40, {
      what: '40 transitions routed',
    });
    await waitFor(() => harness.hooks().length === 40, { what: '40 webhooks' });
    expect(harness.hook.received.map((r) => r.headers['webhook-id']).length).toBe(
      new Set(harness.hook.received.map((r) => r.headers['webhook-id'])).size,
    );
    // Every closing found its opening told (so it was sent) and closed it.
    expect(harness.hooks().filter((b) => b.type === 'incident.resolved')).toHaveLength(20);
    expect(await harness.store.allTold()).toEqual(new Map());
  });

  it('a cycle whose routing process died twice holding it is still routed (BullMQ fails a job that stalls more than once by default)', async () => {
    h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
      start: T0,
      routingLockMs: 300,
    });
    const harness = h;
    await harness.router.stop();
    const opened = incident('incident.opened', 'okta');
    await harness.handoff.enqueue([opened]);
    // Two processes in turn take the cycle and die with it: their lock lapses unrenewed, and the
    // next worker's stalled-job check finds it (one stall each).
    await dieHoldingJob(
      QUEUES.transitions,
      { connection: harness.tr.redis, prefix: harness.tr.keys.tag },
      2,
    );
    await harness.router.start();
    await harness.hook.waitFor(1, 10_000);
    expect(harness.hook.received.map((r) => r.headers['webhook-id'])).toEqual([
      `${opened.id}:all:hook`,
    ]);
    expect(await harness.handoff.queue.getFailedCount()).toBe(0);
    expect(await harness.handoff.routedCount()).toBe(1);
  });

  it('a crash between the delivery enqueue and the effect commit: the retried batch sends nothing twice and commits its effects', async () => {
    h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
      start: T0,
    });
    const harness = h;
    const commit = harness.store.commitGate.bind(harness.store);
    let failures = 0;
    harness.store.commitGate = async (...args) => {
      if (failures === 0) {
        failures += 1;
        throw new Error('simulated crash before the commit');
      }
      return commit(...args);
    };
    const opened = incident('incident.opened', 'okta');
    await harness.route(opened);
    expect(failures).toBe(1);
    await waitFor(() => harness.hooks().length === 1, { what: 'the opening' });
    // The retried batch committed: the ledger knows the opening, so its closing is sent.
    expect([...(await harness.store.allTold()).keys()]).toEqual([
      `all|hook|okta|incident:inc-okta-1`,
    ]);
    await harness.route(incident('incident.resolved', 'okta'));
    await waitFor(() => harness.hooks().length === 2, { what: 'the closing' });
    expect(harness.hook.received.map((r) => r.headers['webhook-id'])).toEqual([
      `${opened.id}:all:hook`,
      `${incident('incident.resolved', 'okta').id}:all:hook`,
    ]);
  });

  it('a cycle whose routing fails holds the later cycles back: the opening is sent before the closing a later cycle carries, and the ledger ends empty', async () => {
    const { harness, opened, resolved, failure } = await failingFirstCycle();
    await waitFor(() => harness.hooks().length === 2, { what: 'the opening and its closing' });
    expect(failure.count).toBe(1);
    // Both sent (their batches may run side by side, so in either order) ...
    expect(new Set(harness.hook.received.map((r) => r.headers['webhook-id']))).toEqual(
      new Set([`${opened.id}:all:hook`, `${resolved.id}:all:hook`]),
    );
    // ... and routed in order: the closing found its opening told and ended it, so nothing is
    // left told (no reminders of an incident that is over). Nothing failed.
    expect(await harness.store.allTold()).toEqual(new Map());
    expect(await harness.handoff.queue.getFailedCount()).toBe(0);
  });

  it('a router stopped while a failing cycle waits for its retry puts the cycle back at the head of the queue: the next router routes it before the later cycle', async () => {
    const { harness, failure } = await failingFirstCycle();
    await failure.first;
    // Stopped during the 1 s wait before the retry: the stop does not wait it out.
    await harness.router.stop();
    expect(await harness.handoff.queue.getJobCounts('wait', 'active', 'delayed')).toEqual({
      wait: 2,
      active: 0,
      delayed: 0,
    });
    await harness.router.start();
    await bothSentNothingTold(harness);
  });

  it('a closing waits while its opening is retried on the same channel: the receiver gets the opening first, once, then the closing', async () => {
    h = await noiseHarness([{ ...ALL, events: ['incident.opened', 'incident.resolved'] }], {
      start: T0,
      // The opening's first attempt is refused; everything else is taken.
      hookReply: (req) =>
        req.body.includes('"incident.opened"') &&
        !harness.hook.received.some((r) => r.body.includes('"incident.opened"'))
          ? { status: 503 }
          : { status: 204 },
    });
    const harness = h;
    const opened = incident('incident.opened', 'okta');
    const resolved = incident('incident.resolved', 'okta');
    await harness.route(opened);
    await harness.hook.waitFor(1, 10_000);
    // The next cycle resolves it while the opening waits for its retry (0.5–1.5 s).
    await harness.route(resolved);
    await harness.hook.waitFor(3, 20_000);
    expect(harness.hook.received.map((r) => r.headers['webhook-id'])).toEqual([
      `${opened.id}:all:hook`,
      `${opened.id}:all:hook`,
      `${resolved.id}:all:hook`,
    ]);
    await waitFor(
      async () => (await harness.deliveries.state(`${resolved.id}:all:hook`)) === 'sent',
      {
        what: 'the closing marked sent',
      },
    );
    // Once the opening was sent, its listing went (the closing, which waited in a job of its
    // own, is listed itself): a later delivery of the lifecycle waits for nothing.
    expect(
      await harness.tr.redis.zrange(
        harness.tr.keys.key('delivery-open', 'all|hook|okta|incident:inc-okta-1'),
        '0',
        '-1',
      ),
    ).toEqual([`${resolved.id}:all:hook`]);
  });

  it("a cycle's routing time is kept for its re-runs and follows the previous cycle's, also from a replica whose clock is behind (up to a minute)", async () => {
    tr = await testRedis('decided');
    const call = (job: string, now: number): Promise<string> =>
      scripts(tr!.redis).routingDecidedAt(
        [tr!.keys.key('routing', 'last-decided-at'), tr!.keys.key('routing', 'decided-at', job)],
        [String(now), String(CLOCK_SKEW_MS), '3600000'],
      );
    expect(await call('c1', T0)).toBe(String(T0));
    // The next cycle, routed by a replica 5 s behind: still after the first.
    expect(await call('c2', T0 - 5000)).toBe(String(T0 + 1));
    // A re-run keeps its first time.
    expect(await call('c1', T0 + 9000)).toBe(String(T0));
    expect(await call('c3', T0 + 10_000)).toBe(String(T0 + 10_000));
    // A clock more than a minute behind is taken as it is (the times do not stay pinned).
    expect(await call('c4', T0 - 120_000)).toBe(String(T0 - 120_000));
    expect(await call('c5', T0 + 20_000)).toBe(String(T0 + 20_000));
    // The noise tick's batches and catch-ups take their time from the same clock: after the last
    // cycle also from a tick 5 s behind it, and the next cycle comes after them.
    const noise = new NoiseStore(tr.redis, tr.keys);
    expect(await noise.orderTime(T0 + 15_000)).toBe(T0 + 20_001);
    expect(await call('c6', T0 + 20_000)).toBe(String(T0 + 20_002));
    expect(await noise.orderTime(T0 + 30_000)).toBe(T0 + 30_000);
    expect(await call('c7', T0 + 29_000)).toBe(String(T0 + 30_001));
  });

  it('a subscription edited after an opening still gets its closing, on the channel it was told; one that dropped the closing kind does not', async () => {
    h = await noiseHarness(
      [
        {
          name: 'pay',
          services: ['stripe'],
          events: ['incident.opened', 'incident.resolved'],
          channels: ['hook'],
        },
        {
          name: 'ops',
          services: ['stripe'],
          events: ['incident.opened', 'incident.resolved'],
          channels: ['chat'],
        },
      ],
      { start: T0 },
    );
    const harness = h;
    const enqueued: string[] = [];
    const enqueue = harness.deliveries.enqueue.bind(harness.deliveries);
    harness.deliveries.enqueue = async (notifications) => {
      enqueued.push(...notifications.map((n) => n.id));
      return enqueue(notifications);
    };
    const opened = incident('incident.opened', 'stripe');
    await harness.route(opened);
    await waitFor(() => harness.hooks().length === 1 && harness.slack.received.length === 1, {
      what: 'the opening on both channels',
    });
    // 'pay' now watches another service on another channel; 'ops' no longer takes resolutions.
    const [pay, ops] = harness.config.subscriptions;
    if (pay === undefined || ops === undefined) throw new Error('two subscriptions expected');
    harness.config.subscriptions.splice(
      0,
      2,
      { ...pay, services: ['adyen'], channels: ['chat'] },
      { ...ops, events: ['incident.opened'] },
    );
    const resolved = incident('incident.resolved', 'stripe');
    await harness.route(resolved, incident('incident.opened', 'stripe', 2));
    await waitFor(() => harness.hooks().length === 2, { what: 'the closing on the told channel' });
    expect(harness.hook.received.map((r) => r.headers['webhook-id'])).toEqual([
      `${opened.id}:pay:hook`,
      `${resolved.id}:pay:hook`,
    ]);
    // Every delivery routing enqueued, by id: the closing went to pay/hook alone (not to the
    // edited 'pay' on chat, never told; not to 'ops', which no longer takes resolutions); the new
    // opening on stripe matches 'ops' only. The closing cleared every told route of the opening.
    const ids = enqueued.sort();
    const second = incident('incident.opened', 'stripe', 2);
    expect(ids).toEqual(
      [
        `${opened.id}:ops:chat`,
        `${opened.id}:pay:hook`,
        `${resolved.id}:pay:hook`,
        `${second.id}:ops:chat`,
      ].sort(),
    );
    expect([...(await harness.store.allTold()).keys()]).toEqual([
      `ops|chat|stripe|incident:inc-stripe-2`,
    ]);
  });
});
