/**
 * Trends from a short, bounded history of samples, pure: `sla.forecast` (the burn rate of
 * `uptime_30d` projects a breach) and `score.trend` (a sustained fall of the score). A history is
 * a compact array of `[unixSeconds, value]` pairs kept in the snapshot entry (Redis), at most
 * MAX_SAMPLES long and spaced at least `spacing` apart; the current observation is added to it
 * (not stored) when a trend is computed.
 */

/** `[unix seconds, value]`. */
export type Sample = [number, number];

export const MAX_SAMPLES = 48;

const round4 = (n: number): number => Math.round(n * 10_000) / 10_000;

/**
 * The stored history after observing `(t, v)`: the observation is appended when the newest stored
 * sample is at least `spacingSec` old (else the history is returned as is, the same array, so an
 * unchanged entry is not rewritten); samples older than `keepSec` are dropped; at most
 * MAX_SAMPLES are kept.
 */
export function appendSample(
  history: readonly Sample[] | undefined,
  t: number,
  v: number,
  spacingSec: number,
  keepSec: number,
): readonly Sample[] {
  const h = history ?? [];
  const last = h[h.length - 1];
  if (last !== undefined && t - last[0] < spacingSec && t >= last[0]) return h;
  const out: Sample[] = h.filter(([ts]) => ts < t && t - ts <= keepSec);
  out.push([t, round4(v)]);
  return out.slice(-MAX_SAMPLES);
}

/** The stored samples plus the current observation (what a trend is computed on). */
export function withCurrent(history: readonly Sample[], t: number, v: number): Sample[] {
  const out = history.filter(([ts]) => ts < t);
  out.push([t, v]);
  return out;
}

export interface LinearFit {
  /** Change of the value per second. */
  slope: number;
  /** Fitted value at `t`. */
  at(t: number): number;
  /** Coefficient of determination, 0..1 (1 when the values are constant). */
  r2: number;
  n: number;
  /** Seconds between the first and the last sample. */
  span: number;
}

/** Ordinary least squares over the samples; null for fewer than two distinct times. */
export function linearFit(samples: readonly Sample[]): LinearFit | null {
  const n = samples.length;
  if (n < 2) return null;
  const t0 = samples[0]?.[0] ?? 0;
  let sx = 0;
  let sy = 0;
  for (const [t, v] of samples) {
    sx += t - t0;
    sy += v;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (const [t, v] of samples) {
    const dx = t - t0 - mx;
    const dy = v - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx === 0) return null;
  const slope = sxy / sxx;
  const r2 = syy === 0 ? 1 : (sxy * sxy) / (sxx * syy);
  const span = (samples[n - 1]?.[0] ?? t0) - t0;
  return { slope, at: (t) => my + slope * (t - t0 - mx), r2, n, span };
}

/** Samples needed before a trend is believed, and how well the line must explain them. */
export const MIN_SAMPLES = 4;
export const MIN_R2 = 0.6;
/** Below this fit a believed trend is over (hysteresis between MIN_R2 and it). */
export const RELEASE_R2 = 0.3;

export interface Forecast {
  /** Unix seconds when the margin reaches zero at the current burn rate. */
  breachAt: number;
  /** Margin lost per day, percentage points (positive). */
  burnPerDay: number;
}

export interface ForecastRules {
  /** Fire when the projected breach is this close (seconds). */
  horizonSec: number;
}

/** Seconds of history a forecast looks at: the horizon, at most 48 h. */
export function forecastLookbackSec(horizonSec: number): number {
  return Math.min(48 * 3600, horizonSec);
}

/** The shortest span of samples a forecast believes: 3 h, or a quarter of a shorter lookback. */
function minForecastSpanSec(horizonSec: number): number {
  return Math.min(3 * 3600, forecastLookbackSec(horizonSec) / 4);
}

/**
 * The projected breach of an SLA from the `uptime_30d` history (the newest sample is now):
 * a falling line that explains the samples (r² ≥ MIN_R2, ≥ MIN_SAMPLES over ≥ 3 h of the
 * lookback, or a quarter of a shorter one), projected from the current margin. `hold` (a forecast already announced) keeps it
 * until the trend reverses: a flat or rising line, a fit below RELEASE_R2, or a breach projected
 * beyond twice the horizon. Null = no forecast.
 */
export function forecastBreach(
  history: readonly Sample[],
  margin: number,
  rules: ForecastRules,
  hold: boolean,
): Forecast | null {
  if (margin < 0) return null;
  const now = history[history.length - 1]?.[0];
  if (now === undefined) return null;
  const recent = history.filter(([t]) => now - t <= forecastLookbackSec(rules.horizonSec));
  const fit = linearFit(recent);
  if (fit === null || fit.slope >= 0) return null;
  const secondsToBreach = margin / -fit.slope;
  if (hold) {
    if (fit.r2 < RELEASE_R2 || secondsToBreach > 2 * rules.horizonSec) return null;
  } else if (
    fit.n < MIN_SAMPLES ||
    fit.span < minForecastSpanSec(rules.horizonSec) ||
    fit.r2 < MIN_R2 ||
    secondsToBreach > rules.horizonSec
  ) {
    return null;
  }
  return { breachAt: Math.round(now + secondsToBreach), burnPerDay: -fit.slope * 86_400 };
}

export interface ScoreTrendRules {
  /** Fall (points) over the window that makes a trend. */
  points: number;
  windowSec: number;
}

export interface ScoreTrend {
  /** Fitted score at the start of the window's samples, and now. */
  from: number;
  to: number;
  /** Points lost (fitted). */
  fall: number;
  /** Seconds the fall spans. */
  span: number;
}

/**
 * A sustained fall of the score: over the window's samples (≥ MIN_SAMPLES spanning at least half
 * the window) a falling line that explains them (r² ≥ MIN_R2) and has lost at least `points`.
 * Zig-zags that never cross `scoreDrop` below the last notified score still show here. `hold`
 * keeps an announced trend until the fitted fall is below half of `points` or the line no longer
 * falls (or fits below RELEASE_R2).
 */
export function scoreTrend(
  history: readonly Sample[],
  rules: ScoreTrendRules,
  hold: boolean,
): ScoreTrend | null {
  const now = history[history.length - 1]?.[0];
  if (now === undefined) return null;
  const recent = history.filter(([t]) => now - t <= rules.windowSec);
  const fit = linearFit(recent);
  if (fit === null || fit.slope >= 0) return null;
  const start = recent[0]?.[0] ?? now;
  const from = fit.at(start);
  const to = fit.at(now);
  const fall = from - to;
  if (hold) {
    if (fit.r2 < RELEASE_R2 || fall < rules.points / 2) return null;
  } else if (
    fit.n < MIN_SAMPLES ||
    fit.span < rules.windowSec / 2 ||
    fit.r2 < MIN_R2 ||
    fall < rules.points
  ) {
    return null;
  }
  return { from, to, fall, span: now - start };
}
