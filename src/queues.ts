/**
 * Every BullMQ queue of an installation, by role, in one table: the stages import their queue's
 * name from here, and the daemon's metrics sampler and Redis watch cover every entry.
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
