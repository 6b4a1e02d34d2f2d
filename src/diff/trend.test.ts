import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../sim/prng.js';
import type { SlaRecord, ScoreRecord } from '../upstream/model.js';
import { diffScores } from './score.js';
import { diffSla } from './sla.js';
import type { ScoreEntry, SlaEntry } from './state.js';
import type { Transition } from './transition.js';
import {
  MAX_SAMPLES,
  appendSample,
  forecastBreach,
  linearFit,
  scoreTrend,
  type Sample,
} from './trend.js';

const HOUR = 3600;
const T0 = 1_795_000_000; // unix seconds

describe('appendSample', () => {
  it('appends once the spacing has passed, keeps the same array otherwise, drops old samples, caps the length', () => {
    let h = appendSample(undefined, T0, 99.9, HOUR, 48 * HOUR);
    expect(h).toEqual([[T0, 99.9]]);
    const same = appendSample(h, T0 + 1800, 99.8, HOUR, 48 * HOUR);
    expect(same).toBe(h);
    h = appendSample(h, T0 + HOUR, 99.8, HOUR, 48 * HOUR);
    expect(h).toEqual([
      [T0, 99.9],
      [T0 + HOUR, 99.8],
    ]);
    h = appendSample(h, T0 + 49 * HOUR, 99.7, HOUR, 48 * HOUR);
    expect(h).toEqual([
      [T0 + HOUR, 99.8],
      [T0 + 49 * HOUR, 99.7],
    ]);
    let long: Sample[] = [];
    for (let i = 0; i < 100; i++)
      long = [...appendSample(long, T0 + i * HOUR, i, HOUR, 1000 * HOUR)];
    expect(long).toHaveLength(MAX_SAMPLES);
    expect(long[long.length - 1]).toEqual([T0 + 99 * HOUR, 99]);
  });
});

describe('linearFit', () => {
  it('fits a line exactly and reports r² = 1; flat values r² = 1 with slope 0', () => {
    const fit = linearFit([
      [0, 10],
      [10, 8],
      [20, 6],
    ]);
    expect(fit?.slope).toBeCloseTo(-0.2, 10);
    expect(fit?.r2).toBeCloseTo(1, 10);
    expect(fit?.at(30)).toBeCloseTo(4, 10);
    expect(
      linearFit([
        [0, 5],
        [1, 5],
      ])?.slope,
    ).toBe(0);
    expect(linearFit([[0, 1]])).toBeNull();
  });
});

/** A steady decline of `perHour` pp an hour from `start`, sampled hourly for `hours`. */
function decline(start: number, perHour: number, hours: number): Sample[] {
  return Array.from({ length: hours + 1 }, (_, i) => [T0 + i * HOUR, start - perHour * i]);
}

describe('forecastBreach', () => {
  const rules = { horizonSec: 72 * HOUR };

  it('a steady decline projects the breach from the current margin', () => {
    // 99.9 → 99.78 over 12 h: 0.01 pp/h; margin 0.28 → 28 h to the breach.
    const h = decline(99.9, 0.01, 12);
    const f = forecastBreach(h, 0.28, rules, false);
    expect(f).not.toBeNull();
    expect(f?.breachAt).toBe(T0 + 12 * HOUR + 28 * HOUR);
    expect(f?.burnPerDay).toBeCloseTo(0.24, 6);
  });

  it.each([
    ['too far: the breach is beyond the horizon', decline(99.9, 0.001, 12), 0.28],
    ['too little history (3 samples)', decline(99.9, 0.05, 2), 0.28],
    ['already breached', decline(99.9, 0.05, 12), -0.1],
    ['rising', decline(99.9, -0.01, 12).map(([t, v]) => [t, v] as Sample), 0.28],
  ])('none when %s', (_what, history, margin) => {
    expect(forecastBreach(history, margin, rules, false)).toBeNull();
  });

  it('an announced forecast holds while the decline holds and is released when it reverses', () => {
    const falling = decline(99.9, 0.01, 12);
    expect(forecastBreach(falling, 0.28, rules, true)).not.toBeNull();
    const reversing = [
      ...falling,
      ...Array.from({ length: 12 }, (_, i): Sample => [T0 + (13 + i) * HOUR, 99.78 + 0.02 * i]),
    ];
    expect(forecastBreach(reversing, 0.5, rules, true)).toBeNull();
  });

  it('noise around a flat line never forecasts (1,000 seeded series, random walks and jitter)', () => {
    const rng = mulberry32(7);
    let fired = 0;
    for (let series = 0; series < 1000; series++) {
      const h: Sample[] = [];
      let v = 99.8;
      for (let i = 0; i <= 48; i++) {
        // A mean-reverting random walk (±0.02 pp steps pulled back to 99.8) or plain jitter.
        v =
          series % 2 === 0
            ? 99.8 + (v - 99.8) * 0.5 + (rng() - 0.5) * 0.04
            : 99.8 + (rng() - 0.5) * 0.04;
        h.push([T0 + i * HOUR, v]);
      }
      const margin = (h[h.length - 1]?.[1] ?? 0) - 99.5;
      if (forecastBreach(h, margin, rules, false) !== null) fired++;
    }
    expect(fired).toBe(0);
  });
});

describe('scoreTrend', () => {
  const rules = { points: 10, windowSec: 7 * 24 * HOUR };
  const zigzag = (days: number): Sample[] => {
    // Every 3.5 h: −1.3, then +0.6: 0.7 points lost per 3.5 h, never 5 below the last rise.
    const out: Sample[] = [];
    let v = 92;
    for (let i = 0; i <= days * 24; i += 3.5) {
      out.push([T0 + i * HOUR, v]);
      v += out.length % 2 === 1 ? -1.3 : 0.6;
    }
    return out;
  };

  it('a zig-zag fall of more than 10 points over the week is a trend; a shorter one is not', () => {
    expect(scoreTrend(zigzag(7), rules, false)?.fall).toBeGreaterThanOrEqual(10);
    expect(scoreTrend(zigzag(2), rules, false)).toBeNull();
  });

  it('flat noise is no trend', () => {
    const rng = mulberry32(3);
    const flat: Sample[] = Array.from({ length: 49 }, (_, i) => [
      T0 + i * 3.5 * HOUR,
      85 + (rng() - 0.5) * 6,
    ]);
    expect(scoreTrend(flat, rules, false)).toBeNull();
  });
});

function slaRecord(uptime30d: number, status = 'met'): SlaRecord {
  return {
    feedId: 'adyen',
    name: 'Adyen',
    slaTarget: 99.5,
    uptime30d,
    status: status as SlaRecord['status'],
    statusRaw: status,
    margin: Math.round((uptime30d - 99.5) * 10_000) / 10_000,
  };
}

describe('diffSla with forecasts', () => {
  it('a steady decline gives one sla.forecast with the projected time, none after it reverses, then sla.breached never forecasts', () => {
    let prev = new Map<string, SlaEntry>();
    const seen: Transition[] = [];
    const step = (hour: number, uptime: number): void => {
      const r = diffSla({
        previous: prev,
        report: {
          summary: { servicesTracked: 1, complianceRate: null, servicesBreachingSla: null },
          services: [slaRecord(uptime)],
        },
        forecastMs: 72 * HOUR * 1000,
        now: (T0 + hour * HOUR) * 1000,
      });
      prev = new Map([...prev, ...r.changed]);
      seen.push(...r.transitions);
    };
    // 99.9 falling 0.01 pp an hour (polled every 15 minutes).
    for (let q = 0; q <= 4 * 20; q++) step(q / 4, 99.9 - 0.01 * (q / 4));
    const forecasts = seen.filter((t) => t.kind === 'sla.forecast');
    expect(forecasts).toHaveLength(1);
    const f = forecasts[0];
    // First believed after ≥ 4 hourly samples spanning ≥ 3 h with the breach within 72 h.
    expect(f?.subject).toBe('sla:forecast');
    expect(f?.current.slaTarget).toBe(99.5);
    const hours = Number(f?.current.hoursToBreach);
    const at = Date.parse(String(f?.current.projectedBreachAt));
    expect(at).toBe(f !== undefined ? f.observedAt + hours * 3_600_000 : NaN);
    expect(f?.current.burnPerDay).toBeCloseTo(0.24, 2);
    // Reverses: no further transition at all.
    const before = seen.length;
    for (let q = 1; q <= 4 * 24; q++) step(20 + q / 4, 99.7 + 0.01 * (q / 4));
    expect(seen.slice(before)).toEqual([]);
    expect(prev.get('adyen')?.forecasting).toBeUndefined();
  });
});

function scoreRecord(score: number): ScoreRecord {
  return {
    feedId: 'slack',
    name: 'Slack',
    score,
    grade: 'B',
    tier: 'good',
    components: { uptime: null, incidents: null, resolution: null, sla: null },
  };
}

describe('diffScores with trends', () => {
  it('a zig-zag fall over a week gives one score.trend, where scoreDrop (20) is never reached', () => {
    let prev = new Map<string, ScoreEntry>();
    const seen: Transition[] = [];
    let v = 92;
    for (let i = 0; i <= 7 * 24; i++) {
      // Hourly polls: −0.7 on even hours, +0.5 on odd ones (0.1 lost an hour; 16.8 in the week).
      v = Math.round((v + (i % 2 === 0 ? -0.7 : 0.5)) * 100) / 100;
      const r = diffScores({
        previous: prev,
        report: {
          summary: { servicesScored: 1, avgScore: null, topService: null },
          scores: [scoreRecord(v)],
        },
        threshold: 20,
        trend: { points: 10, windowMs: 7 * 24 * HOUR * 1000 },
        now: (T0 + i * HOUR) * 1000,
      });
      prev = new Map([...prev, ...r.changed]);
      seen.push(...r.transitions);
    }
    expect(seen.map((t) => t.kind)).toEqual(['score.trend']);
    expect(Number(seen[0]?.current.fall)).toBeGreaterThanOrEqual(10);
    expect(seen[0]?.subject).toBe('score:trend');
  });
});
