import type { SlaRecord, SlaReport, SlaStatus } from '../upstream/model.js';
import { slaClassOf } from '../upstream/vocabulary.js';
import type { SlaEntry } from './state.js';
import { transitionId, type Transition } from './transition.js';
import type { DiffResult } from './result.js';
import {
  MAX_SAMPLES,
  appendSample,
  forecastBreach,
  forecastLookbackSec,
  withCurrent,
  type Sample,
} from './trend.js';

export interface SlaDiffInput {
  previous: ReadonlyMap<string, SlaEntry>;
  report: SlaReport;
  /** rules.slaForecast in ms: sla.forecast when a breach is projected within it; absent = off. */
  forecastMs?: number;
  now: number;
  /**
   * Services whose stored entry could not be read (say, written by a newer release): seen again
   * silently, as on a first sight, with their sequence numbers starting at `now`, above any the
   * lost entry reached, so no transition id of theirs repeats one already routed (and dropped
   * as routed, a missed alert).
   */
  rebaseline?: ReadonlySet<string>;
}

/** The history kept for forecasts: lookback and spacing for a horizon. */
function historyRules(horizonMs: number): { keepSec: number; spacingSec: number } {
  const keepSec = forecastLookbackSec(horizonMs / 1000);
  return { keepSec, spacingSec: Math.floor(keepSec / MAX_SAMPLES) };
}

function sameHistory(a: readonly Sample[] | undefined, b: readonly Sample[] | undefined): boolean {
  return a === b || (a?.length ?? 0) + (b?.length ?? 0) === 0;
}

/**
 * The SLA class from what the contract promises (src/upstream/vocabulary.ts): a negative margin
 * is breached whatever the word says, the documented `at_risk` is at risk, any other word with a
 * margin ≥ 0 is met.
 */
export function slaClass(record: SlaRecord): Exclude<SlaStatus, 'unknown'> {
  return slaClassOf(record.statusRaw, record.margin);
}

type SlaKind = 'sla.at_risk' | 'sla.breached' | 'sla.recovered';

/** The event for a move between SLA classes, or null when the move is not news. */
export function slaEvent(from: SlaStatus, to: SlaStatus): SlaKind | null {
  if (from === to || to === 'unknown' || from === 'unknown') return null;
  if (to === 'breached') return 'sla.breached';
  if (to === 'at_risk') return from === 'met' ? 'sla.at_risk' : null; // breached → at_risk is not a recovery yet
  return 'sla.recovered'; // to met, from at_risk or breached
}

/**
 * sla.at_risk / sla.breached / sla.recovered, and sla.forecast: first sight is a silent baseline.
 * A forecast fires once when the burn rate of `uptime_30d` projects a breach within
 * `forecastMs` (see `forecastBreach`), is released silently when the trend reverses, and never
 * fires while the SLA is breached.
 */
export function diffSla(input: SlaDiffInput): DiffResult<SlaEntry> {
  const transitions: Transition[] = [];
  const changed = new Map<string, SlaEntry>();
  const nowSec = Math.floor(input.now / 1000);
  const hist = input.forecastMs === undefined ? null : historyRules(input.forecastMs);
  for (const record of input.report.services) {
    const cls = slaClass(record);
    const prev = input.previous.get(record.feedId);
    const service = {
      feedId: record.feedId,
      name: record.name,
      canonicalUrl: null,
      officialStatusUrl: null,
    };
    const history =
      hist === null
        ? undefined
        : appendSample(prev?.history, nowSec, record.uptime30d, hist.spacingSec, hist.keepSec);
    if (prev === undefined) {
      const lost = input.rebaseline?.has(record.feedId) === true;
      const first: SlaEntry = { status: cls, seq: lost ? input.now : 0 };
      if (history !== undefined) first.history = [...history];
      if (lost) first.fseq = input.now;
      changed.set(record.feedId, first);
      continue;
    }
    let seq = prev.seq;
    if (cls !== prev.status) {
      const kind = slaEvent(prev.status, cls);
      if (kind !== null) {
        transitions.push({
          id: transitionId([record.feedId, kind, 'sla', prev.seq, prev.status, cls]),
          kind,
          feedId: record.feedId,
          subject: 'sla',
          service,
          previous: { status: prev.status },
          current: {
            status: cls,
            statusRaw: record.statusRaw,
            margin: record.margin,
            uptime30d: record.uptime30d,
            slaTarget: record.slaTarget,
          },
          incident: null,
          observedAt: input.now,
        });
        seq += 1;
      }
    }

    let forecasting = prev.forecasting === true;
    let fseq = prev.fseq ?? 0;
    if (input.forecastMs !== undefined && history !== undefined) {
      const forecast =
        cls === 'breached'
          ? null
          : forecastBreach(
              withCurrent(history, nowSec, record.uptime30d),
              record.margin,
              { horizonSec: input.forecastMs / 1000 },
              forecasting,
            );
      if (forecast !== null && !forecasting) {
        transitions.push({
          id: transitionId([record.feedId, 'sla.forecast', 'sla:forecast', fseq]),
          kind: 'sla.forecast',
          feedId: record.feedId,
          subject: 'sla:forecast',
          service,
          previous: { status: cls },
          current: {
            status: cls,
            statusRaw: record.statusRaw,
            margin: record.margin,
            uptime30d: record.uptime30d,
            slaTarget: record.slaTarget,
            burnPerDay: Math.round(forecast.burnPerDay * 10_000) / 10_000,
            projectedBreachAt: new Date(forecast.breachAt * 1000).toISOString(),
            hoursToBreach: Math.round(((forecast.breachAt - nowSec) / 3600) * 10) / 10,
          },
          incident: null,
          observedAt: input.now,
        });
        fseq += 1;
      }
      forecasting = forecast !== null;
    }

    const next: SlaEntry = { status: cls, seq };
    if (history !== undefined && history.length > 0) next.history = [...history];
    if (forecasting) next.forecasting = true;
    if (fseq > 0) next.fseq = fseq;
    if (
      next.status !== prev.status ||
      next.seq !== prev.seq ||
      !sameHistory(history, prev.history) ||
      forecasting !== (prev.forecasting === true) ||
      fseq !== (prev.fseq ?? 0)
    )
      changed.set(record.feedId, next);
  }
  return { transitions, changed };
}
