import { describe, expect, it } from 'vitest';
import { DeliveryError } from '../notify/types.js';
import { BASE_DELAY_MS, MAX_DELAY_MS, MAX_RETRY_AFTER_MS, retryDelay } from './backoff.js';

const retryable = (retryAfterMs: number | null = null): DeliveryError =>
  new DeliveryError({ message: 'x', retryable: true, reason: 'server', retryAfterMs });

describe('retryDelay', () => {
  // random() = 0.5 means no jitter; 0 is -50%, 1 is +50%.
  const exponential: [number, number, number][] = [
    [1, 0.5, 1_000],
    [2, 0.5, 2_000],
    [3, 0.5, 4_000],
    [4, 0.5, 8_000],
    [1, 0, 500],
    [1, 1, 1_500],
    [3, 0, 2_000],
    [3, 1, 6_000],
    [0, 0.5, 1_000],
    [9, 0.5, 256_000],
    [9, 1, MAX_DELAY_MS],
    [10, 0.5, MAX_DELAY_MS],
    [10, 0, MAX_DELAY_MS / 2],
    [50, 1, MAX_DELAY_MS],
    [2000, 0.5, MAX_DELAY_MS],
  ];
  it.each(exponential)('attempt %i, random %d → %i ms', (attempt, random, expected) => {
    expect(retryDelay(attempt, retryable(), () => random)).toBe(expected);
  });

  it('starts at the base delay', () => {
    expect(retryDelay(1, new Error('x'), () => 0.5)).toBe(BASE_DELAY_MS);
  });

  const retryAfter: [number, number][] = [
    [2_000, 2_000],
    [0, 0],
    [-5, 0],
    [MAX_RETRY_AFTER_MS + 1, MAX_RETRY_AFTER_MS],
    [10 * 60 * 1000, 10 * 60 * 1000],
  ];
  it.each(retryAfter)('Retry-After %i ms → %i ms, whatever the attempt', (after, expected) => {
    expect(retryDelay(1, retryable(after), () => 1)).toBe(expected);
    expect(retryDelay(7, retryable(after), () => 0)).toBe(expected);
  });

  it('ignores non-DeliveryErrors and unknown values (exponential)', () => {
    expect(retryDelay(2, undefined, () => 0.5)).toBe(2_000);
    expect(retryDelay(2, { retryAfterMs: 1 }, () => 0.5)).toBe(2_000);
  });

  it('jitter stays within ±50% with the real random', () => {
    for (let i = 0; i < 200; i++) {
      const d = retryDelay(3, retryable());
      expect(d).toBeGreaterThanOrEqual(2_000);
      expect(d).toBeLessThanOrEqual(6_000);
    }
  });
});
