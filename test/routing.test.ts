import { afterEach, describe, expect, it } from 'vitest';
import type { EventKind } from '../src/config/events.js';
import { transitionId, type Transition } from '../src/diff/transition.js';
import { silentLogger, type Logger } from '../src/log.js';
import { Handoff } from '../src/pipeline/handoff.js';
import { CategoryStore } from '../src/routing/categories.js';
import type { RoutableSubscription } from '../src/routing/match.js';
import { Router } from '../src/routing/router.js';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { createUpstreamClient, type UpstreamClient } from '../src/upstream/index.js';
import {
  deliveryHarness,
  verifyWebhook,
  webhookChannel,
  webhookIdOf,
  type DeliveryHarness,
} from './helpers/delivery.js';
import { waitFor } from './helpers/wait.js';
import { startReceiver, transition, type Receiver } from './notify-helpers.js';

let h: DeliveryHarness | undefined;
let sim: Simulator | undefined;
let client: UpstreamClient | undefined;
let rx: Receiver | undefined;
let handoff: Handoff | undefined;
let router: Router | undefined;

afterEach(async () => {
  await router?.stop();
  await handoff?.close();
  await h?.close();
  await client?.close();
  await sim?.close();
  await rx?.close();
  router = undefined;
  handoff = undefined;
  h = undefined;
  client = undefined;
  sim = undefined;
  rx = undefined;
});

function event(kind: EventKind, feedId: string): Transition {
  return transition(kind, {
    id: transitionId([feedId, kind, 'routing-test']),
    feedId,
    service: { feedId, name: feedId, canonicalUrl: null, officialStatusUrl: null },
  });
}

const SUBSCRIPTIONS: RoutableSubscription[] = [
  {
    name: 'stripe-incidents',
    services: ['stripe'],
    events: ['incident.opened', 'incident.resolved'],
    channels: ['pay'],
  },
  {
    name: 'payments',
    categories: ['payments'],
    events: ['incident.opened', 'sla.at_risk'],
    channels: ['pay', 'ops', 'pay'],
  },
  { name: 'all-status', services: ['*'], events: ['status.changed'], channels: ['all'] },
  {
    name: 'upstream-health',
    services: ['github'],
    events: ['upstream.degraded'],
    channels: ['up'],
  },
];

interface Setup {
  d: DeliveryHarness;
  upstream: UpstreamClient;
  categories: CategoryStore;
  log: Logger;
}

/** Simulator, upstream client, Redis, delivery queue and an (empty) category store; closed in afterEach. */
async function setup(): Promise<Setup> {
  sim = createSimulator({ services: 200, rateLimit: false });
  const baseUrl = await sim.listen(0, '127.0.0.1');
  const upstream = createUpstreamClient({ baseUrl, timeoutMs: 5_000 });
  client = upstream;
  const d = await deliveryHarness();
  h = d;
  return { d, upstream, categories: new CategoryStore(d.tr.redis, d.tr.keys), log: silentLogger() };
}

describe('hand-off → router → delivery → webhook receivers (real Redis, simulator)', () => {
  it('a category whose members cannot be read fails the load: it is not read (and cached) as an empty category', async () => {
    const { d, upstream, categories, log } = await setup();
    // Not a set: SMEMBERS answers WRONGTYPE.
    await d.tr.redis.set(d.tr.keys.key('catalog', 'category', 'payments'), 'not a set');
    await expect(categories.load(['payments'])).rejects.toMatchObject({
      code: 'category_unreadable',
      message: expect.stringContaining('WRONGTYPE') as unknown,
    });
    expect(categories.members('payments')).toEqual([]);
    // Resolved again: the next load reads it (nothing empty was kept).
    await d.tr.redis.del(d.tr.keys.key('catalog', 'category', 'payments'));
    expect(await categories.refresh(upstream, ['payments'], log)).toBe(1);
    await categories.load(['payments']);
    expect(categories.has('payments', 'stripe')).toBe(true);
  });

  it('a category whose fetch fails keeps no other category from its fetch, and is fetched again after 10 minutes, not at every look', async () => {
    const { d, upstream, log } = await setup();
    let now = Date.UTC(2026, 10, 27, 9, 0, 0);
    const categories = new CategoryStore(d.tr.redis, d.tr.keys, () => now);
    // The first request for a category's members fails (payments'), the next ones answer.
    sim!.failNext({ path: '/api/v1/services', status: 503 });
    await expect(categories.refresh(upstream, ['payments', 'devtools'], log)).rejects.toMatchObject(
      { status: 503 },
    );
    await categories.load(['payments', 'devtools']);
    expect(categories.members('devtools').length).toBeGreaterThan(0);
    expect(categories.members('payments')).toEqual([]);
    const asked = (): number => sim!.stats.requests;
    // Looked at every minute: payments waits 10 minutes after its failure, devtools is fresh.
    const before = asked();
    now += 9 * 60_000;
    expect(await categories.refresh(upstream, ['payments', 'devtools'], log)).toBe(0);
    expect(asked()).toBe(before);
    now += 60_000;
    expect(await categories.refresh(upstream, ['payments', 'devtools'], log)).toBe(1);
    expect(asked()).toBe(before + 1);
    now += 61_000; // the in-memory copy is a minute old
    await categories.load(['payments']);
    expect(categories.has('payments', 'stripe')).toBe(true);
  });

  it('a 429 for a category stops the look (the poll queue pauses for it): the next category is not fetched, nothing is marked failed', async () => {
    const { d, upstream, categories, log } = await setup();
    sim!.failNext({ path: '/api/v1/services', status: 429, retryAfter: 5 });
    const before = sim!.stats.requests;
    await expect(categories.refresh(upstream, ['payments', 'devtools'], log)).rejects.toMatchObject(
      { code: 'upstream_rate_limited' },
    );
    expect(sim!.stats.requests - before).toBe(1);
    expect(await d.tr.redis.hlen(d.tr.keys.key('catalog', 'category-failed'))).toBe(0);
    expect(await categories.refresh(upstream, ['payments', 'devtools'], log)).toBe(2);
  });

  it('routes by feedId, "*", category and event kind; dedupes per transition:subscription:channel', async () => {
    const { d, upstream, categories, log } = await setup();
    expect(await categories.refresh(upstream, ['payments'], log)).toBe(1);
    expect(await categories.refresh(upstream, ['payments'], log)).toBe(0); // cached
    await categories.load(['payments']);
    expect(categories.members('payments')).toEqual(expect.arrayContaining(['stripe', 'adyen']));
    expect(categories.has('payments', 'github')).toBe(false);

    rx = await startReceiver(() => ({ status: 200 }), '/');
    const origin = new URL(rx.url).origin;
    const registry = d.registry({
      pay: webhookChannel(`${origin}/pay`),
      ops: webhookChannel(`${origin}/ops`),
      all: webhookChannel(`${origin}/all`),
      up: webhookChannel(`${origin}/up`),
    });
    const worker = d.startWorker(() => registry);
    handoff = new Handoff(d.tr.redis, d.tr.keys);
    router = new Router({
      connection: d.tr.redis,
      keys: d.tr.keys,
      subscriptions: () => SUBSCRIPTIONS,
      categories,
      deliveries: d.queue,
      log,
    });
    await router.start();

    const opened = event('incident.opened', 'stripe'); // by feedId and by category, one channel shared
    const atRisk = event('sla.at_risk', 'adyen'); // by category only
    const status = event('status.changed', 'github'); // by "*"
    const degraded = event('upstream.degraded', 'upstream'); // upstream.*: by kind alone
    const resolved = event('incident.resolved', 'stripe'); // kind watched by stripe-incidents only
    const updated = event('incident.updated', 'stripe'); // kind nobody watches
    const outside = event('sla.at_risk', 'github'); // kind watched, service outside the category
    const transitions = [opened, atRisk, status, degraded, resolved, updated, outside];
    await handoff.enqueue(transitions);

    const expected = [
      `/pay ${opened.id}:stripe-incidents:pay`,
      `/pay ${opened.id}:payments:pay`,
      `/ops ${opened.id}:payments:ops`,
      `/pay ${atRisk.id}:payments:pay`,
      `/ops ${atRisk.id}:payments:ops`,
      `/all ${status.id}:all-status:all`,
      `/up ${degraded.id}:upstream-health:up`,
      `/pay ${resolved.id}:stripe-incidents:pay`,
    ].sort();
    await rx.waitFor(expected.length, 10_000);
    await waitFor(async () => (await handoff!.routedCount()) === transitions.length, {
      what: 'every transition routed',
    });
    const ids = expected.map((line) => line.split(' ')[1]!);
    await waitFor(
      async () =>
        (await Promise.all(ids.map((id) => d.queue.state(id)))).every((s) => s === 'sent'),
      { what: 'every delivery marked sent' },
    );

    expect(rx.received.map((r) => `${r.url} ${webhookIdOf(r) ?? ''}`).sort()).toEqual(expected);
    for (const req of rx.received) {
      const id = webhookIdOf(req)!;
      const [transitionPart, subscription] = id.split(':');
      const t = transitions.find((x) => x.id === transitionPart)!;
      expect(verifyWebhook(req)).toMatchObject({
        type: t.kind,
        data: { eventId: t.id, subscription, service: { feedId: t.feedId } },
      });
    }
    expect(worker.outcomes.filter((o) => o.outcome !== 'sent')).toEqual([]);

    // The same transitions again (a retried poll): nothing new. A fresh one proves the path still runs.
    const sentinel = event('status.changed', 'slack');
    await handoff.enqueue([...transitions, sentinel]);
    await rx.waitFor(expected.length + 1, 10_000);
    await waitFor(async () => (await handoff!.routedCount()) === transitions.length + 1, {
      what: 'the sentinel routed',
    });
    // 'sent' is reported once the sent mark is in Redis, a moment after the receiver answered.
    await waitFor(() => worker.outcomes.length === expected.length + 1, {
      what: "the sentinel's outcome",
    });
    expect(rx.received).toHaveLength(expected.length + 1);
    expect(webhookIdOf(rx.received.at(-1)!)).toBe(`${sentinel.id}:all-status:all`);
    // Two cycle jobs: the first batch, then the same transitions with the sentinel.
    expect(
      await handoff.queue.getJobCounts('completed', 'waiting', 'active', 'delayed', 'failed'),
    ).toEqual({
      completed: 2,
      waiting: 0,
      active: 0,
      delayed: 0,
      failed: 0,
    });
    expect(worker.outcomes.map((o) => o.outcome)).toEqual(
      Array<string>(expected.length + 1).fill('sent'),
    );
  });

  it('plan: one event notification per (subscription, channel), created at the injected now', async () => {
    const { d, upstream, categories, log } = await setup();
    await categories.refresh(upstream, ['payments'], log);
    const planner = new Router({
      connection: d.tr.redis,
      keys: d.tr.keys,
      subscriptions: () => SUBSCRIPTIONS,
      categories,
      deliveries: d.queue,
      log,
      now: () => 1_767_268_800_000,
    });
    const t = event('sla.at_risk', 'adyen');
    expect(await planner.plan(t)).toEqual([
      {
        id: `${t.id}:payments:pay`,
        type: 'event',
        subscription: 'payments',
        channel: 'pay',
        transitions: [t],
        createdAt: 1_767_268_800_000,
      },
      {
        id: `${t.id}:payments:ops`,
        type: 'event',
        subscription: 'payments',
        channel: 'ops',
        transitions: [t],
        createdAt: 1_767_268_800_000,
      },
    ]);
    expect(await planner.plan(event('sla.at_risk', 'github'))).toEqual([]);
  });
});
