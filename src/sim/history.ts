/**
 * Historical (monthly) data for the premium endpoints' `month=YYYY-MM` parameter: deterministic
 * values seeded from (seed, month, feedId), never touched by live mutations. Unlike the live
 * state, history contains at-risk and breached months.
 */
import { Rng, round } from './prng.js';
import { SLA_TARGETS, compositeScore, type ScoreComponents } from './state.js';

const MONTH_RE = /^(\d{4})-(0[1-9]|1[0-2])$/;

export type MonthQuery =
  | { kind: 'current'; month: string }
  | { kind: 'month'; month: string }
  | { kind: 'invalid'; error: string };

/** A valid period: live data (`current`) or a past month. */
export type Period = Exclude<MonthQuery, { kind: 'invalid' }>;

/** `YYYY-MM` of a Unix time in ms (UTC). */
export function monthOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The month `delta` months after `month` (negative for earlier). */
export function shiftMonth(month: string, delta: number): string {
  const [y, m] = month.split('-').map(Number);
  const d = new Date(Date.UTC(y ?? 1970, (m ?? 1) - 1 + delta, 1));
  return monthOf(d.getTime());
}

/** Interprets the `month` query parameter: absent or the current month means live data. */
export function parseMonth(value: string | null, nowMs: number): MonthQuery {
  const current = monthOf(nowMs);
  if (value === null) return { kind: 'current', month: current };
  if (!MONTH_RE.test(value)) {
    return { kind: 'invalid', error: `Invalid month "${value}": expected YYYY-MM` };
  }
  if (value > current) {
    return { kind: 'invalid', error: `Invalid month "${value}": no data for future months` };
  }
  return value === current ? { kind: 'current', month: current } : { kind: 'month', month: value };
}

export interface MonthlyRecord {
  slaTarget: number;
  uptime30d: number;
  score: number;
  components: ScoreComponents;
  incidents: number;
  mttrMinutes: number;
}

/** The seeded record of one service for one past month. */
export function monthlyRecord(seed: number, feedId: string, month: string): MonthlyRecord {
  const rng = Rng.for(seed, 'month', month, feedId);
  const slaTarget = rng.pick(SLA_TARGETS);
  const r = rng.float();
  const uptime30d =
    r < 0.85
      ? round(slaTarget + 0.1 + rng.float() * (100 - slaTarget - 0.1), 3)
      : r < 0.95
        ? round(slaTarget + rng.float() * 0.099, 3)
        : round(slaTarget - 0.001 - rng.float() * 1.5, 3);
  const components: ScoreComponents = {
    uptime: round(rng.range(55, 99), 1),
    incidents: round(rng.range(55, 99), 1),
    resolution: round(rng.range(55, 99), 1),
    sla: round(rng.range(55, 99), 1),
  };
  return {
    slaTarget,
    uptime30d,
    score: compositeScore(components),
    components,
    incidents: rng.int(0, 8),
    mttrMinutes: rng.int(10, 240),
  };
}

export const WEEKDAYS = [
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
] as const;

export const COMPONENTS = [
  'API',
  'Dashboard',
  'Webhooks',
  'Authentication',
  'Database',
  'CDN',
] as const;

/** Splits `total` into integer shares by seeded weights (deterministic per key). */
export function seededSplit(
  seed: number,
  key: string,
  total: number,
  labels: readonly string[],
  base: readonly number[] = [],
): Record<string, number> {
  const rng = Rng.for(seed, 'split', key);
  const weights = labels.map((_, i) => (base[i] ?? 1) * rng.range(0.6, 1.4));
  const sum = weights.reduce((a, b) => a + b, 0);
  const out: Record<string, number> = {};
  let assigned = 0;
  labels.forEach((label, i) => {
    const share =
      i === labels.length - 1 ? total - assigned : Math.floor((total * (weights[i] ?? 0)) / sum);
    out[label] = share;
    assigned += share;
  });
  return out;
}
