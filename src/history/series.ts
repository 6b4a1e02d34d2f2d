/**
 * Pure helpers of the service history (src/history/store.ts): bucketing samples into the two
 * resolutions kept, and the member encoding of the sorted sets. No Redis, no clock.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** A resolution of a sampled series: one sample per bucket, kept `retentionMs`. */
export interface Resolution {
  name: 'h' | 'd';
  bucketMs: number;
  retentionMs: number;
}

/** Hourly samples for 30 days, daily samples for 90 days. */
export const RESOLUTIONS: readonly Resolution[] = [
  { name: 'h', bucketMs: HOUR_MS, retentionMs: 30 * DAY_MS },
  { name: 'd', bucketMs: DAY_MS, retentionMs: 90 * DAY_MS },
];

/** How long status changes and transitions are kept, and how many at most per service. */
export const EVENT_RETENTION_MS = 90 * DAY_MS;
export const MAX_EVENTS_PER_SERVICE = 500;
export const MAX_STATUS_CHANGES_PER_SERVICE = 500;

/** The start (Unix ms) of the bucket `at` falls in. */
export function bucketStart(at: number, bucketMs: number): number {
  return Math.floor(at / bucketMs) * bucketMs;
}

/** A sample as stored: `<bucket start ms>:<value>` (unique per bucket, sortable by its score). */
export function sampleMember(at: number, value: number): string {
  return `${String(at)}:${String(value)}`;
}

/** `[ms, value]` of a stored sample member, or null when it is not one. */
export function parseSample(member: string): [number, number] | null {
  const i = member.indexOf(':');
  if (i <= 0) return null;
  const at = Number(member.slice(0, i));
  const value = Number(member.slice(i + 1));
  return Number.isFinite(at) && Number.isFinite(value) ? [at, value] : null;
}

/** A status change as stored: `<ms>:<status>`. */
export function statusMember(at: number, status: string): string {
  return `${String(at)}:${status}`;
}

export function parseStatus(member: string): { at: number; status: string } | null {
  const i = member.indexOf(':');
  if (i <= 0) return null;
  const at = Number(member.slice(0, i));
  const status = member.slice(i + 1);
  return Number.isFinite(at) && status !== '' ? { at, status } : null;
}

/**
 * The series over [from, to] at the finest resolution that covers it: hourly samples where they
 * exist, daily samples before the oldest hourly one. Sorted by time.
 */
export function mergeResolutions(
  hourly: readonly [number, number][],
  daily: readonly [number, number][],
): [number, number][] {
  const firstHourly = hourly[0]?.[0] ?? Number.POSITIVE_INFINITY;
  return [...daily.filter(([at]) => at + DAY_MS <= firstHourly), ...hourly].sort(
    (a, b) => a[0] - b[0],
  );
}

/** At most `max` points: evenly spaced picks (first and last kept), for sparklines. */
export function thin<T>(points: readonly T[], max: number): T[] {
  if (points.length <= max || max < 2) return [...points];
  const out: T[] = [];
  const step = (points.length - 1) / (max - 1);
  for (let i = 0; i < max; i += 1) {
    const p = points[Math.round(i * step)];
    if (p !== undefined) out.push(p);
  }
  return out;
}
