import { IANAZone } from 'luxon';
import type { EventKind } from '../config/events.js';
import { QuietHoursError, type QuietWindow } from '../config/quiet-hours.js';
import type { QuietHoursConfig } from '../config/schema.js';

/** Whether quiet hours hold at an instant, and when the quiet period holding then ends. */
export interface QuietState {
  quiet: boolean;
  /**
   * Unix ms at which the current quiet period (the merged run of overlapping or adjacent
   * windows) ends; null when not quiet, or when the windows cover the whole week.
   */
  endsAt: number | null;
}

const MINUTE_MS = 60_000;
const DAY_MS = 1440 * MINUTE_MS;
const WEEK_MS = 7 * DAY_MS;
/** 1970-01-01 was a Thursday: wall ms since the epoch plus this is ms since a Sunday 00:00. */
const EPOCH_WEEK_OFFSET_MS = 4 * DAY_MS;
/** A quiet period lasts less than a week; it crosses a handful of offset changes at most. */
const MAX_OFFSET_CHANGES = 8;

/** A quiet span in wall-clock ms since Sunday 00:00; `end` may pass the week's end (it wraps). */
interface Span {
  start: number;
  end: number;
}

/**
 * The windows as weekly wall-clock spans, merged where they overlap or touch, sorted by start.
 * A span running into the next week is joined with one starting at Sunday 00:00. The result is
 * `[{ start: 0, end: WEEK_MS }]` when the windows cover the whole week.
 */
function mergedSpans(windows: readonly QuietWindow[]): Span[] {
  const raw: Span[] = [];
  for (const window of windows) {
    for (const day of window.days) {
      const start = day * DAY_MS + window.startMinute * MINUTE_MS;
      const end = (window.crossesMidnight ? day + 1 : day) * DAY_MS + window.endMinute * MINUTE_MS;
      if (end <= WEEK_MS) {
        raw.push({ start, end });
      } else {
        raw.push({ start, end: WEEK_MS }, { start: 0, end: end - WEEK_MS });
      }
    }
  }
  raw.sort((a, b) => a.start - b.start || a.end - b.end);
  const merged: Span[] = [];
  for (const span of raw) {
    const last = merged.at(-1);
    if (last !== undefined && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else merged.push({ ...span });
  }
  const first = merged[0];
  const last = merged.at(-1);
  if (first !== undefined && last !== undefined && merged.length > 1) {
    if (first.start === 0 && last.end === WEEK_MS) {
      last.end = WEEK_MS + first.end;
      merged.shift();
    }
  }
  return merged;
}

function zoneOf(timeZone: string): IANAZone {
  const zone = IANAZone.create(timeZone);
  if (!zone.isValid) {
    throw new QuietHoursError(
      'unknown time zone; expected an IANA name such as Europe/Berlin or UTC',
    );
  }
  return zone;
}

function offsetMs(zone: IANAZone, at: number): number {
  return zone.offset(at) * MINUTE_MS;
}

/** Wall-clock ms since the local Sunday 00:00 at instant `at`. */
function weekMs(zone: IANAZone, at: number): number {
  const wall = at + offsetMs(zone, at) + EPOCH_WEEK_OFFSET_MS;
  return ((wall % WEEK_MS) + WEEK_MS) % WEEK_MS;
}

/** Wall-clock ms from `position` to the end of the span holding it, or null when none does. */
function remainingInSpan(spans: readonly Span[], position: number): number | null {
  for (const span of spans) {
    if (span.start <= position && position < span.end) return span.end - position;
    const wrapped = position + WEEK_MS;
    if (span.start <= wrapped && wrapped < span.end) return span.end - wrapped;
  }
  return null;
}

/**
 * The first instant in (from, until] whose UTC offset differs from the offset at `from`, or null.
 * Looks a day at a time, then bisects to the millisecond. (Shared with `schedule.ts`.)
 */
export function nextOffsetChange(zone: IANAZone, from: number, until: number): number | null {
  const initial = zone.offset(from);
  for (let low = from; low < until;) {
    let high = Math.min(low + DAY_MS, until);
    if (zone.offset(high) !== initial) {
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (zone.offset(middle) === initial) low = middle;
        else high = middle;
      }
      return high;
    }
    low = high;
  }
  return null;
}

/**
 * Is `now` (Unix ms) inside quiet hours, and when does this quiet period end? Windows are
 * wall-clock times in the config's IANA time zone: an instant is quiet when the local clock shows
 * a time inside a window. So a window 01:00-04:00 on the night clocks jump forward lasts two
 * real hours, 22:00-07:00 across a change ends at 07:00 local, and a window ending inside the
 * skipped hour ends at the jump. Overlapping or touching windows form one period
 * ("Mon-Fri 22:00-07:00" + "Sat-Sun" is quiet from Friday 22:00 to Monday 07:00).
 */
export function quietState(q: QuietHoursConfig, now: number): QuietState {
  const zone = zoneOf(q.timezone);
  const spans = mergedSpans(q.windows);
  const whole = spans[0];
  if (spans.length === 1 && whole?.start === 0 && whole.end >= WEEK_MS) {
    return { quiet: true, endsAt: null };
  }
  let at = now;
  let remaining = remainingInSpan(spans, weekMs(zone, at));
  if (remaining === null) return { quiet: false, endsAt: null };
  for (let changes = 0; ; changes++) {
    // While the offset holds, the wall clock runs with real time.
    const end = at + remaining;
    const change = changes < MAX_OFFSET_CHANGES ? nextOffsetChange(zone, at, end) : null;
    if (change === null) return { quiet: true, endsAt: end };
    at = change;
    remaining = remainingInSpan(spans, weekMs(zone, at));
    if (remaining === null) return { quiet: true, endsAt: at };
  }
}

/** Is this event kind delivered even during quiet hours (`quietHours.except`)? */
export function isExcepted(q: QuietHoursConfig, kind: EventKind): boolean {
  return q.except.includes(kind);
}
