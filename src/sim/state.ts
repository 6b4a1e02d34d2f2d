/**
 * Mutable simulation state behind the simulator's HTTP answers: per-service status, incidents,
 * SLA, score and evidence freshness, plus global switches (variant, wording, incident dataset
 * freshness). The state keeps the simulator's standard words; the wording only selects how the
 * views translate them.
 * Every mutation bumps `version`, which keys the serialized-response caches.
 *
 * Initial values are seeded per service from (seed, feedId), so they are deterministic and do
 * not depend on the catalog size. The well-known head of the catalog starts clean (operational,
 * fresh evidence, no incidents); generated services carry a realistic sprinkle of degraded
 * states, active incidents and stale or unverified evidence.
 */
import { WELL_KNOWN_FEED_IDS, type CatalogEntry } from './catalog.js';
import { SimulatorError } from './errors.js';
import { Rng, round } from './prng.js';
import { WORDINGS, isWording, type Wording } from './wording.js';

export const SIM_STATUSES = [
  'operational',
  'degraded',
  'partial_outage',
  'major_outage',
  'maintenance',
] as const;
export type SimStatus = (typeof SIM_STATUSES)[number];

export const EVIDENCE_STATES = ['fresh', 'stale', 'unverified'] as const;
export type Evidence = (typeof EVIDENCE_STATES)[number];

export const INCIDENT_STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];

export type Impact = 'minor' | 'major' | 'critical';
export type Variant = 'A' | 'B';
export type SlaStatus = 'met' | 'at_risk' | 'breached';

export const TIERS = ['excellent', 'good', 'fair', 'poor', 'critical'] as const;
export type Tier = (typeof TIERS)[number];

/** Evidence is re-collected for every service once per check cycle. */
export const CHECK_INTERVAL_MS = 60_000;

export interface SimIncidentUpdate {
  id: string;
  status: IncidentStatus;
  body: string;
  /** Unix seconds. */
  created: number;
}

export interface SimIncident {
  id: string;
  title: string;
  status: IncidentStatus;
  /** Unix seconds. */
  started: number;
  impact: Impact;
  updates: SimIncidentUpdate[];
  /** Unix seconds; null while active. */
  resolvedAt: number | null;
}

export interface ScoreComponents {
  uptime: number;
  incidents: number;
  resolution: number;
  sla: number;
}

export interface ServiceRuntime {
  readonly entry: CatalogEntry;
  /** The true condition of the service (what the provider would say). */
  status: SimStatus;
  /** Unix seconds of the last change of `status`. */
  lastChanged: number;
  evidence: Evidence;
  /** While stale: the last successful check (Unix seconds), frozen. */
  frozenCheck: number | null;
  /** While stale or unverified: the last verification (Unix seconds), frozen. */
  frozenVerifiedAt: number | null;
  /** While stale: the condition shown in Variant A (the last one observed before going stale). */
  frozenView: { status: SimStatus; lastChanged: number } | null;
  incidents: SimIncident[];
  slaTarget: number;
  uptime30d: number;
  /** Seeded 90-day uptime base for rankings. */
  uptime90Base: number;
  score: number;
  components: ScoreComponents;
  /** Seconds before the check-cycle boundary at which this service is checked. */
  readonly checkOffset: number;
  readonly responseTimeMs: number;
  /** Seeded incident count of the last 30 days, plus incidents opened since start. */
  incidents30d: number;
}

export interface SlaView {
  slaTarget: number;
  uptime30d: number;
  margin: number;
  status: SlaStatus;
}

export function slaStatusOf(margin: number): SlaStatus {
  if (margin < 0) return 'breached';
  if (margin < 0.1) return 'at_risk';
  return 'met';
}

export function slaView(slaTarget: number, uptime30d: number): SlaView {
  const margin = round(uptime30d - slaTarget, 3);
  return { slaTarget, uptime30d, margin, status: slaStatusOf(margin) };
}

export function gradeOf(score: number): string {
  if (score >= 95) return 'A+';
  if (score >= 90) return 'A';
  if (score >= 80) return 'B';
  if (score >= 70) return 'C';
  if (score >= 60) return 'D';
  return 'F';
}

export function tierOf(score: number): Tier {
  if (score >= 90) return 'excellent';
  if (score >= 80) return 'good';
  if (score >= 70) return 'fair';
  if (score >= 50) return 'poor';
  return 'critical';
}

/** uptime 40%, incidents 25%, resolution time 20%, SLA compliance 15%. */
export function compositeScore(c: ScoreComponents): number {
  return round(0.4 * c.uptime + 0.25 * c.incidents + 0.2 * c.resolution + 0.15 * c.sla, 1);
}

export const SLA_TARGETS = [99, 99.5, 99.5, 99.8] as const;

const INCIDENT_TITLES = [
  'Elevated API error rates',
  'Increased latency for API requests',
  'Delayed webhook deliveries',
  'Dashboard unavailable for some users',
  'Degraded performance in eu-west',
  'Login failures for a subset of accounts',
  'Intermittent timeouts in us-east',
  'Delayed processing of background jobs',
] as const;

function impactOf(status: SimStatus): Impact {
  switch (status) {
    case 'major_outage':
      return 'critical';
    case 'partial_outage':
      return 'major';
    case 'operational':
    case 'degraded':
    case 'maintenance':
      return 'minor';
  }
}

function clampPct(v: number): number {
  return Math.min(100, Math.max(0, v));
}

function seedService(
  entry: CatalogEntry,
  seed: number,
  nowSec: number,
  wellKnown: boolean,
): ServiceRuntime {
  const rng = Rng.for(seed, 'state', entry.feedId);
  const slaTarget = rng.pick(SLA_TARGETS);
  const uptime30d = round(slaTarget + 0.1 + rng.float() * (100 - slaTarget - 0.1), 3);
  const components: ScoreComponents = {
    uptime: round(rng.range(70, 99), 1),
    incidents: round(rng.range(70, 99), 1),
    resolution: round(rng.range(70, 99), 1),
    sla: round(rng.range(70, 99), 1),
  };
  const svc: ServiceRuntime = {
    entry,
    status: 'operational',
    lastChanged: nowSec - rng.int(3600, 60 * 86400),
    evidence: 'fresh',
    frozenCheck: null,
    frozenVerifiedAt: null,
    frozenView: null,
    incidents: [],
    slaTarget,
    uptime30d,
    uptime90Base: round(Math.min(100, uptime30d - rng.range(-0.05, 0.15)), 3),
    score: compositeScore(components),
    components,
    checkOffset: rng.int(0, 59),
    responseTimeMs: rng.int(40, 900),
    incidents30d: rng.int(0, 6),
  };
  if (wellKnown) return svc;

  const s = rng.float();
  svc.status =
    s < 0.96
      ? 'operational'
      : s < 0.98
        ? 'degraded'
        : s < 0.99
          ? 'partial_outage'
          : s < 0.995
            ? 'major_outage'
            : 'maintenance';
  const e = rng.float();
  switch (entry.sourceKind) {
    case 'official':
      svc.evidence = e < 0.94 ? 'fresh' : e < 0.98 ? 'stale' : 'unverified';
      break;
    case 'reachability':
      svc.evidence = e < 0.95 ? 'fresh' : 'stale';
      break;
    case 'community':
      svc.evidence = e < 0.7 ? 'unverified' : e < 0.95 ? 'fresh' : 'stale';
      break;
  }
  if (svc.evidence === 'stale') {
    svc.frozenCheck = nowSec - rng.int(900, 7200);
    svc.frozenVerifiedAt = svc.frozenCheck;
    svc.frozenView = { status: svc.status, lastChanged: svc.lastChanged };
  } else if (svc.evidence === 'unverified') {
    svc.frozenVerifiedAt = nowSec - rng.int(86400, 30 * 86400);
  }
  const hasIncident =
    svc.status !== 'operational' && svc.status !== 'maintenance'
      ? rng.chance(0.7)
      : rng.chance(0.01);
  if (hasIncident) {
    const started = nowSec - rng.int(600, 6 * 3600);
    const steps = rng.int(1, 3);
    const statuses: IncidentStatus[] = ['investigating', 'identified', 'monitoring'];
    const updates: SimIncidentUpdate[] = [];
    const id = `inc-${entry.feedId}-s1`;
    for (let i = 0; i < steps; i++) {
      const status = statuses[i] ?? 'monitoring';
      updates.push({
        id: `${id}-u${i + 1}`,
        status,
        body:
          i === 0
            ? 'We are investigating reports of issues.'
            : `Update: the incident is ${status}.`,
        created: started + i * rng.int(300, 1800),
      });
    }
    svc.incidents.push({
      id,
      title: rng.pick(INCIDENT_TITLES),
      status: updates[updates.length - 1]?.status ?? 'investigating',
      started,
      impact: impactOf(svc.status),
      updates,
      resolvedAt: null,
    });
  }
  return svc;
}

export interface SimStateOptions {
  catalog: CatalogEntry[];
  seed: number;
  variant: Variant;
  /** Default 'standard'. */
  wording?: Wording;
  now: () => number;
}

export class SimState {
  readonly services: readonly ServiceRuntime[];
  readonly seed: number;
  readonly now: () => number;
  variant: Variant;
  wording: Wording;
  incidentsDatasetFresh = true;
  /** Bumped on every data mutation; keys the response caches. */
  version = 0;
  /** ms of the last data mutation (for Variant A meta.generated). */
  lastMutationMs: number;
  private readonly byId: Map<string, ServiceRuntime>;
  private readonly byName: Map<string, ServiceRuntime>;
  private incidentSeq = 0;

  constructor(o: SimStateOptions) {
    this.seed = o.seed;
    this.now = o.now;
    this.variant = o.variant;
    this.wording = o.wording ?? 'standard';
    const nowMs = o.now();
    this.lastMutationMs = nowMs;
    const nowSec = Math.floor(nowMs / 1000);
    const wellKnown = new Set(WELL_KNOWN_FEED_IDS);
    this.services = o.catalog.map((entry) =>
      seedService(entry, o.seed, nowSec, wellKnown.has(entry.feedId)),
    );
    this.byId = new Map(this.services.map((s) => [s.entry.feedId, s]));
    this.byName = new Map(this.services.map((s) => [s.entry.name, s]));
  }

  find(feedId: string): ServiceRuntime | undefined {
    return this.byId.get(feedId);
  }

  findByName(name: string): ServiceRuntime | undefined {
    return this.byName.get(name);
  }

  get(feedId: string): ServiceRuntime {
    const svc = this.byId.get(feedId);
    if (!svc) throw new SimulatorError('sim_unknown_feed', `unknown feedId: ${feedId}`);
    return svc;
  }

  private nowSec(): number {
    return Math.floor(this.now() / 1000);
  }

  private touch(): void {
    this.version++;
    this.lastMutationMs = this.now();
  }

  /** Unix seconds of the last evidence check of `svc` as of `nowMs` (frozen while stale). */
  lastCheckOf(svc: ServiceRuntime, nowMs: number): number {
    if (svc.frozenCheck !== null) return svc.frozenCheck;
    return Math.floor(nowMs / CHECK_INTERVAL_MS) * (CHECK_INTERVAL_MS / 1000) - svc.checkOffset;
  }

  /** Unix seconds of the last verification of `svc`. */
  verifiedAtOf(svc: ServiceRuntime, nowMs: number): number {
    return svc.frozenVerifiedAt ?? this.lastCheckOf(svc, nowMs);
  }

  /** Status and lastChanged as Variant A shows them (frozen while the evidence is stale). */
  observedOf(svc: ServiceRuntime): { status: SimStatus; lastChanged: number } {
    return svc.frozenView ?? { status: svc.status, lastChanged: svc.lastChanged };
  }

  activeIncidents(svc: ServiceRuntime): SimIncident[] {
    return svc.incidents.filter((i) => i.resolvedAt === null);
  }

  setVariant(v: Variant): void {
    if (!(['A', 'B'] as readonly string[]).includes(v)) {
      throw new SimulatorError('sim_invalid_argument', `variant must be A or B, got ${v}`);
    }
    this.variant = v;
    this.touch();
  }

  /** Switches the words of the HTTP output; bumps `version`, so no cached body survives it. */
  setWording(w: Wording): void {
    if (!isWording(w)) {
      throw new SimulatorError(
        'sim_invalid_argument',
        `wording must be ${WORDINGS.join(' or ')}, got ${String(w)}`,
      );
    }
    this.wording = w;
    this.touch();
  }

  setIncidentDatasetFresh(fresh: boolean): void {
    this.incidentsDatasetFresh = fresh;
    this.touch();
  }

  setStatus(feedId: string, status: SimStatus): void {
    if (!SIM_STATUSES.includes(status)) {
      throw new SimulatorError('sim_invalid_argument', `invalid status: ${status}`);
    }
    const svc = this.get(feedId);
    if (svc.status !== status) {
      svc.status = status;
      svc.lastChanged = this.nowSec();
    }
    this.touch();
  }

  setEvidence(feedId: string, evidence: Evidence): void {
    if (!EVIDENCE_STATES.includes(evidence)) {
      throw new SimulatorError('sim_invalid_argument', `invalid evidence: ${evidence}`);
    }
    const svc = this.get(feedId);
    const nowMs = this.now();
    if (evidence === 'fresh') {
      svc.frozenCheck = null;
      svc.frozenVerifiedAt = null;
      svc.frozenView = null;
    } else if (evidence === 'stale' && svc.evidence !== 'stale') {
      const last = this.lastCheckOf(svc, nowMs);
      svc.frozenVerifiedAt ??= last;
      svc.frozenCheck = last;
      svc.frozenView = { status: svc.status, lastChanged: svc.lastChanged };
    } else if (evidence === 'unverified' && svc.evidence !== 'unverified') {
      svc.frozenVerifiedAt ??= this.lastCheckOf(svc, nowMs);
      svc.frozenCheck = null;
      svc.frozenView = null;
    }
    svc.evidence = evidence;
    this.touch();
  }

  setSla(
    feedId: string,
    o: { uptime30d?: number | undefined; slaTarget?: number | undefined },
  ): void {
    const svc = this.get(feedId);
    for (const [field, v] of [
      ['uptime30d', o.uptime30d],
      ['slaTarget', o.slaTarget],
    ] as const) {
      if (v !== undefined && !(Number.isFinite(v) && v >= 0 && v <= 100)) {
        throw new SimulatorError('sim_invalid_argument', `${field} must be 0..100, got ${v}`);
      }
    }
    if (o.uptime30d !== undefined) svc.uptime30d = round(o.uptime30d, 3);
    if (o.slaTarget !== undefined) svc.slaTarget = round(o.slaTarget, 3);
    this.touch();
  }

  setScore(feedId: string, score: number): void {
    if (!(Number.isFinite(score) && score >= 0 && score <= 100)) {
      throw new SimulatorError('sim_invalid_argument', `score must be 0..100, got ${score}`);
    }
    const svc = this.get(feedId);
    const target = round(score, 1);
    const delta = target - svc.score;
    const c = svc.components;
    svc.components = {
      uptime: round(clampPct(c.uptime + delta), 1),
      incidents: round(clampPct(c.incidents + delta), 1),
      resolution: round(clampPct(c.resolution + delta), 1),
      sla: round(clampPct(c.sla + delta), 1),
    };
    svc.score = target;
    this.touch();
  }

  openIncident(
    feedId: string,
    o: {
      id?: string | undefined;
      title: string;
      status?: IncidentStatus | undefined;
      body?: string | undefined;
    },
  ): string {
    const svc = this.get(feedId);
    const status = o.status ?? 'investigating';
    if (!INCIDENT_STATUSES.includes(status) || status === 'resolved') {
      throw new SimulatorError(
        'sim_invalid_argument',
        `an incident opens as investigating, identified or monitoring, not ${status}`,
      );
    }
    if (o.title.length === 0) {
      throw new SimulatorError('sim_invalid_argument', 'incident title must not be empty');
    }
    let id = o.id;
    if (id === undefined) {
      do {
        this.incidentSeq++;
        id = `inc-${feedId}-${this.incidentSeq}`;
      } while (svc.incidents.some((i) => i.id === id));
    } else if (svc.incidents.some((i) => i.id === id)) {
      throw new SimulatorError(
        'sim_duplicate_incident',
        `incident ${id} already exists on ${feedId}`,
      );
    }
    const nowSec = this.nowSec();
    svc.incidents.push({
      id,
      title: o.title,
      status,
      started: nowSec,
      impact: impactOf(svc.status),
      updates: [{ id: `${id}-u1`, status, body: o.body ?? o.title, created: nowSec }],
      resolvedAt: null,
    });
    svc.incidents30d++;
    this.touch();
    return id;
  }

  private incident(feedId: string, incidentId: string): SimIncident {
    const inc = this.get(feedId).incidents.find((i) => i.id === incidentId);
    if (!inc) {
      throw new SimulatorError(
        'sim_unknown_incident',
        `unknown incident ${incidentId} on ${feedId}`,
      );
    }
    return inc;
  }

  /** Appends an update; status `resolved` resolves, any other status on a resolved incident reopens it. */
  updateIncident(
    feedId: string,
    incidentId: string,
    o: { status?: IncidentStatus | undefined; body: string },
  ): void {
    const inc = this.incident(feedId, incidentId);
    const status = o.status ?? inc.status;
    if (!INCIDENT_STATUSES.includes(status)) {
      throw new SimulatorError('sim_invalid_argument', `invalid incident status: ${status}`);
    }
    const nowSec = this.nowSec();
    inc.updates.push({
      id: `${inc.id}-u${inc.updates.length + 1}`,
      status,
      body: o.body,
      created: nowSec,
    });
    inc.status = status;
    inc.resolvedAt = status === 'resolved' ? (inc.resolvedAt ?? nowSec) : null;
    this.touch();
  }

  resolveIncident(feedId: string, incidentId: string, body?: string): void {
    this.updateIncident(feedId, incidentId, {
      status: 'resolved',
      body: body ?? 'This incident has been resolved.',
    });
  }
}
