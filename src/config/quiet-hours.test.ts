import { describe, expect, it } from 'vitest';
import {
  isValidTimeZone,
  parseQuietWindow,
  QuietHoursError,
  validateTimeZone,
  type QuietWindow,
} from './quiet-hours.js';

describe('parseQuietWindow', () => {
  it.each<[string, Omit<QuietWindow, 'text'>]>([
    [
      'Mon-Fri 22:00-07:00',
      { days: [1, 2, 3, 4, 5], startMinute: 1320, endMinute: 420, crossesMidnight: true },
    ],
    ['Sat-Sun', { days: [0, 6], startMinute: 0, endMinute: 1440, crossesMidnight: false }],
    ['Mon 09:00-17:00', { days: [1], startMinute: 540, endMinute: 1020, crossesMidnight: false }],
    ['Sun-Mon', { days: [0, 1], startMinute: 0, endMinute: 1440, crossesMidnight: false }],
    ['Fri-Mon', { days: [0, 1, 5, 6], startMinute: 0, endMinute: 1440, crossesMidnight: false }],
    [
      'Mon,Wed,Fri 12:00-13:30',
      { days: [1, 3, 5], startMinute: 720, endMinute: 810, crossesMidnight: false },
    ],
    [
      '23:00-06:00',
      { days: [0, 1, 2, 3, 4, 5, 6], startMinute: 1380, endMinute: 360, crossesMidnight: true },
    ],
    [
      'sunday 18:00-24:00',
      { days: [0], startMinute: 1080, endMinute: 1440, crossesMidnight: false },
    ],
  ])('%s', (text, expected) => {
    expect(parseQuietWindow(text)).toEqual({ text, ...expected });
  });

  it.each([
    '',
    'Mon-Fri 22:00',
    'Funday',
    'Mon-Fri 25:00-07:00',
    'Mon 09:60-10:00',
    'Mon 9:00-17:00',
    'Mon 24:00-07:00',
    'Mon 10:00-10:00',
    'Mon-Tue-Wed',
    'Mon 10:00-11:00 extra',
    'Mon-',
  ])('rejects %j', (text) => {
    expect(() => parseQuietWindow(text)).toThrow(QuietHoursError);
  });
});

describe('time zones', () => {
  it.each(['Europe/Berlin', 'UTC', 'America/New_York', 'Asia/Kolkata'])('accepts %s', (tz) => {
    expect(isValidTimeZone(tz)).toBe(true);
    expect(validateTimeZone(tz)).toBe(tz);
  });

  it.each(['Mars/Olympus', 'Europe/Berlinn', '', 'not a zone'])('rejects %j', (tz) => {
    expect(isValidTimeZone(tz)).toBe(false);
    expect(() => validateTimeZone(tz)).toThrow(/unknown time zone/);
  });
});
