import { Worker } from 'bullmq';
import type { RedisClient } from '../../src/redis.js';

/**
 * `times` processes in turn take the next job of `queue` and die with it: each is a bare BullMQ
 * worker (lock 300 ms) whose job never ends, closed without waiting for it, so its lock lapses
 * unrenewed and the next worker's stalled-job check finds the job (one stall each).
 */
export async function dieHoldingJob(
  queue: string,
  home: { connection: RedisClient; prefix: string },
  times: number,
): Promise<void> {
  for (let i = 0; i < times; i++) {
    let taken!: () => void;
    const took = new Promise<void>((resolve) => (taken = resolve));
    const dying = new Worker(
      queue,
      () => {
        taken();
        return new Promise<never>(() => undefined);
      },
      { connection: home.connection, prefix: home.prefix, lockDuration: 300, stalledInterval: 300 },
    );
    dying.on('error', () => undefined);
    await took;
    await dying.close(true);
  }
}
