import { Queue, Worker, type Processor, type QueueOptions, type WorkerOptions } from 'bullmq';
import type { Logger } from 'pino';
import { toError } from './errors.js';
import type { Keys, RedisClient } from './redis.js';

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
    pattern: /^UNBLOCKED\b/,
    event: 'worker:failover',
    says: 'saw Redis fail over while it waited for jobs; it waits again',
  },
];

/**
 * A worker on the queue of `role`: on the installation's prefix, its errors logged once here as
 * `worker:error` with the queue's name (BullMQ retries what failed; the line is for operators).
 */
export function startWorker<D, R>(
  role: QueueRole,
  processor: Processor<D, R>,
  home: QueueHome & { log: Logger },
  options: Omit<WorkerOptions, 'connection' | 'prefix'> = {},
): Worker<D, R> {
  const worker = new Worker<D, R>(QUEUES[role], processor, {
    ...options,
    connection: home.connection,
    prefix: home.keys.tag,
  });
  worker.on('error', (err) => {
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
 * at warn as `failure.event`. Returns the function that stops it.
 */
export function startKeeper(
  everyMs: number,
  task: () => Promise<unknown>,
  log: Pick<Logger, 'warn'>,
  failure: { event: string; message: string },
): () => void {
  const timer = setInterval(() => {
    task().catch((err: unknown) => {
      log.warn({ event: failure.event, err: toError(err).message }, failure.message);
    });
  }, everyMs);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}
