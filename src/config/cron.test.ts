import { describe, expect, it } from 'vitest';
import { CronError, parseCron } from './cron.js';

describe('parseCron', () => {
  it('parses the weekly example of docs/noise-control.md (Mondays 08:00)', () => {
    expect(parseCron('0 8 * * 1')).toEqual({
      expression: '0 8 * * 1',
      minutes: [0],
      hours: [8],
      daysOfMonth: Array.from({ length: 31 }, (_, i) => i + 1),
      months: Array.from({ length: 12 }, (_, i) => i + 1),
      daysOfWeek: [1],
    });
  });

  it('supports lists, ranges, steps, names and 7 as Sunday', () => {
    const schedule = parseCron('*/15 9-17/4 1,15 jan-mar MON-FRI,7');
    expect(schedule.minutes).toEqual([0, 15, 30, 45]);
    expect(schedule.hours).toEqual([9, 13, 17]);
    expect(schedule.daysOfMonth).toEqual([1, 15]);
    expect(schedule.months).toEqual([1, 2, 3]);
    expect(schedule.daysOfWeek).toEqual([0, 1, 2, 3, 4, 5]);
    expect(parseCron('5/20 0 * * *').minutes).toEqual([5, 25, 45]);
  });

  it('normalizes whitespace', () => {
    expect(parseCron('  0   8 * *  1 ').expression).toBe('0 8 * * 1');
  });

  it.each([
    ['0 8 * *', /5 fields/],
    ['0 8 * * 1 2', /5 fields/],
    ['60 8 * * 1', /minute must be between 0 and 59/],
    ['0 24 * * 1', /hour must be between/],
    ['0 8 0 * 1', /day of month must be between/],
    ['0 8 * 13 1', /month must be between/],
    ['0 8 * * 8', /day of week must be between/],
    ['*/0 8 * * 1', /step must be a positive integer/],
    ['0 17-9 * * 1', /backwards/],
    ['0 8 * * funday', /invalid day of week/],
    ['0 8 * * 1-', /invalid day of week range/],
    ['@daily', /5 fields/],
  ])('rejects %j', (expression, message) => {
    expect(() => parseCron(expression)).toThrow(CronError);
    expect(() => parseCron(expression)).toThrow(message);
  });
});
