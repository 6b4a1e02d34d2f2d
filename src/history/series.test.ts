import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  HOUR_MS,
  bucketStart,
  mergeResolutions,
  parseSample,
  parseStatus,
  sampleMember,
  statusMember,
  thin,
} from './series.js';

describe('history series', () => {
  it('buckets, members and their parsing', () => {
    expect(bucketStart(HOUR_MS * 5 + 1234, HOUR_MS)).toBe(HOUR_MS * 5);
    expect(parseSample(sampleMember(3_600_000, -0.25))).toEqual([3_600_000, -0.25]);
    expect(parseSample('garbage')).toBeNull();
    expect(parseSample('12:x')).toBeNull();
    expect(parseStatus(statusMember(42, 'major_outage'))).toEqual({
      at: 42,
      status: 'major_outage',
    });
    expect(parseStatus(':x')).toBeNull();
  });

  it('merges daily samples before the first hourly one', () => {
    const daily: [number, number][] = [
      [0, 1],
      [DAY_MS, 2],
      [2 * DAY_MS, 3],
    ];
    const hourly: [number, number][] = [
      [2 * DAY_MS + HOUR_MS, 4],
      [2 * DAY_MS + 2 * HOUR_MS, 5],
    ];
    expect(mergeResolutions(hourly, daily)).toEqual([[0, 1], [DAY_MS, 2], ...hourly]);
    expect(mergeResolutions([], daily)).toEqual(daily);
  });

  it('thins long series evenly, keeping both ends', () => {
    const points = Array.from({ length: 100 }, (_, i) => i);
    const out = thin(points, 10);
    expect(out).toHaveLength(10);
    expect(out[0]).toBe(0);
    expect(out[9]).toBe(99);
    expect(thin([1, 2], 10)).toEqual([1, 2]);
  });
});
