import type { SlaRecord, SlaReport, SlaStatus } from '../upstream/model.js';
import { slaClassOf } from '../upstream/vocabulary.js';
import type { SlaEntry } from './state.js';
import { transitionId, type Transition } from './transition.js';
import type { DiffResult } from './result.js';

export interface SlaDiffInput {
  previous: ReadonlyMap<string, SlaEntry>;
  report: SlaReport;
  now: number;
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

/** sla.at_risk / sla.breached / sla.recovered; first sight is a silent baseline. */
export function diffSla(input: SlaDiffInput): DiffResult<SlaEntry> {
  const transitions: Transition[] = [];
  const changed = new Map<string, SlaEntry>();
  for (const record of input.report.services) {
    const cls = slaClass(record);
    const prev = input.previous.get(record.feedId);
    if (prev === undefined) {
      changed.set(record.feedId, { status: cls, seq: 0 });
      continue;
    }
    if (cls === prev.status) continue;
    const kind = slaEvent(prev.status, cls);
    if (kind !== null) {
      transitions.push({
        id: transitionId([record.feedId, kind, 'sla', prev.seq, prev.status, cls]),
        kind,
        feedId: record.feedId,
        subject: 'sla',
        service: {
          feedId: record.feedId,
          name: record.name,
          canonicalUrl: null,
          officialStatusUrl: null,
        },
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
    }
    changed.set(record.feedId, { status: cls, seq: kind === null ? prev.seq : prev.seq + 1 });
  }
  return { transitions, changed };
}
