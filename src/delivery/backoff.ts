import { DeliveryError } from '../notify/types.js';

export const BASE_DELAY_MS = 1000;
export const MAX_DELAY_MS = 5 * 60 * 1000;
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Delay before retry number `attemptsMade` (1 = the first retry): exponential from 1 s with ±50%
 * jitter, capped at 5 minutes, or a receiver's Retry-After (up to an hour) when it asks for
 * longer. A shorter one (`Retry-After: 0`, a date already past) does not shorten the backoff: a
 * receiver that keeps answering so would otherwise use up every attempt within seconds.
 * `random` is injectable for tests.
 */
export function retryDelay(
  attemptsMade: number,
  err: unknown,
  random: () => number = Math.random,
): number {
  const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.max(0, attemptsMade - 1));
  const backoff = Math.round(Math.min(MAX_DELAY_MS, exp * (0.5 + random())));
  if (err instanceof DeliveryError && err.retryAfterMs !== null)
    return Math.max(backoff, Math.min(MAX_RETRY_AFTER_MS, err.retryAfterMs));
  return backoff;
}
