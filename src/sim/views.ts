/**
 * Wire shapes of the simulator: pure functions from state to the JSON records of the upstream
 * API (Variant A and B), with the simulator's own choices where the contract is silent.
 * Every word the contract does not enumerate goes through the state's wording (wording.ts).
 */
import type { CatalogEntry } from './catalog.js';
import { round } from './prng.js';
import {
  CHECK_INTERVAL_MS,
  EVIDENCE_STATES,
  SIM_STATUSES,
  gradeOf,
  slaView,
  tierOf,
  type Evidence,
  type ServiceRuntime,
  type SimIncident,
  type SimState,
  type SimStatus,
} from './state.js';
import {
  ALTERNATE,
  REACHABILITIES,
  SCOPES,
  STANDARD,
  vocabularyOf,
  type Reachability,
  type Scope,
  type Vocabulary,
  type Wording,
} from './wording.js';

export type { Reachability } from './wording.js';

export const INCLUDES = ['incidents', 'maintenances', 'details'] as const;
export type Include = (typeof INCLUDES)[number];

const STATUS_LABELS: Record<SimStatus, string> = {
  operational: 'Operational',
  degraded: 'Degraded performance',
  partial_outage: 'Partial outage',
  major_outage: 'Major outage',
  maintenance: 'Under maintenance',
};

const STATUS_SUMMARIES: Record<SimStatus, string> = {
  operational: 'All systems operational',
  degraded: 'Some systems are experiencing degraded performance',
  partial_outage: 'Some systems are unavailable',
  major_outage: 'Major outage: the service is unavailable',
  maintenance: 'Scheduled maintenance in progress',
};

/** What an endpoint probe can observe of a condition (maintenance usually takes endpoints down). */
export function reachabilityOf(status: SimStatus): Reachability {
  switch (status) {
    case 'operational':
      return 'reachable';
    case 'degraded':
    case 'partial_outage':
      return 'degraded';
    case 'major_outage':
    case 'maintenance':
      return 'unreachable';
  }
}

const REACHABILITY_DISPLAY: Record<Reachability, SimStatus> = {
  reachable: 'operational',
  degraded: 'degraded',
  unreachable: 'major_outage',
};

/** ISO 8601 with an explicit UTC offset, e.g. 2025-11-25T21:58:00+00:00. */
export function isoSeconds(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

export function serviceA(e: CatalogEntry): Record<string, unknown> {
  return {
    feedId: e.feedId,
    name: e.name,
    url: e.url,
    canonicalUrl: e.canonicalUrl,
    officialStatusUrl: e.officialStatusUrl,
    feedType: e.feedType,
    sourceKind: e.sourceKind,
    sourceLabel: e.sourceLabel,
    description: e.description,
  };
}

export function serviceB(e: CatalogEntry): Record<string, unknown> {
  return {
    feedId: e.feedId,
    name: e.name,
    url: e.url,
    feedType: e.feedType,
    description: e.description,
  };
}

/** Variant A shows provider incidents only for official sources with fresh evidence and dataset. */
export function incidentsVisibleA(state: SimState, svc: ServiceRuntime): boolean {
  return (
    svc.entry.sourceKind === 'official' && svc.evidence === 'fresh' && state.incidentsDatasetFresh
  );
}

/** Update items: `{ id, status, body, created }`, or `{ id, status, message, timestamp }` in the alternate wording. */
function updatesOf(inc: SimIncident, v: Vocabulary): Record<string, unknown>[] {
  return v.wording === 'alternate'
    ? inc.updates.map((u) => ({
        id: u.id,
        status: v.incident[u.status],
        message: u.body,
        timestamp: u.created,
      }))
    : inc.updates.map((u) => ({
        id: u.id,
        status: v.incident[u.status],
        body: u.body,
        created: u.created,
      }));
}

export function incidentA(
  state: SimState,
  svc: ServiceRuntime,
  inc: SimIncident,
  nowMs: number,
): Record<string, unknown> {
  const v = vocabularyOf(state.wording);
  return {
    service: svc.entry.name,
    feedId: svc.entry.feedId,
    id: inc.id,
    title: inc.title,
    status: v.incident[inc.status],
    started: inc.started,
    sourceKind: 'official',
    verificationState: v.verification.fresh,
    verifiedAt: isoSeconds(state.verifiedAtOf(svc, nowMs)),
    officialStatusUrl: svc.entry.officialStatusUrl,
    canonicalServiceUrl: svc.entry.canonicalUrl,
    updates: updatesOf(inc, v),
  };
}

export function incidentB(
  svc: ServiceRuntime,
  inc: SimIncident,
  v: Vocabulary,
): Record<string, unknown> {
  return {
    service: svc.entry.name,
    id: inc.id,
    title: inc.title,
    status: v.incident[inc.status],
    started: inc.started,
    updates: updatesOf(inc, v),
  };
}

/** Newest first, then by id. */
export function byStartedDesc(a: SimIncident, b: SimIncident): number {
  return b.started - a.started || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Everything a Variant A status row shows (in standard words), computed once for both renderers. */
interface RowFactsA {
  official: boolean;
  display: SimStatus;
  availability: SimStatus;
  reach: Reachability;
  scope: Scope;
  summary: string;
  evidence: Evidence;
  verifiedAt: string;
  active: SimIncident[];
  lastChanged: number;
  lastCheck: number;
}

const SCOPE_LABELS: Record<Scope, string | null> = {
  none: null,
  partial: 'Some components affected',
  full: 'All components affected',
};

function tableOf<K extends string>(
  keys: readonly K[],
  render: (k: K) => string,
): Record<K, string> {
  return Object.fromEntries(keys.map((k) => [k, render(k)])) as Record<K, string>;
}

/** Precomputed JSON fragments of the fast path, per wording (no per-row string building). */
interface FragmentsA {
  /** `,"status":"…"` */
  legacy: Record<SimStatus, string>;
  /** `,"displayStatus":"…","statusLabel":"…"` */
  display: Record<SimStatus, string>;
  /** `,"availabilityStatus":"…","availabilityLabel":"…"` */
  availability: Record<SimStatus, string>;
  /** `,"incidentScope":"…","incidentScopeLabel":…` */
  scope: Record<Scope, string>;
  /** `,"verificationState":"…","verifiedAt":` (the value follows) */
  verification: Record<Evidence, string>;
  /** `,"endpointReachabilityStatus":"…"}` (closes the row) */
  reachTail: Record<Reachability, string>;
}

function fragmentsA(v: Vocabulary): FragmentsA {
  const j = JSON.stringify;
  return {
    legacy: tableOf(SIM_STATUSES, (s) => `,"status":${j(v.status[s])}`),
    display: tableOf(
      SIM_STATUSES,
      (s) => `,"displayStatus":${j(v.status[s])},"statusLabel":${j(STATUS_LABELS[s])}`,
    ),
    availability: tableOf(
      SIM_STATUSES,
      (s) => `,"availabilityStatus":${j(v.status[s])},"availabilityLabel":${j(STATUS_LABELS[s])}`,
    ),
    scope: tableOf(
      SCOPES,
      (s) => `,"incidentScope":${j(v.scope[s])},"incidentScopeLabel":${j(SCOPE_LABELS[s])}`,
    ),
    verification: tableOf(
      EVIDENCE_STATES,
      (e) => `,"verificationState":${j(v.verification[e])},"verifiedAt":`,
    ),
    reachTail: tableOf(
      REACHABILITIES,
      (r) => `,"endpointReachabilityStatus":${j(v.reachability[r])}}`,
    ),
  };
}

const FRAGMENTS_A: Readonly<Record<Wording, FragmentsA>> = {
  standard: fragmentsA(STANDARD),
  alternate: fragmentsA(ALTERNATE),
};

const isoMemo = new Map<number, string>();

/** isoSeconds, memoized (rows of one check cycle share ~60 distinct values). */
function isoCached(unixSeconds: number): string {
  let s = isoMemo.get(unixSeconds);
  if (s === undefined) {
    if (isoMemo.size > 50_000) isoMemo.clear();
    s = isoSeconds(unixSeconds);
    isoMemo.set(unixSeconds, s);
  }
  return s;
}

function factsA(state: SimState, svc: ServiceRuntime, nowMs: number, v: Vocabulary): RowFactsA {
  const official = svc.entry.sourceKind === 'official';
  const observed = state.observedOf(svc);
  const reach = reachabilityOf(observed.status);
  const display = official ? observed.status : REACHABILITY_DISPLAY[reach];
  const active =
    official && svc.incidents.length > 0
      ? state
          .activeIncidents(svc)
          .filter((i) => svc.frozenCheck === null || i.started <= svc.frozenCheck)
          .sort(byStartedDesc)
      : [];
  const latest = active[0];
  return {
    official,
    display,
    availability: display === 'maintenance' ? 'operational' : display,
    reach,
    scope: active.length === 0 ? 'none' : display === 'major_outage' ? 'full' : 'partial',
    summary: official
      ? latest
        ? `${latest.title} (${v.incident[latest.status]})`
        : STATUS_SUMMARIES[display]
      : reach === 'reachable'
        ? `Endpoint reachable, responded in ${svc.responseTimeMs} ms`
        : reach === 'degraded'
          ? 'Endpoint responding slowly or with errors'
          : 'Endpoint unreachable',
    evidence: svc.evidence,
    verifiedAt: isoCached(state.verifiedAtOf(svc, nowMs)),
    active,
    lastChanged: observed.lastChanged,
    lastCheck: state.lastCheckOf(svc, nowMs),
  };
}

function identityA(e: CatalogEntry): Record<string, unknown> {
  return {
    feedId: e.feedId,
    name: e.name,
    canonicalUrl: e.canonicalUrl,
    officialStatusUrl: e.officialStatusUrl,
    sourceKind: e.sourceKind,
    sourceLabel: e.sourceLabel,
  };
}

const identityJson = new WeakMap<CatalogEntry, string>();

/**
 * One Variant A status row as JSON text, without includes: the fast path of GET /status
 * (20,000+ rows). Must equal JSON.stringify(statusRowA(..., null)); a test asserts it.
 */
export function statusRowAJson(state: SimState, svc: ServiceRuntime, nowMs: number): string {
  let head = identityJson.get(svc.entry);
  if (head === undefined) {
    head = JSON.stringify(identityA(svc.entry)).slice(0, -1);
    identityJson.set(svc.entry, head);
  }
  const f = factsA(state, svc, nowMs, vocabularyOf(state.wording));
  const fr = FRAGMENTS_A[state.wording];
  return (
    head +
    (f.official ? fr.legacy[f.display] : '') +
    fr.display[f.display] +
    fr.availability[f.availability] +
    fr.scope[f.scope] +
    `,"summary":${JSON.stringify(f.summary)}` +
    fr.verification[f.evidence] +
    `"${f.verifiedAt}"` +
    `,"activeIncidentCount":${f.active.length},"lastChanged":${f.lastChanged}` +
    `,"lastSuccessfulCheck":${f.lastCheck}` +
    (f.official ? '}' : fr.reachTail[f.reach])
  );
}

export function statusRowA(
  state: SimState,
  svc: ServiceRuntime,
  nowMs: number,
  include: Include | null,
): Record<string, unknown> {
  const e = svc.entry;
  const v = vocabularyOf(state.wording);
  const f = factsA(state, svc, nowMs, v);
  const row = identityA(e);
  if (f.official) row['status'] = v.status[f.display];
  row['displayStatus'] = v.status[f.display];
  row['statusLabel'] = STATUS_LABELS[f.display];
  row['availabilityStatus'] = v.status[f.availability];
  row['availabilityLabel'] = STATUS_LABELS[f.availability];
  row['incidentScope'] = v.scope[f.scope];
  row['incidentScopeLabel'] = SCOPE_LABELS[f.scope];
  row['summary'] = f.summary;
  row['verificationState'] = v.verification[f.evidence];
  row['verifiedAt'] = f.verifiedAt;
  row['activeIncidentCount'] = f.active.length;
  row['lastChanged'] = f.lastChanged;
  row['lastSuccessfulCheck'] = f.lastCheck;
  if (!f.official) {
    row['endpointReachabilityStatus'] = v.reachability[f.reach];
    return row;
  }
  switch (include) {
    case null:
      break;
    case 'incidents':
      row['incidents'] = incidentsVisibleA(state, svc)
        ? f.active.map((i) => incidentA(state, svc, i, nowMs))
        : [];
      break;
    case 'maintenances':
      row['maintenances'] =
        f.display === 'maintenance'
          ? [
              {
                id: `mnt-${e.feedId}-${f.lastChanged}`,
                title: 'Scheduled maintenance',
                status: v.maintenanceInProgress,
                scheduledFor: f.lastChanged,
                scheduledUntil: f.lastChanged + 7200,
              },
            ]
          : [];
      break;
    case 'details':
      row['details'] = {
        checkIntervalSeconds: CHECK_INTERVAL_MS / 1000,
        responseTimeMs: svc.responseTimeMs,
        providerMessage: f.active[0]?.title ?? null,
        components: [
          { name: 'API', status: v.status[f.display] },
          {
            name: 'Dashboard',
            status: v.status[f.display === 'major_outage' ? f.display : 'operational'],
          },
        ],
      };
      break;
  }
  return row;
}

export function compactRowA(state: SimState, svc: ServiceRuntime): Record<string, unknown> {
  const observed = state.observedOf(svc);
  const display =
    svc.entry.sourceKind === 'official'
      ? observed.status
      : REACHABILITY_DISPLAY[reachabilityOf(observed.status)];
  return {
    feedId: svc.entry.feedId,
    displayStatus: vocabularyOf(state.wording).status[display],
    lastChanged: observed.lastChanged,
  };
}

/** What a Variant B snapshot captures of a service (standard words; translated when served). */
export interface SnapshotFactsB {
  feedId: string;
  status: SimStatus;
  lastCheck: number;
}

export interface StatusRowB {
  feedId: string;
  status: string;
  lastCheck: number;
  indicator: string;
}

export function snapshotFactsB(
  state: SimState,
  svc: ServiceRuntime,
  nowMs: number,
): SnapshotFactsB {
  return { feedId: svc.entry.feedId, status: svc.status, lastCheck: state.lastCheckOf(svc, nowMs) };
}

export function statusRowB(f: SnapshotFactsB, v: Vocabulary): StatusRowB {
  return {
    feedId: f.feedId,
    status: v.statusB[f.status],
    lastCheck: f.lastCheck,
    indicator: v.indicatorB[f.status],
  };
}

export function slaRecord(
  e: CatalogEntry,
  slaTarget: number,
  uptime30d: number,
  v: Vocabulary,
): Record<string, unknown> {
  const s = slaView(slaTarget, uptime30d);
  return {
    feedId: e.feedId,
    name: e.name,
    sla_target: s.slaTarget,
    uptime_30d: s.uptime30d,
    status: v.sla[s.status],
    margin: s.margin,
  };
}

/** Summary of SLA records rendered in the vocabulary `v`. */
export function slaSummary(
  records: readonly Record<string, unknown>[],
  v: Vocabulary,
): Record<string, unknown> {
  const breaching = records.filter((r) => r['status'] === v.sla.breached).length;
  const n = records.length;
  return {
    services_tracked: n,
    compliance_rate: n === 0 ? 100 : round((100 * (n - breaching)) / n, 2),
    services_breaching_sla: breaching,
  };
}

export function scoreRecord(
  e: CatalogEntry,
  score: number,
  components: ServiceRuntime['components'],
  v: Vocabulary,
): Record<string, unknown> {
  return {
    feedId: e.feedId,
    name: e.name,
    score,
    grade: gradeOf(score),
    tier: v.tier[tierOf(score)],
    components: { ...components },
  };
}

export function scoreSummary(
  records: readonly { name: string; score: number }[],
): Record<string, unknown> {
  let top: { name: string; score: number } | null = null;
  let sum = 0;
  for (const r of records) {
    sum += r.score;
    if (top === null || r.score > top.score) top = r;
  }
  return {
    services_scored: records.length,
    avg_score: records.length === 0 ? 0 : round(sum / records.length, 2),
    top_service: top === null ? null : top.name,
  };
}
