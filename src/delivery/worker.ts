/**
 * The delivery worker (consumer side). Retry, backoff, dedupe, logging and outcome events live
 * here once, around every notifier:
 * - a `batch` job claims its deliveries in the ledger (one round trip) and sends the ones it won;
 *   a success is marked sent; a failure moves to a `delivery` job of its own — retryable ones
 *   after the first backoff, permanent ones straight to the dead letters;
 * - a `delivery` job retries one delivery with exponential backoff and jitter (or the receiver's
 *   Retry-After) until it is sent or out of attempts, then it is a dead letter.
 * Sends in flight are capped across both by one limiter (`concurrency`). Only a few batches are
 * taken at a time (`batchConcurrency`): each already holds up to BATCH_SIZE sends, and fewer
 * deliveries waiting in memory keep garbage collection cheap at fan-out rates.
 *
 * A receiver that hangs or dribbles holds nobody else up for longer than `stallMs`: a send still
 * running after that gives its limiter slot back, and its batch hands the delivery to a job of
 * its own (the send goes on; whichever way it ends is recorded then, and the job waits while it
 * runs, on every replica: the send's mark in Redis, `SENDING_MARK_MS`, holds it back). Its
 * channel is then slow: at most SLOW_CHANNEL_SENDS sends to it at a time, until one
 * is answered within `stallMs`; its other deliveries wait in delayed jobs (no attempt used).
 */
import { EventEmitter } from 'node:events';
import { DelayedError, UnrecoverableError, type Job, type Worker } from 'bullmq';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { StatuswatchError, toError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import { DeliveryError, type FailureReason, type Notification } from '../notify/types.js';
import { classifyError } from '../notify/classify.js';
import type { Channel, ChannelRegistry } from './channels.js';
import { retryDelay } from './backoff.js';
import { batchOwner } from './ledger.js';
import { Deadlines } from '../deadlines.js';
import { Pacer } from './pacer.js';
import { ordersOf, orderWaitMs, type Ordered } from './order.js';
import { startWorker } from '../queues.js';
import type { BatchJobData, DeliveryJobData, DeliveryQueue, DeliveryState } from './queue.js';
import { MAX_RETRY_SPAN_MS } from './queue.js';

/** Batch jobs taken at a time by default. */
export const DEFAULT_BATCH_CONCURRENCY = 2;
/** A send running longer than this is stalled (see the file comment). */
export const DEFAULT_STALL_MS = 2000;
/** Sends in flight at once to a slow channel (one whose sends stall or time out). */
export const SLOW_CHANNEL_SENDS = 2;
/**
 * A stalled send handed over with its delivery marks it in Redis as still running (renewed every
 * third of this while it runs, released once its outcome is recorded): the delivery's retry job
 * waits while the mark is there, whichever replica takes it, so it never sends beside that send
 * however long the channel's own timeout is. A process that dies mid-send holds the job back at
 * most this long.
 */
export const SENDING_MARK_MS = 15_000;
/**
 * How often a delivery job may be taken over from a process that died holding it before BullMQ
 * fails it for good (its default is once): a failed batch is pages not sent until someone
 * retries its dead letters, while a re-run sends at most what the dead process had not marked
 * sent yet (at least once). Small, for a job that itself kills the process every time.
 */
export const DELIVERY_MAX_STALLS = 3;

export interface DeliveryOutcome {
  notification: Notification;
  channelType: string;
  /** `dropped`: a reminder retried after its lifecycle closed (`reminderObsolete`), not sent. */
  outcome: 'sent' | 'retry' | 'dead' | 'dropped';
  reason: FailureReason | null;
  attempt: number;
  /** ms from the delivery's creation to this outcome. */
  latencyMs: number;
  /** `DeliveryError.message`: team-safe (never the receiver's words; those are only logged). */
  error: string | null;
}

export interface DeliveryEvents {
  delivery: [DeliveryOutcome];
}

export interface DeliveryWorkerOptions {
  connection: RedisClient;
  keys: Keys;
  /** Where failed deliveries get their retry jobs (and how many attempts they have). */
  deliveries: DeliveryQueue;
  channels: () => ChannelRegistry;
  log: Logger;
  /** Sends in flight at once, across all batches and retries (default 16). */
  concurrency?: number;
  /** Batch jobs taken at a time (default DEFAULT_BATCH_CONCURRENCY). */
  batchConcurrency?: number;
  /**
   * BullMQ lock duration, also used as the stalled-job check interval: how soon a delivery held
   * by a dead process is taken over (within about two of these).
   */
  lockDurationMs?: number;
  /** Delay before retry number `attemptsMade` (1 = the first retry); default `retryDelay`. */
  backoff?: (attemptsMade: number, err: unknown) => number;
  /** How long a send may hold its limiter slot and its batch (default DEFAULT_STALL_MS). */
  stallMs?: number;
  /** How long a delivery behind an earlier one of its lifecycle waits to look again (`order.ts`). */
  orderWaitMs?: () => number;
  /**
   * Whether a reminder being retried no longer holds: its lifecycle closed since it was made
   * ("still open" would arrive after the resolution). Such a reminder is dropped, not sent.
   */
  reminderObsolete?: (n: Notification) => Promise<boolean>;
  now?: () => number;
}

/** How a send went: done (null = sent), not started (its channel is slow and busy), or stalled. */
type SendResult =
  | { kind: 'done'; err: DeliveryError | null }
  | { kind: 'deferred' }
  | { kind: 'stalled'; settled: Promise<DeliveryError | null> };

/** What the worker knows of one channel's sends in this process. */
interface ChannelLoad {
  inFlight: number;
  /** A send to it stalled or timed out, and none was answered within `stallMs` since. */
  slow: boolean;
}

/** A delivery not sent because an earlier one of its lifecycle in its batch failed unseen. */
function earlierFailed(n: Notification): StatuswatchError {
  return new StatuswatchError(
    'delivery_order_held',
    `delivery ${n.id} not sent: an earlier delivery of its lifecycle in its batch failed; the batch's re-run sends both in order`,
  );
}

/** The fields of a delivery outcome's log line, in the order they are written. */
interface DeliveryLogFields {
  event: string;
  deliveryId: string;
  transitionId: string | undefined;
  feedId: string | undefined;
  kind: string | undefined;
  subscription: string;
  channel: string;
  channelType: string;
  outcome: DeliveryOutcome['outcome'];
  attempt: number;
  reason?: FailureReason;
  httpStatus?: number | null;
  err?: string;
  detail?: string;
}

const EVENT_OF = {
  sent: 'delivery:sent',
  retry: 'delivery:retry',
  dead: 'delivery:dead',
  dropped: 'delivery:dropped',
} as const satisfies Record<DeliveryOutcome['outcome'], string>;

/** The lifecycle fields (`Ordered.field`) that more than one delivery of a batch is listed in. */
function sharedFields(orders: readonly (readonly Ordered[])[]): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const list of orders) {
    for (const { field } of list) {
      if (seen.has(field)) shared.add(field);
      else seen.add(field);
    }
  }
  return shared;
}

/** How long a delivery to a channel a replica does not know is retried (`missingChannel`). */
export const UNKNOWN_CHANNEL_GRACE_MS = 15 * 60 * 1000;

function priorAttemptsOf(job: { data: unknown } | undefined): number {
  const data = job?.data as Partial<DeliveryJobData> | undefined;
  return data?.priorAttempts ?? 0;
}

export class DeliveryWorker extends EventEmitter<DeliveryEvents> {
  private workers: Worker[] = [];
  private readonly now: () => number;
  private readonly backoff: (attemptsMade: number, err: unknown) => number;
  private readonly limit: LimitFunction;
  private readonly pacer: Pacer;
  private readonly stallMs: number;
  private readonly orderWait: () => number;
  private readonly loads = new Map<string, ChannelLoad>();
  /** Deliveries whose stalled send goes on after its batch handed them to a job of their own. */
  private readonly detached = new Map<string, Promise<void>>();
  /** Sends running, stalled once they pass `stallMs` (`watch`). */
  private readonly running: Deadlines;
  /** Deliveries whose stalled send runs here and holds its mark (`SENDING_MARK_MS`), by count. */
  private readonly sendingMarks = new Map<string, number>();
  private markRenewer: NodeJS.Timeout | null = null;

  constructor(private readonly options: DeliveryWorkerOptions) {
    super();
    this.pacer = new Pacer(options.connection, options.keys);
    this.now = options.now ?? Date.now;
    this.backoff = options.backoff ?? retryDelay;
    this.limit = pLimit(options.concurrency ?? 16);
    this.stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    this.running = new Deadlines(this.stallMs);
    this.orderWait = options.orderWaitMs ?? (() => orderWaitMs());
  }

  start(): void {
    const lockDuration = this.options.lockDurationMs ?? 30_000;
    const common = {
      lockDuration,
      // Without this BullMQ looks for stalled jobs every 30 s whatever the lock duration.
      stalledInterval: lockDuration,
      maxStalledCount: DELIVERY_MAX_STALLS,
    };
    const batches = startWorker(
      'deliveries',
      (job: Job<BatchJobData>) => this.processBatch(job),
      this.options,
      {
        ...common,
        concurrency: this.options.batchConcurrency ?? DEFAULT_BATCH_CONCURRENCY,
      },
    );
    const retries = startWorker(
      'deliveryRetries',
      (job: Job<DeliveryJobData>, token?: string) => this.processDelivery(job, token),
      this.options,
      {
        ...common,
        // A retry job waiting for the send limiter is cheap; the limiter caps the sends.
        concurrency: this.limit.concurrency,
        settings: {
          backoffStrategy: (attemptsMade, _type, err, job) =>
            this.backoff(priorAttemptsOf(job) + attemptsMade, err),
        },
      },
    );
    this.workers = [batches, retries];
  }

  private report(
    n: Notification,
    channelType: string,
    outcome: DeliveryOutcome['outcome'],
    attempt: number,
    error: DeliveryError | null,
  ): void {
    const result: DeliveryOutcome = {
      notification: n,
      channelType,
      outcome,
      reason: error?.reason ?? null,
      attempt,
      latencyMs: Math.max(0, this.now() - n.createdAt),
      error: error?.message ?? null,
    };
    const { log } = this.options;
    const level =
      outcome === 'sent' || outcome === 'dropped' ? 'info' : outcome === 'retry' ? 'warn' : 'error';
    // Skip building the line when nobody reads it (at fan-out rates it is real CPU).
    if (log.isLevelEnabled(level)) this.log(level, result, error);
    this.emit('delivery', result);
  }

  private log(
    level: 'info' | 'warn' | 'error',
    result: DeliveryOutcome,
    error: DeliveryError | null,
  ): void {
    const { notification: n, channelType, outcome, attempt } = result;
    const first = n.transitions[0];
    // One object literal, fields in a fixed order (no spreads: a line per delivery in a storm).
    const fields: DeliveryLogFields = {
      event: EVENT_OF[outcome],
      deliveryId: n.id,
      transitionId: first?.id,
      feedId: first?.feedId,
      kind: n.transitions.length === 1 ? first?.kind : n.type,
      subscription: n.subscription,
      channel: n.channel,
      channelType,
      outcome,
      attempt,
    };
    // `detail` (what the receiver or the network said) is the operator's: only this log line
    // has it; what a team reads (the outcome's `error`, a dead letter's reason) is the message.
    if (error !== null) {
      fields.reason = error.reason;
      fields.httpStatus = error.httpStatus;
      fields.err = error.message;
      if (error.detail !== null) fields.detail = error.detail;
    }
    if (outcome === 'dropped')
      this.options.log.info(fields, `reminder ${n.id} not sent: its lifecycle closed meanwhile`);
    else if (level === 'info') this.options.log.info(fields, `delivered ${n.id}`);
    else if (level === 'warn') this.options.log.warn(fields, `delivery ${n.id} failed, will retry`);
    else this.options.log.error(fields, `delivery ${n.id} failed for good: dead letter`);
  }

  private loadOf(channel: string): ChannelLoad {
    let load = this.loads.get(channel);
    if (load === undefined) {
      load = { inFlight: 0, slow: false };
      this.loads.set(channel, load);
    }
    return load;
  }

  /**
   * The channel's send, through the limiter: done (the failure classified, or null when sent);
   * deferred (not started: the channel is slow and has its share in flight); or stalled (still
   * running after `stallMs`: its limiter slot is free again, `settled` says how it ends).
   */
  private async send(n: Notification, channel: Channel): Promise<SendResult> {
    const load = this.loadOf(channel.name);
    const result = await this.limit((): SendResult | Promise<SendResult> => {
      if (load.slow && load.inFlight >= SLOW_CHANNEL_SENDS) return { kind: 'deferred' };
      return this.watch(this.attempt(n, channel, load));
    });
    if (result.kind === 'stalled') load.slow = true;
    return result;
  }

  /**
   * `attempt`'s outcome, or `stalled` once it has run `stallMs`. One sweep timer for all sends
   * (a timer per send is real CPU at fan-out rates), running only while sends are.
   */
  private watch(attempt: Promise<DeliveryError | null>): Promise<SendResult> {
    return new Promise<SendResult>((resolve) => {
      const entry = this.running.add(() => {
        resolve({ kind: 'stalled', settled: attempt });
      });
      void attempt.then((err) => {
        this.running.delete(entry);
        resolve({ kind: 'done', err });
      });
    });
  }

  /** One send to the receiver; never rejects. Keeps the channel's load up to date. */
  private async attempt(
    n: Notification,
    channel: Channel,
    load: ChannelLoad,
  ): Promise<DeliveryError | null> {
    load.inFlight += 1;
    const started = Date.now();
    try {
      await channel.notifier.send(n);
      if (Date.now() - started < this.stallMs) load.slow = false;
      return null;
    } catch (raw) {
      const err = raw instanceof DeliveryError ? raw : classifyError(raw);
      // A connect timeout reads as a network failure (classify.ts): the time it took says slow.
      if (err.reason === 'timeout' || Date.now() - started >= this.stallMs) load.slow = true;
      // A paced destination that said Retry-After: its other deliveries wait too.
      if (channel.pacing !== null && err.retryAfterMs !== null) {
        await this.pacer.hold(channel.pacing, err.retryAfterMs).catch((e: unknown) => {
          this.options.log.warn(
            { event: 'delivery:pace_failed', channel: n.channel, err: toError(e).message },
            "could not record a receiver's Retry-After for pacing",
          );
        });
      }
      return err;
    } finally {
      load.inFlight -= 1;
    }
  }

  /** Marks a send of `id` as running, for other replicas' retry jobs (`SENDING_MARK_MS`). */
  private async markSending(id: string): Promise<void> {
    await this.options.deliveries.ledger.holdSending([id], SENDING_MARK_MS);
    this.sendingMarks.set(id, (this.sendingMarks.get(id) ?? 0) + 1);
    if (this.markRenewer === null) {
      this.markRenewer = setInterval(
        () => {
          this.renewSendingMarks();
        },
        Math.round(SENDING_MARK_MS / 3),
      );
      this.markRenewer.unref();
    }
  }

  private renewSendingMarks(): void {
    const ids = [...this.sendingMarks.keys()];
    this.options.deliveries.ledger.holdSending(ids, SENDING_MARK_MS).catch((e: unknown) => {
      this.options.log.warn(
        { event: 'delivery:mark_failed', deliveries: ids.length, err: toError(e).message },
        'could not renew the marks of stalled sends still running',
      );
    });
  }

  /**
   * The send of `id` has ended and its outcome is recorded: its mark goes (the renewal and this
   * share one connection, so no renewal sent after this brings it back). Never rejects.
   */
  private async unmarkSending(id: string): Promise<void> {
    const count = (this.sendingMarks.get(id) ?? 1) - 1;
    if (count > 0) {
      this.sendingMarks.set(id, count);
      return;
    }
    this.sendingMarks.delete(id);
    if (this.sendingMarks.size === 0 && this.markRenewer !== null) {
      clearInterval(this.markRenewer);
      this.markRenewer = null;
    }
    await this.options.deliveries.ledger.releaseSending(id).catch((e: unknown) => {
      this.options.log.warn(
        { event: 'delivery:mark_failed', deliveryId: id, err: toError(e).message },
        `could not clear the mark of delivery ${id}'s ended send: its retry job waits for it to lapse`,
      );
    });
  }

  /** How long a deferred delivery waits before it looks at its channel again. */
  private deferMs(): number {
    return Math.round(this.stallMs * (1 + Math.random()));
  }

  /**
   * A stalled send whose delivery its batch handed to a job of its own (`handed`; false: someone
   * else's by now): recorded when it ends — sent, or the first attempt's failure (the job makes
   * the next one) — and then its mark (`markSending`) goes. The job waits while this runs.
   */
  private detach(
    n: Notification,
    channelType: string,
    settled: Promise<DeliveryError | null>,
    handed: boolean,
  ): void {
    const done = settled
      .then(async (err) => {
        if (err === null) {
          await this.options.deliveries.ledger.markSent(n.id);
          this.report(n, channelType, 'sent', 1, null);
        } else if (handed) {
          this.report(n, channelType, 'retry', 1, err);
        }
      })
      .catch((e: unknown) => {
        this.options.log.warn(
          { event: 'delivery:mark_failed', deliveryId: n.id, err: toError(e).message },
          `delivery ${n.id} was sent but could not be marked: it may be sent again`,
        );
      })
      .then(() => this.unmarkSending(n.id))
      .finally(() => {
        if (this.detached.get(n.id) === done) this.detached.delete(n.id);
      });
    this.detached.set(n.id, done);
  }

  /** For reports only: a registry that fails here must not stop a hand-over. */
  private channelTypeOf(name: string): string {
    try {
      return this.options.channels().get(name)?.type ?? 'unknown';
    } catch {
      return 'unknown';
    }
  }

  /**
   * A delivery to a channel this replica does not know. During a rolling upgrade that adds a
   * channel, a replica still on the old config takes deliveries routed by one on the new: such a
   * delivery is retried (another replica, or this one after its reload, sends it) while it is
   * younger than `UNKNOWN_CHANNEL_GRACE_MS`, and only then a dead letter.
   */
  private missingChannel(n: Notification): DeliveryError {
    const young = this.now() - n.createdAt < UNKNOWN_CHANNEL_GRACE_MS;
    return new DeliveryError({
      message: young
        ? `channel "${n.channel}" is not configured on this replica (yet): retried`
        : `channel "${n.channel}" is not configured (any more)`,
      retryable: young,
      reason: 'config',
    });
  }

  private async processBatch(job: Job<BatchJobData>): Promise<void> {
    try {
      await this.sendBatch(job);
    } catch (raw) {
      const err = toError(raw);
      // The last attempt: hand what is still unsent to dead-letter jobs of their own, so nothing
      // waits on a failed batch. (If Redis refuses that too, deadLetters() lists them from it.)
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
        await this.handOverUnsent(job, err).catch((e: unknown) => {
          this.options.log.error(
            { event: 'delivery:batch_failed', batchJobId: job.id, err: toError(e).message },
            'a failed delivery batch could not hand over its deliveries: see the dead letters',
          );
        });
      }
      throw err;
    }
  }

  private async sendBatch(job: Job<BatchJobData>): Promise<void> {
    const { notifications } = job.data;
    const jobId = job.id ?? '';
    const { deliveries } = this.options;
    // Read beside the claim (no round trip of its own): which deliveries must wait for an
    // earlier one of their lifecycle (`order.ts`).
    const orders = notifications.map(ordersOf);
    const [claims, behind] = await Promise.all([
      deliveries.ledger.claim(
        notifications.map((n) => n.id),
        batchOwner(jobId),
      ),
      this.behind(notifications, orders),
    ]);
    const rerun = job.attemptsStarted > 1;
    // Deliveries of one lifecycle on one route within the batch (an opening and its closing
    // routed in one cycle) go one after the other, in batch (routing) order: a later one is
    // looked at again once the earlier one's attempt is over, and waits if that one was handed
    // to a job of its own (it failed, stalled or was paced). When the earlier one's attempt
    // failed without a hand-off (Redis refused its mark or its hand-off), it is nowhere a later
    // one could see it: the later one is not sent either, and the batch's re-run sends both in
    // order. Only a lifecycle that the batch carries more than once is followed (a storm's
    // deliveries are each their lifecycle's only one: nothing to follow, nothing allocated).
    const shared = sharedFields(orders);
    const lastOf = new Map<string, Promise<boolean>>();
    const results = await Promise.allSettled(
      notifications.map((n, i) => {
        const claim = claims[i];
        if (claim === 'new' || claim === 'mine') {
          if (behind.has(n.id)) return this.waitBehind(n, jobId);
          const fields =
            shared.size === 0
              ? []
              : (orders[i] ?? []).map((o) => o.field).filter((f) => shared.has(f));
          const earlier = fields.flatMap((f) => lastOf.get(f) ?? []);
          const run =
            earlier.length === 0
              ? this.sendFromBatch(n, jobId)
              : Promise.all(earlier).then(async (done) => {
                  if (done.includes(false)) throw earlierFailed(n);
                  return (await this.behind([n])).size > 0
                    ? this.waitBehind(n, jobId)
                    : this.sendFromBatch(n, jobId);
                });
          if (fields.length > 0) {
            const settled = run.then(
              () => true,
              () => false,
            );
            for (const f of fields) lastOf.set(f, settled);
          }
          return run;
        }
        // A re-run after a crash between a hand-off and its job: add the missing job.
        if (claim === 'handed' && rerun) return deliveries.repairRetryJob(n);
        this.options.log.debug(
          { event: 'delivery:duplicate', deliveryId: n.id },
          `delivery ${n.id} is already sent or in hand: skipped`,
        );
        return Promise.resolve();
      }),
    );
    // Every send has settled or was handed over with its delivery (a stalled one), so a retry of
    // this job cannot overlap one.
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw toError(failed.reason);
  }

  /**
   * The deliveries of `candidates` that must wait (`order.ts`): an earlier delivery of their
   * lifecycle on their route, handed to a job of its own, is not sent or dead yet. One round
   * trip, then a look at each listed delivery, all at once (listings are rare: deliveries that
   * failed or stalled in their batch, or that their channel made wait). A listed delivery whose
   * retry job is not there yet (its hand-off is a step ahead) counts as waiting to be sent.
   */
  private async behind(
    candidates: readonly Notification[],
    /** `ordersOf` each candidate, when the caller has them already. */
    known?: readonly Ordered[][],
  ): Promise<Set<string>> {
    const orders: (Ordered & { n: Notification })[] = [];
    for (const [i, n] of candidates.entries()) {
      for (const order of known?.[i] ?? ordersOf(n)) if (!order.first) orders.push({ n, ...order });
    }
    const out = new Set<string>();
    if (orders.length === 0) return out;
    const { deliveries } = this.options;
    const listed = await deliveries.ledger.listedBefore(orders, this.now());
    // Each listed delivery looked at once, however many of the candidates' orders list it (a
    // catch-up is listed in every lifecycle it carries).
    const looked = new Map<string, Promise<DeliveryState>>();
    const stateOf = (id: string): Promise<DeliveryState> => {
      let state = looked.get(id);
      if (state === undefined) {
        state = deliveries.state(id);
        looked.set(id, state);
      }
      return state;
    };
    const looks: Promise<void>[] = [];
    for (const [i, { n, field }] of orders.entries()) {
      const ids = listed[i] ?? [];
      if (ids.length === 0) continue;
      looks.push(
        (async () => {
          const states = await Promise.all(ids.map(stateOf));
          if (states.some((st) => st !== 'sent' && st !== 'dead')) out.add(n.id);
          // Sent or dead: it holds nobody back any more.
          await deliveries.ledger.unlist(
            field,
            ids.filter((_, k) => states[k] === 'sent' || states[k] === 'dead'),
          );
        })(),
      );
    }
    await Promise.all(looks);
    return out;
  }

  /** A delivery that must wait for an earlier one of its lifecycle: a job of its own waits. */
  private async waitBehind(n: Notification, jobId: string): Promise<void> {
    if (await this.options.deliveries.addPacedJob(n, jobId, this.orderWait(), false))
      this.options.log.info(
        { event: 'delivery:ordered', deliveryId: n.id, channel: n.channel },
        `delivery ${n.id} waits: an earlier delivery of its lifecycle to ${n.channel} is not sent yet`,
      );
  }

  /** The deliveries a failing batch still holds (or never claimed) become dead letters. */
  private async handOverUnsent(job: Job<BatchJobData>, cause: Error): Promise<void> {
    const { notifications } = job.data;
    const jobId = job.id ?? '';
    const { deliveries } = this.options;
    const owner = batchOwner(jobId);
    const entries = await deliveries.ledger.entries(notifications.map((n) => n.id));
    const err = new DeliveryError({
      message: `delivery batch failed before this delivery was confirmed (it may have been sent): ${cause.message}`,
      retryable: false,
      reason: 'internal',
    });
    for (const [i, n] of notifications.entries()) {
      const entry = entries[i];
      const held =
        entry?.state === 'unknown' || (entry?.state === 'claimed' && entry.owner === owner);
      if (held && (await deliveries.addRetryJob(n, jobId, 0, err.message)))
        this.report(n, this.channelTypeOf(n.channel), 'dead', 1, err);
    }
  }

  /** Attempt 1 of a delivery, inside its batch. Rejects only when Redis does. */
  private async sendFromBatch(n: Notification, jobId: string): Promise<void> {
    const { deliveries } = this.options;
    const channel = this.options.channels().get(n.channel);
    if (channel?.pacing != null) {
      const waitMs = await this.pacer.reserve(channel.pacing);
      if (waitMs > 0) {
        // Its slot is later: a job of its own waits for it, the batch goes on with the others.
        if (await deliveries.addPacedJob(n, jobId, waitMs))
          this.options.log.debug(
            { event: 'delivery:paced', deliveryId: n.id, channel: n.channel, waitMs },
            `delivery ${n.id} paced: sent in ${waitMs} ms`,
          );
        return;
      }
    }
    const result: SendResult =
      channel === undefined
        ? { kind: 'done', err: this.missingChannel(n) }
        : await this.send(n, channel);
    const channelType = channel?.type ?? 'unknown';
    if (result.kind === 'deferred') {
      // Its channel is slow and busy: a job of its own waits, the batch goes on.
      if (await deliveries.addPacedJob(n, jobId, this.deferMs(), false))
        this.options.log.debug(
          { event: 'delivery:deferred', deliveryId: n.id, channel: n.channel },
          `delivery ${n.id} deferred: its channel is slow`,
        );
      return;
    }
    if (result.kind === 'done') {
      await this.recordFromBatch(n, jobId, channelType, result.err, null);
      return;
    }
    // Stalled: the send goes on without the batch, and a job of its own takes the delivery over.
    // The send's mark is set first, so that job waits while the send runs, on any replica.
    let marked = false;
    let handOffError: Error | null = null;
    try {
      await this.markSending(n.id);
      marked = true;
      const handed = await deliveries.addRetryJob(n, jobId, this.deferMs());
      this.detach(n, channelType, result.settled, handed);
      return;
    } catch (e) {
      // Not handed over (Redis refused): the batch waits for the send after all. The hand-off
      // may be left half done (the ledger says handed, no job: its undo failed too).
      if (marked) handOffError = toError(e);
    }
    try {
      await this.recordFromBatch(n, jobId, channelType, await result.settled, handOffError);
    } finally {
      if (marked) await this.unmarkSending(n.id);
    }
  }

  /**
   * Attempt 1's outcome, in its batch: marked sent, or handed to a job of its own (retries, or
   * straight to the dead letters). `handOffError`: an earlier hand-off of this delivery failed
   * and may have left it handed off without a job. A failure that then finds it someone else's
   * fails the batch (rejects) rather than leave it nowhere: the batch's re-run adds the missing
   * job (`repairRetryJob`), and what it already sent stays sent.
   */
  private async recordFromBatch(
    n: Notification,
    jobId: string,
    channelType: string,
    err: DeliveryError | null,
    handOffError: Error | null,
  ): Promise<void> {
    const { deliveries } = this.options;
    if (err === null) {
      await deliveries.ledger.markSent(n.id);
      this.report(n, channelType, 'sent', 1, null);
      return;
    }
    const dead = !err.retryable || deliveries.attempts <= 1;
    const handed = dead
      ? await deliveries.addRetryJob(n, jobId, 0, err.message)
      : await deliveries.addRetryJob(n, jobId, this.backoff(1, err));
    if (handed) {
      this.report(n, channelType, dead ? 'dead' : 'retry', 1, err);
      return;
    }
    if (handOffError !== null) {
      this.options.log.warn(
        { event: 'delivery:hand_off_failed', deliveryId: n.id, err: handOffError.message },
        `delivery ${n.id} failed and its hand-off to a retry job had failed: its batch is retried`,
      );
      throw handOffError;
    }
    this.options.log.warn(
      { event: 'delivery:duplicate', deliveryId: n.id },
      `delivery ${n.id} failed here but is someone else's by now: left to them`,
    );
  }

  /** A delivery's own job: attempts after the first, or the record of a dead letter. */
  private async processDelivery(job: Job<DeliveryJobData>, token?: string): Promise<void> {
    const { data } = job;
    const n = data.notification;
    // Already reported when the batch's attempt failed for good: only record the dead letter.
    if (data.deadOnArrival !== undefined) throw new UnrecoverableError(data.deadOnArrival);
    const { ledger } = this.options.deliveries;
    if (this.detached.has(n.id)) {
      // Its batch's stalled send still runs here: wait for it, without using an attempt.
      await job.moveToDelayed(Date.now() + this.deferMs(), token);
      throw new DelayedError();
    }
    const { entry, sending } = await ledger.entryAndSending(n.id);
    if (sending) {
      // Its batch's stalled send still runs, in another process: wait for it the same way.
      await job.moveToDelayed(Date.now() + this.deferMs(), token);
      throw new DelayedError();
    }
    if (entry.state === 'sent') return; // sent by its batch's stalled send, or a re-run batch
    if (n.type === 'reminder' && (await this.options.reminderObsolete?.(n)) === true) {
      this.report(n, this.channelTypeOf(n.channel), 'dropped', data.priorAttempts, null);
      return;
    }
    if ((await this.behind([n])).size > 0) {
      // Behind an earlier delivery of its lifecycle that is not sent yet: later, without using
      // an attempt, and without a pacing slot (one it held is passed by meanwhile).
      if (data.slotFor !== undefined) {
        const { slotFor: _passed, ...rest } = data;
        await job.updateData(rest);
      }
      await job.moveToDelayed(Date.now() + this.orderWait(), token);
      throw new DelayedError();
    }
    const attempt = data.priorAttempts + job.attemptsMade + 1;
    const channel = this.options.channels().get(n.channel);
    if (channel?.pacing != null) {
      const waitMs = await this.pacer.reserve(channel.pacing, data.slotFor === job.attemptsMade);
      if (waitMs > 0) {
        // The slot is this attempt's: the run at the slot sends without reserving another.
        await job.updateData({ ...data, slotFor: job.attemptsMade });
        await job.moveToDelayed(Date.now() + waitMs, token);
        throw new DelayedError();
      }
    }
    const result: SendResult =
      channel === undefined
        ? { kind: 'done', err: this.missingChannel(n) }
        : await this.send(n, channel);
    if (result.kind === 'deferred') {
      // Its channel is slow and busy: later, without using an attempt.
      await job.moveToDelayed(Date.now() + this.deferMs(), token);
      throw new DelayedError();
    }
    const err = result.kind === 'stalled' ? await result.settled : result.err;
    const channelType = channel?.type ?? 'unknown';
    if (err === null) {
      await ledger.markSent(n.id);
      this.report(n, channelType, 'sent', attempt, null);
      return;
    }
    const since = data.since ?? this.now();
    const spent = this.now() - since >= MAX_RETRY_SPAN_MS;
    if (!err.retryable || attempt >= (job.opts.attempts ?? 1) || spent) {
      // Its hand-off mark lives as long as the dead letter from now on.
      await ledger.renewHandOff(n.id);
      this.report(n, channelType, 'dead', attempt, err);
      throw new UnrecoverableError(
        spent && err.retryable ? `${err.message} (retried for an hour)` : err.message,
      );
    }
    if (data.since === undefined) await job.updateData({ ...data, since });
    this.report(n, channelType, 'retry', attempt, err);
    throw err;
  }

  /** Stops taking deliveries and waits for in-flight sends (stalled ones too). */
  async stop(): Promise<void> {
    const workers = this.workers;
    this.workers = [];
    await Promise.all(workers.map((w) => w.close()));
    await Promise.allSettled([...this.detached.values()]);
    if (this.markRenewer !== null) {
      clearInterval(this.markRenewer);
      this.markRenewer = null;
    }
  }
}
