/**
 * What the snapshot store keeps per service and kind, between cycles. Plain JSON values with a
 * stable key order so that "unchanged" is a string comparison. `seq` counts the transitions
 * emitted for the entry; it makes transition ids distinct for repeated changes (a status that
 * flips twice, an incident id that reopens) while staying deterministic across replicas.
 */
import type { ServiceStatus, SlaStatus, SourceKind, Variant } from '../upstream/model.js';

/**
 * A status row's evidence (`evidenceOf`): `fresh` = a Variant A row from an official source with
 * verified evidence, `stale` = official but not verified, `none` = any other row (Variant B, or a
 * non-official source). Kept in the entry for inspection; a resolution by absence never rests on
 * it (it comes from another response than the incident list: docs/upstream-contract.md).
 */
export type Evidence = 'fresh' | 'stale' | 'none';

export interface StatusEntry {
  /** The response variant the entry was last confirmed from. */
  variant: Variant;
  status: ServiceStatus;
  raw: string | null;
  sourceKind: SourceKind;
  /** See `Evidence`. */
  evidence: Evidence;
  seq: number;
  /** A different status seen but not yet confirmed by enough distinct upstream snapshots. */
  pending: PendingStatus | null;
}

export interface PendingStatus {
  status: ServiceStatus;
  raw: string | null;
  /** Distinct upstream snapshots that showed it. */
  seen: number;
  /** The key of the last snapshot that counted (upstream `generated`, else the poll time). */
  lastSnapshot: number;
}

export interface IncidentEntryItem {
  title: string;
  status: string;
  started: number;
  updateCount: number;
}

/** An incident statuswatch announced as resolved, remembered so that its reappearance is a reopening. */
export interface ClosedIncidentItem {
  title: string;
  started: number;
  updateCount: number;
  /** Unix ms of the cycle that resolved it. */
  at: number;
}

export interface IncidentsEntry {
  seq: number;
  /** Open incidents by id, sorted by id. */
  open: Record<string, IncidentEntryItem>;
  /**
   * Recently resolved incidents by id (at most CLOSED_PER_SERVICE, none older than
   * CLOSED_RETENTION_MS): an id that comes back is `incident.updated` with `reopened: true` on
   * the same lifecycle, never a second `incident.opened`. Absent in entries written before it.
   */
  closed?: Record<string, ClosedIncidentItem>;
}

export interface SlaEntry {
  status: SlaStatus;
  seq: number;
  /** `uptime_30d` samples `[unix s, value]` for sla.forecast (absent in entries written before it). */
  history?: [number, number][];
  /** An sla.forecast was announced and its trend still holds. */
  forecasting?: boolean;
  /** sla.forecast transitions emitted so far (their ids). */
  fseq?: number;
}

export interface ScoreEntry {
  /** The score drops are measured from: the last notified score, raised by any later rise. */
  reference: number;
  grade: string | null;
  seq: number;
  /** Score samples `[unix s, value]` for score.trend (absent in entries written before it). */
  history?: [number, number][];
  /** A score.trend was announced and the fall still holds. */
  trending?: boolean;
  /** score.trend transitions emitted so far (their ids). */
  tseq?: number;
}

export type UpstreamHealth = 'ok' | 'degraded';

export interface UpstreamEntry {
  health: UpstreamHealth;
  /** Consecutive failed polls of the endpoint. */
  failures: number;
  reason: string | null;
  seq: number;
}
