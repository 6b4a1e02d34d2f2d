import { CronExpressionParser, type CronExpression } from 'cron-parser';
import { IANAZone } from 'luxon';
import { CronError } from '../config/cron.js';
import type { DigestConfig } from '../config/schema.js';
import { nextOffsetChange } from './quiet.js';

const MINUTE_MS = 60_000;
const DAY_MS = 1440 * MINUTE_MS;
/** Wall times that map to one instant (a skipped hour) are few; this bounds the scan. */
const MAX_STEPS = 1000;

/*
 * How fire times are found. cron-parser enumerates the schedule's wall-clock times on a floating
 * clock (its UTC, where no hour is skipped or repeated), and each wall time is placed in the
 * digest's zone here, with luxon's offsets, by two fixed rules:
 *   - a wall time the spring change skips fires at the change (02:30 → 03:00 CEST), as Vixie
 *     cron does; several skipped times collapse into that one fire;
 *   - a wall time the autumn change repeats fires once, at its first occurrence.
 * cron-parser's own `tz` handling was not used for this: around a change its `next()` depends
 * on the start point (from 25 Oct 2026 00:00Z it skips the second 02:30 Berlin, from 01:00Z it
 * returns it) and its `prev()` disagrees with `next()`, so "last fire" and "next fire" would not
 * describe one schedule.
 */

function zoneOf(timeZone: string): IANAZone {
  const zone = IANAZone.create(timeZone);
  if (!zone.isValid) throw new CronError('unknown digest time zone');
  return zone;
}

/** The wall clock at `at`, as ms on the floating clock. */
function wallAt(zone: IANAZone, at: number): number {
  return at + zone.offset(at) * MINUTE_MS;
}

/** The instant a wall time fires at: its first occurrence, or the change that skips it. */
function instantOf(zone: IANAZone, wall: number): number {
  const candidates = [zone.offset(wall - DAY_MS), zone.offset(wall + DAY_MS)].map(
    (offset) => wall - offset * MINUTE_MS,
  );
  const valid = candidates.filter((at) => wallAt(zone, at) === wall);
  if (valid.length > 0) return Math.min(...valid);
  const earlier = Math.min(...candidates);
  const later = Math.max(...candidates);
  return nextOffsetChange(zone, earlier, later) ?? later;
}

function floating(d: DigestConfig, wall: number): CronExpression {
  return CronExpressionParser.parse(d.schedule, { tz: 'UTC', currentDate: wall });
}

/**
 * The next time the digest fires, strictly after `now` (Unix ms). Wall-clock times in the
 * digest's zone: "0 8 * * 1" in Europe/Berlin is 07:00Z in winter and 06:00Z in summer.
 * A wall time skipped by the spring change fires at the change; one repeated in autumn fires
 * at its first occurrence.
 */
export function nextFireAt(d: DigestConfig, now: number): number {
  const zone = zoneOf(d.timezone);
  // Every wall time before the clock's now has already occurred (or been skipped) by now.
  const walls = floating(d, wallAt(zone, now));
  for (let step = 0; step < MAX_STEPS && walls.hasNext(); step++) {
    const at = instantOf(zone, walls.next().getTime());
    if (at > now) return at;
  }
  throw new CronError('the digest schedule has no next fire time');
}

/**
 * The most recent fire time at or before `now` (Unix ms), by the same rules as `nextFireAt`
 * (so `nextFireAt(d, lastFireAt(d, now))` is `nextFireAt(d, now)`). Null when there is none.
 */
export function lastFireAt(d: DigestConfig, now: number): number | null {
  const zone = zoneOf(d.timezone);
  // After an autumn change, wall times up to an hour ahead of the clock already occurred.
  const fallBack = Math.max(0, zone.offset(now - DAY_MS) - zone.offset(now)) * MINUTE_MS;
  const walls = floating(d, wallAt(zone, now) + fallBack + 1);
  for (let step = 0; step < MAX_STEPS && walls.hasPrev(); step++) {
    const at = instantOf(zone, walls.prev().getTime());
    if (at <= now) return at;
  }
  return null;
}
