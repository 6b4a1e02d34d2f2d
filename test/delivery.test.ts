import { Worker } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchOwner } from '../src/delivery/ledger.js';
import { ORDER_HORIZON_MS } from '../src/delivery/order.js';
import { rankOf as rank } from '../src/delivery/rules.js';
import { UNKNOWN_CHANNEL_GRACE_MS } from '../src/delivery/worker.js';
import { DELIVERIES_QUEUE, type BatchJobData } from '../src/delivery/queue.js';
import type { Notification } from '../src/notify/types.js';
import {
  deliveryHarness,
  spawnDeliveryWorker,
  verifyWebhook,
  webhookChannel,
  webhookIdOf,
  type ChildWorker,
  type DeliveryHarness,
} from './helpers/delivery.js';
import {
  notification,
  startReceiver,
  transition,
  type Receiver,
  type ReceivedRequest,
  type Reply,
} from './notify-helpers.js';
import { dieHoldingJob } from './helpers/stall.js';
import { waitFor } from './helpers/wait.js';

let h: DeliveryHarness | undefined;
const receivers: Receiver[] = [];
const children: ChildWorker[] = [];

afterEach(async () => {
  await Promise.allSettled(children.splice(0).map((c) => c.kill()));
  await h?.close();
  h = undefined;
  await Promise.allSettled(receivers.splice(0).map((r) => r.close()));
});

async function receiver(reply: (req: ReceivedRequest, index: number) => Reply): Promise<Receiver> {
  const r = await startReceiver(reply, '/hooks/statuswatch');
  receivers.push(r);
  return r;
}

/** One event delivery to channel `hook` (ids are unique per test thanks to the Redis prefix). */
function delivery(kindSuffix = 'a', channel = 'hook'): Notification {
  // Each its own incident (deliveries of one lifecycle on a channel go out in order).
  const t = transition('incident.opened', {
    id: `tdelivery${kindSuffix}0123456789`,
    subject: `incident:d-${kindSuffix}`,
  });
  return notification([t], {
    id: `${t.id}:payments:${channel}`,
    channel,
    createdAt: Date.now(),
  });
}

const fast = { backoff: (): number => 50 };
const BATCH_FAILED =
  'delivery batch failed before this delivery was confirmed (it may have been sent): ';

describe('delivery queue → webhook receiver (real Redis, real HTTP)', () => {
  it('retries 500, 500 then delivers once: three requests, one webhook-id, all signatures valid', async () => {
    h = await deliveryHarness();
    const rx = await receiver((_req, i) => (i < 2 ? { status: 500 } : { status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);
    const n = delivery();

    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'sent');

    expect(rx.received).toHaveLength(3);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id, n.id]);
    const payloads = rx.received.map(verifyWebhook);
    expect(payloads[0]).toMatchObject({
      type: 'incident.opened',
      data: { eventId: n.transitions[0]!.id, subscription: 'payments' },
    });
    expect(payloads[1]).toEqual(payloads[0]);
    expect(payloads[2]).toEqual(payloads[0]);
    expect(w.outcomes.map((o) => [o.outcome, o.attempt, o.reason, o.notification.id])).toEqual([
      ['retry', 1, 'server', n.id],
      ['retry', 2, 'server', n.id],
      ['sent', 3, null, n.id],
    ]);
    expect(await h.queue.state(n.id)).toBe('sent');
  });

  it('honours a 429 Retry-After: 2 (second attempt ≥ 2 s after the first)', async () => {
    h = await deliveryHarness();
    const at: number[] = [];
    const rx = await receiver((_req, i) => {
      at.push(Date.now());
      return i === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 };
    });
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    // Default backoff (retryDelay): without Retry-After the first retry would wait 0.5–1.5 s.
    const w = h.startWorker(() => registry);
    const n = delivery();

    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'sent', 10_000);

    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id]);
    for (const req of rx.received) expect(verifyWebhook(req)).toBeTruthy();
    expect(at).toHaveLength(2);
    const gap = at[1]! - at[0]!;
    expect(gap).toBeGreaterThanOrEqual(1_950);
    expect(gap).toBeLessThan(5_000);
    expect(w.outcomes.map((o) => [o.outcome, o.reason])).toEqual([
      ['retry', 'rate_limited'],
      ['sent', null],
    ]);
  });

  it('a delivery still failing an hour after its first failure is a dead letter, attempts left or not', async () => {
    h = await deliveryHarness();
    let shift = 0;
    const rx = await receiver((_req, index) => {
      // The batch's attempt and a retry; the next retry comes an hour later (the receiver's
      // long Retry-After, say).
      if (index === 2) shift = 61 * 60_000;
      return { status: 503 };
    });
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, { ...fast, now: () => Date.now() + shift });
    const n = delivery('span');
    await h.queue.enqueue([n]);
    const dead = await w.waitForOutcome((o) => o.outcome === 'dead', 10_000);
    expect(dead.attempt).toBe(3);
    const [letter] = await waitFor(async () => {
      const all = await h!.queue.deadLetters();
      return all.length > 0 && all;
    });
    expect(letter?.failedReason).toMatch(/retried for an hour/);
    expect(rx.received).toHaveLength(3);
  });

  it('a 404 is a dead letter at once; retryDeadLetter delivers it once more with the same webhook-id', async () => {
    h = await deliveryHarness();
    let fixed = false;
    const rx = await receiver(() => (fixed ? { status: 200 } : { status: 404 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);
    const n = delivery();

    await h.queue.enqueue([n]);
    const dead = await w.waitForOutcome((o) => o.outcome === 'dead');
    expect(dead).toMatchObject({ reason: 'client', attempt: 1, channelType: 'webhook' });
    expect(rx.received).toHaveLength(1);
    const letters = await waitFor(async () => {
      const list = await h!.queue.deadLetters();
      return list.length > 0 ? list : undefined;
    });
    expect(letters).toEqual([
      {
        id: n.id,
        subscription: 'payments',
        channel: 'hook',
        kinds: ['incident.opened'],
        attempts: 1,
        failedReason: expect.stringContaining('HTTP 404') as unknown,
        failedAt: expect.any(Number) as unknown,
      },
    ]);
    expect(w.outcomes.map((o) => o.outcome)).toEqual(['dead']);

    fixed = true;
    expect(await h.queue.retryDeadLetter('no-such-delivery')).toBe(false);
    expect(await h.queue.retryDeadLetter(n.id)).toBe(true);
    await w.waitForOutcome((o) => o.outcome === 'sent');

    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id]);
    for (const req of rx.received) expect(verifyWebhook(req)).toBeTruthy();
    expect(await h.queue.deadLetters()).toEqual([]);
    expect(w.outcomes.map((o) => o.outcome)).toEqual(['dead', 'sent']);
    // Delivered: no longer a dead letter, so nothing to retry.
    await waitFor(async () => (await h!.queue.state(n.id)) === 'sent');
    expect(await h.queue.retryDeadLetter(n.id)).toBe(false);
  });

  it('a retried dead letter gets a fresh set of attempts', async () => {
    h = await deliveryHarness(2);
    const rx = await receiver((_req, i) => (i < 3 ? { status: 503 } : { status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);
    const n = delivery();

    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'dead');
    expect((await waitFor(async () => (await h!.queue.deadLetters())[0])).attempts).toBe(2);

    expect(await h.queue.retryDeadLetter(n.id)).toBe(true);
    // The first final outcome after the retry (sent with fresh attempts; dead without).
    await waitFor(() => w.outcomes.slice(2).find((o) => o.outcome !== 'retry'));

    expect(w.outcomes.map((o) => [o.outcome, o.attempt])).toEqual([
      ['retry', 1],
      ['dead', 2],
      ['retry', 1],
      ['sent', 2],
    ]);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id, n.id, n.id]);
  });

  it('enqueueing the same notification twice (or again after delivery) delivers once', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    // One at a time, in order: the sentinel enqueued last is delivered last.
    const w = h.startWorker(() => registry, { ...fast, concurrency: 1 });
    const n = delivery('dup');
    const sentinel = delivery('sentinel');

    await h.queue.enqueue([n, n]);
    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.notification.id === n.id && o.outcome === 'sent');
    await h.queue.enqueue([n]);
    await h.queue.enqueue([sentinel]);
    await w.waitForOutcome((o) => o.notification.id === sentinel.id && o.outcome === 'sent');

    expect(rx.received.map(webhookIdOf)).toEqual([n.id, sentinel.id]);
    expect(w.outcomes.map((o) => `${o.outcome} ${o.notification.id}`)).toEqual([
      `sent ${n.id}`,
      `sent ${sentinel.id}`,
    ]);
    expect(await h.queue.state(n.id)).toBe('sent');
    expect(await h.queue.batches.getJobCounts('waiting', 'delayed', 'active', 'failed')).toEqual({
      waiting: 0,
      delayed: 0,
      active: 0,
      failed: 0,
    });
  });

  it('a delivery to a channel this replica does not know (a rolling upgrade adding it): retried, and sent once the channel is known', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const old = h.registry({ other: webhookChannel(rx.url) });
    const upgraded = h.registry({ hook: webhookChannel(rx.url), other: webhookChannel(rx.url) });
    let current = old;
    const w = h.startWorker(() => current, fast);
    const n = delivery('upgrade');
    await h.queue.enqueue([n]);
    const retried = await w.waitForOutcome((o) => o.notification.id === n.id);
    expect(retried).toMatchObject({ outcome: 'retry', reason: 'config' });
    current = upgraded; // reloaded with the new config
    await w.waitForOutcome((o) => o.notification.id === n.id && o.outcome === 'sent', 10_000);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id]);
    expect(await h.queue.deadLetters()).toEqual([]);
  });

  it('a channel removed by a config reload makes a dead letter with reason config (past the grace of an unknown channel)', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const before = h.registry({ hook: webhookChannel(rx.url) });
    const after = h.registry({ other: webhookChannel(rx.url) });
    let current = before;
    const w = h.startWorker(() => current, fast);
    const first = delivery('first');
    const orphan = { ...delivery('orphan'), createdAt: Date.now() - UNKNOWN_CHANNEL_GRACE_MS };

    await h.queue.enqueue([first]);
    await w.waitForOutcome((o) => o.notification.id === first.id && o.outcome === 'sent');
    current = after; // reloaded without "hook"
    await h.queue.enqueue([orphan]);
    const dead = await w.waitForOutcome((o) => o.notification.id === orphan.id);

    expect(dead).toMatchObject({ outcome: 'dead', reason: 'config', channelType: 'unknown' });
    expect(dead.error).toContain('"hook" is not configured');
    expect(rx.received.map(webhookIdOf)).toEqual([first.id]);
    const letters = await waitFor(async () => {
      const list = await h!.queue.deadLetters();
      return list.length > 0 ? list : undefined;
    });
    expect(letters.map((l) => [l.id, l.channel, l.failedReason])).toEqual([
      [orphan.id, 'hook', 'channel "hook" is not configured (any more)'],
    ]);
  });

  it('a worker process killed mid-delivery: its replacement delivers once, same webhook-id', async () => {
    h = await deliveryHarness();
    const answered: number[] = [];
    const rx = await receiver((_req, i) => {
      if (i === 0) return { status: 200, hang: true }; // held open; the sender dies meanwhile
      answered.push(i);
      return { status: 200 };
    });
    const channels = { hook: webhookChannel(rx.url) };
    const child = await spawnDeliveryWorker({
      prefix: h.tr.prefix,
      channels,
      lockDurationMs: 2_000,
    });
    children.push(child);
    const n = delivery('killed');

    await h.queue.enqueue([n]);
    await rx.waitFor(1, 10_000);
    expect(await h.queue.state(n.id)).toBe('sending');
    expect(await child.kill()).toBe('SIGKILL');

    const registry = h.registry(channels);
    const w = h.startWorker(() => registry, { lockDurationMs: 2_000 });
    const sent = await w.waitForOutcome((o) => o.outcome === 'sent', 20_000);

    expect(sent.notification.id).toBe(n.id);
    expect(answered).toEqual([1]);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id]);
    for (const req of rx.received) expect(verifyWebhook(req)).toBeTruthy();
    await waitFor(async () => (await h!.queue.state(n.id)) === 'sent');
    expect(w.outcomes.map((o) => o.outcome)).toEqual(['sent']);
    expect(rx.received).toHaveLength(2);
  });
});

describe('batched deliveries: one sender per delivery id (real Redis, real HTTP)', () => {
  /** `count` distinct deliveries to channel `hook`. */
  function many(count: number, tag: string): Notification[] {
    return Array.from({ length: count }, (_, i) => delivery(`${tag}${String(i)}`));
  }

  it('250 deliveries in one enqueue (three batch jobs): every webhook-id answered once; a 500 retried, a 404 dead', async () => {
    h = await deliveryHarness();
    const batch = many(250, 'bulk');
    const flaky = batch[17]!.id;
    const gone = batch[203]!.id;
    let flakyCalls = 0;
    const rx = await receiver((req) => {
      const id = webhookIdOf(req);
      if (id === gone) return { status: 404 };
      if (id === flaky && ++flakyCalls === 1) return { status: 500 };
      return { status: 200 };
    });
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);

    await h.queue.enqueue(batch);
    await waitFor(() => w.outcomes.filter((o) => o.outcome !== 'retry').length === 250, {
      timeoutMs: 20_000,
      what: '250 final outcomes',
    });

    const perId = new Map<string, number>();
    for (const req of rx.received) {
      expect(verifyWebhook(req)).toBeTruthy();
      const id = webhookIdOf(req)!;
      perId.set(id, (perId.get(id) ?? 0) + 1);
    }
    expect(perId.size).toBe(250);
    expect([...perId].filter(([, n]) => n !== 1)).toEqual([[flaky, 2]]);
    expect(rx.received).toHaveLength(251);
    expect(w.outcomes.filter((o) => o.outcome === 'sent')).toHaveLength(249);
    expect(
      w.outcomes
        .filter((o) => o.outcome !== 'sent')
        .map((o) => [o.outcome, o.notification.id, o.attempt]),
    ).toEqual(
      expect.arrayContaining([
        ['retry', flaky, 1],
        ['dead', gone, 1],
      ]) as unknown,
    );
    expect(
      w.outcomes.find((o) => o.notification.id === flaky && o.outcome === 'sent')?.attempt,
    ).toBe(2);
    expect((await h.queue.deadLetters()).map((l) => [l.id, l.attempts])).toEqual([[gone, 1]]);
    expect(await h.queue.state(gone)).toBe('dead');
    expect(await h.queue.state(flaky)).toBe('sent');
  });

  it('the same deliveries enqueued three times, two workers racing: each webhook-id answered once', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const a = h.startWorker(() => registry, fast);
    const b = h.startWorker(() => registry, fast);
    const batch = many(120, 'race');

    await Promise.all([
      h.queue.enqueue(batch),
      h.queue.enqueue(batch),
      h.queue.enqueue([...batch].reverse()),
    ]);
    await waitFor(
      async () => {
        const counts = await h!.queue.batches.getJobCounts('waiting', 'active');
        return counts.waiting === 0 && counts.active === 0;
      },
      { timeoutMs: 20_000, what: 'every batch job done' },
    );
    const sentinel = delivery('race-sentinel');
    await h.queue.enqueue([sentinel]);
    await waitFor(() => rx.received.some((r) => webhookIdOf(r) === sentinel.id), {
      what: 'the sentinel',
    });

    await waitFor(() => a.outcomes.length + b.outcomes.length >= 121, { what: '121 outcomes' });
    const ids = rx.received.map(webhookIdOf);
    expect(ids).toHaveLength(121);
    expect(new Set(ids).size).toBe(121);
    const sent = [...a.outcomes, ...b.outcomes].filter((o) => o.outcome === 'sent');
    expect(sent).toHaveLength(121);
    expect(a.outcomes.length).toBeGreaterThan(0);
    expect(b.outcomes.length).toBeGreaterThan(0);
  });

  it('a batch failing on its last attempt hands its unsent deliveries over as dead letters; retrying one delivers it', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    let broken = true;
    const w = h.startWorker(() => {
      if (broken) throw new Error('registry unavailable');
      return registry;
    }, fast);
    const [first, second] = many(2, 'lost');
    // One attempt only, so the batch fails at once (enqueue gives batches ten).
    await h.queue.batches.add('batch', { notifications: [first!, second!] }, { attempts: 1 });

    const letters = await waitFor(async () => {
      const list = await h!.queue.deadLetters();
      return list.length === 2 ? list : undefined;
    });
    expect(letters.map((l) => [l.id, l.attempts, l.failedReason]).sort()).toEqual(
      [
        [first!.id, 1, `${BATCH_FAILED}registry unavailable`],
        [second!.id, 1, `${BATCH_FAILED}registry unavailable`],
      ].sort(),
    );
    expect(w.outcomes.map((o) => [o.outcome, o.reason]).sort()).toEqual([
      ['dead', 'internal'],
      ['dead', 'internal'],
    ]);
    expect(await h.queue.state(first!.id)).toBe('dead');
    expect(rx.received).toHaveLength(0);

    broken = false;
    expect(await h.queue.retryDeadLetter(first!.id)).toBe(true);
    await w.waitForOutcome((o) => o.outcome === 'sent');
    expect(rx.received.map(webhookIdOf)).toEqual([first!.id]);
    expect(await h.queue.state(first!.id)).toBe('sent');
    expect((await h.queue.deadLetters()).map((l) => l.id)).toEqual([second!.id]);
    // Enqueueing the retried one again sends nothing more.
    await h.queue.enqueue([first!]);
    expect(await h.queue.retryDeadLetter(first!.id)).toBe(false);
    const sentinel = delivery('lost-sentinel');
    await h.queue.enqueue([sentinel]);
    await w.waitForOutcome((o) => o.notification.id === sentinel.id);
    expect(rx.received.map(webhookIdOf)).toEqual([first!.id, sentinel.id]);
  });

  it('a batch that failed without handing over (its worker gone): claimed and unclaimed deliveries are listed, sent ones not; retry delivers', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const [claimed, sent, untouched] = many(3, 'orphan');
    // A bare BullMQ worker stands in for a process that claimed, sent one and died for good.
    const dying = new Worker<BatchJobData>(
      DELIVERIES_QUEUE,
      async (job) => {
        await h!.queue.ledger.claim([claimed!.id, sent!.id], batchOwner(job.id ?? ''));
        await h!.queue.ledger.markSent(sent!.id);
        throw new Error('worker lost');
      },
      { connection: h.tr.redis, prefix: h.tr.keys.tag },
    );
    const job = await h.queue.batches.add(
      'batch',
      { notifications: [claimed!, sent!, untouched!] },
      { attempts: 1 },
    );
    await waitFor(async () => (await job.isFailed()) || undefined, { what: 'the batch failed' });
    await dying.close();

    const letters = await h.queue.deadLetters();
    expect(letters.map((l) => [l.id, l.failedReason]).sort()).toEqual(
      [
        [claimed!.id, 'worker lost'],
        [untouched!.id, 'worker lost'],
      ].sort(),
    );
    expect(await h.queue.retryDeadLetter(sent!.id)).toBe(false);

    const w = h.startWorker(() => registry, fast);
    expect(await h.queue.retryDeadLetter(claimed!.id)).toBe(true);
    expect(await h.queue.retryDeadLetter(claimed!.id)).toBe(false);
    await w.waitForOutcome((o) => o.notification.id === claimed!.id && o.outcome === 'sent');
    expect(rx.received.map(webhookIdOf)).toEqual([claimed!.id]);
    expect((await h.queue.deadLetters()).map((l) => l.id)).toEqual([untouched!.id]);
  });

  it('a batch whose process died twice holding it is still sent (BullMQ fails a job that stalls more than once by default)', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const [n] = many(1, 'stalled');
    await h.queue.enqueue([n!]);
    // Two processes in turn take the batch and die with it, before claiming: their lock lapses
    // unrenewed and the next worker's stalled-job check finds it (one stall each).
    await dieHoldingJob(DELIVERIES_QUEUE, { connection: h.tr.redis, prefix: h.tr.keys.tag }, 2);
    const w = h.startWorker(() => registry, { ...fast, lockDurationMs: 300 });
    const sent = await w.waitForOutcome((o) => o.outcome === 'sent', 10_000);
    expect(sent.notification.id).toBe(n!.id);
    expect(rx.received.map(webhookIdOf)).toEqual([n!.id]);
    expect(await h.queue.batches.getFailedCount()).toBe(0);
    expect(await h.queue.deadLetters()).toEqual([]);
  });

  it('a batch re-run finds a hand-off whose retry job was never added, and adds it: delivered once', async () => {
    h = await deliveryHarness();
    const [handed, plain] = many(2, 'repair');
    // `plain` fails once more on the re-run (so it takes the normal retry path beside the repair).
    let plainCalls = 0;
    const rx = await receiver((req) =>
      webhookIdOf(req) === plain!.id && ++plainCalls === 1 ? { status: 503 } : { status: 200 },
    );
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    // First attempt: claims both, hands `handed` off, then dies before adding its retry job.
    const crashing = new Worker<BatchJobData>(
      DELIVERIES_QUEUE,
      async (job) => {
        const owner = batchOwner(job.id ?? '');
        await h!.queue.ledger.claim([handed!.id, plain!.id], owner);
        await h!.queue.ledger.handOff(handed!.id, owner);
        throw new Error('crashed between hand-off and job');
      },
      { connection: h.tr.redis, prefix: h.tr.keys.tag, autorun: false },
    );
    const job = await h.queue.batches.add(
      'batch',
      { notifications: [handed!, plain!] },
      { attempts: 3, backoff: { type: 'fixed', delay: 200 } },
    );
    const run = crashing.run();
    await waitFor(async () => ((await job.getState()) === 'delayed' ? true : undefined), {
      what: 'the first attempt failed',
    });
    await crashing.close();
    await run;

    const w = h.startWorker(() => registry, fast);
    await waitFor(() => w.outcomes.filter((o) => o.outcome === 'sent').length === 2, {
      timeoutMs: 15_000,
      what: 'both delivered',
    });

    expect(rx.received.map(webhookIdOf).sort()).toEqual([handed!.id, plain!.id, plain!.id].sort());
    expect(await h.queue.state(handed!.id)).toBe('sent');
    expect(await h.queue.state(plain!.id)).toBe('sent');
  });

  it('an old dead letter with the same id makes way when the delivery fails again after its marks expired', async () => {
    h = await deliveryHarness(2);
    // 500, 500 (dead), then 500 once more and 200 on the second life.
    let failures = 3;
    const rx = await receiver(() => (failures-- > 0 ? { status: 500 } : { status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);
    const n = delivery('expired');

    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'dead');
    expect(await h.queue.state(n.id)).toBe('dead');
    // Weeks later its ledger entry is gone while the old dead letter is still kept.
    await h.tr.redis.del(h.tr.keys.key('delivery', n.id));
    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'sent');

    expect(w.outcomes.map((o) => [o.outcome, o.attempt])).toEqual([
      ['retry', 1],
      ['dead', 2],
      ['retry', 1],
      ['sent', 2],
    ]);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id, n.id, n.id]);
    expect(await h.queue.deadLetters()).toEqual([]);
    expect(await h.queue.state(n.id)).toBe('sent');
  });

  it('a dead letter whose delivery was sent since (re-enqueued after its marks expired) is stale: not listed, not retried', async () => {
    h = await deliveryHarness(2);
    let failures = 2;
    const rx = await receiver(() => (failures-- > 0 ? { status: 500 } : { status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, fast);
    const n = delivery('stale');

    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'dead');
    expect((await h.queue.deadLetters()).map((l) => l.id)).toEqual([n.id]);
    await h.tr.redis.del(h.tr.keys.key('delivery', n.id));
    await h.queue.enqueue([n]);
    await w.waitForOutcome((o) => o.outcome === 'sent');

    expect(await h.queue.deadLetters()).toEqual([]);
    expect(await h.queue.retryDeadLetter(n.id)).toBe(false);
    const sentinel = delivery('stale-sentinel');
    await h.queue.enqueue([sentinel]);
    await w.waitForOutcome((o) => o.notification.id === sentinel.id);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id, n.id, sentinel.id]);
    expect(await h.queue.state(n.id)).toBe('sent');
  });

  it('a hand-off whose retry job cannot be added is undone: the batch holds the delivery again', async () => {
    h = await deliveryHarness();
    // BullMQ refuses an integer-like custom job id: a retry job add that fails after the hand-off.
    const n = { ...delivery('undo'), id: '4242' };
    const owner = batchOwner('batch-under-test');
    expect(await h.queue.ledger.claim([n.id], owner)).toEqual(['new']);
    await expect(h.queue.addRetryJob(n, 'batch-under-test', 0)).rejects.toThrow(/integer/i);
    expect(await h.queue.ledger.entry(n.id)).toEqual({ state: 'claimed', owner });
    expect(await h.queue.ledger.claim([n.id], owner)).toEqual(['mine']);
  });
});

describe('order within a lifecycle on a route (real Redis, real HTTP)', () => {
  /** The opening and the closing of one incident to channel `hook`, the closing `laterMs` after. */
  function openingAndClosing(
    tag: string,
    laterMs: number,
  ): { open: Notification; close: Notification } {
    const at = Date.now();
    const [open, close] = (['incident.opened', 'incident.resolved'] as const).map((kind, i) => {
      const t = transition(kind, {
        id: `${tag}${kind.replace('.', '')}`.padEnd(32, '0'),
        subject: `incident:${tag}`,
      });
      return notification([t], {
        id: `${t.id}:payments:hook`,
        channel: 'hook',
        createdAt: at + i * laterMs,
      });
    });
    return { open: open!, close: close! };
  }

  it('the index: a delivery sees only listings ranked before it (a closing after its opening, a reopening after its closing), within the horizon', async () => {
    h = await deliveryHarness();
    const { ledger } = h.queue;
    const field = 'payments|hook|stripe|incident:inc-1';
    const T = Date.UTC(2026, 10, 27, 9, 0, 0);
    // An opening (T), its closing (T + 60 s) and a reopening (T + 120 s), each handed to a job
    // of its own; one more handed off without a listing.
    expect(await ledger.handOff('t-open:p:h', 'b:1', [{ field, rank: rank(T, false) }])).toBe(true);
    expect(
      await ledger.handOff('t-close:p:h', 'b:2', [{ field, rank: rank(T + 60_000, true) }]),
    ).toBe(true);
    expect(
      await ledger.handOff('t-reopen:p:h', 'b:3', [{ field, rank: rank(T + 120_000, false) }]),
    ).toBe(true);
    expect(await ledger.handOff('t-other:p:h', 'b:1')).toBe(true);
    const now = T + 120_000;
    expect(
      await ledger.listedBefore(
        [
          { field, rank: rank(T, false) },
          // A closing routed in the opening's own cycle ranks after it.
          { field, rank: rank(T, true) },
          { field, rank: rank(T + 60_000, true) },
          { field, rank: rank(T + 120_000, false) },
          { field: 'payments|hook|stripe|incident:inc-2', rank: rank(now, true) },
        ],
        now,
      ),
    ).toEqual([[], ['t-open:p:h'], ['t-open:p:h'], ['t-open:p:h', 't-close:p:h'], []]);
    // Past the horizon a listing holds nobody back.
    const late = T + ORDER_HORIZON_MS + 90_000;
    expect(await ledger.listedBefore([{ field, rank: rank(late, false) }], late)).toEqual([
      ['t-reopen:p:h'],
    ]);
    await ledger.unlist(field, ['t-reopen:p:h']);
    expect(await ledger.listedBefore([{ field, rank: rank(late, false) }], late)).toEqual([[]]);
    expect((await ledger.entries(['t-open:p:h', 't-other:p:h'])).map((e) => e.state)).toEqual([
      'retry_job',
      'retry_job',
    ]);
  });

  it('a closing whose batch finds its opening retrying waits in a job of its own, looking again until the opening is sent: the receiver gets the opening, then the closing', async () => {
    h = await deliveryHarness();
    const { open, close } = openingAndClosing('tordering', 1000);
    // The opening is refused six times (retried every 50 ms), long after the closing's first
    // look (the closing looks again every 30 ms).
    let refusals = 0;
    const rx = await receiver((req) =>
      webhookIdOf(req) === open.id && ++refusals <= 6 ? { status: 503 } : { status: 200 },
    );
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    let looks = 0;
    const w = h.startWorker(() => registry, {
      ...fast,
      orderWaitMs: () => {
        looks += 1;
        return 30;
      },
    });
    await h.queue.enqueue([open]);
    await rx.waitFor(1, 10_000);
    await h.queue.enqueue([close]);
    await waitFor(() => w.outcomes.filter((o) => o.outcome === 'sent').length === 2, {
      timeoutMs: 20_000,
      what: 'both sent',
    });
    // Six refusals and the accepted opening, then the closing, once.
    expect(rx.received.map(webhookIdOf)).toEqual([...Array<string>(7).fill(open.id), close.id]);
    // It waited in its batch once, then in its own job at least once more.
    expect(looks).toBeGreaterThanOrEqual(2);
  });

  it("an opening and its closing in one batch: the closing waits for the opening's attempt, and behind its retry when it failed", async () => {
    h = await deliveryHarness();
    // One cycle: the same createdAt, the closing after the opening.
    const { open, close } = openingAndClosing('tsamebatch', 0);
    let refusals = 0;
    const rx = await receiver((req) =>
      webhookIdOf(req) === open.id && ++refusals <= 2 ? { status: 503 } : { status: 200 },
    );
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, { ...fast, orderWaitMs: () => 30 });
    await h.queue.enqueue([open, close]);
    await waitFor(() => w.outcomes.filter((o) => o.outcome === 'sent').length === 2, {
      timeoutMs: 20_000,
      what: 'both sent',
    });
    expect(rx.received.map(webhookIdOf)).toEqual([open.id, open.id, open.id, close.id]);
  });

  it('a dead opening retried (routed 3 hours ago) is listed again: its closing, routed while the retry is refused, waits for it', async () => {
    h = await deliveryHarness();
    const { open: stale, close } = openingAndClosing('tretrydead', 0);
    const open = { ...stale, createdAt: Date.now() - 3 * 3600_000 };
    // The opening: 404 (a dead letter at once), then, retried, 503 twice, then accepted.
    let opens = 0;
    const rx = await receiver((req) => {
      if (webhookIdOf(req) !== open.id) return { status: 200 };
      opens += 1;
      return { status: opens === 1 ? 404 : opens <= 3 ? 503 : 200 };
    });
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const w = h.startWorker(() => registry, { backoff: () => 300, orderWaitMs: () => 30 });
    await h.queue.enqueue([open]);
    await waitFor(async () => (await h!.queue.deadLetters()).length === 1, {
      what: 'the opening dead',
    });
    expect(await h.queue.retryDeadLetter(open.id)).toBe(true);
    await rx.waitFor(2, 10_000); // the retry's first attempt: 503
    await h.queue.enqueue([close]);
    await waitFor(() => w.outcomes.filter((o) => o.outcome === 'sent').length === 2, {
      timeoutMs: 20_000,
      what: 'both sent',
    });
    expect(rx.received.map(webhookIdOf)).toEqual([open.id, open.id, open.id, open.id, close.id]);
  });

  it("an opening and its closing in one batch: when the opening's attempt fails without a hand-off (its mark refused), the closing is not sent either, and the batch's re-run sends both in order", async () => {
    h = await deliveryHarness();
    const { open, close } = openingAndClosing('tmarkfails', 0);
    const rx = await receiver(() => ({ status: 200 }));
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    // The opening is sent, but its mark is refused (a READONLY reply in a failover): the
    // opening is nowhere the closing could see it waiting.
    const { ledger } = h.queue;
    const markSent = ledger.markSent.bind(ledger);
    let refused = 0;
    vi.spyOn(ledger, 'markSent').mockImplementation(async (id) => {
      if (id === open.id && refused++ === 0)
        throw new Error("READONLY You can't write against a read only replica.");
      return markSent(id);
    });
    const w = h.startWorker(() => registry, { ...fast, orderWaitMs: () => 30 });
    await h.queue.enqueue([open, close]);
    await waitFor(() => w.outcomes.filter((o) => o.outcome === 'sent').length === 2, {
      timeoutMs: 20_000,
      what: 'both sent',
    });
    expect(refused).toBe(2);
    // The opening twice (the re-run cannot know the first reached the receiver; same
    // webhook-id), and the closing after both.
    expect(rx.received.map(webhookIdOf)).toEqual([open.id, open.id, close.id]);
    expect(await h.queue.deadLetters()).toEqual([]);
  });
});
