/**
 * Worker threads of `statuswatch run` (src/runtime): a delivery thread killed mid-batch is
 * started again and its batch taken over, each delivery answered once. Real Redis, a real
 * receiver on 127.0.0.1, threads running the built dist/ (the test command builds first).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/log.js';
import { createMetrics } from '../src/server/metrics.js';
import { ThreadSupervisor } from '../src/runtime/supervisor.js';
import { SpareThreads } from '../src/runtime/spares.js';
import { Handoff } from '../src/pipeline/handoff.js';
import { AggregatorRegistry } from 'prom-client';
import type { Notification } from '../src/notify/types.js';
import {
  deliveryHarness,
  webhookChannel,
  webhookIdOf,
  type DeliveryHarness,
} from './helpers/delivery.js';
import { tempDir, writeConfig } from './helpers/process.js';
import { REDIS_URL } from './helpers/redis.js';
import { waitFor } from './helpers/wait.js';
import { notification, startReceiver, transition, type Receiver } from './notify-helpers.js';

const ENTRY = new URL('../dist/runtime/thread.js', import.meta.url);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

function deliveries(count: number, tag = 'thread'): Notification[] {
  return Array.from({ length: count }, (_, i) => {
    const t = transition('incident.opened', {
      id: `t${tag}${String(i).padStart(4, '0')}0123456789`,
      subject: `incident:${tag}-${String(i)}`,
    });
    return notification([t], {
      id: `${t.id}:payments:hook`,
      channel: 'hook',
      createdAt: Date.now(),
    });
  });
}

async function harness(): Promise<DeliveryHarness> {
  const h = await deliveryHarness();
  cleanups.push(() => h.close());
  return h;
}

/** A config file the threads load: this test's Redis prefix and one webhook channel. */
async function configFile(prefix: string, rx: Receiver): Promise<string> {
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return writeConfig(tmp.dir, {
    // Never polled: these threads only deliver.
    upstream: { baseUrl: 'http://127.0.0.1:9' },
    redis: { url: REDIS_URL, prefix },
    channels: { hook: webhookChannel(rx.url) },
    subscriptions: [],
  });
}

/** A supervisor of two spare delivery threads (none runs until `startSpares`), stopped after the test. */
async function twoSpares(h: DeliveryHarness, rx: Receiver): Promise<ThreadSupervisor> {
  const threads = new ThreadSupervisor({
    entry: ENTRY,
    specs: [
      { name: 'deliver-1', roles: ['deliver'], spare: true },
      { name: 'deliver-2', roles: ['deliver'], spare: true },
    ],
    configFile: await configFile(h.tr.prefix, rx),
    pretty: false,
    logLevel: 'silent',
    log: silentLogger(),
    metrics: createMetrics(),
  });
  cleanups.push(() => threads.stop());
  return threads;
}

describe('worker threads', () => {
  it('a delivery thread killed mid-batch is started again; its batch is taken over, each delivery answered once', async () => {
    expect(existsSync(fileURLToPath(ENTRY)), 'run "npm run build" first').toBe(true);
    const h = await harness();
    const answered: string[] = [];
    const held = deliveries(5)[2]!.id;
    let heldOnce = false;
    // The first send of one delivery is held open: the thread sending it dies meanwhile.
    const rx = await startReceiver((req) => {
      const id = webhookIdOf(req) ?? '';
      if (id === held && !heldOnce) {
        heldOnce = true;
        return { status: 200, hang: true };
      }
      answered.push(id);
      return { status: 200 };
    }, '/hooks/statuswatch');
    cleanups.push(() => rx.close());
    const metrics = createMetrics();
    const threads = new ThreadSupervisor({
      entry: ENTRY,
      specs: [{ name: 'deliver-1', roles: ['deliver'] }],
      configFile: await configFile(h.tr.prefix, rx),
      pretty: false,
      logLevel: 'silent',
      log: silentLogger(),
      metrics,
      deliveryLockMs: 2_000,
      restartDelayMs: 100,
    });
    cleanups.push(() => threads.stop());
    threads.start();
    await waitFor(async () => (await threads.readiness())['deliver-1']?.ready, {
      timeoutMs: 15_000,
      what: 'the delivery thread to be ready',
    });

    const batch = deliveries(5);
    await h.queue.enqueue(batch);
    // Killed while it sends the held one, the others answered and marked sent (a kill between a
    // receiver's answer and the mark would send that one again, with the same webhook-id:
    // docs/guarantees.md).
    const others = batch.filter((n) => n.id !== held);
    await waitFor(
      async () =>
        heldOnce &&
        (await Promise.all(others.map((n) => h.queue.state(n.id)))).every((s) => s === 'sent'),
      { timeoutMs: 15_000, what: 'the held send in flight and the others marked sent' },
    );
    expect(await h.queue.state(held)).toBe('sending');
    await threads.kill('deliver-1');

    // Started again, it takes the batch over once the dead thread's lock lapses.
    const ids = batch.map((n) => n.id).sort();
    await waitFor(() => answered.length >= 5 && [...answered].sort().join() === ids.join(), {
      timeoutMs: 20_000,
      what: `every delivery answered (have ${String(answered.length)})`,
    });
    expect(
      await metrics.registry.getSingleMetricAsString('statuswatch_thread_restarts_total'),
    ).toContain('statuswatch_thread_restarts_total{thread="deliver-1"} 1');
    // Each webhook-id answered once; the one the dead thread held was sent again, the same id.
    expect([...answered].sort()).toEqual(ids);
    const sends = rx.received.map(webhookIdOf);
    expect(sends.filter((id) => id === held)).toHaveLength(2);
    expect(await threads.readiness()).toEqual({ 'deliver-1': { ready: true } });
  }, 60_000);

  it('spare delivery threads start when batches pile up, deliver each one once, end when the queue stays empty, and keep their counts in /metrics', async () => {
    expect(existsSync(fileURLToPath(ENTRY)), 'run "npm run build" first').toBe(true);
    const h = await harness();
    const rx = await startReceiver(() => ({ status: 200 }), '/hooks/statuswatch');
    cleanups.push(() => rx.close());
    const threads = await twoSpares(h, rx);
    const seen: string[] = [];
    const spares = new SpareThreads({
      backlog: () => h.queue.batches.getWaitingCount(),
      start: () => {
        seen.push('start');
        threads.startSpares();
      },
      stop: () => {
        seen.push('stop');
        threads.endSpares();
      },
      log: silentLogger(),
      limits: { startBatches: 3, idleMs: 1_000 },
      checkMs: 50,
    });
    cleanups.push(async () => {
      spares.close();
      await Promise.resolve();
    });
    threads.start();
    spares.run();
    // Nothing waits: no thread runs (a daemon at rest is its main thread alone).
    expect(await threads.readiness()).toEqual({});
    expect(threads.sparesRunning).toEqual([]);

    // 20 batch jobs of 100 and nobody else to take them: the spares start and send them all.
    const batch = deliveries(2_000, 'spare');
    await h.queue.enqueue(batch);
    await waitFor(() => threads.sparesRunning.length === 2, {
      timeoutMs: 5_000,
      what: 'the spares to be started',
    });
    const ids = new Set(batch.map((n) => n.id));
    await waitFor(() => new Set(rx.received.map(webhookIdOf)).size === ids.size, {
      timeoutMs: 30_000,
      what: `every delivery sent (have ${String(rx.received.length)})`,
    });
    const sent = rx.received.map(webhookIdOf);
    expect(sent.filter((id) => id === undefined || !ids.has(id))).toEqual([]);
    expect(sent, 'each delivery sent once').toHaveLength(ids.size);

    // The queue stays empty: they end, and what they counted stays in the merged metrics.
    await waitFor(() => threads.sparesRunning.length === 0 && seen.join() === 'start,stop', {
      timeoutMs: 10_000,
      what: 'the spares to be ended',
    });
    await waitFor(async () => (await threads.metrics()).length === 1, {
      timeoutMs: 10_000,
      what: 'both spares to have ended and handed their counters over',
    });
    expect(await threads.readiness()).toEqual({});
    const merged = await AggregatorRegistry.aggregate(await threads.metrics()).metrics();
    expect(merged).toContain(
      'statuswatch_deliveries_total{channel_type="webhook",outcome="sent",reason=""} 2000',
    );
    expect(merged).not.toContain('statuswatch_thread_heap_bytes');

    // Deliveries pile up again: the spares start again, and the counts go on from 2,000.
    const more = deliveries(500, 'again');
    await h.queue.enqueue(more);
    await waitFor(() => rx.received.length === 2_500, {
      timeoutMs: 30_000,
      what: `the second wave sent (have ${String(rx.received.length)})`,
    });
    await waitFor(() => seen.join() === 'start,stop,start,stop', {
      timeoutMs: 10_000,
      what: 'the spares to be started and ended again',
    });
    await waitFor(async () => (await threads.metrics()).length === 1, {
      timeoutMs: 10_000,
      what: 'the second wave handed over',
    });
    expect(await AggregatorRegistry.aggregate(await threads.metrics()).metrics()).toContain(
      'statuswatch_deliveries_total{channel_type="webhook",outcome="sent",reason=""} 2500',
    );
    expect(new Set(rx.received.map(webhookIdOf)).size).toBe(2_500);
  }, 90_000);

  it('a cycle handed off with enough transitions starts the spares at once, before it is routed; a smaller one does not', async () => {
    const h = await harness();
    const handoff = new Handoff(h.tr.redis, h.tr.keys);
    cleanups.push(() => handoff.close());
    const seen: string[] = [];
    const spares = new SpareThreads({
      // The backlog is never read here (no run()): the hint alone starts them.
      backlog: () => Promise.resolve(0),
      start: () => seen.push('start'),
      stop: () => seen.push('stop'),
      log: silentLogger(),
    });
    handoff.whenLarge(3, (count) => {
      spares.expect(count);
    });
    const cycle = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) =>
        transition('incident.opened', {
          id: `t${tag}${String(i).padStart(4, '0')}0123456789`,
          subject: `incident:${tag}-${String(i)}`,
        }),
      );
    await handoff.enqueue(cycle(2, 'small'));
    expect(seen).toEqual([]);
    await handoff.enqueue(cycle(3, 'large'));
    expect(seen).toEqual(['start']);
    // Already started: not again.
    await handoff.enqueue(cycle(5, 'larger'));
    expect(seen).toEqual(['start']);
    expect(await handoff.queue.getWaitingCount()).toBe(3);
  }, 30_000);

  it('stopping (SIGTERM) while spares deliver drains them: what they sent is marked sent, the rest is sent once by the next worker', async () => {
    expect(existsSync(fileURLToPath(ENTRY)), 'run "npm run build" first').toBe(true);
    const h = await harness();
    // A slow receiver: the spares have batches in flight when the stop comes.
    const rx = await startReceiver(() => ({ status: 200, delayMs: 40 }), '/hooks/statuswatch');
    cleanups.push(() => rx.close());
    const threads = await twoSpares(h, rx);
    threads.start();
    threads.startSpares();
    const batch = deliveries(1_500, 'drain');
    await h.queue.enqueue(batch);
    await waitFor(() => rx.received.length >= 100, {
      timeoutMs: 20_000,
      what: `the spares sending (have ${String(rx.received.length)})`,
    });
    await threads.stop();
    const sentByThem = new Set(rx.received.map(webhookIdOf));
    expect(sentByThem.size, 'nothing sent twice by the spares').toBe(rx.received.length);
    expect(sentByThem.size, 'the stop came mid-storm').toBeLessThan(batch.length);
    // Drained: every delivery they sent is marked sent, none is left claimed ("sending").
    const states = await Promise.all(batch.map((n) => h.queue.state(n.id)));
    expect(states.filter((s) => s === 'sending')).toEqual([]);
    batch.forEach((n, i) => {
      if (sentByThem.has(n.id)) expect(states[i]).toBe('sent');
    });

    // The next worker (a restarted daemon) sends the rest, each once.
    h.startWorker(() => h.registry({ hook: webhookChannel(rx.url) }));
    await waitFor(() => new Set(rx.received.map(webhookIdOf)).size === batch.length, {
      timeoutMs: 60_000,
      what: `every delivery sent (have ${String(new Set(rx.received.map(webhookIdOf)).size)})`,
    });
    expect(rx.received).toHaveLength(batch.length);
  }, 120_000);
});
