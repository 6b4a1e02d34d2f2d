/**
 * What the console's pages show, loaded from Redis: the snapshot entries (current state), the
 * service history (src/history), the routed log and routed marks (src/noise), the
 * delivery ledger and the dead letters (src/delivery), the silences. Every loader takes the
 * viewer's subscriptions: a team only ever sees what its own subscriptions watch and got.
 * The results are plain JSON-able objects: the HTML pages render them, `?format=json` returns them.
 */
import type { SubscriptionConfig } from '../config/schema.js';
import type { EventKind } from '../config/events.js';
import type { Keys, RedisClient } from '../redis.js';
import type { IncidentsEntry, SlaEntry, StatusEntry } from '../diff/state.js';
import type { Transition } from '../diff/transition.js';
import type { HistoryStore, LatestSla } from '../history/store.js';
import { DAY_MS } from '../history/series.js';
import type { CatalogStore } from '../pipeline/catalog.js';
import type { PollKind } from '../pipeline/cycle.js';
import type { CategoryStore } from '../routing/categories.js';
import { deliveryId } from '../routing/match.js';
import type { DeliveryQueue, DeadLetter, DeadLetterRetry } from '../delivery/queue.js';
import type { NoiseStore, RoutedLogItem } from '../noise/store.js';
import type { AckVia } from '../noise/acks.js';
import { lifecycleKey } from '../noise/policy.js';
import { silencedBy } from '../silences/match.js';
import type { Silence } from '../silences/model.js';
import type { SilenceStore } from '../silences/store.js';
export { visibleSilence } from '../silences/visibility.js';
import { SnapshotStore } from '../snapshot/store.js';
import { describe } from '../notify/text.js';
import type { Viewer } from './auth.js';

export interface ConsoleSources {
  redis: RedisClient;
  keys: Keys;
  history: HistoryStore;
  catalog: CatalogStore;
  categories: CategoryStore;
  /** The routed log and the routed marks. */
  noise: NoiseStore;
  deliveries: DeliveryQueue;
  /** Retries a dead letter (not an opening whose lifecycle closed since: `Stages`). */
  retryDeadLetter(id: string): Promise<DeadLetterRetry>;
  silences: SilenceStore;
  /** The live subscriptions the viewer may see (admins: all of them). */
  subscriptionsFor(viewer: Viewer): Promise<readonly SubscriptionConfig[]>;
  /** The poll kinds this installation runs. */
  pollKinds(): readonly PollKind[];
  now(): number;
}

export interface IncidentView {
  id: string;
  title: string;
  status: string;
  /** Unix ms. */
  started: number;
}

export interface ServiceRow {
  feedId: string;
  name: string;
  status: string | null;
  openIncidents: IncidentView[];
  sla: { status: string; margin: number | null; target: number | null } | null;
  score: { score: number; grade: string | null } | null;
  subscriptions: string[];
  /** Higher is worse (the sort key). */
  trouble: number;
  /** Score samples of the last 30 days `[ms, score]`. */
  spark: [number, number][];
}

export interface UpstreamView {
  kind: PollKind;
  lastOk: number | null;
  health: 'ok' | 'degraded' | 'unknown';
  reason: string | null;
  failures: number;
  limit: number | null;
  remaining: number | null;
}

export interface Overview {
  subscriptions: string[];
  subscription: string | null;
  total: number;
  shown: number;
  services: ServiceRow[];
  upstream: UpstreamView[];
  generatedAt: number;
}

export type Outcome = 'sent' | 'sending' | 'retrying' | 'dead' | 'not_sent' | 'routing';

export interface DeliveryView {
  id: string;
  transitionId: string;
  subscription: string;
  channel: string;
  outcome: Outcome;
  reason: string | null;
  attempts: number | null;
}

export interface TransitionView {
  id: string;
  kind: EventKind;
  feedId: string;
  service: string;
  text: string;
  at: number;
  routedAt: number | null;
  deliveries: DeliveryView[];
}

export interface TimelineStep {
  at: number;
  kind: EventKind;
  status: string | null;
  update: string | null;
}

export interface IncidentTimeline {
  id: string;
  title: string;
  status: string;
  open: boolean;
  openedAt: number;
  resolvedAt: number | null;
  /** Open for so long (until now while open). */
  durationMs: number;
  steps: TimelineStep[];
  /**
   * While open: per subscription of the viewer's watching the service and told of it, the ack in
   * force (null: not acknowledged, so the page offers Acknowledge). Empty when resolved.
   */
  acks: EpisodeAck[];
}

/** An open episode of one subscription, as the service page shows its acknowledgement. */
export interface EpisodeAck {
  subscription: string;
  /** The episode, as `POST /acks` (and the API) names it. */
  service: string;
  subject: string;
  ack: { by: string; name: string | null; via: AckVia; at: number } | null;
}

export interface ServicePage {
  feedId: string;
  name: string;
  officialStatusUrl: string | null;
  canonicalUrl: string | null;
  status: string | null;
  sla: ServiceRow['sla'];
  score: ServiceRow['score'];
  subscriptions: string[];
  incidents: IncidentTimeline[];
  statusChanges: { at: number; status: string }[];
  statusBefore: string | null;
  slaSamples: [number, number][];
  scoreSamples: [number, number][];
  transitions: TransitionView[];
  from: number;
  to: number;
  generatedAt: number;
}

const STATUS_TROUBLE: Record<string, number> = {
  major_outage: 50,
  partial_outage: 40,
  degraded: 25,
  maintenance: 10,
  unknown: 5,
  operational: 0,
};

/** Higher is worse: outages, then breached SLAs and open incidents, then warnings. */
export function troubleOf(row: Pick<ServiceRow, 'status' | 'openIncidents' | 'sla'>): number {
  let t = STATUS_TROUBLE[row.status ?? ''] ?? 0;
  if (row.openIncidents.length > 0) t += 20 + Math.min(10, row.openIncidents.length - 1);
  if (row.sla?.status === 'breached') t += 30;
  else if (row.sla?.status === 'at_risk') t += 15;
  return t;
}

/**
 * The SLA as the last poll saw it: the class from its margin (below 0 is breached) and word
 * (`at_risk`), as the diff classes it; the stored snapshot class when no sample was recorded.
 */
function slaView(entry: SlaEntry | undefined, latest: LatestSla | undefined): ServiceRow['sla'] {
  if (latest !== undefined) {
    const status = latest.margin < 0 ? 'breached' : latest.status === 'at_risk' ? 'at_risk' : 'met';
    return { status, margin: latest.margin, target: latest.target };
  }
  return entry === undefined ? null : { status: entry.status, margin: null, target: null };
}

/** feedId → the names of the subscriptions (of `subs`) that watch it. */
export async function watchedFeeds(
  src: Pick<ConsoleSources, 'catalog' | 'categories'>,
  subs: readonly SubscriptionConfig[],
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const add = (feedId: string, sub: string): void => {
    const list = out.get(feedId);
    if (list === undefined) out.set(feedId, [sub]);
    else if (!list.includes(sub)) list.push(sub);
  };
  let all: string[] | null = null;
  const slugs = [...new Set(subs.flatMap((s) => s.categories))];
  if (slugs.length > 0) await src.categories.load(slugs);
  for (const s of subs) {
    if (s.services.includes('*')) {
      all ??= await src.catalog.feedIds();
      for (const feedId of all) add(feedId, s.name);
    }
    for (const feedId of s.services) if (feedId !== '*') add(feedId, s.name);
    for (const slug of s.categories)
      for (const feedId of src.categories.members(slug)) add(feedId, s.name);
  }
  return out;
}

async function names(
  src: ConsoleSources,
  feedIds: readonly string[],
): Promise<Map<string, string>> {
  const refs = await src.catalog.refs(feedIds);
  return new Map(feedIds.map((f) => [f, refs.get(f)?.name ?? f]));
}

function openIncidents(entry: IncidentsEntry | undefined): IncidentView[] {
  return Object.entries(entry?.open ?? {})
    .map(([id, i]) => ({ id, title: i.title, status: i.status, started: i.started * 1000 }))
    .sort((a, b) => b.started - a.started);
}

async function upstreamViews(src: ConsoleSources): Promise<UpstreamView[]> {
  const polls = await src.history.upstream();
  const out: UpstreamView[] = [];
  for (const kind of src.pollKinds()) {
    const entry = await new SnapshotStore(src.redis, src.keys, kind).upstream();
    const poll = polls.get(kind);
    out.push({
      kind,
      lastOk: poll?.lastOk ?? null,
      health: entry?.health ?? 'unknown',
      reason: entry?.reason ?? null,
      failures: entry?.failures ?? 0,
      limit: poll?.limit ?? null,
      remaining: poll?.remaining ?? null,
    });
  }
  return out;
}

export async function loadOverview(
  src: ConsoleSources,
  viewer: Viewer,
  o: { subscription?: string | undefined; limit: number },
): Promise<Overview> {
  const now = src.now();
  const visible = await src.subscriptionsFor(viewer);
  const chosen =
    o.subscription === undefined ? visible : visible.filter((s) => s.name === o.subscription);
  const watched = await watchedFeeds(src, chosen);
  const feeds = [...watched.keys()];
  const [statuses, incidents, slas, latest, labels] = await Promise.all([
    new SnapshotStore<StatusEntry>(src.redis, src.keys, 'status').get(feeds),
    new SnapshotStore<IncidentsEntry>(src.redis, src.keys, 'incidents').get(feeds),
    new SnapshotStore<SlaEntry>(src.redis, src.keys, 'sla').get(feeds),
    src.history.latest(feeds),
    names(src, feeds),
  ]);
  const rows: ServiceRow[] = feeds.map((feedId) => {
    const slaEntry = slas.get(feedId);
    const slaLatest = latest.sla.get(feedId);
    const scoreLatest = latest.score.get(feedId);
    const row = {
      feedId,
      name: labels.get(feedId) ?? feedId,
      status: statuses.get(feedId)?.status ?? null,
      openIncidents: openIncidents(incidents.get(feedId)),
      sla: slaView(slaEntry, slaLatest),
      score:
        scoreLatest === undefined ? null : { score: scoreLatest.score, grade: scoreLatest.grade },
      subscriptions: watched.get(feedId) ?? [],
      trouble: 0,
      spark: [] as [number, number][],
    };
    row.trouble = troubleOf(row);
    return row;
  });
  rows.sort(
    (a, b) =>
      b.trouble - a.trouble ||
      (b.sla?.margin === undefined || a.sla?.margin === undefined
        ? 0
        : (a.sla.margin ?? 0) - (b.sla.margin ?? 0)) ||
      a.name.localeCompare(b.name),
  );
  const shown = rows.slice(0, o.limit);
  const sparks = await src.history.samplesOf(
    shown.map((r) => r.feedId),
    'score',
    now - 30 * DAY_MS,
  );
  for (const r of shown) r.spark = sparks.get(r.feedId) ?? [];
  return {
    subscriptions: visible.map((s) => s.name),
    subscription: o.subscription ?? null,
    total: rows.length,
    shown: shown.length,
    services: shown,
    upstream: await upstreamViews(src),
    generatedAt: now,
  };
}

// ---------------------------------------------------------------------------------------------
// Deliveries

/** The routed-log items of these transitions (looked up by their `observedAt`). */
async function routedLogItems(
  src: ConsoleSources,
  transitions: readonly Transition[],
): Promise<Map<string, RoutedLogItem>> {
  const out = new Map<string, RoutedLogItem>();
  if (transitions.length === 0) return out;
  const items = await src.noise.routedLogAt(transitions.map((t) => t.observedAt));
  for (const item of items) out.set(item.t.id, item);
  return out;
}

/** A string that may be absent at run time (BullMQ leaves some fields unset). */
function textOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The outcome of each delivery id: the ledger, then the retry job of a handed-off one. */
export async function outcomes(
  src: ConsoleSources,
  ids: readonly string[],
): Promise<Map<string, { outcome: Outcome; reason: string | null; attempts: number | null }>> {
  const out = new Map<
    string,
    { outcome: Outcome; reason: string | null; attempts: number | null }
  >();
  const entries = await src.deliveries.ledger.entries(ids);
  for (const [i, id] of ids.entries()) {
    const e = entries[i];
    switch (e?.state) {
      case 'sent':
        out.set(id, { outcome: 'sent', reason: null, attempts: null });
        break;
      case 'claimed':
        out.set(id, { outcome: 'sending', reason: null, attempts: null });
        break;
      case 'retry_job': {
        const job = await src.deliveries.retries.getJob(id);
        if (job === undefined) {
          out.set(id, { outcome: 'retrying', reason: null, attempts: null });
        } else if (await job.isFailed()) {
          out.set(id, {
            outcome: 'dead',
            reason: textOrNull(job.failedReason),
            // As the dead-letter list counts them: a job that only recorded the verdict adds none.
            attempts:
              job.data.priorAttempts +
              job.attemptsMade -
              (job.data.deadOnArrival === undefined ? 0 : 1),
          });
        } else {
          out.set(id, {
            outcome: 'retrying',
            reason: textOrNull(job.failedReason),
            attempts: job.data.priorAttempts + job.attemptsMade,
          });
        }
        break;
      }
      case 'unknown':
      case undefined:
        out.set(id, { outcome: 'not_sent', reason: null, attempts: null });
        break;
    }
  }
  return out;
}

/** Why a routed delivery has no ledger entry: a silence, a group, quiet hours or a drop. */
function notSentReason(
  sub: SubscriptionConfig | undefined,
  t: Transition,
  channel: string,
  at: number,
  silences: readonly Silence[],
): string {
  const silence = silencedBy(
    silences,
    { feedId: t.feedId, kind: t.kind, subject: t.subject, subscription: sub?.name ?? '', channel },
    at,
  );
  if (silence !== undefined)
    return `dropped: silenced by ${silence.id}${silence.comment === '' ? '' : ` (${silence.comment})`}`;
  if (sub?.group !== undefined) return 'grouped into a batch message';
  if (sub?.quietHours !== undefined)
    return 'held for quiet hours (sent in the catch-up) or grouped';
  return 'not sent on its own (a closing whose opening was not sent, or not delivered yet)';
}

/** Transitions with what was sent for each to which channel of the viewer's subscriptions. */
export async function transitionViews(
  src: ConsoleSources,
  transitions: readonly Transition[],
  visible: readonly SubscriptionConfig[],
): Promise<TransitionView[]> {
  const bySub = new Map(visible.map((s) => [s.name, s]));
  const [items, routed, silences] = await Promise.all([
    routedLogItems(src, transitions),
    src.noise.routedAt(transitions.map((t) => t.id)),
    src.silences.list({ includeExpired: true }),
  ]);
  const planned = transitions.map((t) => {
    const subs = (items.get(t.id)?.subscriptions ?? []).filter((s) => bySub.has(s));
    const routes = subs.flatMap((s) =>
      (bySub.get(s)?.channels ?? []).map((channel) => ({ subscription: s, channel })),
    );
    return { t, routes };
  });
  const ids = planned.flatMap(({ t, routes }) =>
    routes.map((r) => deliveryId(t.id, r.subscription, r.channel)),
  );
  const states = await outcomes(src, ids);
  return planned.map(({ t, routes }) => {
    const at = routed.get(t.id) ?? null;
    return {
      id: t.id,
      kind: t.kind,
      feedId: t.feedId,
      service: t.service.name ?? t.feedId,
      text: describe(t),
      at: t.observedAt,
      routedAt: at,
      deliveries: routes.map((r) => {
        const id = deliveryId(t.id, r.subscription, r.channel);
        const s = states.get(id) ?? { outcome: 'not_sent' as const, reason: null, attempts: null };
        const reason =
          s.outcome === 'not_sent'
            ? notSentReason(bySub.get(r.subscription), t, r.channel, at ?? t.observedAt, silences)
            : s.reason;
        return { id, transitionId: t.id, ...r, ...s, reason };
      }),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Service page

function timelines(
  events: readonly Transition[],
  open: readonly IncidentView[],
  now: number,
): IncidentTimeline[] {
  const byId = new Map<string, IncidentTimeline>();
  for (const t of [...events].reverse()) {
    if (t.incident === null || !t.kind.startsWith('incident.')) continue;
    const id = t.incident.id;
    let tl = byId.get(id);
    if (tl === undefined) {
      tl = {
        id,
        title: t.incident.title,
        status: t.incident.status,
        open: true,
        openedAt: t.kind === 'incident.opened' ? t.observedAt : t.incident.started * 1000,
        resolvedAt: null,
        durationMs: 0,
        steps: [],
        acks: [],
      };
      byId.set(id, tl);
    }
    tl.title = t.incident.title;
    tl.status = t.incident.status;
    tl.steps.push({
      at: t.observedAt,
      kind: t.kind,
      status: t.incident.status,
      update: t.incident.latestUpdate,
    });
    if (t.kind === 'incident.resolved') {
      tl.open = false;
      tl.resolvedAt = t.observedAt;
    } else {
      tl.open = true;
      tl.resolvedAt = null;
    }
  }
  for (const i of open) {
    const tl = byId.get(i.id);
    if (tl === undefined) {
      byId.set(i.id, {
        id: i.id,
        title: i.title,
        status: i.status,
        open: true,
        openedAt: i.started,
        resolvedAt: null,
        durationMs: 0,
        steps: [],
        acks: [],
      });
    } else {
      tl.open = true;
      tl.resolvedAt = null;
    }
  }
  const out = [...byId.values()];
  for (const tl of out) tl.durationMs = (tl.resolvedAt ?? now) - tl.openedAt;
  return out.sort((a, b) => Number(b.open) - Number(a.open) || b.openedAt - a.openedAt);
}

/**
 * Fills `acks` of the open incidents: for each of the viewer's subscriptions watching `feedId`
 * whose routes were told of the incident (only then can it be acknowledged), the ack in force.
 */
async function attachAcks(
  src: ConsoleSources,
  subs: readonly SubscriptionConfig[],
  feedId: string,
  incidents: IncidentTimeline[],
  now: number,
): Promise<void> {
  const open = incidents.filter((i) => i.open);
  const episodes = open.flatMap((i) =>
    subs.map((s) => ({
      incident: i,
      subscription: s.name,
      channels: s.channels,
      subject: `incident:${i.id}`,
      lifecycle: lifecycleKey({ feedId, subject: `incident:${i.id}` }),
    })),
  );
  if (episodes.length === 0) return;
  const states = await src.noise.episodeAcks(episodes, now);
  episodes.forEach((e, n) => {
    const state = states[n];
    if (state === undefined || !state.told) return;
    const a = state.ack;
    e.incident.acks.push({
      subscription: e.subscription,
      service: feedId,
      subject: e.subject,
      ack: a === null ? null : { by: a.by, name: a.name, via: a.via, at: a.at },
    });
  });
}

/** The service page's data, or null when the viewer's subscriptions do not watch it. */
export async function loadService(
  src: ConsoleSources,
  viewer: Viewer,
  feedId: string,
): Promise<ServicePage | null> {
  const now = src.now();
  const visible = await src.subscriptionsFor(viewer);
  const watched = await watchedFeeds(src, visible);
  const refs = await src.catalog.refs([feedId]);
  const ref = refs.get(feedId);
  const statusEntry = (
    await new SnapshotStore<StatusEntry>(src.redis, src.keys, 'status').get([feedId])
  ).get(feedId);
  const isAdmin = viewer.team === null;
  if (!watched.has(feedId) && !(isAdmin && (ref !== undefined || statusEntry !== undefined)))
    return null;
  const from = now - 30 * DAY_MS;
  const longFrom = now - 90 * DAY_MS;
  const [incidentsEntry, slaEntry, latest, statusChanges, statusBefore, sla, score, events] =
    await Promise.all([
      new SnapshotStore<IncidentsEntry>(src.redis, src.keys, 'incidents')
        .get([feedId])
        .then((m) => m.get(feedId)),
      new SnapshotStore<SlaEntry>(src.redis, src.keys, 'sla')
        .get([feedId])
        .then((m) => m.get(feedId)),
      src.history.latest([feedId]),
      src.history.statusChanges(feedId, from),
      src.history.statusBefore(feedId, from),
      src.history.samples(feedId, 'sla', longFrom),
      src.history.samples(feedId, 'score', longFrom),
      src.history.events(feedId, longFrom, 200),
    ]);
  const slaLatest = latest.sla.get(feedId);
  const scoreLatest = latest.score.get(feedId);
  const transitions = await transitionViews(src, events.slice(0, 50), visible);
  const incidents = timelines(events, openIncidents(incidentsEntry), now);
  const watchers = new Set(watched.get(feedId) ?? []);
  await attachAcks(
    src,
    visible.filter((s) => watchers.has(s.name)),
    feedId,
    incidents,
    now,
  );
  return {
    feedId,
    name: ref?.name ?? feedId,
    officialStatusUrl: ref?.officialStatusUrl ?? null,
    canonicalUrl: ref?.canonicalUrl ?? null,
    status: statusEntry?.status ?? null,
    sla: slaView(slaEntry, slaLatest),
    score:
      scoreLatest === undefined ? null : { score: scoreLatest.score, grade: scoreLatest.grade },
    subscriptions: watched.get(feedId) ?? [],
    incidents,
    statusChanges,
    statusBefore:
      statusBefore ?? (statusChanges.length === 0 ? (statusEntry?.status ?? null) : null),
    slaSamples: sla,
    scoreSamples: score,
    transitions,
    from,
    to: now,
    generatedAt: now,
  };
}

// ---------------------------------------------------------------------------------------------
// Notifications

export interface DeliveryFilters {
  subscription?: string | undefined;
  channel?: string | undefined;
  outcome?: string | undefined;
  kind?: string | undefined;
  service?: string | undefined;
}

export interface DeliveryRow extends DeliveryView {
  kind: EventKind;
  feedId: string;
  service: string;
  text: string;
  at: number;
}

export interface Notifications {
  filters: DeliveryFilters;
  subscriptions: string[];
  channels: string[];
  deliveries: DeliveryRow[];
  deadLetters: DeadLetter[];
  generatedAt: number;
}

/** Recent deliveries (routed in the last 7 days, newest first, filtered) and dead letters. */
export async function loadNotifications(
  src: ConsoleSources,
  viewer: Viewer,
  filters: DeliveryFilters,
  limit = 200,
): Promise<Notifications> {
  const now = src.now();
  const visible = await src.subscriptionsFor(viewer);
  const names = new Set(visible.map((s) => s.name));
  const items = await src.noise.recentRoutedLog(now - 7 * DAY_MS, 1000);
  const transitions: Transition[] = [];
  for (const item of items) {
    if (!item.subscriptions.some((s) => names.has(s))) continue;
    if (filters.subscription !== undefined && !item.subscriptions.includes(filters.subscription))
      continue;
    if (filters.kind !== undefined && item.t.kind !== filters.kind) continue;
    if (filters.service !== undefined && item.t.feedId !== filters.service) continue;
    transitions.push(item.t);
    if (transitions.length >= limit) break;
  }
  const views = await transitionViews(src, transitions, visible);
  const deliveries: DeliveryRow[] = views
    .flatMap((v) =>
      v.deliveries.map((d) => ({
        ...d,
        kind: v.kind,
        feedId: v.feedId,
        service: v.service,
        text: v.text,
        at: v.routedAt ?? v.at,
      })),
    )
    .filter(
      (d) =>
        (filters.subscription === undefined || d.subscription === filters.subscription) &&
        (filters.channel === undefined || d.channel === filters.channel) &&
        (filters.outcome === undefined || d.outcome === filters.outcome),
    )
    .slice(0, limit);
  const dead = (await src.deliveries.deadLetters(200)).filter((d) => names.has(d.subscription));
  return {
    filters,
    subscriptions: [...names],
    channels: [...new Set(visible.flatMap((s) => s.channels))].sort(),
    deliveries,
    deadLetters: dead.filter(
      (d) =>
        (filters.subscription === undefined || d.subscription === filters.subscription) &&
        (filters.channel === undefined || d.channel === filters.channel),
    ),
    generatedAt: now,
  };
}

// ---------------------------------------------------------------------------------------------
// Silences

export interface RoutePreview {
  subscription: string;
  channel: string;
  events: EventKind[];
  services: number;
  examples: string[];
  openIncidents: number;
}

/**
 * The routes (subscription → channel) a silence with these matchers would match right now, with
 * the watched services and event kinds it would cover and how many incidents are open on them.
 */
export async function previewSilence(
  src: ConsoleSources,
  visible: readonly SubscriptionConfig[],
  m: Silence['matchers'],
): Promise<RoutePreview[]> {
  const out: RoutePreview[] = [];
  const watched = await watchedFeeds(src, visible);
  const allFeeds = [...watched.keys()];
  const incidents = await new SnapshotStore<IncidentsEntry>(src.redis, src.keys, 'incidents').get(
    m.services ?? allFeeds,
  );
  const labels = await names(src, m.services ?? allFeeds.slice(0, 2000));
  for (const sub of visible) {
    if (m.subscriptions !== undefined && !m.subscriptions.includes(sub.name)) continue;
    const events = sub.events.filter((e) => m.events === undefined || m.events.includes(e));
    if (events.length === 0) continue;
    const upstreamOnly = events.every((e) => e.startsWith('upstream.'));
    const feeds = allFeeds.filter(
      (f) => watched.get(f)?.includes(sub.name) === true && (m.services?.includes(f) ?? true),
    );
    if (feeds.length === 0 && !(upstreamOnly && m.services === undefined)) continue;
    for (const channel of sub.channels) {
      if (m.channels !== undefined && !m.channels.includes(channel)) continue;
      out.push({
        subscription: sub.name,
        channel,
        events,
        services: feeds.length,
        examples: feeds.slice(0, 8).map((f) => labels.get(f) ?? f),
        openIncidents: feeds.reduce(
          (n, f) => n + Object.keys(incidents.get(f)?.open ?? {}).length,
          0,
        ),
      });
    }
  }
  return out;
}
