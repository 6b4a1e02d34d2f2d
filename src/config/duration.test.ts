import { describe, expect, it } from 'vitest';
import { DurationError, formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['1s', 1_000],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1d12h', 129_600_000],
    ['1m30s500ms', 90_500],
    ['0s', 0],
    [' 15m ', 900_000],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '30', '1.5h', '1 h', '1h 30m', '30m1h', '1m1m', '5x', 'ms', '-1s', '1H', 'abc'])(
    'rejects %j with a DurationError that does not echo the input',
    (text) => {
      let caught: unknown;
      try {
        parseDuration(text);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(DurationError);
      const error = caught as DurationError;
      expect(error.code).toBe('duration_invalid');
      expect(error.message).toMatch(/duration/);
      if (text.trim().length > 2) expect(error.message).not.toContain(text.trim());
    },
  );

  it('rejects durations beyond the safe integer range', () => {
    expect(() => parseDuration('99999999999999999d')).toThrow(/too large/);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [90_000, '1m30s'],
    [5_400_000, '1h30m'],
    [86_400_000, '1d'],
  ])('%d → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});
