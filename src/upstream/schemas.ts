/**
 * zod schemas of the upstream wire format (what the code relies on: docs/upstream-contract.md),
 * for both response variants.
 *
 * Tolerance rules, applied everywhere:
 * - objects are loose: unknown fields pass through untouched;
 * - enum-like fields are plain strings: unknown values are kept raw (mapping happens later);
 * - a row needs only its key fields (`feedId`, incident `id`/`started`, SLA figures, score);
 *   every other field is optional, and a present field of the wrong type reads as absent
 *   (`lenient`), so one odd field never costs the whole row;
 * - list rows are validated one by one (`z.array(z.unknown())` here), so a malformed row is
 *   skipped and counted by `normalize.ts` instead of failing the response.
 */
import { z } from 'zod';

/** An optional field that reads as `undefined` when absent or of the wrong type. */
function lenient<T extends z.ZodType>(schema: T) {
  return schema.optional().catch(undefined);
}

const str = () => lenient(z.string());
const nullableStr = () => lenient(z.string().nullable());
const num = () => lenient(z.number());
const bool = () => lenient(z.boolean());

export const feedIdSchema = z.string().min(1);

/** Envelope of every response (2.1); `data`/`meta` are validated per endpoint. */
export const envelopeSchema = z.looseObject({
  success: z.boolean(),
  data: z.unknown().optional(),
  meta: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type WireEnvelope = z.infer<typeof envelopeSchema>;

/** Best-effort shape of an error body (`{success:false, error}`); used only to quote `error`. */
export const errorBodySchema = z.looseObject({ error: z.string() });

/** Rows of a list endpoint: validated one by one later. */
export const rowListSchema = z.array(z.unknown());

// ---------------------------------------------------------------------------------------------
// Services (2.2)

export const serviceSchema = z.looseObject({
  feedId: feedIdSchema,
  name: str(),
  url: str(),
  description: str(),
  feedType: str(),
  category: str(),
  // Variant A
  canonicalUrl: str(),
  officialStatusUrl: nullableStr(),
  sourceKind: str(),
  sourceLabel: str(),
});
export type WireService = z.infer<typeof serviceSchema>;

export const serviceListMetaSchema = z.looseObject({ total: num() });

/** Fields only Variant A catalog entries carry. */
export const SERVICE_VARIANT_A_FIELDS = [
  'canonicalUrl',
  'officialStatusUrl',
  'sourceKind',
  'sourceLabel',
] as const;

// ---------------------------------------------------------------------------------------------
// Status rows (2.3 Variant A, 2.4 Variant B)

export const statusRowASchema = z.object({
  feedId: feedIdSchema,
  name: str(),
  /** Legacy status, official-source rows only. */
  status: str(),
  canonicalUrl: str(),
  officialStatusUrl: nullableStr(),
  sourceKind: str(),
  sourceLabel: str(),
  displayStatus: str(),
  statusLabel: str(),
  availabilityStatus: str(),
  availabilityLabel: str(),
  incidentScope: str(),
  incidentScopeLabel: nullableStr(),
  summary: str(),
  verificationState: str(),
  verifiedAt: str(),
  activeIncidentCount: lenient(z.number().int().nonnegative()),
  lastChanged: num(),
  lastSuccessfulCheck: num(),
  /** Non-official rows, instead of `status`. */
  endpointReachabilityStatus: str(),
  // `include=` additions (official rows only); shapes not in the contract.
  incidents: lenient(z.array(z.unknown())),
  maintenances: lenient(z.array(z.unknown())),
  details: lenient(z.record(z.string(), z.unknown())),
});
export type WireStatusRowA = z.infer<typeof statusRowASchema>;

export const statusRowBSchema = z.object({
  feedId: feedIdSchema,
  status: str(),
  lastCheck: num(),
  indicator: str(),
});
export type WireStatusRowB = z.infer<typeof statusRowBSchema>;

/** Fields only Variant A status rows carry (compact rows included: displayStatus/lastChanged). */
export const STATUS_VARIANT_A_FIELDS = [
  'displayStatus',
  'availabilityStatus',
  'sourceKind',
  'sourceLabel',
  'canonicalUrl',
  'officialStatusUrl',
  'verificationState',
  'verifiedAt',
  'endpointReachabilityStatus',
  'incidentScope',
  'activeIncidentCount',
  'lastChanged',
  'lastSuccessfulCheck',
] as const;

export const statusMetaSchema = z.looseObject({
  total: num(),
  generated: num(),
  age_seconds: num(),
  includes: lenient(
    z.looseObject({
      incidents: bool(),
      maintenances: bool(),
    }),
  ),
});
export type WireStatusMeta = z.infer<typeof statusMetaSchema>;

// ---------------------------------------------------------------------------------------------
// Incidents (2.5)

export const incidentSchema = z.looseObject({
  id: z.union([z.string().min(1), z.number().transform(String)]),
  started: z.number(),
  service: str(),
  title: str(),
  status: str(),
  updates: lenient(z.array(z.unknown())),
  // Variant A
  feedId: lenient(feedIdSchema),
  sourceKind: str(),
  verificationState: str(),
  verifiedAt: str(),
  officialStatusUrl: nullableStr(),
  canonicalServiceUrl: str(),
});
export type WireIncident = z.infer<typeof incidentSchema>;

/** Fields only Variant A incidents carry. */
export const INCIDENT_VARIANT_A_FIELDS = [
  'feedId',
  'sourceKind',
  'verificationState',
  'verifiedAt',
  'officialStatusUrl',
  'canonicalServiceUrl',
] as const;

export const incidentMetaSchema = z.looseObject({
  total: num(),
  services_affected: num(),
  sourceKind: str(),
  verificationState: str(),
});
export type WireIncidentMeta = z.infer<typeof incidentMetaSchema>;

/** An item of `updates` (not in the contract): every field optional, any shape tolerated. */
export const incidentUpdateSchema = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  status: str(),
  body: str(),
  text: str(),
  message: str(),
  description: str(),
  created: lenient(z.union([z.number(), z.string()])),
  created_at: lenient(z.union([z.number(), z.string()])),
  timestamp: lenient(z.union([z.number(), z.string()])),
  at: lenient(z.union([z.number(), z.string()])),
  updated: lenient(z.union([z.number(), z.string()])),
});
export type WireIncidentUpdate = z.infer<typeof incidentUpdateSchema>;

// ---------------------------------------------------------------------------------------------
// SLA (2.6)

export const slaRecordSchema = z.looseObject({
  feedId: feedIdSchema,
  name: str(),
  sla_target: z.number(),
  uptime_30d: z.number(),
  status: z.string(),
  margin: z.number(),
});
export type WireSlaRecord = z.infer<typeof slaRecordSchema>;

export const slaSummarySchema = z.looseObject({
  services_tracked: num(),
  compliance_rate: num(),
  services_breaching_sla: num(),
});

export const slaDataSchema = z.looseObject({
  summary: lenient(slaSummarySchema),
  services: rowListSchema,
});
export type WireSlaData = z.infer<typeof slaDataSchema>;

// ---------------------------------------------------------------------------------------------
// Scores (2.7)

export const scoreComponentsSchema = z.looseObject({
  uptime: num(),
  incidents: num(),
  resolution: num(),
  sla: num(),
});

export const scoreRecordSchema = z.looseObject({
  feedId: feedIdSchema,
  name: str(),
  score: z.number(),
  grade: str(),
  tier: str(),
  components: lenient(scoreComponentsSchema),
});
export type WireScoreRecord = z.infer<typeof scoreRecordSchema>;

export const scoreSummarySchema = z.looseObject({
  services_scored: num(),
  avg_score: num(),
  top_service: str(),
});

export const scoreDataSchema = z.looseObject({
  summary: lenient(scoreSummarySchema),
  scores: rowListSchema,
});
export type WireScoreData = z.infer<typeof scoreDataSchema>;

// ---------------------------------------------------------------------------------------------
// Hot path: the status list is polled every minute with one row per service (2,000+), and zod's
// per-field work is a fifth of a no-change cycle. `readStatusRowA` applies exactly the rules of
// `statusRowASchema` (required non-empty `feedId`; every other field kept when of its type, else
// absent) with plain checks; a test holds the two equal on generated rows, and the zod schema
// still decides every row this returns undefined for.

const strOr = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const nullableStrOr = (v: unknown): string | null | undefined =>
  v === null || typeof v === 'string' ? v : undefined;
const numOr = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;

/** `statusRowASchema.parse` for well-formed rows, without zod; undefined = ask zod. */
export function readStatusRowA(row: Record<string, unknown>): WireStatusRowA | undefined {
  const feedId = row.feedId;
  if (typeof feedId !== 'string' || feedId.length === 0) return undefined;
  const count = row.activeIncidentCount;
  const details = row.details;
  return {
    feedId,
    name: strOr(row.name),
    status: strOr(row.status),
    canonicalUrl: strOr(row.canonicalUrl),
    officialStatusUrl: nullableStrOr(row.officialStatusUrl),
    sourceKind: strOr(row.sourceKind),
    sourceLabel: strOr(row.sourceLabel),
    displayStatus: strOr(row.displayStatus),
    statusLabel: strOr(row.statusLabel),
    availabilityStatus: strOr(row.availabilityStatus),
    availabilityLabel: strOr(row.availabilityLabel),
    incidentScope: strOr(row.incidentScope),
    incidentScopeLabel: nullableStrOr(row.incidentScopeLabel),
    summary: strOr(row.summary),
    verificationState: strOr(row.verificationState),
    verifiedAt: strOr(row.verifiedAt),
    activeIncidentCount:
      typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : undefined,
    lastChanged: numOr(row.lastChanged),
    lastSuccessfulCheck: numOr(row.lastSuccessfulCheck),
    endpointReachabilityStatus: strOr(row.endpointReachabilityStatus),
    incidents: Array.isArray(row.incidents) ? (row.incidents as unknown[]) : undefined,
    maintenances: Array.isArray(row.maintenances) ? (row.maintenances as unknown[]) : undefined,
    details:
      typeof details === 'object' && details !== null && !Array.isArray(details)
        ? (details as Record<string, unknown>)
        : undefined,
  };
}
