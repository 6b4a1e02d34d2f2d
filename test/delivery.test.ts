import { afterEach, describe, expect, it } from 'vitest';
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
  const t = transition('incident.opened', { id: `tdelivery${kindSuffix}0123456789` });
  return notification([t], {
    id: `${t.id}:payments:${channel}`,
    channel,
    createdAt: Date.now(),
  });
}

const fast = { backoff: (): number => 50 };

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
    expect(await (await h.queue.queue.getJob(n.id))?.getState()).toBe('completed');
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
    await waitFor(
      async () => (await (await h!.queue.queue.getJob(n.id))?.getState()) === 'completed',
    );
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
    expect(await h.queue.queue.getJobCounts('completed', 'waiting', 'delayed', 'active')).toEqual({
      completed: 2,
      waiting: 0,
      delayed: 0,
      active: 0,
    });
  });

  it('a channel removed by a config reload makes a dead letter with reason config', async () => {
    h = await deliveryHarness();
    const rx = await receiver(() => ({ status: 200 }));
    const before = h.registry({ hook: webhookChannel(rx.url) });
    const after = h.registry({ other: webhookChannel(rx.url) });
    let current = before;
    const w = h.startWorker(() => current, fast);
    const first = delivery('first');
    const orphan = delivery('orphan');

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
    expect(await (await h.queue.queue.getJob(n.id))?.getState()).toBe('active');
    expect(await child.kill()).toBe('SIGKILL');

    const registry = h.registry(channels);
    const w = h.startWorker(() => registry, { lockDurationMs: 2_000 });
    const sent = await w.waitForOutcome((o) => o.outcome === 'sent', 20_000);

    expect(sent.notification.id).toBe(n.id);
    expect(answered).toEqual([1]);
    expect(rx.received.map(webhookIdOf)).toEqual([n.id, n.id]);
    for (const req of rx.received) expect(verifyWebhook(req)).toBeTruthy();
    await waitFor(
      async () => (await (await h!.queue.queue.getJob(n.id))?.getState()) === 'completed',
    );
    expect(w.outcomes.map((o) => o.outcome)).toEqual(['sent']);
    expect(rx.received).toHaveLength(2);
  });
});
