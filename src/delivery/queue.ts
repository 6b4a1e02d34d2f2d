import { EventEmitter } from 'node:events';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import type { Keys } from '../redis.js';
import { DeliveryError, type FailureReason, type Notification } from '../notify/types.js';
import { classifyError } from '../notify/classify.js';
import type { ChannelRegistry } from './channels.js';
import { retryDelay } from './backoff.js';

export const DELIVERIES_QUEUE = 'deliveries';
export const DEFAULT_ATTEMPTS = 8;
/** Completed deliveries are kept (and so deduplicated by id) this long. */
export const DELIVERY_RETENTION_SECONDS = 7 * 24 * 3600;
/** Dead letters (failed deliveries) are kept this long for listing and retry. */
export const DEAD_LETTER_RETENTION_SECONDS = 30 * 24 * 3600;

export interface DeliveryOutcome {
  notification: Notification;
  channelType: string;
  outcome: 'sent' | 'retry' | 'dead';
  reason: FailureReason | null;
  attempt: number;
  /** ms from the delivery's creation to this outcome. */
  latencyMs: number;
  error: string | null;
}

export interface DeliveryEvents {
  delivery: [DeliveryOutcome];
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

/** The producer side: enqueue deliveries (job id = delivery id, so a re-enqueue is a no-op), list and retry dead letters. */
export class DeliveryQueue {
  readonly queue: Queue<Notification>;

  constructor(connection: Redis, keys: Keys, attempts = DEFAULT_ATTEMPTS) {
    this.queue = new Queue<Notification>(DELIVERIES_QUEUE, {
      connection,
      prefix: keys.tag,
      defaultJobOptions: {
        attempts,
        backoff: { type: 'custom' },
        removeOnComplete: { age: DELIVERY_RETENTION_SECONDS },
        removeOnFail: { age: DEAD_LETTER_RETENTION_SECONDS },
      },
    });
  }

  async enqueue(notifications: readonly Notification[]): Promise<void> {
    if (notifications.length === 0) return;
    await this.queue.addBulk(
      notifications.map((n) => ({ name: n.type, data: n, opts: { jobId: n.id } })),
    );
  }

  async deadLetters(limit = 100): Promise<DeadLetter[]> {
    const jobs = await this.queue.getFailed(0, limit - 1);
    return jobs.map((job) => ({
      id: job.id ?? '',
      subscription: job.data.subscription,
      channel: job.data.channel,
      kinds: job.data.transitions.map((t) => t.kind),
      attempts: job.attemptsMade,
      failedReason: job.failedReason,
      failedAt: job.finishedOn ?? null,
    }));
  }

  /** Moves a dead letter back to the queue for a fresh set of attempts. False when there is no such dead letter. */
  async retryDeadLetter(id: string): Promise<boolean> {
    const job = await this.queue.getJob(id);
    if (job === undefined || !(await job.isFailed())) return false;
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return true;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export interface DeliveryWorkerOptions {
  connection: Redis;
  keys: Keys;
  channels: () => ChannelRegistry;
  log: Logger;
  concurrency?: number;
  /**
   * BullMQ lock duration, also used as the stalled-job check interval: how soon a delivery held
   * by a dead process is taken over (within about two of these).
   */
  lockDurationMs?: number;
  /** Delay before retry number `attemptsMade` (1 = the first retry); default `retryDelay`. */
  backoff?: (attemptsMade: number, err: unknown) => number;
  now?: () => number;
}

/**
 * The consumer side: sends each delivery through its channel's notifier. Retry, backoff, dedupe,
 * logging and outcome events live here once, around every notifier: a retryable DeliveryError
 * is retried with exponential backoff and jitter (or the receiver's Retry-After); a permanent
 * one goes to the dead letters at once.
 */
export class DeliveryWorker extends EventEmitter<DeliveryEvents> {
  private worker: Worker<Notification> | null = null;
  private readonly now: () => number;

  constructor(private readonly options: DeliveryWorkerOptions) {
    super();
    this.now = options.now ?? Date.now;
  }

  start(): void {
    const lockDuration = this.options.lockDurationMs ?? 30_000;
    const backoff = this.options.backoff ?? retryDelay;
    this.worker = new Worker<Notification>(DELIVERIES_QUEUE, (job) => this.process(job), {
      connection: this.options.connection,
      prefix: this.options.keys.tag,
      concurrency: this.options.concurrency ?? 16,
      lockDuration,
      // Without this BullMQ looks for stalled jobs every 30 s whatever the lock duration.
      stalledInterval: lockDuration,
      settings: { backoffStrategy: (attemptsMade, _type, err) => backoff(attemptsMade, err) },
    });
    this.worker.on('error', (err) => {
      this.options.log.error(
        { event: 'worker:error', queue: DELIVERIES_QUEUE, err: toError(err).message },
        'delivery worker error',
      );
    });
  }

  private report(
    job: Job<Notification>,
    channelType: string,
    outcome: DeliveryOutcome['outcome'],
    error: DeliveryError | null,
  ): void {
    const n = job.data;
    const result: DeliveryOutcome = {
      notification: n,
      channelType,
      outcome,
      reason: error?.reason ?? null,
      attempt: job.attemptsMade + 1,
      latencyMs: Math.max(0, this.now() - n.createdAt),
      error: error?.message ?? null,
    };
    const fields = {
      event: `delivery:${outcome}`,
      deliveryId: n.id,
      transitionId: n.transitions[0]?.id,
      feedId: n.transitions[0]?.feedId,
      kind: n.transitions.length === 1 ? n.transitions[0]?.kind : n.type,
      subscription: n.subscription,
      channel: n.channel,
      channelType,
      outcome,
      attempt: result.attempt,
      ...(error === null
        ? {}
        : { reason: error.reason, httpStatus: error.httpStatus, err: error.message }),
    };
    if (outcome === 'sent') this.options.log.info(fields, `delivered ${n.id}`);
    else if (outcome === 'retry')
      this.options.log.warn(fields, `delivery ${n.id} failed, will retry`);
    else this.options.log.error(fields, `delivery ${n.id} failed for good: dead letter`);
    this.emit('delivery', result);
  }

  private async process(job: Job<Notification>): Promise<void> {
    const channel = this.options.channels().get(job.data.channel);
    if (channel === undefined) {
      const err = new DeliveryError({
        message: `channel "${job.data.channel}" is not configured (any more)`,
        retryable: false,
        reason: 'config',
      });
      this.report(job, 'unknown', 'dead', err);
      throw new UnrecoverableError(err.message);
    }
    try {
      await channel.notifier.send(job.data);
    } catch (raw) {
      const err = raw instanceof DeliveryError ? raw : classifyError(raw);
      const attempts = job.opts.attempts ?? 1;
      if (!err.retryable || job.attemptsMade + 1 >= attempts) {
        this.report(job, channel.type, 'dead', err);
        throw new UnrecoverableError(err.message);
      }
      this.report(job, channel.type, 'retry', err);
      throw err;
    }
    this.report(job, channel.type, 'sent', null);
  }

  /** Stops taking deliveries and waits for in-flight sends. */
  async stop(): Promise<void> {
    if (this.worker !== null) await this.worker.close();
    this.worker = null;
  }
}
