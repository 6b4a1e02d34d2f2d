import { describe, expect, it } from 'vitest';
import { CronError, parseCron } from '../config/cron.js';
import type { DigestConfig } from '../config/schema.js';
import { lastFireAt, nextFireAt } from './schedule.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const digest = (schedule: string, timezone = 'Europe/Berlin'): DigestConfig => ({
  schedule,
  timezone,
});

// [what, schedule, zone, now, last fire ≤ now, next fire > now] — all UTC.
const cases: [string, string, string, string, string | null, string][] = [
  // "0 8 * * 1" in Berlin: 07:00Z in winter (CET), 06:00Z in summer (CEST).
  [
    'Mondays 08:00, the week before spring forward',
    '0 8 * * 1',
    'Europe/Berlin',
    '2026-03-20T00:00:00Z',
    '2026-03-16T07:00:00Z',
    '2026-03-23T07:00:00Z',
  ],
  [
    'exactly at a fire time: last = now, next = a week on, in summer time',
    '0 8 * * 1',
    'Europe/Berlin',
    '2026-03-23T07:00:00Z',
    '2026-03-23T07:00:00Z',
    '2026-03-30T06:00:00Z',
  ],
  [
    'a millisecond before the first summer fire',
    '0 8 * * 1',
    'Europe/Berlin',
    '2026-03-30T05:59:59.999Z',
    '2026-03-23T07:00:00Z',
    '2026-03-30T06:00:00Z',
  ],
  [
    'the week of fall back',
    '0 8 * * 1',
    'Europe/Berlin',
    '2026-10-20T12:00:00Z',
    '2026-10-19T06:00:00Z',
    '2026-10-26T07:00:00Z',
  ],
  // 02:30 does not exist on 29 Mar 2026 in Berlin: it fires once, at the change (03:00 CEST).
  [
    'daily 02:30, just before the spring change',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-03-29T00:59:00Z',
    '2026-03-28T01:30:00Z',
    '2026-03-29T01:00:00Z',
  ],
  [
    'daily 02:30, at the spring change',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-03-29T01:00:00Z',
    '2026-03-29T01:00:00Z',
    '2026-03-30T00:30:00Z',
  ],
  [
    'daily 02:30, after the spring change',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-03-29T02:00:00Z',
    '2026-03-29T01:00:00Z',
    '2026-03-30T00:30:00Z',
  ],
  // 02:30 happens twice on 25 Oct 2026: it fires once, at the first (CEST).
  [
    'daily 02:30, in the repeated hour (02:00 CET)',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-10-25T01:00:00Z',
    '2026-10-25T00:30:00Z',
    '2026-10-26T01:30:00Z',
  ],
  [
    'daily 02:30, at the second 02:30 (no second fire)',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-10-25T01:30:00Z',
    '2026-10-25T00:30:00Z',
    '2026-10-26T01:30:00Z',
  ],
  [
    'hourly: the repeated 02:00 fires once, at its first occurrence',
    '0 * * * *',
    'Europe/Berlin',
    '2026-10-25T00:30:00Z',
    '2026-10-25T00:00:00Z',
    '2026-10-25T02:00:00Z',
  ],
  [
    'monthly in UTC',
    '0 0 1 * *',
    'UTC',
    '2026-02-15T12:00:00Z',
    '2026-02-01T00:00:00Z',
    '2026-03-01T00:00:00Z',
  ],
  [
    'leap days only',
    '0 0 29 2 *',
    'UTC',
    '2026-03-01T00:00:00Z',
    '2024-02-29T00:00:00Z',
    '2028-02-29T00:00:00Z',
  ],
  [
    'weekdays 09:00 New York across its spring change (8 Mar 2026)',
    '0 9 * * 1-5',
    'America/New_York',
    '2026-03-06T15:00:00Z',
    '2026-03-06T14:00:00Z',
    '2026-03-09T13:00:00Z',
  ],
];

describe('lastFireAt / nextFireAt', () => {
  it.each(cases)('%s', (_what, schedule, zone, now, last, next) => {
    const d = digest(schedule, zone);
    expect({
      last: iso(lastFireAt(d, at(now))),
      next: iso(nextFireAt(d, at(now))),
    }).toEqual({ last: last === null ? null : iso(at(last)), next: iso(at(next)) });
  });

  it.each([
    ['30 2 * * *', '2026-03-22T00:00:00Z'],
    ['0 2 * * *', '2026-10-19T00:00:00Z'],
    ['0 1-3 * * *', '2026-10-19T00:00:00Z'],
    ['0 1-3 * * *', '2026-03-23T00:00:00Z'],
    ['*/20 * * * *', '2026-10-21T00:00:00Z'],
    ['0 8 * * 1', '2026-03-22T00:00:00Z'],
  ])(
    '"%s" in Berlin: last and next agree with the forward schedule (week of %s)',
    (schedule, startIso) => {
      const d = digest(schedule);
      const start = at(startIso);
      const end = start + 10 * 86_400_000;
      const fires: number[] = [];
      for (let t = nextFireAt(d, start - 1); t < end; t = nextFireAt(d, t)) fires.push(t);
      expect(fires.length).toBeGreaterThan(1);
      let index = 0;
      for (let now = fires[0]!; now < end; now += 37 * 60_000) {
        while (index + 1 < fires.length && fires[index + 1]! <= now) index++;
        const expectedLast = fires[index]!;
        expect([iso(now), iso(lastFireAt(d, now))]).toEqual([iso(now), iso(expectedLast)]);
        if (index + 1 < fires.length) {
          expect([iso(now), iso(nextFireAt(d, now))]).toEqual([iso(now), iso(fires[index + 1]!)]);
        }
      }
      for (const fire of fires) expect(lastFireAt(d, fire)).toBe(fire);
    },
  );
});

describe('fire times on the days of the change', () => {
  const firesBetween = (d: DigestConfig, from: string, to: string): string[] => {
    const out: string[] = [];
    for (let t = nextFireAt(d, at(from) - 1); t < at(to); t = nextFireAt(d, t)) out.push(iso(t)!);
    return out;
  };

  it.each([
    [
      'spring: 01:00 CET, then 02:00 and 03:00 CEST collapse into the change',
      '0 1-3 * * *',
      '2026-03-28T23:00:00Z',
      '2026-03-29T22:00:00Z',
      ['2026-03-29T00:00:00.000Z', '2026-03-29T01:00:00.000Z'],
    ],
    [
      'autumn: 01:00 CEST, the first 02:00 (CEST), 03:00 CET',
      '0 1-3 * * *',
      '2026-10-24T22:00:00Z',
      '2026-10-25T23:00:00Z',
      ['2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z'],
    ],
    [
      'autumn: every 30 minutes runs through the repeated hour once',
      '*/30 2 * * *',
      '2026-10-24T22:00:00Z',
      '2026-10-25T23:00:00Z',
      ['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z'],
    ],
    [
      'hourly across the autumn change: 02:00 once, so one period is 2 real hours',
      '0 * * * *',
      '2026-10-24T23:30:00Z',
      '2026-10-25T03:30:00Z',
      ['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z'],
    ],
  ])('%s', (_what, schedule, from, to, expected) => {
    expect(firesBetween(digest(schedule), from, to)).toEqual(expected);
  });
});

describe('parseCron validates with cron-parser', () => {
  it.each([
    ['0 8 * * mon', [1]],
    ['0 8 * * SUN,sat', [0, 6]],
    ['0 8 * * 1-5', [1, 2, 3, 4, 5]],
  ])('accepts %j', (expression, daysOfWeek) => {
    expect(parseCron(expression).daysOfWeek).toEqual(daysOfWeek);
  });

  it.each([
    ['0 8 L * *', /invalid day of month value/],
    ['0 8 * * 1#2', /invalid day of week value/],
    ['H 8 * * *', /invalid minute value/],
    ['0 8 ? * 1', /invalid day of month value/],
    ['jan 8 * * *', /invalid minute value/],
    ['0 8 * * 5L', /invalid day of week value/],
    ['0 8 * jan-foo *', /invalid month value/],
    ['0 0 30 2 *', /day of month never occurs in the given months/],
    ['0 0 31 4,6 *', /day of month never occurs/],
    ['1-70 * * * *', /minute must be between 0 and 59/],
    ['0 8 * * 1,,2', /invalid day of week value/],
  ])('rejects %j', (expression, message) => {
    expect(() => parseCron(expression)).toThrow(CronError);
    expect(() => parseCron(expression)).toThrow(message);
  });

  it('never echoes the expression and keeps the library error as the cause', () => {
    const caught = (() => {
      try {
        parseCron('0 8 * * xyz');
      } catch (error) {
        return error;
      }
      return null;
    })();
    expect(caught).toBeInstanceOf(CronError);
    const error = caught as CronError;
    expect(error.code).toBe('cron_invalid');
    expect(error.message).not.toContain('xyz');
    expect(error.cause).toBeInstanceOf(Error);
  });
});
