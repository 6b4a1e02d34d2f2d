import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import { parseQuietWindow, QuietHoursError, type QuietWindow } from '../config/quiet-hours.js';
import type { QuietHoursConfig } from '../config/schema.js';
import { isExcepted, quietState } from './quiet.js';

const BERLIN = 'Europe/Berlin';

function config(windows: string[], timezone = BERLIN, except: EventKind[] = []): QuietHoursConfig {
  return { timezone, windows: windows.map(parseQuietWindow), except };
}

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const WEEKNIGHTS_AND_WEEKENDS = ['Mon-Fri 22:00-07:00', 'Sat-Sun'];

// [what, windows, zone, now (UTC), quiet, endsAt (UTC) or null]. Local times in the names.
const cases: [string, string[], string, string, boolean, string | null][] = [
  // An ordinary week (CET = UTC+1), 16-22 Nov 2026.
  [
    'Wed 12:00: working hours',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-18T11:00:00Z',
    false,
    null,
  ],
  [
    'Wed 23:00: a weeknight, ends Thu 07:00',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-18T22:00:00Z',
    true,
    '2026-11-19T06:00:00Z',
  ],
  [
    'Thu 06:59: still quiet',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-19T05:59:00Z',
    true,
    '2026-11-19T06:00:00Z',
  ],
  [
    'Thu 07:00: the end is exclusive',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-19T06:00:00Z',
    false,
    null,
  ],
  [
    'Wed 21:59:59.999: not yet',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-18T20:59:59.999Z',
    false,
    null,
  ],
  [
    // Days are the days a window *starts*: "Mon-Fri 22:00-07:00" has no Sunday-night window, so
    // the weekend period (Fri 22:00 → Sat 07:00 + Sat-Sun) ends at Monday 00:00.
    'Fri 22:00: the weekend period, merged, ends Mon 00:00',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-20T21:00:00Z',
    true,
    '2026-11-22T23:00:00Z',
  ],
  [
    'Mon 03:00: not quiet (no Sunday-night window)',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-11-23T02:00:00Z',
    false,
    null,
  ],
  [
    'Sun-Fri nights + weekend: Fri 22:00 → Mon 07:00 is one period',
    ['Sun-Fri 22:00-07:00', 'Sat-Sun'],
    BERLIN,
    '2026-11-20T21:00:00Z',
    true,
    '2026-11-23T06:00:00Z',
  ],
  [
    'Sun-Fri nights + weekend: Sat noon',
    ['Sun-Fri 22:00-07:00', 'Sat-Sun'],
    BERLIN,
    '2026-11-21T11:00:00Z',
    true,
    '2026-11-23T06:00:00Z',
  ],
  [
    'Sun-Fri nights + weekend: Mon 03:00',
    ['Sun-Fri 22:00-07:00', 'Sat-Sun'],
    BERLIN,
    '2026-11-23T02:00:00Z',
    true,
    '2026-11-23T06:00:00Z',
  ],
  [
    'adjacent windows across the week boundary merge (Sat 20:00 → Sun 04:00)',
    ['Sat 20:00-02:00', 'Sun 02:00-04:00'],
    BERLIN,
    '2026-11-21T20:00:00Z',
    true,
    '2026-11-22T03:00:00Z',
  ],
  [
    'adjacent windows: from inside the second one',
    ['Sat 20:00-02:00', 'Sun 02:00-04:00'],
    BERLIN,
    '2026-11-22T00:30:00Z',
    true,
    '2026-11-22T03:00:00Z',
  ],
  [
    'overlapping windows merge',
    ['Mon 09:00-12:00', 'Mon 11:00-13:00'],
    BERLIN,
    '2026-11-16T09:00:00Z',
    true,
    '2026-11-16T12:00:00Z',
  ],
  [
    'a one-minute gap keeps them apart',
    ['Mon 09:00-12:00', 'Mon 12:01-13:00'],
    BERLIN,
    '2026-11-16T09:00:00Z',
    true,
    '2026-11-16T11:00:00Z',
  ],
  [
    'windows covering the whole week never end',
    ['Mon-Sun'],
    BERLIN,
    '2026-11-18T11:00:00Z',
    true,
    null,
  ],
  ['as do 00:00-24:00 every day', ['00:00-24:00'], BERLIN, '2026-11-18T11:00:00Z', true, null],
  [
    'times alone mean every day',
    ['23:00-06:00'],
    BERLIN,
    '2026-11-18T22:30:00Z',
    true,
    '2026-11-19T05:00:00Z',
  ],

  // Spring forward: Sun 29 Mar 2026, 02:00 CET (01:00Z) → 03:00 CEST.
  [
    'DST spring: 01:00-04:00 starts 01:00 CET and lasts 2 real hours',
    ['Sun 01:00-04:00'],
    BERLIN,
    '2026-03-29T00:00:00Z',
    true,
    '2026-03-29T02:00:00Z',
  ],
  [
    'DST spring: 01:00-04:00 from 03:30 CEST',
    ['Sun 01:00-04:00'],
    BERLIN,
    '2026-03-29T01:30:00Z',
    true,
    '2026-03-29T02:00:00Z',
  ],
  [
    'DST spring: 22:00-07:00 ends 07:00 CEST',
    ['Sat 22:00-07:00'],
    BERLIN,
    '2026-03-28T21:00:00Z',
    true,
    '2026-03-29T05:00:00Z',
  ],
  [
    'DST spring: a window ending in the skipped hour ends at the jump',
    ['Sun 01:00-02:30'],
    BERLIN,
    '2026-03-29T00:30:00Z',
    true,
    '2026-03-29T01:00:00Z',
  ],
  [
    'DST spring: the skipped hour alone is never quiet (01:59 CET)',
    ['Sun 02:00-03:00'],
    BERLIN,
    '2026-03-29T00:59:00Z',
    false,
    null,
  ],
  [
    'DST spring: the skipped hour alone is never quiet (03:00 CEST)',
    ['Sun 02:00-03:00'],
    BERLIN,
    '2026-03-29T01:00:00Z',
    false,
    null,
  ],
  [
    'DST spring: the weekend period ends Mon 00:00 CEST',
    WEEKNIGHTS_AND_WEEKENDS,
    BERLIN,
    '2026-03-27T21:00:00Z',
    true,
    '2026-03-29T22:00:00Z',
  ],

  // Fall back: Sun 25 Oct 2026, 03:00 CEST (01:00Z) → 02:00 CET; 02:00-03:00 happens twice.
  [
    'DST autumn: 22:00-07:00 ends 07:00 CET (10 real hours)',
    ['Sat 22:00-07:00'],
    BERLIN,
    '2026-10-24T20:00:00Z',
    true,
    '2026-10-25T06:00:00Z',
  ],
  [
    'DST autumn: 01:00-02:30 ends at the first 02:30 (CEST)',
    ['Sun 01:00-02:30'],
    BERLIN,
    '2026-10-24T23:30:00Z',
    true,
    '2026-10-25T00:30:00Z',
  ],
  [
    'DST autumn: 01:00-02:30 at 02:45 CEST',
    ['Sun 01:00-02:30'],
    BERLIN,
    '2026-10-25T00:45:00Z',
    false,
    null,
  ],
  [
    'DST autumn: 01:00-02:30 again at 02:15 CET, until 02:30 CET',
    ['Sun 01:00-02:30'],
    BERLIN,
    '2026-10-25T01:15:00Z',
    true,
    '2026-10-25T01:30:00Z',
  ],
  [
    'DST autumn: 02:30-03:00 ends when the clock falls back to 02:00',
    ['Sun 02:30-03:00'],
    BERLIN,
    '2026-10-25T00:45:00Z',
    true,
    '2026-10-25T01:00:00Z',
  ],
  [
    'DST autumn: 02:00-03:00 covers both passes of the repeated hour',
    ['Sun 02:00-03:00'],
    BERLIN,
    '2026-10-25T00:15:00Z',
    true,
    '2026-10-25T02:00:00Z',
  ],

  // Other zones.
  [
    'America/New_York spring (8 Mar 2026): 22:00 EST → 07:00 EDT',
    ['Sat 22:00-07:00'],
    'America/New_York',
    '2026-03-08T03:00:00Z',
    true,
    '2026-03-08T11:00:00Z',
  ],
  [
    'Asia/Kolkata (UTC+5:30)',
    ['Mon 09:00-17:00'],
    'Asia/Kolkata',
    '2026-11-16T03:30:00Z',
    true,
    '2026-11-16T11:30:00Z',
  ],
  ['UTC', ['Mon 09:00-17:00'], 'UTC', '2026-11-16T08:59:00Z', false, null],
];

describe('quietState', () => {
  it.each(cases)('%s', (_what, windows, zone, now, quiet, endsAt) => {
    const state = quietState(config(windows, zone), at(now));
    expect({ quiet: state.quiet, endsAt: iso(state.endsAt) }).toEqual({
      quiet,
      endsAt: endsAt === null ? null : iso(at(endsAt)),
    });
  });

  it('the DST examples last the real durations the brief names', () => {
    const spring = quietState(config(['Sun 01:00-04:00']), at('2026-03-29T00:00:00Z'));
    expect(spring.endsAt! - at('2026-03-29T00:00:00Z')).toBe(2 * 3600_000);
    const autumn = quietState(config(['Sat 22:00-07:00']), at('2026-10-24T20:00:00Z'));
    expect(autumn.endsAt! - at('2026-10-24T20:00:00Z')).toBe(10 * 3600_000);
  });

  it('rejects an unknown time zone with a QuietHoursError', () => {
    expect(() => quietState(config(['Mon-Fri'], 'Mars/Olympus'), 0)).toThrow(QuietHoursError);
  });

  // An independent oracle: the local clock, minute by minute, tested against each window.
  function inWindowAt(window: QuietWindow, ms: number, zone: string): boolean {
    const local = DateTime.fromMillis(ms, { zone });
    const day = local.weekday % 7;
    const minute = local.hour * 60 + local.minute;
    const yesterday = (day + 6) % 7;
    const days: readonly number[] = window.days;
    if (!window.crossesMidnight) {
      return days.includes(day) && window.startMinute <= minute && minute < window.endMinute;
    }
    return (
      (days.includes(day) && minute >= window.startMinute) ||
      (days.includes(yesterday) && minute < window.endMinute)
    );
  }

  it.each([
    ['spring', '2026-03-23T00:00:00Z', WEEKNIGHTS_AND_WEEKENDS],
    ['autumn', '2026-10-19T00:00:00Z', WEEKNIGHTS_AND_WEEKENDS],
    [
      'autumn, night-time hours',
      '2026-10-19T00:00:00Z',
      ['Sun 01:00-02:30', 'Sun 02:45-03:00', 'Sat 23:30-02:10'],
    ],
    ['spring, Sun-Fri nights', '2026-03-23T00:00:00Z', ['Sun-Fri 22:00-07:00', 'Sat-Sun']],
  ])('agrees with a minute-by-minute oracle over the %s week', (_what, startIso, windows) => {
    const q = config(windows);
    const start = at(startIso);
    const minutes = 16 * 1440;
    const quietAt: boolean[] = [];
    for (let i = 0; i < minutes; i++) {
      quietAt.push(q.windows.some((w) => inWindowAt(w, start + i * 60_000, BERLIN)));
    }
    let checked = 0;
    for (let i = 0; i < 8 * 1440; i += 7) {
      const now = start + i * 60_000;
      let end = i;
      while (end < minutes && quietAt[end] === true) end++;
      const expected = quietAt[i] === true ? start + end * 60_000 : null;
      expect({ now: iso(now), ...quietState(q, now) }).toEqual({
        now: iso(now),
        quiet: quietAt[i],
        endsAt: expected,
      });
      checked++;
    }
    expect(checked).toBeGreaterThan(1000);
  });
});

describe('isExcepted', () => {
  const q = config(['Mon-Fri 22:00-07:00'], BERLIN, ['sla.breached', 'incident.opened']);
  it.each([
    ['sla.breached', true],
    ['incident.opened', true],
    ['incident.updated', false],
    ['status.changed', false],
  ] as const)('%s → %s', (kind, expected) => {
    expect(isExcepted(q, kind)).toBe(expected);
  });

  it('nothing is excepted by default', () => {
    expect(isExcepted(config(['Sat-Sun']), 'sla.breached')).toBe(false);
  });
});
