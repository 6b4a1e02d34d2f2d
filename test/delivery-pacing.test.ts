/**
 * Per-destination pacing (real Redis, real local receivers): deliveries to one Slack channel are
 * spaced about a second apart across replicas, a destination's Retry-After holds back only its
 * own deliveries, and another channel's deliveries arrive meanwhile; each delivery arrives once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelConfig } from '../src/config/schema.js';
import type { Notification } from '../src/notify/types.js';
import { deliveryHarness, type DeliveryHarness } from './helpers/delivery.js';
import {
  notification,
  startReceiver,
  transition,
  type Receiver,
  type Reply,
} from './notify-helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Timed {
  receiver: Receiver;
  /** Arrival time (ms) of each request, in order. */
  at: number[];
}

async function timedReceiver(reply?: (index: number) => Reply): Promise<Timed> {
  const at: number[] = [];
  const receiver = await startReceiver((_req, index) => {
    at.push(Date.now());
    return reply?.(index) ?? { status: 200, body: 'ok' };
  });
  cleanups.push(() => receiver.close());
  return { receiver, at };
}

function slack(url: string): ChannelConfig {
  return { type: 'slack', webhookUrl: url };
}

/** `count` deliveries to `channel`, each its own transition. */
function deliveries(channel: string, count: number, tag: string): Notification[] {
  return Array.from({ length: count }, (_, i) =>
    notification(
      [
        transition('incident.opened', {
          id: `t${tag}${String(i).padStart(4, '0')}`,
          // Each its own incident (deliveries of one lifecycle on a channel go out in order).
          subject: `incident:${tag}-${String(i)}`,
        }),
      ],
      {
        id: `t${tag}${String(i).padStart(4, '0')}:payments:${channel}`,
        channel,
        createdAt: Date.now(),
      },
    ),
  );
}

async function harness(): Promise<DeliveryHarness> {
  const h = await deliveryHarness();
  cleanups.push(() => h.close());
  return h;
}

function gaps(times: readonly number[]): number[] {
  return times.slice(1).map((t, i) => t - (times[i] ?? t));
}

describe('per-destination pacing', () => {
  it('spaces one Slack channel about a second apart while another channel is served at once', async () => {
    const h = await harness();
    const a = await timedReceiver();
    const b = await timedReceiver();
    const registry = h.registry({ a: slack(a.receiver.url), b: slack(b.receiver.url) });
    h.startWorker(() => registry);
    await h.queue.enqueue([...deliveries('a', 4, 'a'), ...deliveries('b', 4, 'b')]);
    await a.receiver.waitFor(4, 15_000);
    await b.receiver.waitFor(4, 15_000);
    // Slack's channel limit is about one message a second. The pace spaces the sends' starts; the
    // receiver sees arrivals, which a loaded machine delays unevenly (CI saw one gap of 896 ms),
    // so each gap gets slack while the whole span must hold three full paces (unpaced, the four
    // arrive within a few milliseconds).
    for (const gap of gaps(a.at)) expect(gap).toBeGreaterThanOrEqual(750);
    expect((a.at[3] ?? 0) - (a.at[0] ?? 0)).toBeGreaterThanOrEqual(2_900);
    // Channel b has its own pace: its first message did not wait behind a's queue.
    expect(b.at[0]).toBeLessThan(a.at[1] ?? Infinity);
    expect(a.receiver.received).toHaveLength(4);
    expect(b.receiver.received).toHaveLength(4);
  });

  it('shares the pace across two replicas', async () => {
    const h = await harness();
    const a = await timedReceiver();
    const one = h.registry({ a: slack(a.receiver.url) });
    const two = h.registry({ a: slack(a.receiver.url) });
    h.startWorker(() => one);
    h.startWorker(() => two);
    await h.queue.enqueue(deliveries('a', 2, 'r'));
    await h.queue.enqueue(deliveries('a', 2, 's'));
    await a.receiver.waitFor(4, 15_000);
    for (const gap of gaps(a.at)) expect(gap).toBeGreaterThanOrEqual(750);
    expect((a.at[3] ?? 0) - (a.at[0] ?? 0)).toBeGreaterThanOrEqual(2_900);
    const ids = a.receiver.received.map((r) => JSON.parse(r.body) as { text: string });
    expect(ids).toHaveLength(4);
  });

  it('a throttled channel (429 Retry-After) delays only its own deliveries', async () => {
    const h = await harness();
    // a: the first request is throttled for 3 s, then everything is accepted.
    const a = await timedReceiver((index) =>
      index === 0
        ? { status: 429, headers: { 'retry-after': '3' }, body: 'rate_limited' }
        : { status: 200, body: 'ok' },
    );
    const b = await timedReceiver();
    const registry = h.registry({ a: slack(a.receiver.url), b: slack(b.receiver.url) });
    const worker = h.startWorker(() => registry);
    const first = deliveries('a', 2, 'x');
    await h.queue.enqueue(first);
    await a.receiver.waitFor(1, 10_000);
    const throttledAt = a.at[0] ?? 0;
    // While a is held back, b's deliveries go through.
    await h.queue.enqueue(deliveries('b', 3, 'y'));
    await b.receiver.waitFor(3, 10_000);
    expect(Math.max(...b.at)).toBeLessThan(throttledAt + 3000);
    expect(a.receiver.received).toHaveLength(1);
    // a's deliveries arrive after its Retry-After, each once.
    await a.receiver.waitFor(3, 20_000);
    for (const t of a.at.slice(1)) expect(t - throttledAt).toBeGreaterThanOrEqual(2900);
    await worker.waitForOutcome(
      (o) => o.notification.id === first[0]?.id && o.outcome === 'sent',
      20_000,
    );
    const sent = worker.outcomes.filter((o) => o.outcome === 'sent').map((o) => o.notification.id);
    expect(new Set(sent).size).toBe(sent.length);
    expect(sent.filter((id) => id.includes(':a')).sort()).toEqual(first.map((n) => n.id).sort());
  });
});
