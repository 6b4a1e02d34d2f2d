import { StatuswatchError } from '../errors.js';

/** A quiet-hours window string or time zone that does not parse. */
export class QuietHoursError extends StatuswatchError {
  constructor(message: string) {
    super('quiet_hours_invalid', message);
  }
}

/** Day of week as `Date#getDay()` numbers it: 0 = Sunday … 6 = Saturday. */
export type Weekday = 0 | 1 | 2 | 3 | 4 | 5 | 6;

/**
 * One parsed quiet-hours window. It starts on each of `days` at `startMinute` (minutes after
 * local midnight) and ends at `endMinute`; when `crossesMidnight` the end is on the following
 * day (`Mon-Fri 22:00-07:00` covers Mon 22:00 → Tue 07:00 … Fri 22:00 → Sat 07:00). A window
 * without times covers the whole of each day (0 → 1440).
 */
export interface QuietWindow {
  /** The window as written in the config. */
  text: string;
  /** Sorted, without duplicates. */
  days: Weekday[];
  startMinute: number;
  endMinute: number;
  crossesMidnight: boolean;
}

const DAY_NAMES: readonly (readonly string[])[] = [
  ['sun', 'sunday'],
  ['mon', 'monday'],
  ['tue', 'tuesday'],
  ['wed', 'wednesday'],
  ['thu', 'thursday'],
  ['fri', 'friday'],
  ['sat', 'saturday'],
];

export const QUIET_WINDOW_HINT =
  'expected "<days> [HH:MM-HH:MM]" such as "Mon-Fri 22:00-07:00", "Sat-Sun" or "Mon 09:00-17:00"';

function parseDay(name: string): Weekday {
  const lower = name.toLowerCase();
  const index = DAY_NAMES.findIndex((names) => names.includes(lower));
  if (index === -1) throw new QuietHoursError(`unknown day name; use Mon Tue Wed Thu Fri Sat Sun`);
  return index as Weekday;
}

/** `Mon`, `Mon-Fri`, `Sat-Sun`, `Fri-Mon` (wraps through the weekend), `Mon,Wed,Fri-Sat`. */
function parseDays(spec: string): Weekday[] {
  const days = new Set<Weekday>();
  for (const part of spec.split(',')) {
    const bounds = part.trim().split('-');
    if (bounds.length === 1 && bounds[0] !== undefined) {
      days.add(parseDay(bounds[0]));
    } else if (bounds.length === 2 && bounds[0] !== undefined && bounds[1] !== undefined) {
      const from = parseDay(bounds[0]);
      const to = parseDay(bounds[1]);
      for (let day: number = from; ; day = (day + 1) % 7) {
        days.add(day as Weekday);
        if (day === to) break;
      }
    } else {
      throw new QuietHoursError(QUIET_WINDOW_HINT);
    }
  }
  return [...days].sort((a, b) => a - b);
}

/** `HH:MM` (00:00 … 23:59; `24:00` only as an end) → minutes after midnight. */
function parseTime(text: string, isEnd: boolean): number {
  const match = /^(\d{2}):(\d{2})$/.exec(text);
  if (match === null)
    throw new QuietHoursError(`times must be HH:MM (24-hour); ${QUIET_WINDOW_HINT}`);
  const hours = Number(match[1]);
  const minutes = Number(match[2]);
  if (minutes > 59 || hours > 24 || (hours === 24 && (minutes !== 0 || !isEnd))) {
    throw new QuietHoursError('times must be between 00:00 and 23:59 (24:00 allowed as an end)');
  }
  return hours * 60 + minutes;
}

const ALL_DAYS: Weekday[] = [0, 1, 2, 3, 4, 5, 6];
const TIME_RANGE = /^\d{1,2}:\d{1,2}-\d{1,2}:\d{1,2}$/;

/** Parses one window string; throws `QuietHoursError` (without echoing the input) when invalid. */
export function parseQuietWindow(text: string): QuietWindow {
  const words = text
    .trim()
    .split(/\s+/)
    .filter((word) => word !== '');
  let days: Weekday[];
  let range: string | undefined;
  if (words.length === 1 && words[0] !== undefined && TIME_RANGE.test(words[0])) {
    days = ALL_DAYS;
    range = words[0];
  } else if (words.length === 1 && words[0] !== undefined) {
    days = parseDays(words[0]);
  } else if (words.length === 2 && words[0] !== undefined && words[1] !== undefined) {
    days = parseDays(words[0]);
    range = words[1];
  } else {
    throw new QuietHoursError(QUIET_WINDOW_HINT);
  }
  if (range === undefined) {
    return { text, days, startMinute: 0, endMinute: 1440, crossesMidnight: false };
  }
  const times = range.split('-');
  if (times.length !== 2 || times[0] === undefined || times[1] === undefined) {
    throw new QuietHoursError(QUIET_WINDOW_HINT);
  }
  const startMinute = parseTime(times[0], false);
  const endMinute = parseTime(times[1], true);
  if (startMinute === endMinute) {
    throw new QuietHoursError('start and end time are equal; omit the times for a whole day');
  }
  return { text, days, startMinute, endMinute, crossesMidnight: endMinute < startMinute };
}

/** True when `Intl` knows the IANA time zone (e.g. `Europe/Berlin`, `UTC`). */
export function isValidTimeZone(timeZone: string): boolean {
  if (timeZone.trim() === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** Returns the time zone unchanged, or throws a `QuietHoursError` when `Intl` rejects it. */
export function validateTimeZone(timeZone: string): string {
  if (!isValidTimeZone(timeZone)) {
    throw new QuietHoursError(
      'unknown time zone; expected an IANA name such as Europe/Berlin or UTC',
    );
  }
  return timeZone;
}
