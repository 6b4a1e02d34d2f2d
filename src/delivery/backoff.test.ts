import { describe, expect, it } from 'vitest';
import { DeliveryError } from '../notify/types.js';
import { BASE_DELAY_MS, MAX_DELAY_MS, MAX_RETRY_AFTER_MS, retryDelay } from './backoff.js';
import { DEFAULT_ATTEMPTS } from './queue.js';

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

  // [Retry-After, attempt, random, delay]: the longer of the two.
  const retryAfter: [number, number, number, number][] = [
    [2_000, 1, 1, 2_000],
    [2_000, 7, 0, 32_000],
    [0, 1, 1, 1_500],
    [0, 7, 0, 32_000],
    [-5, 1, 0.5, 1_000],
    [MAX_RETRY_AFTER_MS + 1, 1, 1, MAX_RETRY_AFTER_MS],
    [10 * 60 * 1000, 12, 1, 10 * 60 * 1000],
  ];
  it.each(retryAfter)(
    'Retry-After %i ms, attempt %i, random %d → %i ms (a shorter Retry-After does not shorten the backoff)',
    (after, attempt, random, expected) => {
      expect(retryDelay(attempt, retryable(after), () => random)).toBe(expected);
    },
  );

  it('the default attempts retry for about an hour before a dead letter', () => {
    let total = 0;
    for (let made = 1; made < DEFAULT_ATTEMPTS; made++)
      total += retryDelay(made, retryable(), () => 0.5);
    expect(total / 60_000).toBeGreaterThan(55);
    expect(total / 60_000).toBeLessThan(65);
    // Even a receiver that answers Retry-After: 0 every time.
    let asked0 = 0;
    for (let made = 1; made < DEFAULT_ATTEMPTS; made++)
      asked0 += retryDelay(made, retryable(0), () => 0.5);
    expect(asked0).toBe(total);
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
