import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keys } from '../redis.js';
import type { Transition } from '../diff/transition.js';

export const TRANSITIONS_QUEUE = 'transitions';

/** Completed transition jobs are kept this long: the window in which a re-derived id is a no-op. */
export const TRANSITION_RETENTION_SECONDS = 7 * 24 * 3600;

/**
 * Durable hand-off of transitions to routing: one BullMQ job per transition, job id = transition
 * id, so enqueueing the same transition again (a retried poll, a crash before the snapshot
 * commit, two replicas racing) adds nothing.
 */
export class Handoff {
  readonly queue: Queue<Transition>;

  constructor(connection: Redis, keys: Keys) {
    this.queue = new Queue<Transition>(TRANSITIONS_QUEUE, {
      connection,
      prefix: keys.tag,
      defaultJobOptions: {
        removeOnComplete: { age: TRANSITION_RETENTION_SECONDS },
        removeOnFail: { age: 30 * 24 * 3600 },
        attempts: 10,
        backoff: { type: 'exponential', delay: 1000 },
      },
    });
  }

  async enqueue(transitions: readonly Transition[]): Promise<void> {
    if (transitions.length === 0) return;
    await this.queue.addBulk(
      transitions.map((t) => ({ name: t.kind, data: t, opts: { jobId: t.id } })),
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
