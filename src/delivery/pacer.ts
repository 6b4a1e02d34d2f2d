/**
 * Per-destination pacing, shared by every replica: deliveries to one destination (a Slack
 * channel, a Teams workflow, a PagerDuty routing key: see each kind's `pacing`) are spaced at
 * least its interval apart, and a destination that answered Retry-After is held back that long.
 * One Redis hash per destination holds its next free slot and how long it is held back; the key name is a hash of the
 * destination, which may hold a secret. A delivery whose slot is later is not waited for in the
 * worker: it becomes a delayed job of its own, so a slow or throttled destination never holds up
 * the others.
 */
import { createHash } from 'node:crypto';
import type { Keys, RedisClient } from '../redis.js';
import { scripts, type Scripts } from '../redis/scripts.js';

export interface Pacing {
  /** Who is paced together; may hold a secret (only its hash is stored). */
  destination: string;
  intervalMs: number;
}

export class Pacer {
  private readonly scripts: Scripts;

  constructor(
    redis: RedisClient,
    private readonly keys: Keys,
  ) {
    this.scripts = scripts(redis);
  }

  private keyOf(destination: string): string {
    const hash = createHash('sha256').update(destination).digest('hex').slice(0, 32);
    return this.keys.key('pace', hash);
  }

  /**
   * Reserves the destination's next slot: ms from now until it (0 = send now). `slotHeld`: the
   * caller reserved a slot before and it is due; it may send now unless the destination has been
   * held back since, in which case it gets a new slot after the hold.
   */
  async reserve(pacing: Pacing, slotHeld = false): Promise<number> {
    return this.scripts.pace(
      [this.keyOf(pacing.destination)],
      [String(pacing.intervalMs), '0', slotHeld ? '1' : '0'],
    );
  }

  /** Holds the destination back `ms` from now (its Retry-After); later reservations wait. */
  async hold(pacing: Pacing, ms: number): Promise<void> {
    if (ms <= 0) return;
    await this.scripts.pace(
      [this.keyOf(pacing.destination)],
      [String(pacing.intervalMs), String(Math.ceil(ms)), '0'],
    );
  }
}
