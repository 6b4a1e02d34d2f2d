/**
 * The delivery queues (producer side). Deliveries travel in `batch` jobs of up to BATCH_SIZE on
 * the `deliveries` queue: one BullMQ job, one ledger round trip and one completion for many sends,
 * which is what lets fan-out keep up with the receivers. A delivery that fails in its batch moves
 * to a job of its own on `delivery-retries` (job id = delivery id) that retries it with backoff or
 * holds it as a dead letter. The ledger (`ledger.ts`) keeps every delivery id to one sender, so
 * re-enqueueing never sends twice.
 */
import type { Job, Queue } from 'bullmq';
import type { Keys, RedisClient } from '../redis.js';
import type { Notification } from '../notify/types.js';
import { DeliveryLedger, batchOwner } from './ledger.js';
import { ordersOf, type Ordered } from './order.js';
import { CLOCK_SKEW_MS, isClosingRank, rankOf } from './rules.js';
import { QUEUES, openQueue } from '../queues.js';

export const DELIVERIES_QUEUE = QUEUES.deliveries;
export const RETRIES_QUEUE = QUEUES.deliveryRetries;
/**
 * Attempts of a delivery before it is a dead letter: with `retryDelay`'s backoff (1 s doubling
 * to a 5-minute cap, ±50% jitter) the 19 retries span about an hour (8.5 minutes for the first
 * nine, then up to 5 minutes apart), so a receiver's outage of up to an hour (a vendor incident,
 * a deploy) delays alerts but loses none. (With 8, they spanned about two minutes.)
 */
export const DEFAULT_ATTEMPTS = 20;
/**
 * How long after its first failed attempt a delivery is still retried: a receiver's long
 * `Retry-After`s end it sooner than its attempts would. Kept (with one last Retry-After of up to
 * an hour) inside `ORDER_HORIZON_MS`, so a delivery being retried still holds the later ones of
 * its lifecycle back.
 */
export const MAX_RETRY_SPAN_MS = 60 * 60 * 1000;
/** Deliveries in one batch job. */
export const BATCH_SIZE = 100;
/** A sent delivery id is remembered (and so deduplicated) this long. */
export const DELIVERY_RETENTION_SECONDS = 7 * 24 * 3600;
/** Dead letters (failed deliveries) are kept this long for listing and retry. */
export const DEAD_LETTER_RETENTION_SECONDS = 30 * 24 * 3600;
/**
 * A failed batch's never-claimed deliveries are listed as dead letters only this long after it
 * failed: later, a missing ledger entry may be an expired sent mark.
 */
const UNCLAIMED_TRUST_SECONDS = DELIVERY_RETENTION_SECONDS - 24 * 3600;
/** A hand-off to a retry job is remembered a day longer than the dead letter it may become. */
const HAND_OFF_RETENTION_SECONDS = DEAD_LETTER_RETENTION_SECONDS + 24 * 3600;
/** Attempts of a batch job itself: it fails only when Redis does (each send's failure is its own). */
const BATCH_ATTEMPTS = 10;

export const BATCH_JOB = 'batch';
export const DELIVERY_JOB = 'delivery';

export interface BatchJobData {
  notifications: Notification[];
}

export interface DeliveryJobData {
  notification: Notification;
  /** Attempts made before this job (the batch's send; 0 after a dead letter is retried). */
  priorAttempts: number;
  /** Set when the batch's attempt failed for good: the job only records the dead letter. */
  deadOnArrival?: string;
  /**
   * Paced deliveries (per-destination pacing): the job's `attemptsMade` for which a send slot is
   * already reserved, so that run sends without reserving another.
   */
  slotFor?: number;
  /** Unix ms of its first failed attempt (since the last dead-letter retry): `MAX_RETRY_SPAN_MS`. */
  since?: number;
}

export interface DeadLetter {
  id: string;
  subscription: string;
  channel: string;
  kinds: string[];
  attempts: number;
  failedReason: string;
  failedAt: number | null;
}

export type DeadLetterRetry =
  | { outcome: 'retried' }
  /** No such dead letter (retried already, or sent since). */
  | { outcome: 'missing' }
  /** An opening of a lifecycle (`<feedId>|<subject>`) that is not open on its route any more. */
  | { outcome: 'closed'; lifecycle: string };

/** Why a dead letter is not retried (`outcome: 'closed'`), for the admin API and the console. */
export function deadLetterClosed(id: string): string {
  return `dead letter ${id} is an opening whose lifecycle is not open on its route any more (closed since): sent now, it would leave an alert open that nothing resolves`;
}

export type DeliveryState = 'sending' | 'retrying' | 'dead' | 'sent' | 'unknown';

/** Enqueue deliveries, list and retry dead letters, look up one delivery's state. */
export class DeliveryQueue {
  /** Batch jobs: every delivery's first attempt. */
  readonly batches: Queue<BatchJobData>;
  /** One job per delivery that failed its first attempt: its retries, or its dead letter. */
  readonly retries: Queue<DeliveryJobData>;
  readonly ledger: DeliveryLedger;

  constructor(
    connection: RedisClient,
    keys: Keys,
    readonly attempts = DEFAULT_ATTEMPTS,
  ) {
    const options = {
      defaultJobOptions: { removeOnFail: { age: DEAD_LETTER_RETENTION_SECONDS } },
    };
    this.batches = openQueue<BatchJobData>('deliveries', { connection, keys }, options);
    this.retries = openQueue<DeliveryJobData>('deliveryRetries', { connection, keys }, options);
    this.ledger = new DeliveryLedger(
      connection,
      keys,
      DELIVERY_RETENTION_SECONDS,
      HAND_OFF_RETENTION_SECONDS,
    );
  }

  /**
   * Adds deliveries in batch jobs. Ids already seen are skipped when their batch claims them, so
   * enqueueing the same delivery again (or while it is in flight) sends nothing. The first batch
   * job is added on its own, so a delivery worker can start on it while the rest are encoded and
   * added (a storm's 5,000 deliveries are 50 batch jobs: the first webhook waited for all of
   * them): one round trip, two beyond BATCH_SIZE deliveries. A crash in between leaves the rest to
   * the caller's re-run, as a crash before its commit always did.
   */
  async enqueue(notifications: readonly Notification[]): Promise<void> {
    const unique = [...new Map(notifications.map((n) => [n.id, n])).values()];
    if (unique.length === 0) return;
    const jobs = [];
    for (let i = 0; i < unique.length; i += BATCH_SIZE) {
      jobs.push({
        name: BATCH_JOB,
        data: { notifications: unique.slice(i, i + BATCH_SIZE) },
        opts: {
          attempts: BATCH_ATTEMPTS,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: true,
        },
      });
    }
    await this.batches.addBulk(jobs.slice(0, 1));
    if (jobs.length > 1) await this.batches.addBulk(jobs.slice(1));
  }

  /**
   * Hands a delivery that failed in its batch to a retry job of its own (job id = delivery id).
   * `deadOnArrival` records a permanent failure: the job goes straight to the dead letters. The
   * ledger moves first (only from the batch's own claim, or from nobody): if adding the job then
   * fails, a re-run of the batch finds the hand-off without a job and adds it (`repairRetryJob`).
   * False when the delivery is someone else's by now (nothing added).
   */
  async addRetryJob(
    notification: Notification,
    batchJobId: string,
    delayMs: number,
    deadOnArrival?: string,
  ): Promise<boolean> {
    const owner = batchOwner(batchJobId);
    if (
      !(await this.ledger.handOff(
        notification.id,
        owner,
        // Listed for the later deliveries of its lifecycle to wait for, unless it is dead.
        deadOnArrival === undefined ? ordersOf(notification) : [],
      ))
    )
      return false;
    try {
      await this.putRetryJob(
        {
          notification,
          priorAttempts: 1,
          since: Date.now(),
          ...(deadOnArrival === undefined ? {} : { deadOnArrival }),
        },
        delayMs,
      );
    } catch (err) {
      // The batch holds it again, so a re-run sends it or its failure lists it.
      await this.ledger.revertHandOff(notification.id, owner).catch(() => undefined);
      throw err;
    }
    return true;
  }

  /**
   * Hands a delivery its destination cannot take yet (per-destination pacing, or a slow channel
   * busy with other sends: `slotReserved` false) to a job of its own that runs after `delayMs`
   * (at its reserved slot): no attempt made yet, so it has all its attempts. Same ledger rules as
   * `addRetryJob`; false when the delivery is someone else's by now.
   */
  async addPacedJob(
    notification: Notification,
    batchJobId: string,
    delayMs: number,
    slotReserved = true,
  ): Promise<boolean> {
    const owner = batchOwner(batchJobId);
    if (!(await this.ledger.handOff(notification.id, owner, ordersOf(notification)))) return false;
    try {
      await this.putRetryJob(
        { notification, priorAttempts: 0, ...(slotReserved ? { slotFor: 0 } : {}) },
        delayMs,
      );
    } catch (err) {
      await this.ledger.revertHandOff(notification.id, owner).catch(() => undefined);
      throw err;
    }
    return true;
  }

  /**
   * Adds the retry job of a handed-off delivery when it has none (a batch re-run after a crash
   * between the two). The crash lost the failure's verdict and delay: it gets a normal retry.
   */
  async repairRetryJob(notification: Notification): Promise<void> {
    if ((await this.retries.getJob(notification.id)) !== undefined) return;
    if ((await this.ledger.entry(notification.id)).state !== 'retry_job') return;
    await this.putRetryJob({ notification, priorAttempts: 1 }, 0);
  }

  /** Adds a retry job; an old dead letter with the same id (kept 30 days) makes way for it. */
  private async putRetryJob(data: DeliveryJobData, delayMs: number): Promise<void> {
    const old = await this.retries.getJob(data.notification.id);
    if (old !== undefined && (await old.isFailed())) await old.remove();
    await this.retries.add(DELIVERY_JOB, data, {
      jobId: data.notification.id,
      attempts: this.attempts,
      backoff: { type: 'custom' },
      delay: Math.max(0, delayMs),
      removeOnComplete: true,
    });
  }

  /**
   * Dead letters: failed delivery jobs, then the unsent deliveries of batch jobs that failed as a
   * whole and could not hand them over (Redis trouble, or a worker that died more often than
   * allowed). Each id once. At most `limit` of them (the newest failed jobs first); every one
   * without a limit (the admin API pages them: `GET /admin/dead-letters?limit=&cursor=`).
   */
  async deadLetters(limit = Infinity): Promise<DeadLetter[]> {
    const out = new Map<string, DeadLetter>();
    // BullMQ's ranges are inclusive; -1 is the end of the list.
    const end = (start: number): number =>
      Number.isFinite(limit) ? start + Math.max(1, limit) - 1 : -1;
    const failed = await this.retries.getFailed(0, end(0));
    const entries = await this.ledger.entries(failed.map((job) => job.data.notification.id));
    for (const [i, job] of failed.entries()) {
      // Sent since (re-enqueued after its marks expired): no longer a dead letter.
      if (entries[i]?.state === 'sent') continue;
      const { data } = job;
      const attempts =
        data.priorAttempts + job.attemptsMade - (data.deadOnArrival === undefined ? 0 : 1);
      out.set(data.notification.id, deadLetterOf(data.notification, job, attempts));
    }
    for (let start = 0; out.size < limit; start += limit) {
      const page = await this.batches.getFailed(start, end(start));
      for (const job of page) {
        for (const n of await this.unsentOfFailedBatch(job)) {
          if (!out.has(n.id)) out.set(n.id, deadLetterOf(n, job, 0));
        }
      }
      if (!Number.isFinite(limit) || page.length < limit) break;
    }
    return [...out.values()].slice(0, limit);
  }

  /**
   * The deliveries a failed batch still holds: claimed by it, or never claimed by anyone while
   * that can still be told apart from a sent mark that expired (UNCLAIMED_TRUST_SECONDS).
   */
  private async unsentOfFailedBatch(job: Job<BatchJobData>): Promise<Notification[]> {
    const { notifications } = job.data;
    const owner = batchOwner(job.id ?? '');
    const entries = await this.ledger.entries(notifications.map((n) => n.id));
    const recent = Date.now() - (job.finishedOn ?? 0) < UNCLAIMED_TRUST_SECONDS * 1000;
    const out: Notification[] = [];
    for (const [i, n] of notifications.entries()) {
      const entry = entries[i];
      if (
        (entry?.state === 'claimed' && entry.owner === owner) ||
        (entry?.state === 'unknown' && recent) ||
        // Handed off, but its retry job was never added (and the hand-off not undone).
        (entry?.state === 'retry_job' && (await this.retries.getJob(n.id)) === undefined)
      )
        out.push(n);
    }
    return out;
  }

  /** Where a dead letter is: a failed retry job, or an unsent delivery of a failed batch. */
  private async locate(
    id: string,
  ): Promise<
    | { job: Job<DeliveryJobData>; n: Notification }
    | { batch: Job<BatchJobData>; n: Notification }
    | undefined
  > {
    const job = await this.retries.getJob(id);
    if (job !== undefined)
      return (await job.isFailed()) ? { job, n: job.data.notification } : undefined;
    for (const batch of await this.batches.getFailed(0, -1)) {
      const n = (await this.unsentOfFailedBatch(batch)).find((x) => x.id === id);
      if (n !== undefined) return { batch, n };
    }
    return undefined;
  }

  /**
   * Retries a dead letter as `retryDeadLetter` does, unless `closed` names a lifecycle its
   * notification opens that is closed by now (looked up once, after the dead letter is found).
   */
  async retryDeadLetterUnless(
    id: string,
    closed: (n: Notification) => Promise<string | null>,
  ): Promise<DeadLetterRetry> {
    const found = await this.locate(id);
    // Sent since (re-enqueued after its marks expired): no longer a dead letter.
    if (found === undefined || (await this.ledger.entry(id)).state === 'sent')
      return { outcome: 'missing' };
    const lifecycle = await closed(found.n);
    if (lifecycle !== null) return { outcome: 'closed', lifecycle };
    return { outcome: (await this.retryLocated(id, found)) ? 'retried' : 'missing' };
  }

  /** Moves a dead letter back to the queue with a fresh set of attempts. False when there is no such dead letter. */
  async retryDeadLetter(id: string): Promise<boolean> {
    const found = await this.locate(id);
    return found !== undefined && this.retryLocated(id, found);
  }

  private async retryLocated(
    id: string,
    found: NonNullable<Awaited<ReturnType<DeliveryQueue['locate']>>>,
  ): Promise<boolean> {
    const listings = retriedListings(found.n, Date.now());
    if ('job' in found) {
      // Sent (or being sent) since it died, after its mark expired: a stale dead letter.
      if (!(await this.ledger.renewHandOff(id))) return false;
      await found.job.updateData({ notification: found.n, priorAttempts: 0 });
      await found.job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      // Listed once its job is no longer failed: a look at it before would find it dead and
      // take the listing out again. (Sent meanwhile: not listed.)
      await this.ledger.renewHandOff(id, listings);
      return true;
    }
    // Only while the failed batch (or nobody, or a hand-off without its job) holds it: never
    // beside another sender.
    const owner = batchOwner(found.batch.id ?? '');
    if (
      !(await this.ledger.handOff(id, owner, listings)) &&
      !(await this.ledger.renewHandOff(id, listings))
    )
      return false;
    await this.putRetryJob({ notification: found.n, priorAttempts: 0 }, 0);
    return true;
  }

  /** Where one delivery is: being sent by a batch, retrying, dead, sent, or unknown (not claimed yet, or never). */
  async state(id: string): Promise<DeliveryState> {
    const entry = await this.ledger.entry(id);
    switch (entry.state) {
      case 'sent':
        return 'sent';
      case 'claimed':
        return 'sending';
      case 'unknown':
        return 'unknown';
      case 'retry_job': {
        // The job's state only (one script call): its data may be a large catch-up.
        const state = await this.retries.getJobState(id);
        if (state === 'unknown') return 'unknown';
        return state === 'failed' ? 'dead' : 'retrying';
      }
    }
  }

  /** Failed jobs on both queues (a batch that failed as a whole counts once). */
  async failedJobs(): Promise<number> {
    const [retries, batches] = await Promise.all([
      this.retries.getFailedCount(),
      this.batches.getFailedCount(),
    ]);
    return retries + batches;
  }

  async close(): Promise<void> {
    await Promise.all([this.batches.close(), this.retries.close()]);
  }
}

/**
 * Where a retried dead letter is listed in its lifecycles' order (`order.ts`): at its own rank,
 * or, when that is older, at the rank of a delivery routed a minute before the retry (the
 * routing clock of another replica may be that far behind this one's). So what its lifecycle
 * routes after the retry waits for it, also when it died hours ago (a listing older than the
 * order horizon holds nobody back). Never below its own rank, so it waits for nothing it is
 * listed before, and nothing waits in a circle.
 */
function retriedListings(n: Notification, now: number): Ordered[] {
  const since = now - CLOCK_SKEW_MS;
  return ordersOf(n).map((o) => ({
    ...o,
    rank: Math.max(o.rank, rankOf(since, isClosingRank(o.rank))),
  }));
}

function deadLetterOf(n: Notification, job: Job, attempts: number): DeadLetter {
  return {
    id: n.id,
    subscription: n.subscription,
    channel: n.channel,
    kinds: n.transitions.map((t) => t.kind),
    attempts,
    failedReason: job.failedReason,
    failedAt: job.finishedOn ?? null,
  };
}
