import {
  Job,
  Queue,
  Worker,
  type JobJson,
  type Processor,
  type QueueOptions,
  type WorkerOptions,
} from 'bullmq';
import type { Logger } from 'pino';
import { toError } from './errors.js';
import type { Keys, RedisClient } from './redis.js';
import { refusalBackoff, refusalOf, refusalsOf, type RedisRefusals } from './redis/refusals.js';

/**
 * Every BullMQ queue of an installation, by role, in one table: the stages import their queue's
 * name from here, and the daemon's metrics sampler and Redis watch cover every entry. Stages
 * open their queues and workers through `openQueue` / `startWorker` and run periodic upkeep
 * through `startKeeper`, so the prefix, the error logging and the timer handling live here once.
 */
export const QUEUES = {
  /** Poll jobs (one scheduler per poll kind, plus catalog and category refreshes). */
  poll: 'poll',
  /** One job per poll cycle: the transitions routing takes as one batch. */
  transitions: 'transitions',
  /** Batch jobs of up to 100 deliveries. */
  deliveries: 'deliveries',
  /** One job per delivery that failed in its batch (job id = delivery id): retries, dead letters. */
  deliveryRetries: 'delivery-retries',
  /** The shared noise-control tick. */
  noise: 'noise',
} as const;

export type QueueRole = keyof typeof QUEUES;
export type QueueName = (typeof QUEUES)[QueueRole];

/** What every stage's queues and workers are opened with. */
export interface QueueHome {
  connection: RedisClient;
  keys: Keys;
}

/** The queue of `role` on the installation's prefix. */
export function openQueue<D>(
  role: QueueRole,
  home: QueueHome,
  options: Omit<QueueOptions, 'connection' | 'prefix'> = {},
): Queue<D> {
  return new Queue<D>(QUEUES[role], {
    ...options,
    connection: home.connection,
    prefix: home.keys.tag,
  });
}

/**
 * Worker errors that are passing states, not failures: logged as warnings with their own event.
 * - `worker:lock_lost`: a job whose lock lapsed while Redis was away (paused, or restarted
 *   after the lock's TTL); BullMQ runs it again, and every stage's jobs are idempotent.
 * - `worker:failover`: Redis's reply to a client blocked on a primary that has just become a
 *   replica (a Sentinel or Cluster failover); BullMQ waits for jobs again, on the new primary.
 */
const PASSING: readonly { pattern: RegExp; event: string; says: string }[] = [
  {
    pattern: /missing lock for job|could not renew lock for job|lock mismatch for job/i,
    event: 'worker:lock_lost',
    says: "lost a job's lock (Redis was away): the job runs again",
  },
  {
    // Redis came back without the job (restarted empty): there is nothing to finish, and the
    // stage's schedules and state are restored on reconnection (`App.resyncShared`).
    pattern: /missing key for job/i,
    event: 'worker:job_lost',
    says: 'found a job gone from Redis (it came back empty): it is not finished, the schedules are restored',
  },
  {
    pattern: /^UNBLOCKED\b/,
    event: 'worker:failover',
    says: 'saw Redis fail over while it waited for jobs; it waits again',
  },
];

/** How many finished (and dropped) job ids a worker remembers for `releaseOrphans`. */
const FINISHED_KEPT = 1_000;

/** How long `releaseOrphans` holds the lapsed lock it takes to put a job back (it moves at once). */
const RELEASE_CLAIM_MS = 10_000;

/** Sets `id` in `ids` as its newest entry, forgetting the oldest beyond FINISHED_KEPT. */
function remember(ids: Map<string, number>, id: string, attemptsStarted: number): void {
  ids.delete(id);
  ids.set(id, attemptsStarted);
  if (ids.size > FINISHED_KEPT) {
    const [oldest] = ids.keys();
    if (oldest !== undefined) ids.delete(oldest);
  }
}

/**
 * A BullMQ Worker that backs off while Redis refuses work. BullMQ's fetch loop treats an error
 * reply (OOM, READONLY, NOPERM…) as "no job" and asks again at once — about a thousand times a
 * second per worker against a full Redis — and its wait for jobs retries after 100 ms. Here a
 * refused fetch pauses the loop first (250 ms doubling to 2 s, `refusalBackoff`), and so does
 * the wait after a refusal; a close ends the pause.
 */
type DelayAbort = Parameters<Worker['delay']>[1];

class PacedWorker<D, R> extends Worker<D, R> {
  private refusedInARow = 0;
  /** Ids of the jobs this worker has fetched and not yet finished processing. */
  private readonly inHand = new Set<string>();
  /**
   * Ids of the jobs whose processing ended here, newest last (at most FINISHED_KEPT), each with
   * the job's `attemptsStarted` then: with `onlyFinishedOrphans`, the only jobs `releaseOrphans`
   * may put back, and (with `dropped`) the only ones it puts back once their lock has lapsed.
   */
  private readonly finished = new Map<string, number>();
  /** Ids of the jobs BullMQ fetched here and dropped (see `nextJobFromJobData`), likewise. */
  private readonly dropped = new Map<string, number>();
  /**
   * Put back only jobs whose processing ended here (their completion was refused), never one
   * that was fetched and not yet processed: for the delivery queues, where two runs of one batch
   * share its ledger claim and would both send.
   */
  onlyFinishedOrphans = false;
  private readonly pausesEnd = new AbortController();
  /** Ends a pause when the worker closes (BullMQ's type of an AbortController). */
  private readonly closeAbort = this.pausesEnd as unknown as DelayAbort;

  constructor(...args: ConstructorParameters<typeof Worker<D, R>>) {
    super(...args);
    this.once('closing', () => {
      this.pausesEnd.abort();
    });
    this.on('error', (err) => {
      // The wait for jobs (BZPOPMIN) reports its refusals as events, then waits `delay()`.
      if (refusalOf(err) !== null) this.refusedInARow += 1;
    });
  }

  protected override async moveToActive(token: string, name?: string): Promise<Job<D, R>> {
    try {
      const job = await super.moveToActive(token, name);
      this.refusedInARow = 0;
      return job;
    } catch (err) {
      if (refusalOf(err) !== null) {
        this.refusedInARow += 1;
        await super.delay(refusalBackoff(this.refusedInARow), this.closeAbort);
      }
      throw err;
    }
  }

  /** A fetched job is in hand from its fetch on (BullMQ may fetch the next before processing it). */
  protected override async nextJobFromJobData(
    jobData?: JobJson,
    jobId?: string,
    token?: string,
  ): Promise<Job<D, R>> {
    if (jobId === undefined) return super.nextJobFromJobData(jobData, jobId, token);
    this.inHand.add(jobId);
    this.finished.delete(jobId);
    this.dropped.delete(jobId);
    let job: Job<D, R> | undefined;
    try {
      job = await super.nextJobFromJobData(jobData, jobId, token);
    } finally {
      // BullMQ drops a fetched job when Redis refused to schedule its next run (it stays active
      // under this worker's lock): not in hand, so `releaseOrphans` puts it back.
      if (job === undefined) {
        this.inHand.delete(jobId);
        // (BullMQ passes null, not undefined, when the fetch found no job.)
        const fetched = jobData as Partial<JobJson> | null | undefined;
        if (fetched != null) remember(this.dropped, jobId, fetched.attemptsStarted ?? 0);
      }
    }
    return job;
  }

  override async processJob(
    job: Job<D, R>,
    token: string,
    fetchNextCallback?: () => boolean,
  ): ReturnType<Worker<D, R>['processJob']> {
    const id = job.id ?? '';
    this.inHand.add(id);
    try {
      return await super.processJob(job, token, fetchNextCallback);
    } finally {
      this.inHand.delete(id);
      remember(this.finished, id, job.attemptsStarted);
    }
  }

  /**
   * Puts back in the queue the active jobs this worker no longer processes, once Redis takes
   * writes again (the `accepting` event): a job taken just before Redis refused the scheduling
   * of its next run (BullMQ then drops it), or whose completion Redis refused.
   * - Its lock still held by this worker: put back with that lock (on the delivery queues only a
   *   job whose processing ended here, never one fetched and not yet processed).
   * - Its lock lapsed meanwhile (a refusal longer than the lock): put back when this worker knows
   *   it let the job go (its processing ended here, or BullMQ dropped it here; on the delivery
   *   queues only the former) and nobody started it since (`attemptsStarted` unchanged). The
   *   lapsed lock is first taken with SET NX, so a job that someone else has locked meanwhile
   *   is left alone.
   * Without this they wait for BullMQ's stalled check: the lock's TTL and two checks (30 to 60 s
   * with the default 30 s lock). A job another worker was processing when its lock lapsed is left
   * to that worker, or to the stalled check if that worker is gone. Returns how many were put back.
   */
  async releaseOrphans(redis: RedisClient): Promise<number> {
    const active = this.keys.active;
    if (active === undefined) return 0;
    const ids = await redis.lrange(active, 0, -1);
    let released = 0;
    const heldMayGo = (id: string): boolean =>
      !this.inHand.has(id) && (!this.onlyFinishedOrphans || this.finished.has(id));
    const letGo = (id: string): number | undefined =>
      this.inHand.has(id)
        ? undefined
        : (this.finished.get(id) ?? (this.onlyFinishedOrphans ? undefined : this.dropped.get(id)));
    for (const id of ids) {
      if (this.inHand.has(id)) continue;
      const lockKey = `${this.toKey(id)}:lock`;
      const token = await redis.get(lockKey);
      if (token !== null && (!token.startsWith(`${this.id}:`) || !heldMayGo(id))) continue;
      const started = token === null ? letGo(id) : undefined;
      if (token === null && started === undefined) continue;
      const job = await Job.fromId<D, R>(this, id);
      if (job === undefined || this.inHand.has(id)) continue;
      let lock = token;
      if (lock === null) {
        if (job.attemptsStarted !== started || letGo(id) !== started) continue;
        lock = `${this.id}:release`;
        if ((await redis.set(lockKey, lock, 'PX', RELEASE_CLAIM_MS, 'NX')) !== 'OK') continue;
      }
      await job.moveToWait(lock);
      this.finished.delete(id);
      this.dropped.delete(id);
      released += 1;
    }
    return released;
  }

  /**
   * Wakes this worker's wait for jobs. A wait that Redis broke off (a failover's `UNBLOCKED`, a
   * refusal) is followed by BullMQ's longest block (10 s) unless a marker arrives, and the
   * marker of a due delayed job (the next scheduled poll) may be the one that was lost: a base
   * marker (what BullMQ itself adds for a waiting job) ends that wait at once, and the next fetch
   * promotes the delayed jobs that are due.
   */
  async wake(redis: RedisClient): Promise<void> {
    const marker = this.keys.marker;
    if (marker !== undefined) await redis.zadd(marker, 0, '0');
  }

  override async delay(milliseconds?: number, abortController?: DelayAbort): Promise<void> {
    // BullMQ's own short pause after a failed wait for jobs: longer while Redis refuses.
    if (milliseconds === undefined && this.refusedInARow > 0) {
      await super.delay(refusalBackoff(this.refusedInARow), this.closeAbort);
      return;
    }
    await super.delay(milliseconds, abortController);
  }
}

/**
 * A worker on the queue of `role`: on the installation's prefix, its errors logged once here as
 * `worker:error` with the queue's name (BullMQ retries what failed; the line is for operators).
 * A refusal of Redis (src/redis/refusals.ts) is not logged here: the refusal model counts it and
 * logs the episode.
 */
export function startWorker<D, R>(
  role: QueueRole,
  processor: Processor<D, R>,
  home: QueueHome & { log: Logger },
  options: Omit<WorkerOptions, 'connection' | 'prefix'> = {},
): Worker<D, R> {
  const worker = new PacedWorker<D, R>(QUEUES[role], processor, {
    ...options,
    connection: home.connection,
    prefix: home.keys.tag,
  });
  worker.onlyFinishedOrphans = role === 'deliveries' || role === 'deliveryRetries';
  const refusals = refusalsOf(home.connection);
  // Once Redis takes work again, what it refused to finish or reschedule runs again at once.
  const release = (): void => {
    worker.wake(home.connection).catch(() => undefined);
    worker.releaseOrphans(home.connection).then(
      (n) => {
        if (n > 0)
          home.log.info(
            { event: 'worker:jobs_released', queue: QUEUES[role], jobs: n },
            `${QUEUES[role]} worker put back ${String(n)} job(s) Redis had refused to finish`,
          );
      },
      (err: unknown) => {
        home.log.warn(
          { event: 'worker:release_failed', queue: QUEUES[role], err: toError(err).message },
          `${QUEUES[role]} worker could not put back the jobs Redis had refused to finish`,
        );
      },
    );
  };
  refusals.on('accepting', release);
  worker.once('closed', () => {
    refusals.off('accepting', release);
  });
  worker.on('error', (err) => {
    if (refusals.note(err, { queue: QUEUES[role] }) !== null) return;
    const message = toError(err).message;
    const passing = PASSING.find((p) => p.pattern.test(message));
    if (passing !== undefined) {
      home.log.warn(
        { event: passing.event, queue: QUEUES[role], err: message },
        `${QUEUES[role]} worker ${passing.says}`,
      );
      return;
    }
    home.log.error(
      { event: 'worker:error', queue: QUEUES[role], err: message },
      `${QUEUES[role]} worker error`,
    );
  });
  return worker;
}

/**
 * Runs `task` every `everyMs` (the timer does not hold the process open); a failure is logged
 * at warn as `failure.event`, but for a refusal of Redis when `failure.refusals` is given: the
 * refusal model counts that and says it once (src/redis/refusals.ts), not once per tick.
 * Returns the function that stops it.
 */
export function startKeeper(
  everyMs: number,
  task: () => Promise<unknown>,
  log: Pick<Logger, 'warn'>,
  failure: { event: string; message: string; refusals?: Pick<RedisRefusals, 'note'> },
): () => void {
  const timer = setInterval(() => {
    task().catch((err: unknown) => {
      if (failure.refusals !== undefined && failure.refusals.note(err) !== null) return;
      log.warn({ event: failure.event, err: toError(err).message }, failure.message);
    });
  }, everyMs);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}
