/**
 * The words of the upstream's enumerated-looking fields: which the contract promises ("values
 * seen"), which statuswatch recognises beyond that, and what every word — known or not — means
 * for the decisions taken on it. Pure: no I/O, no clock. docs/upstream-contract.md explains each
 * decision; `GET /admin/upstream/vocabulary` lists what was seen and how it was read.
 */
import type { IncidentStatus, ServiceStatus, SlaStatus, SourceKind } from './model.js';

export interface FieldVocabulary {
  /** Where the word comes from (for people). */
  where: string;
  /** Words the contract names. */
  promised: readonly string[];
  /** Words recognised beyond those (common status-page words; none of them relied on alone). */
  recognised: readonly string[];
  /** What a word means for statuswatch's decisions. */
  meaning(word: string): string;
}

const SERVICE_STATUS: ReadonlyMap<string, ServiceStatus> = new Map<string, ServiceStatus>([
  ['operational', 'operational'],
  ['up', 'operational'],
  ['reachable', 'operational'],
  ['none', 'operational'],
  ['degraded', 'degraded'],
  ['degraded_performance', 'degraded'],
  ['minor', 'degraded'],
  ['partial_outage', 'partial_outage'],
  ['major', 'partial_outage'],
  ['major_outage', 'major_outage'],
  ['down', 'major_outage'],
  ['unreachable', 'major_outage'],
  ['critical', 'major_outage'],
  ['maintenance', 'maintenance'],
  ['under_maintenance', 'maintenance'],
]);

const INCIDENT_STATUS: ReadonlyMap<string, IncidentStatus> = new Map<string, IncidentStatus>([
  ['investigating', 'investigating'],
  ['identified', 'identified'],
  ['monitoring', 'monitoring'],
  ['resolved', 'resolved'],
]);

const SLA_STATUS: ReadonlyMap<string, SlaStatus> = new Map<string, SlaStatus>([
  ['met', 'met'],
  ['at_risk', 'at_risk'],
  ['breached', 'breached'],
]);

const SOURCE_KIND: ReadonlyMap<string, SourceKind> = new Map<string, SourceKind>([
  ['official', 'official'],
  ['reachability', 'reachability'],
  ['community', 'community'],
]);

const norm = (raw: string): string => raw.trim().toLowerCase();

function lookup<T>(table: ReadonlyMap<string, T>, raw: string | null | undefined, fallback: T): T {
  if (raw === null || raw === undefined) return fallback;
  return table.get(norm(raw)) ?? fallback;
}

/** Any status word of either variant (displayStatus, status, indicator, reachability). */
export function mapServiceStatus(raw: string | null | undefined): ServiceStatus {
  return lookup(SERVICE_STATUS, raw, 'unknown');
}

export function mapIncidentStatus(raw: string | null | undefined): IncidentStatus {
  return lookup(INCIDENT_STATUS, raw, 'unknown');
}

/** The word alone (`unknown` when not recognised); the SLA *class* comes from `slaClassOf`. */
export function mapSlaStatus(raw: string | null | undefined): SlaStatus {
  return lookup(SLA_STATUS, raw, 'unknown');
}

export function mapSourceKind(raw: string | null | undefined): SourceKind {
  return lookup(SOURCE_KIND, raw, 'unknown');
}

/**
 * The SLA class from what the contract promises: the numbers first (`margin`, uptime minus
 * target, "can be negative"), then the one documented word. A negative margin is breached,
 * `at_risk` is at risk, any other word with a margin ≥ 0 is met.
 */
export function slaClassOf(word: string, margin: number): Exclude<SlaStatus, 'unknown'> {
  if (margin < 0) return 'breached';
  return norm(word) === 'at_risk' ? 'at_risk' : 'met';
}

/** A verification word counts only when it is exactly the documented `verified`. */
export function isVerified(raw: string | null | undefined): boolean {
  return raw !== null && raw !== undefined && norm(raw) === 'verified';
}

const SEVERITY: Readonly<Record<ServiceStatus, number>> = {
  unknown: -1,
  operational: 0,
  maintenance: 1,
  degraded: 2,
  partial_outage: 3,
  major_outage: 4,
};

/** The more severe of two statuses (`unknown` loses to anything). */
export function worse(a: ServiceStatus, b: ServiceStatus): ServiceStatus {
  return SEVERITY[b] > SEVERITY[a] ? b : a;
}

/**
 * A Variant A row's status: the display condition's word; when that word is not recognised,
 * the availability word; when neither is, the row's other fields — a non-zero
 * `activeIncidentCount` or an `incidentScope` other than the documented `none` — still show
 * trouble (`degraded`, the least severe non-operational class). Otherwise `unknown`: the word
 * changes nothing until it is recognised.
 */
export function statusOfRowA(row: {
  displayStatus?: string | undefined;
  status?: string | undefined;
  endpointReachabilityStatus?: string | undefined;
  availabilityStatus?: string | undefined;
  activeIncidentCount?: number | undefined;
  incidentScope?: string | undefined;
}): ServiceStatus {
  const word =
    row.displayStatus ?? row.status ?? row.endpointReachabilityStatus ?? row.availabilityStatus;
  const mapped = mapServiceStatus(word);
  if (mapped !== 'unknown') return mapped;
  const other = mapServiceStatus(row.availabilityStatus ?? row.status);
  if (other !== 'unknown') return other;
  const scope = row.incidentScope;
  if (
    (row.activeIncidentCount ?? 0) > 0 ||
    (scope !== undefined && scope !== '' && norm(scope) !== 'none')
  )
    return 'degraded';
  return 'unknown';
}

/**
 * A Variant B row's status: `status` (up/…) and `indicator` (none/…) together, the more severe
 * winning. An indicator other than the documented `none` is trouble even when its word is not
 * recognised (`degraded` at least), so an unknown status word cannot hide it; an unknown status
 * word with a calm indicator stays `unknown`.
 */
export function statusOfRowB(row: {
  status?: string | undefined;
  indicator?: string | undefined;
}): ServiceStatus {
  const fromStatus = mapServiceStatus(row.status);
  let fromIndicator = mapServiceStatus(row.indicator);
  const indicator = row.indicator;
  if (
    fromIndicator === 'unknown' &&
    indicator !== undefined &&
    indicator !== '' &&
    norm(indicator) !== 'none'
  )
    fromIndicator = 'degraded';
  // An unrecognised status word is not made healthy by a calm indicator, only raised by a
  // troubled one.
  if (fromStatus === 'unknown' && row.status !== undefined && fromIndicator === 'operational')
    return 'unknown';
  return worse(fromStatus, fromIndicator);
}

const serviceStatusMeaning = (word: string): string => {
  const s = mapServiceStatus(word);
  return s === 'unknown'
    ? 'not recognised: the row is read from its other fields (incident count, scope, indicator)'
    : s;
};

/** Every tracked field, its promised and recognised words, and what a word means. */
export const VOCABULARY = {
  'status.displayStatus': {
    where: 'GET /status, Variant A displayStatus',
    promised: ['operational'],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: serviceStatusMeaning,
  },
  'status.status': {
    where: 'GET /status, Variant A legacy status (official rows)',
    promised: ['operational'],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: serviceStatusMeaning,
  },
  'status.availabilityStatus': {
    where: 'GET /status, Variant A availabilityStatus',
    promised: ['operational'],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: serviceStatusMeaning,
  },
  'status.endpointReachabilityStatus': {
    where: 'GET /status, Variant A endpointReachabilityStatus (non-official rows)',
    promised: [],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: serviceStatusMeaning,
  },
  'status.incidentScope': {
    where: 'GET /status, Variant A incidentScope',
    promised: ['none'],
    recognised: ['none', 'partial', 'full'],
    meaning: (w) => (norm(w) === 'none' ? 'no incident' : 'an incident in scope (trouble)'),
  },
  'status.sourceKind': {
    where: 'GET /status, Variant A sourceKind',
    promised: ['official', 'reachability', 'community'],
    recognised: [...SOURCE_KIND.keys()],
    meaning: (w) =>
      mapSourceKind(w) === 'official'
        ? 'official: its silence can mean "no incident"'
        : 'not official: never evidence that an incident ended',
  },
  'status.verificationState': {
    where: 'GET /status, Variant A verificationState',
    promised: ['verified'],
    recognised: ['verified', 'stale', 'unverified'],
    meaning: (w) => (isVerified(w) ? 'verified evidence' : 'not verified evidence'),
  },
  'statusB.status': {
    where: 'GET /status, Variant B status',
    promised: ['up'],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: serviceStatusMeaning,
  },
  'statusB.indicator': {
    where: 'GET /status, Variant B indicator',
    promised: ['none'],
    recognised: [...SERVICE_STATUS.keys()],
    meaning: (w) => {
      const s = mapServiceStatus(w);
      if (s !== 'unknown') return s;
      return norm(w) === '' ? 'nothing' : 'not recognised: trouble (degraded at least)';
    },
  },
  'incident.status': {
    where: 'GET /incidents, status of a row',
    promised: ['investigating'],
    recognised: [...INCIDENT_STATUS.keys()],
    meaning: (w) => {
      const s = mapIncidentStatus(w);
      if (s === 'resolved') return 'resolved';
      return s === 'unknown'
        ? 'not recognised: the incident stays open (a change of word is an update)'
        : `open (${s})`;
    },
  },
  'incidents.verificationState': {
    where: 'GET /incidents and /incidents/{feedId}, meta.verificationState (Variant A)',
    promised: ['verified'],
    recognised: ['verified', 'stale', 'unverified'],
    meaning: (w) =>
      isVerified(w)
        ? 'verified: an absence can be a resolution'
        : 'not verified: an absence resolves nothing',
  },
  'sla.status': {
    where: 'GET /sla, status of a record',
    promised: ['at_risk'],
    recognised: [...SLA_STATUS.keys()],
    meaning: (w) =>
      norm(w) === 'at_risk'
        ? 'at risk (breached when the margin is negative)'
        : 'met when the margin is ≥ 0, breached when it is negative',
  },
} as const satisfies Record<string, FieldVocabulary>;

export type VocabularyField = keyof typeof VOCABULARY;
export const VOCABULARY_FIELDS = Object.keys(VOCABULARY) as VocabularyField[];

/** Is the word one statuswatch recognises for the field (promised or beyond)? */
export function isRecognised(field: VocabularyField, word: string): boolean {
  const v: FieldVocabulary = VOCABULARY[field];
  const w = norm(word);
  return v.promised.includes(w) || v.recognised.includes(w);
}

/** Words seen in one response, counted per field (a few entries: the distinct words). */
export class WordCounts {
  readonly counts = new Map<VocabularyField, Map<string, number>>();

  add(field: VocabularyField, word: string | null | undefined): void {
    if (word === null || word === undefined) return;
    let byWord = this.counts.get(field);
    if (byWord === undefined) {
      byWord = new Map();
      this.counts.set(field, byWord);
    }
    byWord.set(word, (byWord.get(word) ?? 0) + 1);
  }

  *entries(): Generator<{ field: VocabularyField; word: string; count: number }> {
    for (const [field, byWord] of this.counts)
      for (const [word, count] of byWord) yield { field, word, count };
  }
}
