/**
 * The simulator's two wordings of the words the upstream contract does not enumerate.
 *
 * `standard` is the vocabulary the simulator invented; `alternate` words every such field
 * differently (still contract-conforming), so the daemon can be tested against an upstream whose
 * vocabulary differs. Words the contract names ("values seen": `operational`, `none`,
 * `verified`, `up`, `investigating`, `at_risk`, ...) are the same in both wordings.
 *
 * Simulation state always keeps the standard words; only the HTTP output is translated, through
 * these precomputed tables.
 */
import type { Evidence, IncidentStatus, SimStatus, SlaStatus, Tier } from './state.js';

export const WORDINGS = ['standard', 'alternate'] as const;
export type Wording = (typeof WORDINGS)[number];

/** What an endpoint probe can observe of a condition (internal, standard keys). */
export const REACHABILITIES = ['reachable', 'degraded', 'unreachable'] as const;
export type Reachability = (typeof REACHABILITIES)[number];
/** Variant A incidentScope (internal, standard keys). */
export const SCOPES = ['none', 'partial', 'full'] as const;
export type Scope = (typeof SCOPES)[number];

export function isWording(value: unknown): value is Wording {
  return typeof value === 'string' && (WORDINGS as readonly string[]).includes(value);
}

/** Every translated word of the HTTP output, keyed by the simulator's internal (standard) word. */
export interface Vocabulary {
  readonly wording: Wording;
  /** Variant A `displayStatus`, legacy `status`, `availabilityStatus`, component statuses. */
  readonly status: Readonly<Record<SimStatus, string>>;
  /** Variant A `endpointReachabilityStatus`. */
  readonly reachability: Readonly<Record<Reachability, string>>;
  /** Variant A `incidentScope`. */
  readonly scope: Readonly<Record<Scope, string>>;
  /** `verificationState` of status rows, incident rows and incidents `meta`, by evidence. */
  readonly verification: Readonly<Record<Evidence, string>>;
  /** Variant B `status`, by the service's condition. */
  readonly statusB: Readonly<Record<SimStatus, string>>;
  /** Variant B `indicator`, by the service's condition. */
  readonly indicatorB: Readonly<Record<SimStatus, string>>;
  /** Incident `status` (rows and update items). */
  readonly incident: Readonly<Record<IncidentStatus, string>>;
  /** `status` of a Variant A `include=maintenances` item. */
  readonly maintenanceInProgress: string;
  /** SLA `status`. */
  readonly sla: Readonly<Record<SlaStatus, string>>;
  /** Score `tier`. */
  readonly tier: Readonly<Record<Tier, string>>;
}

export const STANDARD: Vocabulary = {
  wording: 'standard',
  status: {
    operational: 'operational',
    degraded: 'degraded',
    partial_outage: 'partial_outage',
    major_outage: 'major_outage',
    maintenance: 'maintenance',
  },
  reachability: { reachable: 'reachable', degraded: 'degraded', unreachable: 'unreachable' },
  scope: { none: 'none', partial: 'partial', full: 'full' },
  verification: { fresh: 'verified', stale: 'stale', unverified: 'unverified' },
  statusB: {
    operational: 'up',
    degraded: 'degraded',
    partial_outage: 'degraded',
    major_outage: 'down',
    maintenance: 'maintenance',
  },
  indicatorB: {
    operational: 'none',
    degraded: 'minor',
    partial_outage: 'major',
    major_outage: 'critical',
    maintenance: 'maintenance',
  },
  incident: {
    investigating: 'investigating',
    identified: 'identified',
    monitoring: 'monitoring',
    resolved: 'resolved',
  },
  maintenanceInProgress: 'in_progress',
  sla: { met: 'met', at_risk: 'at_risk', breached: 'breached' },
  tier: {
    excellent: 'excellent',
    good: 'good',
    fair: 'fair',
    poor: 'poor',
    critical: 'critical',
  },
};

export const ALTERNATE: Vocabulary = {
  wording: 'alternate',
  status: {
    operational: 'operational',
    degraded: 'performance_issues',
    partial_outage: 'partially_unavailable',
    major_outage: 'unavailable',
    maintenance: 'scheduled_work',
  },
  reachability: { reachable: 'responding', degraded: 'slow', unreachable: 'not_responding' },
  scope: { none: 'none', partial: 'some_components', full: 'all_components' },
  verification: { fresh: 'verified', stale: 'outdated', unverified: 'unconfirmed' },
  statusB: {
    operational: 'up',
    degraded: 'impaired',
    partial_outage: 'impaired',
    major_outage: 'offline',
    maintenance: 'scheduled_work',
  },
  indicatorB: {
    operational: 'none',
    degraded: 'low',
    partial_outage: 'high',
    major_outage: 'severe',
    maintenance: 'scheduled_work',
  },
  incident: {
    investigating: 'investigating',
    identified: 'cause_found',
    monitoring: 'fix_deployed',
    resolved: 'closed',
  },
  maintenanceInProgress: 'ongoing',
  sla: { met: 'within_target', at_risk: 'at_risk', breached: 'missed' },
  tier: {
    excellent: 'platinum',
    good: 'gold',
    fair: 'silver',
    poor: 'bronze',
    critical: 'iron',
  },
};

const VOCABULARIES: Readonly<Record<Wording, Vocabulary>> = {
  standard: STANDARD,
  alternate: ALTERNATE,
};

export function vocabularyOf(w: Wording): Vocabulary {
  return VOCABULARIES[w];
}
