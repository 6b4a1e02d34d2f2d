/**
 * A send that stalls inside its batch (runs past `stallMs`) is handed to a retry job of its own
 * while it goes on. Real Redis, real HTTP receivers on 127.0.0.1:
 * - two replicas: the retry job, taken by the other replica, waits while the stalled send runs
 *   (its mark in Redis) and then finds it sent: the receiver gets the delivery once;
 * - a hand-off that fails (its retry job cannot be added, and its undo fails too, as during a
 *   failover) leaves no delivery nowhere: a failed send fails the batch, whose re-run adds the
 *   missing job; a send that succeeded stays sent, once.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Notification } from '../src/notify/types.js';
import { deliveryHarness, webhookChannel, type DeliveryHarness } from './helpers/delivery.js';
import { notification, transition } from './notify-helpers.js';
import { waitFor } from './helpers/wait.js';

/** Small, so a stall comes soon; the retry job a stall adds used to wait only 1–2 of these. */
const STALL_MS = 200;
/**
 * The first request is answered this late: past the stall and well past the old hand-over delay
 * (at most 2 × STALL_MS), but far below the channel's timeout (10 s, `webhookChannel`).
 */
const SLOW_ANSWER_MS = 1_500;

let h: DeliveryHarness | undefined;
const servers: SlowReceiver[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await h?.close();
  h = undefined;
  await Promise.allSettled(servers.splice(0).map((s) => s.close()));
});

interface SlowReceiver {
  url: string;
  /** webhook-id of each request, in arrival order. */
  ids: string[];
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  requests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP receiver: request `i` is answered `answer(i).status` after `answer(i).afterMs`. */
async function slowReceiver(
  answer: (index: number) => { status: number; afterMs: number },
): Promise<SlowReceiver> {
  const ids: string[] = [];
  const arrivals = new EventEmitter();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      const { status, afterMs } = answer(ids.length);
      ids.push(typeof id === 'string' ? id : '');
      arrivals.emit('request');
      // The receiver's own behaviour (a slow answer), not the test waiting for something.
      setTimeout(() => {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end('');
      }, afterMs);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const receiver: SlowReceiver = {
    url: `http://127.0.0.1:${String(port)}/hooks/statuswatch`,
    ids,
    async requests(count, timeoutMs = 10_000) {
      if (ids.length >= count) return;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          arrivals.off('request', onRequest);
          reject(
            new Error(
              `timed out waiting for ${String(count)} requests (got ${String(ids.length)})`,
            ),
          );
        }, timeoutMs);
        const onRequest = (): void => {
          if (ids.length < count) return;
          clearTimeout(timer);
          arrivals.off('request', onRequest);
          resolve();
        };
        arrivals.on('request', onRequest);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
  servers.push(receiver);
  return receiver;
}

function delivery(tag: string): Notification {
  // Each its own incident (deliveries of one lifecycle on a channel go out in order).
  const t = transition('incident.opened', {
    id: `tstall${tag}0123456789`,
    subject: `incident:stall-${tag}`,
  });
  return notification([t], { id: `${t.id}:payments:hook`, channel: 'hook', createdAt: Date.now() });
}

describe('a stalled send handed over to its retry job (real Redis, real HTTP)', () => {
  it('two replicas: the other replica takes the retry job while the stalled send runs, waits for it, and the receiver gets the delivery once', async () => {
    h = await deliveryHarness();
    const rx = await slowReceiver((i) =>
      i === 0 ? { status: 200, afterMs: SLOW_ANSWER_MS } : { status: 200, afterMs: 0 },
    );
    const registry = h.registry({ hook: webhookChannel(rx.url) });
    const n = delivery('replicas');
    // Replica A takes the batch; its send stalls and is handed to a retry job.
    const a = h.startWorker(() => registry, { stallMs: STALL_MS });
    await h.queue.enqueue([n]);
    await rx.requests(1);
    await waitFor(async () => (await h!.queue.retries.getJob(n.id)) !== undefined, {
      what: 'the stalled send handed to its retry job',
    });
    expect(rx.ids).toEqual([n.id]);
    // A stops taking jobs (its stalled send goes on), so replica B is the one to take the job.
    const aStopped = a.worker.stop();
    const b = h.startWorker(() => registry, { stallMs: STALL_MS });

    await aStopped; // A's send answered (after SLOW_ANSWER_MS) and recorded
    expect(a.outcomes.map((o) => [o.outcome, o.attempt])).toEqual([['sent', 1]]);
    await waitFor(async () => (await h!.queue.retries.getJob(n.id)) === undefined, {
      timeoutMs: 10_000,
      what: 'replica B to finish the retry job',
    });

    expect(rx.ids).toEqual([n.id]);
    expect(b.outcomes).toEqual([]);
    expect(await h.queue.state(n.id)).toBe('sent');
    expect(await h.queue.deadLetters()).toEqual([]);
  });

  describe('its hand-off fails (the retry job cannot be added, and the undo fails too)', () => {
    /**
     * The retry job's add fails in Redis for real: its job key holds a string, so BullMQ's look
     * for an old job with that id gets WRONGTYPE. The undo of the hand-off (`revertHandOff`)
     * cannot be made to fail at that moment with a real Redis: it is stubbed to reject once, as
     * a READONLY reply in a failover would.
     */
    async function failingHandOff(harness: DeliveryHarness, n: Notification): Promise<string> {
      const jobKey = harness.queue.retries.toKey(n.id);
      await harness.tr.redis.set(jobKey, 'not a job');
      vi.spyOn(harness.queue.ledger, 'revertHandOff').mockRejectedValueOnce(
        new Error("READONLY You can't write against a read only replica."),
      );
      return jobKey;
    }

    it('and the send then fails: the batch fails, its re-run adds the missing retry job, and the delivery is sent', async () => {
      h = await deliveryHarness();
      const rx = await slowReceiver((i) =>
        i === 0 ? { status: 503, afterMs: 4 * STALL_MS } : { status: 200, afterMs: 0 },
      );
      const registry = h.registry({ hook: webhookChannel(rx.url) });
      const n = delivery('lost');
      const jobKey = await failingHandOff(h, n);
      const w = h.startWorker(() => registry, { stallMs: STALL_MS, backoff: () => 50 });

      await h.queue.enqueue([n]);
      // Handed off without a job, and the send failed: the batch must not complete as if the
      // delivery were someone else's.
      const [failedBatch] = await waitFor(
        async () => {
          const delayed = await h!.queue.batches.getDelayed();
          return delayed.length > 0 && delayed;
        },
        { timeoutMs: 10_000, what: 'the batch to fail (and wait for its retry)' },
      );
      expect(failedBatch?.failedReason).toMatch(/WRONGTYPE/);
      expect(await h.queue.ledger.entry(n.id)).toEqual({ state: 'retry_job' });
      expect(rx.ids).toEqual([n.id]);
      // The failover is over: Redis takes the job now.
      await h.tr.redis.del(jobKey);

      const sent = await w.waitForOutcome((o) => o.outcome === 'sent', 15_000);
      expect(sent.attempt).toBe(2);
      expect(rx.ids).toEqual([n.id, n.id]);
      expect(await h.queue.state(n.id)).toBe('sent');
      expect(await h.queue.deadLetters()).toEqual([]);
      expect(await h.queue.batches.getFailedCount()).toBe(0);
    });

    it('and the send then succeeds: the delivery is marked sent and not sent again', async () => {
      h = await deliveryHarness();
      const rx = await slowReceiver(() => ({ status: 200, afterMs: 4 * STALL_MS }));
      const registry = h.registry({ hook: webhookChannel(rx.url) });
      const n = delivery('kept');
      const jobKey = await failingHandOff(h, n);
      const w = h.startWorker(() => registry, { stallMs: STALL_MS, backoff: () => 50 });

      await h.queue.enqueue([n]);
      const sent = await w.waitForOutcome((o) => o.outcome === 'sent');
      expect(sent.attempt).toBe(1);
      expect(await h.queue.state(n.id)).toBe('sent');
      await h.tr.redis.del(jobKey);
      // A later delivery through the same worker and receiver: once it is sent, the first one
      // had every chance to be sent again.
      const later = delivery('kept-later');
      await h.queue.enqueue([later]);
      await w.waitForOutcome((o) => o.notification.id === later.id && o.outcome === 'sent');

      expect(rx.ids).toEqual([n.id, later.id]);
      expect(await h.queue.batches.getFailedCount()).toBe(0);
      expect(await h.queue.batches.getDelayedCount()).toBe(0);
    });
  });
});
