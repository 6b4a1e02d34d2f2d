import { DeliveryError } from '../notify/types.js';

export const BASE_DELAY_MS = 1000;
export const MAX_DELAY_MS = 5 * 60 * 1000;
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Delay before retry number `attemptsMade` (1 = the first retry): a receiver's Retry-After when it
 * gave one, else exponential from 1 s with ±50% jitter, capped at 5 minutes. `random` is injectable
 * for tests.
 */
export function retryDelay(
  attemptsMade: number,
  err: unknown,
  random: () => number = Math.random,
): number {
  if (err instanceof DeliveryError && err.retryAfterMs !== null) {
    return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, err.retryAfterMs));
  }
  const exp = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.max(0, attemptsMade - 1));
  return Math.round(Math.min(MAX_DELAY_MS, exp * (0.5 + random())));
}
