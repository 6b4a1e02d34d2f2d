/**
 * Pure functions from the wire format (validated by `schemas.ts`) to the normalized model
 * (`model.ts`). No I/O, no clock. A malformed row of a list is skipped and counted; a malformed
 * single record or a list that is not a list is a `problem` (the client turns it into an
 * `upstream_bad_envelope` error).
 */
import type { z } from 'zod';
import type {
  Incident,
  IncidentList,
  IncidentUpdate,
  ScoreRecord,
  ScoreReport,
  ServiceInfo,
  ServiceList,
  ServiceState,
  SlaRecord,
  SlaReport,
  StatusSnapshot,
  Variant,
} from './model.js';
import {
  INCIDENT_VARIANT_A_FIELDS,
  SERVICE_VARIANT_A_FIELDS,
  STATUS_VARIANT_A_FIELDS,
  readStatusRowA,
  envelopeSchema,
  incidentMetaSchema,
  incidentSchema,
  incidentUpdateSchema,
  rowListSchema,
  scoreDataSchema,
  scoreRecordSchema,
  serviceListMetaSchema,
  serviceSchema,
  slaDataSchema,
  slaRecordSchema,
  statusMetaSchema,
  statusRowASchema,
  statusRowBSchema,
  type WireEnvelope,
  type WireIncident,
  type WireScoreRecord,
  type WireService,
  type WireSlaRecord,
  type WireStatusRowA,
  type WireStatusRowB,
} from './schemas.js';
import { copyState, type ServiceStateMemo } from './memo.js';
import {
  WordCounts,
  mapIncidentStatus,
  mapServiceStatus,
  mapSlaStatus,
  mapSourceKind,
  statusOfRowA,
  statusOfRowB,
} from './vocabulary.js';

/** Any value JSON can carry: what rankings and analytics return (their shape is undocumented). */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Outcome of normalizing one payload: a value plus the rows skipped (and, for the kinds with
 * enumerated-looking fields, the words seen per field), or why it is unusable.
 */
export type Normalized<T> =
  { ok: true; value: T; skipped: number; words?: WordCounts } | { ok: false; problem: string };

/**
 * Normalizes a list response one row at a time, as the rows are parsed (`json-stream.ts`): a
 * row is validated and turned into its model value (or skipped and counted) when it comes in,
 * so only the model values are kept, never the parsed rows. `finish` adds the list's `meta`.
 * `normalizeXxxList(data, meta)` is the same collector fed from an already parsed array.
 */
export interface RowCollector<T> {
  /** Returns what a `RowMemo` may remember for the row's bytes (see `again`). */
  add(row: unknown): unknown;
  /**
   * A row byte-identical to one `add` saw in an earlier response gets `add`'s result for that
   * one instead (row-memo.ts): the collector replays it without parsing. Only collectors whose
   * per-row work is a pure function of the row have it.
   */
  again?(result: unknown): void;
  /**
   * `data`: the envelope's `data` for rows streamed from a member list of it (`Reader.rowsIn`),
   * with that list empty.
   */
  finish(meta: unknown, data?: unknown): Normalized<T>;
}

/** Feeds `data` (when it is a list) to `collector`. */
function collectList<T>(
  data: unknown,
  meta: unknown,
  what: string,
  collector: RowCollector<T>,
): Normalized<T> {
  const list = asList(data, what);
  if (!list.ok) return list;
  for (const row of list.rows) collector.add(row);
  return collector.finish(meta);
}

// ---------------------------------------------------------------------------------------------
// Vocabulary (src/upstream/vocabulary.ts)

export { mapIncidentStatus, mapServiceStatus, mapSlaStatus, mapSourceKind };

// ---------------------------------------------------------------------------------------------
// Helpers

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasAny(row: unknown, fields: readonly string[]): boolean {
  if (!isRecord(row)) return false;
  return fields.some((f) => row[f] !== undefined);
}

/** Variant of one status row: A when it carries any Variant A field, else B. */
export function detectStatusRowVariant(row: unknown): Variant {
  return hasAny(row, STATUS_VARIANT_A_FIELDS) ? 'A' : 'B';
}

function firstString(...values: (string | null | undefined)[]): string | null {
  for (const v of values) if (typeof v === 'string') return v;
  return null;
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

function asList(
  data: unknown,
  what: string,
): { ok: true; rows: unknown[] } | { ok: false; problem: string } {
  const parsed = rowListSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `${what}: data is not an array` };
  return { ok: true, rows: parsed.data };
}

// ---------------------------------------------------------------------------------------------
// Envelope

/**
 * Checks the envelope of a 2xx body: an object with boolean `success`; `success:false` is a
 * problem (quoted `error` text in `upstreamError`).
 */
export function parseEnvelope(
  body: unknown,
):
  | { ok: true; envelope: WireEnvelope }
  | { ok: false; problem: string; upstreamError: string | null } {
  const parsed = envelopeSchema.safeParse(body);
  if (!parsed.success) {
    return {
      ok: false,
      problem: `not a response envelope (${describeIssues(parsed.error)})`,
      upstreamError: null,
    };
  }
  if (!parsed.data.success) {
    const err = parsed.data.error;
    return {
      ok: false,
      problem: 'success:false in a 2xx response',
      upstreamError: typeof err === 'string' ? err : null,
    };
  }
  if (parsed.data.data === undefined) {
    return { ok: false, problem: 'envelope has no data', upstreamError: null };
  }
  return { ok: true, envelope: parsed.data };
}

// ---------------------------------------------------------------------------------------------
// Services

function buildService(w: WireService): ServiceInfo {
  return {
    feedId: w.feedId,
    name: w.name ?? w.feedId,
    url: w.url ?? null,
    canonicalUrl: w.canonicalUrl ?? null,
    officialStatusUrl: w.officialStatusUrl ?? null,
    feedType: w.feedType ?? null,
    sourceKind: mapSourceKind(w.sourceKind),
    sourceKindRaw: w.sourceKind ?? null,
    sourceLabel: w.sourceLabel ?? null,
    description: w.description ?? null,
  };
}

/**
 * The rows of GET /services, one at a time. With a `memo`, each entry shares its strings with the
 * memo's status row of the service (`ServiceStateMemo.shareService`).
 */
export function serviceListCollector(memo?: ServiceStateMemo): RowCollector<ServiceList> {
  const services: ServiceInfo[] = [];
  let rows = 0;
  let skipped = 0;
  let variantA = false;
  return {
    add(row) {
      rows += 1;
      if (!variantA && hasAny(row, SERVICE_VARIANT_A_FIELDS)) variantA = true;
      if (!isRecord(row)) {
        skipped += 1;
        return;
      }
      const parsed = serviceSchema.safeParse(row);
      if (!parsed.success) skipped += 1;
      else if (memo === undefined) services.push(buildService(parsed.data));
      else services.push(memo.shareService(buildService(parsed.data)));
    },
    finish(meta) {
      const m = serviceListMetaSchema.safeParse(meta);
      return {
        ok: true,
        value: {
          variant: variantA ? 'A' : 'B',
          total: (m.success ? m.data.total : undefined) ?? rows,
          services,
        },
        skipped,
      };
    },
  };
}

export function normalizeServiceList(data: unknown, meta: unknown): Normalized<ServiceList> {
  return collectList(data, meta, 'services', serviceListCollector());
}

export function normalizeService(data: unknown): Normalized<ServiceInfo> {
  const parsed = serviceSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `service: ${describeIssues(parsed.error)}` };
  return { ok: true, value: buildService(parsed.data), skipped: 0 };
}

// ---------------------------------------------------------------------------------------------
// Status

/**
 * A row's state is worked out in this one object and copied out (`copyState`) only when it is
 * kept: with a memo (`memo.ts`), a row equal to the remembered one allocates nothing. (A state
 * built as a fresh literal and then dropped would still cost old-generation space: after a first
 * poll keeps them all, V8 pretenures that allocation site.)
 */
const draft: ServiceState = {
  feedId: '',
  name: null,
  variant: 'A',
  status: 'unknown',
  statusRaw: null,
  indicator: null,
  sourceKind: 'unknown',
  sourceKindRaw: null,
  canonicalUrl: null,
  officialStatusUrl: null,
  summary: null,
  verificationState: null,
  verifiedAt: null,
  activeIncidentCount: null,
  incidentScope: null,
  lastChanged: null,
  lastCheck: null,
};

function draftA(w: WireStatusRowA, words?: WordCounts): ServiceState {
  if (words !== undefined) {
    words.add('status.displayStatus', w.displayStatus);
    words.add('status.status', w.status);
    words.add('status.availabilityStatus', w.availabilityStatus);
    words.add('status.endpointReachabilityStatus', w.endpointReachabilityStatus);
    words.add('status.incidentScope', w.incidentScope);
    words.add('status.sourceKind', w.sourceKind);
    words.add('status.verificationState', w.verificationState);
  }
  const d = draft;
  d.feedId = w.feedId;
  d.name = w.name ?? null;
  d.variant = 'A';
  d.status = statusOfRowA(w);
  d.statusRaw = firstString(
    w.displayStatus,
    w.status,
    w.endpointReachabilityStatus,
    w.availabilityStatus,
  );
  d.indicator = null;
  d.sourceKind = mapSourceKind(w.sourceKind);
  d.sourceKindRaw = w.sourceKind ?? null;
  d.canonicalUrl = w.canonicalUrl ?? null;
  d.officialStatusUrl = w.officialStatusUrl ?? null;
  d.summary = w.summary ?? null;
  d.verificationState = w.verificationState ?? null;
  d.verifiedAt = w.verifiedAt ?? null;
  d.activeIncidentCount = w.activeIncidentCount ?? null;
  d.incidentScope = w.incidentScope ?? null;
  d.lastChanged = w.lastChanged ?? null;
  d.lastCheck = w.lastSuccessfulCheck ?? null;
  return d;
}

function draftB(w: WireStatusRowB, words?: WordCounts): ServiceState {
  if (words !== undefined) {
    words.add('statusB.status', w.status);
    words.add('statusB.indicator', w.indicator);
  }
  const d = draft;
  d.feedId = w.feedId;
  d.name = null;
  d.variant = 'B';
  d.status = statusOfRowB(w);
  d.statusRaw = firstString(w.status, w.indicator);
  d.indicator = w.indicator ?? null;
  d.sourceKind = 'unknown';
  d.sourceKindRaw = null;
  d.canonicalUrl = null;
  d.officialStatusUrl = null;
  d.summary = null;
  d.verificationState = null;
  d.verifiedAt = null;
  d.activeIncidentCount = null;
  d.incidentScope = null;
  d.lastChanged = null;
  d.lastCheck = w.lastCheck ?? null;
  return d;
}

/** The row's state in `draft` (valid until the next row), or undefined for a malformed row. */
function draftStatusRow(row: unknown, words?: WordCounts): ServiceState | undefined {
  if (detectStatusRowVariant(row) === 'A') {
    const fast = isRecord(row) ? readStatusRowA(row) : undefined;
    if (fast !== undefined) return draftA(fast, words);
    const p = statusRowASchema.safeParse(row);
    return p.success ? draftA(p.data, words) : undefined;
  }
  const p = statusRowBSchema.safeParse(row);
  return p.success ? draftB(p.data, words) : undefined;
}

type StateParse = { success: true; data: ServiceState } | { success: false };

function parseStatusRow(row: unknown, words?: WordCounts): StateParse {
  const d = draftStatusRow(row, words);
  return d === undefined ? { success: false } : { success: true, data: copyState(d) };
}

/**
 * The rows of GET /status, one at a time. With a `memo`, a row equal to the one the memo saw last
 * for its service is that same object (see `memo.ts`): callers must not modify the states.
 */
/**
 * Drops every row whose feedId another row of the list has too: which of them is the service's
 * state is unknown (the contract promises neither one row per service nor an order), and
 * reading them in turn would flip the service's state at each poll. They count as skipped.
 */
export function withoutRepeatedFeeds<T extends { feedId: string }>(
  rows: T[],
): { rows: T[]; dropped: number } {
  const seen = new Set<string>();
  let repeated: Set<string> | undefined;
  for (const r of rows) {
    if (seen.has(r.feedId)) (repeated ??= new Set()).add(r.feedId);
    else seen.add(r.feedId);
  }
  if (repeated === undefined) return { rows, dropped: 0 };
  const kept = rows.filter((r) => !repeated.has(r.feedId));
  return { rows: kept, dropped: rows.length - kept.length };
}

export function statusSnapshotCollector(memo?: ServiceStateMemo): RowCollector<StatusSnapshot> {
  const services: ServiceState[] = [];
  const words = new WordCounts();
  const round = memo?.begin() ?? 0;
  let rows = 0;
  let skipped = 0;
  return {
    add(row) {
      rows += 1;
      if (!isRecord(row)) {
        skipped += 1;
        return;
      }
      const d = draftStatusRow(row, words);
      if (d === undefined) skipped += 1;
      else services.push(memo === undefined ? copyState(d) : memo.settle(d, round));
    },
    finish(meta) {
      memo?.end(round);
      // The memo counted the distinct feeds as it settled them: as many as rows, none repeats.
      // (The check's set of every feedId was about 1 MB of large objects each poll at 20,000
      // services, which only a full collection frees.)
      const distinct =
        memo !== undefined && memo.distinctIn(round) === services.length
          ? { rows: services, dropped: 0 }
          : withoutRepeatedFeeds(services);
      const m = statusMetaSchema.safeParse(meta);
      const md = m.success ? m.data : undefined;
      const includes = md?.includes;
      const variant: Variant =
        services.some((s) => s.variant === 'A') || (services.length === 0 && includes !== undefined)
          ? 'A'
          : 'B';
      return {
        ok: true,
        value: {
          variant,
          total: md?.total ?? rows,
          generated: md?.generated ?? null,
          ageSeconds: md?.age_seconds ?? null,
          includes:
            includes === undefined
              ? null
              : {
                  incidents: includes.incidents ?? false,
                  maintenances: includes.maintenances ?? false,
                },
          services: distinct.rows,
        },
        skipped: skipped + distinct.dropped,
        words,
      };
    },
  };
}

export function normalizeStatusSnapshot(data: unknown, meta: unknown): Normalized<StatusSnapshot> {
  return collectList(data, meta, 'status', statusSnapshotCollector());
}

/** `/status/{feedId}` (full or `compact=1`). */
export function normalizeServiceState(data: unknown): Normalized<ServiceState> {
  const parsed = parseStatusRow(data);
  if (!parsed.success || !isRecord(data)) {
    const issues =
      detectStatusRowVariant(data) === 'A'
        ? statusRowASchema.safeParse(data).error
        : statusRowBSchema.safeParse(data).error;
    return {
      ok: false,
      problem: `status: ${issues === undefined ? 'not an object' : describeIssues(issues)}`,
    };
  }
  return { ok: true, value: parsed.data, skipped: 0 };
}

// ---------------------------------------------------------------------------------------------
// Incidents

/** Unix seconds from a number of seconds, a numeric string or an ISO 8601 string; else null. */
export function toUnixSeconds(value: number | string | null | undefined): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  if (trimmed === '') return null;
  if (/^-?\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** Best effort: every item becomes one update (the count matters for transition ids). */
export function normalizeIncidentUpdate(item: unknown): IncidentUpdate {
  if (typeof item === 'string') return { status: null, text: item, at: null };
  const p = incidentUpdateSchema.safeParse(item);
  if (!p.success) return { status: null, text: null, at: null };
  const u = p.data;
  return {
    status: u.status ?? null,
    text: firstString(u.body, u.text, u.message, u.description),
    at:
      toUnixSeconds(u.created) ??
      toUnixSeconds(u.created_at) ??
      toUnixSeconds(u.timestamp) ??
      toUnixSeconds(u.at) ??
      toUnixSeconds(u.updated),
  };
}

function buildIncident(w: WireIncident, raw: Record<string, unknown>): Incident | null {
  const serviceName = w.service ?? w.feedId;
  if (serviceName === undefined) return null;
  const isA = hasAny(raw, INCIDENT_VARIANT_A_FIELDS);
  return {
    id: w.id,
    feedId: w.feedId ?? null,
    serviceName,
    title: w.title ?? '',
    status: mapIncidentStatus(w.status),
    statusRaw: w.status ?? '',
    started: w.started,
    updates: (w.updates ?? []).map(normalizeIncidentUpdate),
    sourceKind: isA && w.sourceKind !== undefined ? mapSourceKind(w.sourceKind) : null,
    verificationState: w.verificationState ?? null,
    verifiedAt: w.verifiedAt ?? null,
    officialStatusUrl: w.officialStatusUrl ?? null,
    canonicalServiceUrl: w.canonicalServiceUrl ?? null,
  };
}

/** What an incident row became (null incident: skipped), for a `RowMemo`. */
class IncidentRow {
  constructor(
    readonly incident: Incident | null,
    /** The row has Variant A fields. */
    readonly isA: boolean,
    /** Its `status` word, for the vocabulary. */
    readonly word: string | undefined,
  ) {}
}

function parseIncident(row: unknown): IncidentRow {
  const isA = hasAny(row, INCIDENT_VARIANT_A_FIELDS);
  if (!isRecord(row)) return new IncidentRow(null, isA, undefined);
  const p = incidentSchema.safeParse(row);
  if (!p.success) return new IncidentRow(null, isA, undefined);
  return new IncidentRow(buildIncident(p.data, row), isA, p.data.status);
}

/**
 * The rows of GET /incidents and /incidents/{feedId}, one at a time. The incidents may be
 * shared with an earlier response (a `RowMemo` hit): nobody may modify them.
 */
export function incidentListCollector(): RowCollector<IncidentList> {
  const incidents: Incident[] = [];
  const words = new WordCounts();
  let rows = 0;
  let skipped = 0;
  let rowsAreA = false;
  const take = (r: IncidentRow): IncidentRow => {
    rows += 1;
    if (r.isA) rowsAreA = true;
    words.add('incident.status', r.word);
    if (r.incident !== null) incidents.push(r.incident);
    else skipped += 1;
    return r;
  };
  return {
    add: (row) => take(parseIncident(row)),
    again(result) {
      if (!(result instanceof IncidentRow)) throw new TypeError('not an incident row');
      take(result);
    },
    finish(meta) {
      const m = incidentMetaSchema.safeParse(meta);
      const md = m.success ? m.data : undefined;
      words.add('incidents.verificationState', md?.verificationState);
      const metaIsA = md?.sourceKind !== undefined || md?.verificationState !== undefined;
      return {
        ok: true,
        value: {
          variant: metaIsA || rowsAreA ? 'A' : 'B',
          total: md?.total ?? rows,
          servicesAffected: md?.services_affected ?? null,
          sourceKind: md?.sourceKind ?? null,
          verificationState: md?.verificationState ?? null,
          incidents,
        },
        skipped,
        words,
      };
    },
  };
}

export function normalizeIncidentList(data: unknown, meta: unknown): Normalized<IncidentList> {
  return collectList(data, meta, 'incidents', incidentListCollector());
}

// ---------------------------------------------------------------------------------------------
// Reports (SLA, scores)

/**
 * The `finish` of a report collector (GET /sla, GET /scores): `data` (the envelope's, its row
 * list emptied) checked against the report's schema, the rows whose feedId repeats dropped and
 * counted as skipped, and the value built by `build` from `data.summary` and the rows kept.
 */
function finishReport<
  S extends z.ZodType<{ summary?: unknown }>,
  Row extends { feedId: string },
  T,
>(
  what: string,
  schema: S,
  data: unknown,
  collected: { items: Row[]; skipped: number; words?: WordCounts },
  build: (summary: z.output<S>['summary'], rows: Row[]) => T,
): Normalized<T> {
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `${what}: ${describeIssues(parsed.error)}` };
  const distinct = withoutRepeatedFeeds(collected.items);
  const value = build(parsed.data.summary, distinct.rows);
  const skipped = collected.skipped + distinct.dropped;
  return collected.words === undefined
    ? { ok: true, value, skipped }
    : { ok: true, value, skipped, words: collected.words };
}

// ---------------------------------------------------------------------------------------------
// SLA

function buildSla(w: WireSlaRecord): SlaRecord {
  return {
    feedId: w.feedId,
    name: w.name ?? w.feedId,
    slaTarget: w.sla_target,
    uptime30d: w.uptime_30d,
    status: mapSlaStatus(w.status),
    statusRaw: w.status,
    margin: w.margin,
  };
}

/**
 * The rows of GET /sla's `data.services`, one at a time; `finish` gets `data` (its summary) with
 * an empty `services`.
 */
export function slaReportCollector(): RowCollector<SlaReport> {
  const items: SlaRecord[] = [];
  const words = new WordCounts();
  let skipped = 0;
  return {
    add(row) {
      const parsed = isRecord(row) ? slaRecordSchema.safeParse(row) : undefined;
      if (parsed?.success !== true) {
        skipped += 1;
        return;
      }
      words.add('sla.status', parsed.data.status);
      items.push(buildSla(parsed.data));
    },
    finish: (_meta, data) =>
      finishReport('sla', slaDataSchema, data, { items, skipped, words }, (s, services) => ({
        summary: {
          servicesTracked: s?.services_tracked ?? null,
          complianceRate: s?.compliance_rate ?? null,
          servicesBreachingSla: s?.services_breaching_sla ?? null,
        },
        services,
      })),
  };
}

export function normalizeSlaReport(data: unknown): Normalized<SlaReport> {
  const parsed = slaDataSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `sla: ${describeIssues(parsed.error)}` };
  const collector = slaReportCollector();
  for (const row of parsed.data.services) collector.add(row);
  return collector.finish(undefined, { ...parsed.data, services: [] });
}

export function normalizeSlaRecord(data: unknown): Normalized<SlaRecord> {
  const parsed = slaRecordSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `sla: ${describeIssues(parsed.error)}` };
  return { ok: true, value: buildSla(parsed.data), skipped: 0 };
}

// ---------------------------------------------------------------------------------------------
// Scores

function buildScore(w: WireScoreRecord): ScoreRecord {
  const c = w.components;
  return {
    feedId: w.feedId,
    name: w.name ?? w.feedId,
    score: w.score,
    grade: w.grade ?? null,
    tier: w.tier ?? null,
    components: {
      uptime: c?.uptime ?? null,
      incidents: c?.incidents ?? null,
      resolution: c?.resolution ?? null,
      sla: c?.sla ?? null,
    },
  };
}

/**
 * The rows of GET /scores' `data.scores`, one at a time; `finish` gets `data` (its summary) with
 * an empty `scores`.
 */
export function scoreReportCollector(): RowCollector<ScoreReport> {
  const items: ScoreRecord[] = [];
  let skipped = 0;
  return {
    add(row) {
      const parsed = isRecord(row) ? scoreRecordSchema.safeParse(row) : undefined;
      if (parsed?.success === true) items.push(buildScore(parsed.data));
      else skipped += 1;
    },
    finish: (_meta, data) =>
      finishReport('scores', scoreDataSchema, data, { items, skipped }, (s, scores) => ({
        summary: {
          servicesScored: s?.services_scored ?? null,
          avgScore: s?.avg_score ?? null,
          topService: s?.top_service ?? null,
        },
        scores,
      })),
  };
}

export function normalizeScoreReport(data: unknown): Normalized<ScoreReport> {
  const parsed = scoreDataSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `scores: ${describeIssues(parsed.error)}` };
  const collector = scoreReportCollector();
  for (const row of parsed.data.scores) collector.add(row);
  return collector.finish(undefined, { ...parsed.data, scores: [] });
}

export function normalizeScoreRecord(data: unknown): Normalized<ScoreRecord> {
  const parsed = scoreRecordSchema.safeParse(data);
  if (!parsed.success) return { ok: false, problem: `scores: ${describeIssues(parsed.error)}` };
  return { ok: true, value: buildScore(parsed.data), skipped: 0 };
}

// ---------------------------------------------------------------------------------------------
// Rankings, analytics

/** Undocumented shapes: the envelope's `data` as parsed JSON. */
export function normalizeOpaque(data: unknown): Normalized<JsonValue> {
  if (!isJsonValue(data)) return { ok: false, problem: 'data is not a JSON value' };
  return { ok: true, value: data, skipped: 0 };
}

/** True for values `JSON.parse` can produce (checked shallowly-recursive, no cycles possible). */
export function isJsonValue(value: unknown): value is JsonValue {
  if (value === null) return true;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      if (Array.isArray(value)) return value.every(isJsonValue);
      return Object.values(value).every(isJsonValue);
    case 'bigint':
    case 'function':
    case 'symbol':
    case 'undefined':
      return false;
  }
  return false;
}
