/**
 * The normalized model of the upstream API: Variant A (evidence-based) and Variant B
 * (cached status) responses both become these shapes, and nothing after the upstream client
 * sees a raw payload. Unknown enum values are kept raw (`*Raw`) and mapped to `unknown`.
 */

import type { WordCounts } from './vocabulary.js';

export type Variant = 'A' | 'B';

export type SourceKind = 'official' | 'reachability' | 'community' | 'unknown';

/** Display/availability condition of a service, normalized across variants. */
export type ServiceStatus =
  'operational' | 'degraded' | 'partial_outage' | 'major_outage' | 'maintenance' | 'unknown';

/** Lifecycle state of an incident as reported upstream (normalized). */
export type IncidentStatus = 'investigating' | 'identified' | 'monitoring' | 'resolved' | 'unknown';

/** SLA standing, normalized: `breached` means below target (negative margin). */
export type SlaStatus = 'met' | 'at_risk' | 'breached' | 'unknown';

/** X-RateLimit-* headers (and Retry-After on 429), parsed; null when absent or unparsable. */
export interface RateLimitInfo {
  limit: number | null;
  remaining: number | null;
  /** Unix seconds at which the window resets (X-RateLimit-Reset). */
  reset: number | null;
}

/** Every client call returns its parsed value plus transport facts. */
export interface UpstreamResult<T> {
  data: T;
  rateLimit: RateLimitInfo;
  /** HTTP status of the response (always 2xx here; errors are thrown). */
  httpStatus: number;
  /** Malformed rows dropped from a list response (0 for single objects). */
  skipped: number;
  /** Words seen in enumerated-looking fields (status, incidents, sla lists), for drift tracking. */
  words?: WordCounts;
}

/** A catalog entry (GET /services, /services/{feedId}). */
export interface ServiceInfo {
  feedId: string;
  name: string;
  url: string | null;
  /** Variant A only; null in Variant B. */
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
  feedType: string | null;
  sourceKind: SourceKind;
  sourceKindRaw: string | null;
  sourceLabel: string | null;
  description: string | null;
}

export interface ServiceList {
  variant: Variant;
  total: number;
  services: ServiceInfo[];
}

/** One row of GET /status, normalized. */
export interface ServiceState {
  feedId: string;
  /** Variant A carries the name; Variant B does not (null). */
  name: string | null;
  variant: Variant;
  status: ServiceStatus;
  /** The raw value the status was derived from (displayStatus, status, endpointReachabilityStatus). */
  statusRaw: string | null;
  /** Variant B `indicator` (none/minor/major/critical), else null. */
  indicator: string | null;
  sourceKind: SourceKind;
  sourceKindRaw: string | null;
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
  summary: string | null;
  /** Variant A: e.g. `verified`; null in Variant B. */
  verificationState: string | null;
  verifiedAt: string | null;
  activeIncidentCount: number | null;
  incidentScope: string | null;
  /** Unix seconds: Variant A lastChanged; null in B. */
  lastChanged: number | null;
  /** Unix seconds: Variant A lastSuccessfulCheck, Variant B lastCheck. */
  lastCheck: number | null;
}

export interface StatusSnapshot {
  variant: Variant;
  total: number;
  /** meta.generated, Unix seconds. */
  generated: number | null;
  /** meta.age_seconds. */
  ageSeconds: number | null;
  /** Variant A meta.includes; null when absent. */
  includes: { incidents: boolean; maintenances: boolean } | null;
  services: ServiceState[];
}

/** Best-effort view of one item of `updates` (its structure is not part of the contract). */
export interface IncidentUpdate {
  status: string | null;
  text: string | null;
  /** Unix seconds when known. */
  at: number | null;
}

export interface Incident {
  id: string;
  /** Variant A carries feedId; Variant B names the service only (resolve via the catalog). */
  feedId: string | null;
  serviceName: string;
  title: string;
  status: IncidentStatus;
  statusRaw: string;
  /** Unix seconds. */
  started: number;
  updates: IncidentUpdate[];
  sourceKind: SourceKind | null;
  verificationState: string | null;
  verifiedAt: string | null;
  officialStatusUrl: string | null;
  canonicalServiceUrl: string | null;
}

export interface IncidentList {
  variant: Variant;
  total: number;
  servicesAffected: number | null;
  /** Variant A meta.sourceKind / meta.verificationState; null in Variant B. */
  sourceKind: string | null;
  verificationState: string | null;
  incidents: Incident[];
}

export interface SlaRecord {
  feedId: string;
  name: string;
  slaTarget: number;
  uptime30d: number;
  status: SlaStatus;
  statusRaw: string;
  /** uptime minus target, percentage points; negative = below target. */
  margin: number;
}

export interface SlaReport {
  summary: {
    servicesTracked: number | null;
    complianceRate: number | null;
    servicesBreachingSla: number | null;
  };
  services: SlaRecord[];
}

export interface ScoreRecord {
  feedId: string;
  name: string;
  score: number;
  grade: string | null;
  tier: string | null;
  components: {
    uptime: number | null;
    incidents: number | null;
    resolution: number | null;
    sla: number | null;
  };
}

export interface ScoreReport {
  summary: {
    servicesScored: number | null;
    avgScore: number | null;
    topService: string | null;
  };
  scores: ScoreRecord[];
}

/** Rankings and analytics have no documented shape: kept as parsed JSON. */
export type OpaqueJson = unknown;
