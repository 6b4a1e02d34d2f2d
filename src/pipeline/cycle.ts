import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import { singleFlight } from '../single-flight.js';
import type { Keys, RedisClient } from '../redis.js';
import { SnapshotStore, type Snapshot } from '../snapshot/store.js';
import {
  diffIncidents,
  planIncidents,
  vanishedFeeds,
  unseenIncidents,
  diffScores,
  diffSla,
  diffStatus,
  diffUpstream,
  type IncidentsEntry,
  type PollOutcome,
  type ScoreEntry,
  type SlaEntry,
  type StatusEntry,
  type Transition,
  type UpstreamEntry,
} from '../diff/index.js';
import { UpstreamError, type UpstreamClient } from '../upstream/index.js';
import type {
  Incident,
  IncidentList,
  RateLimitInfo,
  ScoreReport,
  SlaReport,
  StatusSnapshot,
} from '../upstream/model.js';
import type { WordCounts } from '../upstream/vocabulary.js';
import { CatalogStore } from './catalog.js';
import type { Handoff } from './handoff.js';

export const POLL_KINDS = ['status', 'incidents', 'sla', 'scores'] as const;
export type PollKind = (typeof POLL_KINDS)[number];
export const PREMIUM_KINDS: ReadonlySet<PollKind> = new Set(['sla', 'scores']);

/** Data older than this (meta.age_seconds) is stale: upstream.degraded (Variant B refreshes every 5 min). */
export const STALE_AFTER_SECONDS = 900;
/** Consecutive failed polls of one endpoint before upstream.degraded. */
export const FAILURE_THRESHOLD = 3;
/** The catalog is refreshed when older than this (it maps Variant B incident names to feedIds). */
export const CATALOG_MAX_AGE_MS = 60 * 60 * 1000;

export interface PipelineRules {
  statusConfirmations: number;
  scoreDrop: number;
  /** sla.forecast horizon (ms); absent = no forecasts. */
  slaForecast?: number;
  /** score.trend: a fall of `points` sustained over `window` (ms); absent = no trends. */
  scoreTrend?: { points: number; window: number };
  /**
   * Confirming reads (`GET /incidents/{feedId}`) one incidents cycle may make for Variant A
   * incidents that vanished from the bulk list (budgeted by the request plan); default 5.
   */
  confirmationsPerCycle?: number;
}

const DEFAULT_CONFIRMATIONS = 5;

/** How many transitions of each kind a cycle found. */
function countKinds(transitions: readonly Transition[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of transitions) out[t.kind] = (out[t.kind] ?? 0) + 1;
  return out;
}

/** The row named its service (Variant A): the incident is used as it is, not copied. */
function hasFeedId(incident: Incident): incident is Incident & { feedId: string } {
  return incident.feedId !== null;
}

/** A per-round pseudo-random order, so a backlog of confirmations is worked through fairly. */
function rotationOrder(feedId: string, round: string): string {
  return createHash('sha1').update(round).update('\u0000').update(feedId).digest('hex');
}

export interface PipelineDeps {
  client: UpstreamClient;
  redis: RedisClient;
  keys: Keys;
  handoff: Handoff;
  log: Logger;
  rules: PipelineRules;
  /** Sees the words of every status, incidents and SLA response (vocabulary drift). */
  vocabulary?: { record(words: WordCounts | undefined): void };
  /**
   * Called after a cycle's snapshot commit succeeded (the service history, src/history); a
   * failure is logged and never fails the cycle.
   */
  committed?: (cycle: CommittedCycle) => Promise<void>;
  now?: () => number;
}

export interface CycleReport {
  kind: PollKind;
  /** `ok`: polled, diffed, committed. `failed`: the poll failed (nothing changed). `conflict`: another writer committed first. */
  outcome: 'ok' | 'failed' | 'conflict';
  transitions: Transition[];
  /** Rows skipped: malformed upstream rows plus incidents whose service could not be identified. */
  skipped: number;
  rateLimit: RateLimitInfo | null;
  error: UpstreamError | null;
  durationMs: number;
}

/** A cycle whose snapshot commit succeeded: what `PipelineDeps.committed` sees. */
export interface CommittedCycle {
  kind: PollKind;
  transitions: readonly Transition[];
  /** The entries that changed, by feedId (`StatusEntry`, `IncidentsEntry`, `SlaEntry`, `ScoreEntry`). */
  changed: ReadonlyMap<string, unknown>;
  /** The normalized response. */
  data: StatusSnapshot | IncidentList | SlaReport | ScoreReport;
  /**
   * Incidents cycles: the open incidents this cycle did not see, ids by service: stored open,
   * but neither listed open nor in a confirming read (waiting for one, hidden by the upstream,
   * or resolved by this cycle). Nothing seen says they are still open (`unseenIncidents`).
   */
  unseen?: ReadonlyMap<string, ReadonlySet<string>>;
  rateLimit: RateLimitInfo;
  now: number;
}

/** What one kind's poll produced, before the hand-off and the commit. */
interface Fetched<E> {
  transitions: Transition[];
  data: CommittedCycle['data'];
  changed: Map<string, E>;
  skipped: number;
  rateLimit: RateLimitInfo;
  ageSeconds: number | null;
  /** The response variant, for the kinds that have one. */
  variant: string | undefined;
  /** Incidents: see `CommittedCycle.unseen`. */
  unseen?: ReadonlyMap<string, ReadonlySet<string>>;
}

/** One poll kind: its snapshot store and how it polls and diffs against the previous state. */
interface PollSpec<E> {
  store: SnapshotStore<E>;
  fetch(previous: Snapshot<E>, now: number): Promise<Fetched<E>>;
}

/** True when the list itself tells the variants apart: a row, or Variant A's meta. */
function tellsVariant(list: IncidentList): boolean {
  return list.incidents.length > 0 || list.sourceKind !== null || list.verificationState !== null;
}

/**
 * The variant of an incidents list that does not tell it (see `tellsVariant`): Variant A
 * returns an empty list when verified evidence is unavailable, and its meta is not promised, so
 * an empty list without that meta may be either. Read as Variant B after Variant A it would be a
 * complete list of no incidents: every open incident falsely resolved, then announced again. It
 * is taken to be the variant of the status poll's last committed rows (Variant A status rows
 * always carry its fields), else the incidents' own last one, else as read. The guess is not
 * stored as the incidents' variant: the endpoints may answer in different variants.
 */
function variantOf(list: IncidentList, statusVariant: string, previous: string): IncidentList {
  for (const known of [statusVariant, previous])
    if (known === 'A' || known === 'B')
      return known === list.variant ? list : { ...list, variant: known };
  return list;
}

/**
 * One poll → snapshot → diff → hand-off cycle per kind. Order matters: transitions are enqueued
 * (idempotently, by id) *before* the snapshot commit, so a crash in between re-derives the same
 * ids next cycle: nothing lost, nothing doubled. A failed poll changes nothing but the
 * endpoint's health. A 429 is rethrown for the scheduler to pause on. Adding a poll kind is one
 * entry in `kinds` (and one in POLL_KINDS).
 */
export class Pipeline {
  readonly catalog: CatalogStore;
  private readonly kinds: { readonly [K in PollKind]: () => Promise<CycleReport> };
  private readonly now: () => number;
  private readonly statusStore: SnapshotStore<StatusEntry>;

  constructor(private readonly deps: PipelineDeps) {
    this.now = deps.now ?? Date.now;
    this.catalog = new CatalogStore(deps.redis, deps.keys);
    // SLA and scores entries carry up to 48 history samples each and are read once per
    // (seldom) poll: their in-process copy is kept as stored text (SnapshotStoreOptions).
    const store = <E>(kind: PollKind): SnapshotStore<E> =>
      new SnapshotStore<E>(deps.redis, deps.keys, kind, { compact: PREMIUM_KINDS.has(kind) });
    this.statusStore = store('status');
    const status: PollSpec<StatusEntry> = {
      store: this.statusStore,
      fetch: (prev, now) => this.fetchStatus(prev, now),
    };
    const incidents: PollSpec<IncidentsEntry> = {
      store: store('incidents'),
      fetch: (prev, now) => this.fetchIncidents(prev, now),
    };
    const sla: PollSpec<SlaEntry> = {
      store: store('sla'),
      fetch: (prev, now) => this.fetchSla(prev, now),
    };
    const scores: PollSpec<ScoreEntry> = {
      store: store('scores'),
      fetch: (prev, now) => this.fetchScores(prev, now),
    };
    this.kinds = {
      status: () => this.cycle('status', status),
      incidents: () => this.cycle('incidents', incidents),
      sla: () => this.cycle('sla', sla),
      scores: () => this.cycle('scores', scores),
    };
  }

  /** One catalog fetch at a time in this process: a caller arriving meanwhile joins it. */
  private readonly fetchCatalogOnce = singleFlight(() => this.fetchCatalog());

  /**
   * Fetches the catalog when it is missing or older than `maxAgeMs`. Returns true when it fetched
   * (or joined the fetch under way: at start the catalog schedule and the first cycle both found
   * it missing and each fetched every service, one more request of the rate budget).
   */
  async refreshCatalog(maxAgeMs = CATALOG_MAX_AGE_MS): Promise<boolean> {
    const updatedAt = await this.catalog.updatedAt();
    if (updatedAt !== null && this.now() - updatedAt < maxAgeMs) return false;
    await this.fetchCatalogOnce();
    return true;
  }

  private async fetchCatalog(): Promise<void> {
    const result = await this.deps.client.services();
    await this.catalog.replace(result.data.services, this.now());
    this.deps.log.info(
      {
        event: 'catalog:refreshed',
        services: result.data.services.length,
        skipped: result.skipped,
      },
      'catalog refreshed',
    );
  }

  runCycle(kind: PollKind): Promise<CycleReport> {
    return this.kinds[kind]();
  }

  /** poll → diff → hand-off → commit for one kind; a failed poll only updates the endpoint's health. */
  private async cycle<E>(kind: PollKind, spec: PollSpec<E>): Promise<CycleReport> {
    const started = performance.now();
    const now = this.now();
    const snapshot = await spec.store.load();
    let fetched: Fetched<E>;
    try {
      fetched = await spec.fetch(snapshot, now);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      if (err.code === 'upstream_rate_limited') throw err;
      return this.failed(kind, spec, snapshot, err, now, started);
    }
    const health = this.health(
      kind,
      snapshot.upstream,
      { ok: true, ageSeconds: fetched.ageSeconds },
      now,
    );
    const transitions =
      health.transition === null
        ? fetched.transitions
        : [...fetched.transitions, health.transition];
    await this.enrich(transitions);
    const jobId = await this.deps.handoff.enqueue(transitions);
    const commit = await spec.store.commit({
      expectedVersion: snapshot.version,
      changed: fetched.changed,
      upstream: health.next,
      baselined: true,
      variant: fetched.variant,
    });
    if (!commit.ok) {
      this.deps.log.info(
        { event: 'poll:conflict', kind },
        `another writer committed ${kind} first`,
      );
    }
    let waitedMs = 0;
    if (commit.ok && this.deps.committed !== undefined) {
      const { changed, data, rateLimit, unseen } = fetched;
      // After this thread's router (if it routes) has the cycle's deliveries out: the history
      // write is not what the first notification should wait for.
      if (jobId !== null) {
        const waitFrom = performance.now();
        await this.deps.handoff.untilRoutedHere(jobId);
        // Not the cycle's own work (a cycle another replica routes waits the whole 500 ms).
        waitedMs = performance.now() - waitFrom;
      }
      await this.deps
        .committed({
          kind,
          transitions,
          changed,
          data,
          rateLimit,
          now,
          ...(unseen === undefined ? {} : { unseen }),
        })
        .catch((err: unknown) => {
          this.deps.log.warn(
            { event: 'history:failed', kind, err: toError(err).message },
            'could not record the service history',
          );
        });
    }
    const durationMs = performance.now() - started - waitedMs;
    // One line per cycle; a cycle that found something says what at info (a storm of 5,000
    // openings is one line here, and each transition's own line is debug: its deliveries are
    // logged one by one anyway, with the transition id).
    const found = countKinds(transitions);
    this.deps.log[transitions.length === 0 ? 'debug' : 'info'](
      {
        event: 'poll:done',
        kind,
        transitions: transitions.length,
        ...(transitions.length === 0 ? {} : { found }),
        changed: fetched.changed.size,
        skipped: fetched.skipped,
        durationMs: Math.round(durationMs),
      },
      transitions.length === 0
        ? `poll of ${kind} done`
        : `poll of ${kind} done: ${Object.entries(found)
            .map(([k, n]) => `${String(n)} ${k}`)
            .join(', ')}`,
    );
    if (this.deps.log.isLevelEnabled('debug')) {
      for (const t of transitions) {
        this.deps.log.debug(
          { event: 'transition:detected', kind: t.kind, feedId: t.feedId, transitionId: t.id },
          `${t.kind} ${t.feedId}`,
        );
      }
    }
    return {
      kind,
      outcome: commit.ok ? 'ok' : 'conflict',
      transitions,
      skipped: fetched.skipped,
      rateLimit: fetched.rateLimit,
      error: null,
      durationMs,
    };
  }

  /** A failed poll: the endpoint's health moves (maybe upstream.degraded), nothing else. */
  private async failed<E>(
    kind: PollKind,
    spec: PollSpec<E>,
    snapshot: Snapshot<E>,
    err: UpstreamError,
    now: number,
    started: number,
  ): Promise<CycleReport> {
    const outcome: PollOutcome = {
      ok: false,
      code: err.code,
      httpStatus: err.status,
      auth: err.code === 'upstream_unauthorized' || err.code === 'upstream_forbidden',
    };
    const health = this.health(kind, snapshot.upstream, outcome, now);
    const transitions = health.transition === null ? [] : [health.transition];
    await this.deps.handoff.enqueue(transitions);
    const commit = await spec.store.commit({
      expectedVersion: snapshot.version,
      changed: new Map(),
      upstream: health.next,
      baselined: false,
    });
    this.deps.log.warn(
      {
        event: 'poll:failed',
        kind,
        code: err.code,
        httpStatus: err.status,
        err: { message: err.message },
      },
      `poll of ${kind} failed: ${err.code}`,
    );
    return {
      kind,
      outcome: commit.ok ? 'failed' : 'conflict',
      transitions,
      skipped: 0,
      rateLimit: err.rateLimit,
      error: err,
      durationMs: performance.now() - started,
    };
  }

  private health(
    kind: PollKind,
    previous: UpstreamEntry | undefined,
    outcome: PollOutcome,
    now: number,
  ) {
    return diffUpstream({
      endpoint: kind,
      previous,
      outcome,
      failureThreshold: FAILURE_THRESHOLD,
      staleAfterSeconds: STALE_AFTER_SECONDS,
      now,
    });
  }

  private async fetchStatus(
    prev: Snapshot<StatusEntry>,
    now: number,
  ): Promise<Fetched<StatusEntry>> {
    const res = await this.deps.client.status();
    this.deps.vocabulary?.record(res.words);
    const diff = diffStatus({
      previous: prev.entries,
      snapshot: res.data,
      confirmations: this.deps.rules.statusConfirmations,
      now,
      rebaseline: prev.corruptFeeds,
    });
    return {
      ...diff,
      skipped: res.skipped,
      rateLimit: res.rateLimit,
      ageSeconds: res.data.ageSeconds,
      variant: res.data.variant,
      data: res.data,
    };
  }

  private async fetchIncidents(
    prev: Snapshot<IncidentsEntry>,
    now: number,
  ): Promise<Fetched<IncidentsEntry>> {
    const res = await this.deps.client.incidents();
    this.deps.vocabulary?.record(res.words);
    const list = tellsVariant(res.data)
      ? res.data
      : variantOf(res.data, await this.statusStore.storedVariant(), prev.variant);
    const { identified, unidentified, sharedRows, shared } = await this.identify(list.incidents);
    // Absence resolves only in a complete list: a skipped (malformed) or unidentifiable row
    // may be the very incident that seems to have gone, so no absence counts this cycle. Nor
    // in the first list of another variant: what it leaves out (Variant A hides unverified
    // evidence, Variant B is a 5-minute cache) is a change of view, re-baselined silently.
    const switched = prev.variant !== '' && prev.variant !== list.variant;
    const complete = res.skipped === 0 && unidentified === sharedRows && !switched;
    // An incident of a shared name may be any of its services': none of them resolves by absence.
    let resolvable: (feedId: string, incidentId: string) => boolean = (feedId) =>
      complete && !shared.has(feedId);
    const listed = { ...list, incidents: identified };
    const plan = planIncidents({
      previous: prev.entries,
      list: listed,
      baselined: prev.baselined,
      rebaseline: prev.corruptFeeds,
      now,
    });
    let rateLimit = res.rateLimit;
    let shown: ReadonlyMap<string, ReadonlySet<string>> = new Map();
    if (list.variant === 'A') {
      // Variant A also omits incidents on stale or unverified evidence, and the status
      // poll's evidence is from another instant: absence resolves only what a confirming
      // read of that one service, made after this list, shows gone on verified evidence.
      const confirmed =
        complete && list.verificationState === 'verified'
          ? await this.confirmVanished(prev.entries, vanishedFeeds(plan), now)
          : { gone: new Map<string, ReadonlySet<string>>(), shown: new Map(), rateLimit: null };
      rateLimit = confirmed.rateLimit ?? rateLimit;
      resolvable = (feedId, incidentId) => confirmed.gone.get(feedId)?.has(incidentId) === true;
      shown = confirmed.shown;
    }
    const diff = diffIncidents({
      previous: prev.entries,
      list: listed,
      baselined: prev.baselined,
      announceNew: prev.variant === '' || prev.variant === list.variant,
      resolvable,
      rebaseline: prev.corruptFeeds,
      now,
      plan,
    });
    if (unidentified > 0) {
      this.deps.log.warn(
        {
          event: 'poll:unidentified',
          kind: 'incidents',
          count: unidentified,
          ...(sharedRows === 0 ? {} : { sharedName: sharedRows, services: [...shared] }),
        },
        sharedRows === 0
          ? 'incidents for services not in the catalog were skipped'
          : 'incidents for services not in the catalog, or named after a name several services share, were skipped',
      );
    }
    return {
      ...diff,
      skipped: res.skipped + unidentified,
      rateLimit,
      ageSeconds: null,
      // Only a variant the list showed is kept: a guess (`variantOf`) kept as the incidents'
      // own would make the next list that shows its variant look like a switch (its new
      // incidents then baselined silently, never announced) when the guess was wrong.
      variant: tellsVariant(res.data) ? list.variant : undefined,
      data: list,
      unseen: unseenIncidents(plan, diff.changed, shown),
    };
  }

  /**
   * Incidents with their feedId: Variant B names the service only, resolved through the catalog.
   * An incident named after a service the catalog lacks is unidentified; one named after a name
   * several services share is given to none, and those services are `shared`.
   */
  private async identify(incidents: readonly Incident[]): Promise<{
    identified: (Incident & { feedId: string })[];
    unidentified: number;
    /** Of those, the rows of a shared name, and the services that share it. */
    sharedRows: number;
    shared: Set<string>;
  }> {
    const unnamed = incidents.filter((i) => i.feedId === null).map((i) => i.serviceName);
    let byName = new Map<string, string | string[]>();
    if (unnamed.length > 0) {
      try {
        await this.refreshCatalog();
      } catch (err) {
        // A failing /services must not stop incident detection: use the stored catalog.
        this.deps.log.warn(
          { event: 'catalog:failed', err: toError(err).message },
          'catalog refresh failed; using the stored catalog',
        );
      }
      byName = await this.catalog.feedIdsByName([...new Set(unnamed)]);
    }
    const identified: (Incident & { feedId: string })[] = [];
    let unidentified = 0;
    let sharedRows = 0;
    const shared = new Set<string>();
    for (const incident of incidents) {
      if (hasFeedId(incident)) {
        identified.push(incident);
        continue;
      }
      const feedId = byName.get(incident.serviceName);
      if (feedId === undefined) unidentified += 1;
      else if (typeof feedId === 'string') identified.push({ ...incident, feedId });
      else {
        unidentified += 1;
        sharedRows += 1;
        for (const f of feedId) shared.add(f);
      }
    }
    return { identified, unidentified, sharedRows, shared };
  }

  private async fetchSla(prev: Snapshot<SlaEntry>, now: number): Promise<Fetched<SlaEntry>> {
    const res = await this.deps.client.sla();
    this.deps.vocabulary?.record(res.words);
    const forecastMs = this.deps.rules.slaForecast;
    const diff = diffSla({
      previous: prev.entries,
      report: res.data,
      ...(forecastMs === undefined ? {} : { forecastMs }),
      now,
      rebaseline: prev.corruptFeeds,
    });
    return {
      ...diff,
      skipped: res.skipped,
      rateLimit: res.rateLimit,
      ageSeconds: null,
      variant: undefined,
      data: res.data,
    };
  }

  private async fetchScores(prev: Snapshot<ScoreEntry>, now: number): Promise<Fetched<ScoreEntry>> {
    const res = await this.deps.client.scores();
    const { rules } = this.deps;
    const diff = diffScores({
      previous: prev.entries,
      report: res.data,
      threshold: rules.scoreDrop,
      ...(rules.scoreTrend === undefined
        ? {}
        : { trend: { points: rules.scoreTrend.points, windowMs: rules.scoreTrend.window } }),
      now,
      rebaseline: prev.corruptFeeds,
    });
    return {
      ...diff,
      skipped: res.skipped,
      rateLimit: res.rateLimit,
      ageSeconds: null,
      variant: undefined,
      data: res.data,
    };
  }

  /**
   * Confirming reads for Variant A incidents that vanished from a verified bulk list: up to
   * `confirmationsPerCycle` services (a different random share each cycle when more wait),
   * one `GET /incidents/{feedId}` each. A service's open incidents count as gone only when that
   * one response says its evidence is official and verified and does not list them: the
   * absence and the evidence come from the same response, made after the bulk list. Anything
   * else (an error, unverified evidence, a malformed row) confirms nothing; the next cycle asks
   * again. `waiting`: the services with a stored open incident the list left out
   * (`vanishedFeeds`). Returns the confirmed-gone incident ids per service and the last
   * rate-limit headers.
   */
  private async confirmVanished(
    previous: ReadonlyMap<string, IncidentsEntry>,
    waiting: readonly string[],
    now: number,
  ): Promise<{
    gone: Map<string, ReadonlySet<string>>;
    /** The open incidents each read listed, verified or not. */
    shown: Map<string, ReadonlySet<string>>;
    rateLimit: RateLimitInfo | null;
  }> {
    const gone = new Map<string, ReadonlySet<string>>();
    const shown = new Map<string, ReadonlySet<string>>();
    if (waiting.length === 0) return { gone, shown, rateLimit: null };
    const limit = Math.max(1, this.deps.rules.confirmationsPerCycle ?? DEFAULT_CONFIRMATIONS);
    const round = String(Math.floor(now / 1000));
    const chosen =
      waiting.length <= limit
        ? waiting
        : waiting
            .map((feedId) => ({ feedId, order: rotationOrder(feedId, round) }))
            .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0))
            .slice(0, limit)
            .map((c) => c.feedId);
    let rateLimit: RateLimitInfo | null = null;
    for (const feedId of chosen) {
      let res;
      try {
        res = await this.deps.client.serviceIncidents(feedId);
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err;
        rateLimit = err.rateLimit;
        this.deps.log.info(
          { event: 'incident:confirm_failed', feedId, code: err.code },
          `confirming read of ${feedId} failed: its incidents stay open`,
        );
        if (err.code === 'upstream_rate_limited') break;
        continue;
      }
      rateLimit = res.rateLimit;
      this.deps.vocabulary?.record(res.words);
      const l = res.data;
      // Only a read that says so itself: an empty list without Variant A's meta (which reads
      // as Variant B) is no evidence that the service's incidents ended.
      const verified =
        res.skipped === 0 && l.sourceKind === 'official' && l.verificationState === 'verified';
      const open = new Set(
        l.incidents
          .filter((i) => i.status !== 'resolved' && (i.feedId === null || i.feedId === feedId))
          .map((i) => i.id),
      );
      const ids = Object.keys(previous.get(feedId)?.open ?? {}).filter((id) => !open.has(id));
      this.deps.log.info(
        { event: 'incident:confirmed', feedId, verified, gone: verified ? ids.length : 0 },
        verified
          ? `confirming read of ${feedId}: ${String(ids.length)} incident(s) gone on verified evidence`
          : `confirming read of ${feedId}: evidence not verified, its incidents stay open`,
      );
      if (verified) gone.set(feedId, new Set(ids));
      shown.set(feedId, open);
    }
    return { gone, shown, rateLimit };
  }

  /** Fills missing names and links from the catalog (one HMGET, only when something changed). */
  private async enrich(transitions: Transition[]): Promise<void> {
    const missing = transitions.filter(
      (t) =>
        t.service.name === null ||
        t.service.canonicalUrl === null ||
        t.service.officialStatusUrl === null,
    );
    if (missing.length === 0) return;
    let refs;
    try {
      await this.refreshCatalog();
      refs = await this.catalog.refs([...new Set(missing.map((t) => t.feedId))]);
    } catch (err) {
      this.deps.log.warn(
        { event: 'catalog:failed', err: toError(err).message },
        'could not enrich transitions',
      );
      return;
    }
    for (const t of missing) {
      const ref = refs.get(t.feedId);
      if (ref === undefined) continue;
      t.service = {
        feedId: t.feedId,
        name: t.service.name ?? ref.name,
        canonicalUrl: t.service.canonicalUrl ?? ref.canonicalUrl,
        officialStatusUrl: t.service.officialStatusUrl ?? ref.officialStatusUrl,
      };
    }
  }
}
