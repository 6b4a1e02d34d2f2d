import { UnrecoverableError, WaitingError, type Job, type Worker } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Keys, RedisClient } from '../redis.js';
import type { Transition } from '../diff/transition.js';
import type { CycleBatch } from '../pipeline/handoff.js';
import { openQueue, startWorker } from '../queues.js';
import { scripts } from '../redis/scripts.js';
import { toError } from '../errors.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { CLOCK_SKEW_MS } from '../delivery/rules.js';
import type { Notification } from '../notify/types.js';
import type { CategoryStore } from './categories.js';
import { eventNotification, route, type RoutableSubscription, type Route } from './match.js';
import type { NoiseStore } from '../noise/store.js';
import { admitBatch, type GateState } from '../noise/gate.js';
import { ledgerField, parseLedgerField } from './route.js';
import { lifecycleKey, roleOf } from '../noise/policy.js';
import { RoutedHere } from '../pipeline/routed-here.js';
import type { Silence } from '../silences/model.js';
import type { SubscriptionConfig } from '../config/schema.js';

type NoisySubscription = Partial<Pick<SubscriptionConfig, 'group' | 'quietHours'>>;

/** Noise control applied to every route: silences, quiet hours, grouping, the told-openings ledger. */
export interface NoiseControl {
  store: NoiseStore;
  /** The silences in force (the silence store's `active()`). */
  silences: () => Promise<Silence[]>;
}

export interface RouterOptions {
  connection: RedisClient;
  keys: Keys;
  /** Shared with the hand-off of the same stages (`composeStages`): tells it a cycle is routed. */
  routedHere?: RoutedHere;
  subscriptions: () => readonly (RoutableSubscription & NoisySubscription)[];
  /**
   * Brings `subscriptions()` up to date; awaited before each routed cycle (subscriptions stored
   * through the API: one cheap read of a version counter).
   */
  refresh?: () => Promise<void>;
  /**
   * Deleted subscriptions still owed closings: each gets the closing of every opening the
   * told-openings ledger says it was told (and nothing else), so a deletion never swallows a
   * resolution.
   */
  owedClosings?: () => ReadonlySet<string>;
  /** Without it every route is sent at once (tests of plain routing). */
  noise?: NoiseControl;
  categories: CategoryStore;
  deliveries: DeliveryQueue;
  log: Logger;
  now?: () => number;
  /**
   * BullMQ lock duration of routing jobs (default 30 s), also the stalled-job check interval:
   * how soon a cycle held by a dead process is taken over (within about two of these).
   */
  lockDurationMs?: number;
}

/**
 * How often a routing job may be taken over from a process that died holding it before BullMQ
 * fails it for good (its default is once). Routing is idempotent (routed marks, delivery ids
 * derived from transition ids), so a re-run costs nothing, while a failed cycle is transitions
 * never sent. Small, because while a cycle waits to be taken over no other cycle is routed
 * (global concurrency 1), and a cycle that kills its process every time would hold them all up.
 */
export const ROUTING_MAX_STALLS = 3;

/**
 * How long a cycle whose routing fails is retried in place, holding the cycles after it back
 * (`Router.process`): a later cycle may hold the closing of an opening in this one. Then the
 * cycle fails for good (listed among the `transitions` queue's failed jobs).
 */
export const ROUTING_RETRY_BUDGET_MS = 17 * 60_000;

/** The wait before in-place routing retry `n` (1 = the first): 1 s doubling, at most a minute. */
export function routingRetryDelay(n: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, n - 1));
}

/**
 * How long the clock a cycle was first routed on is kept (see `Router.decisionTime`): longer
 * than the re-runs of one cycle take (`ROUTING_RETRY_BUDGET_MS`, and takeovers after stalls).
 */
export const DECISION_TIME_RETENTION_MS = 3600_000;

/**
 * A closing goes to every route the ledger says was told its opening (`state.told` holds every
 * told field when a batch closes something), also where the routes of today no longer lead: a
 * deleted subscription (`owed`) still gets it, and so does one changed since the opening (its
 * services, categories or channels) as long as it still takes the closing's event kind. A
 * resolution is never swallowed by an edit; a team that dropped the kind from `events` has
 * said it does not want it.
 */
function addToldClosings(
  items: { transition: Transition; routes: Route[] }[],
  state: GateState,
  owed: ReadonlySet<string> | undefined,
  subscriptions: ReadonlyMap<string, Pick<RoutableSubscription, 'events'>>,
): void {
  const closings = items.filter((i) => roleOf(i.transition) === 'closing');
  if (closings.length === 0) return;
  const byKey = new Map<string, Route[]>();
  for (const field of state.told) {
    const parsed = parseLedgerField(field);
    if (parsed === null) continue;
    const list = byKey.get(parsed.key) ?? [];
    list.push(parsed.route);
    byKey.set(parsed.key, list);
  }
  for (const item of closings) {
    for (const r of byKey.get(lifecycleKey(item.transition)) ?? []) {
      const sub = subscriptions.get(r.subscription);
      const wanted =
        sub === undefined
          ? owed?.has(r.subscription) === true
          : sub.events.includes(item.transition.kind);
      if (!wanted) continue;
      if (!item.routes.some((x) => x.subscription === r.subscription && x.channel === r.channel))
        item.routes.push(r);
    }
  }
}

/**
 * Routing, one poll cycle at a time: a cycle's transitions (one job) become delivery jobs, one
 * delivery per (transition, subscription, channel) that noise control lets through. The round
 * trips of a routed cycle do not grow with its transitions: category sets and silences (cached),
 * one pipelined load of the noise state and routed marks, the delivery batches, one MULTI commit.
 */
export class Router {
  private worker: Worker<CycleBatch> | null = null;
  private readonly now: () => number;
  /** Aborted by `stop`: a cycle waiting to retry its routing goes back to the head of the queue. */
  private stopping = new AbortController();

  private readonly routedHere: RoutedHere;

  constructor(private readonly options: RouterOptions) {
    this.now = options.now ?? Date.now;
    this.routedHere = options.routedHere ?? new RoutedHere();
  }

  private async loadCategories(): Promise<void> {
    const subs = this.options.subscriptions();
    const slugs = [...new Set(subs.flatMap((s) => s.categories ?? []))];
    await this.options.categories.load(slugs);
  }

  private routesOf(t: Transition): Route[] {
    return route(t, this.options.subscriptions(), (slug, feedId) =>
      this.options.categories.has(slug, feedId),
    );
  }

  /** The routes of a transition under the current subscriptions (no I/O beyond category sets). */
  async routes(t: Transition): Promise<Route[]> {
    await this.options.refresh?.();
    await this.loadCategories();
    return this.routesOf(t);
  }

  /** The notifications a transition becomes under the current subscriptions (no I/O beyond category sets). */
  async plan(t: Transition): Promise<Notification[]> {
    const createdAt = this.now();
    return (await this.routes(t)).map((r) => eventNotification(t, r, createdAt));
  }

  /**
   * Routing runs one cycle at a time across all replicas (BullMQ global concurrency 1), in
   * enqueue order, and walks each cycle's transitions in order: an opening is always admitted
   * before its closing, so the told-openings ledger the closing consults is never raced. Set at
   * start, and again when Redis comes back (it may have come back empty).
   */
  async resync(): Promise<void> {
    const queue = openQueue('transitions', this.options);
    try {
      await queue.setGlobalConcurrency(1);
    } finally {
      await queue.close();
    }
  }

  async start(): Promise<void> {
    await this.resync();
    const first = this.worker === null;
    this.stopping = new AbortController();
    const lockDuration = this.options.lockDurationMs ?? 30_000;
    const worker = startWorker(
      'transitions',
      // Three parameters: BullMQ then hands the processor a signal, aborted by `cancelJob`.
      (job: Job<CycleBatch>, token?: string, signal?: AbortSignal) =>
        this.process(job, token, signal),
      this.options,
      {
        concurrency: 1,
        lockDuration,
        stalledInterval: lockDuration,
        maxStalledCount: ROUTING_MAX_STALLS,
      },
    );
    // A cycle whose lock lapsed (this process was cut off longer than the lock) stops retrying
    // here: the stalled-job check puts it back at the head of the queue.
    worker.on('lockRenewalFailed', (ids) => {
      for (const id of ids) worker.cancelJob(id, 'lock lost');
    });
    this.worker = worker;
    // Counted once the worker runs: a start that threw leaves hand-offs no router to wait for.
    if (first) this.routedHere.routerStarted();
  }

  /**
   * Routes one cycle's transitions as of `at` (Unix ms, or a read of it made alongside the noise
   * state's; default: now); returns the number of deliveries enqueued.
   */
  async routeBatch(
    transitions: readonly Transition[],
    at?: number | (() => Promise<number>),
    /** Called once the deliveries are enqueued (before the noise state's commit). */
    enqueued?: () => void,
  ): Promise<number> {
    const noise = this.options.noise;
    const clock = (): number | Promise<number> =>
      at === undefined ? this.now() : typeof at === 'number' ? at : at();
    await this.options.refresh?.();
    await this.loadCategories();
    if (noise === undefined) {
      const now = await clock();
      const notifications = transitions.flatMap((t) =>
        this.routesOf(t).map((r) => eventNotification(t, r, now)),
      );
      await this.options.deliveries.enqueue(notifications);
      enqueued?.();
      return notifications.length;
    }
    const items = transitions.map((t) => ({ transition: t, routes: this.routesOf(t) }));
    const fields = items.flatMap(({ transition: t, routes }) =>
      routes.map((r) => ledgerField(r, lifecycleKey(t))),
    );
    const closes = transitions.some((t) => roleOf(t) === 'closing');
    const [{ state, routed }, silences, now] = await Promise.all([
      noise.store.loadGate(
        fields,
        closes,
        transitions.map((t) => t.id),
      ),
      noise.silences(),
      clock(),
    ]);
    const subscriptions = new Map(this.options.subscriptions().map((s) => [s.name, s]));
    addToldClosings(items, state, this.options.owedClosings?.(), subscriptions);
    // A transition routed before (a cycle re-derived after a crash, overlapping another) is
    // skipped; within the batch each id counts once.
    const seen = new Set<string>();
    const fresh = items.filter(({ transition: t }) => {
      if (routed.has(t.id) || seen.has(t.id)) return false;
      seen.add(t.id);
      return true;
    });
    const { notifications, effects } = admitBatch({
      items: fresh,
      subscriptions,
      state,
      silences,
      now,
    });
    await this.options.deliveries.enqueue(notifications);
    enqueued?.();
    // Ledger writes wait until the deliveries are enqueued: a routing job retried after a
    // crash must still see "told" and so still send a closing under a silence.
    await noise.store.commitGate(
      effects,
      fresh.map((i) => i.transition.id),
      now,
    );
    for (const e of effects) {
      if (e.type !== 'dropped') continue;
      this.options.log.info(
        {
          event: 'delivery:suppressed',
          transitionId: e.transition.id,
          kind: e.transition.kind,
          feedId: e.transition.feedId,
          subscription: e.route.subscription,
          channel: e.route.channel,
          reason: e.reason,
        },
        `${e.transition.kind} ${e.transition.feedId} not sent to ${e.route.subscription}/${e.route.channel}: ${e.reason}`,
      );
    }
    return notifications.length;
  }

  /**
   * The clock a cycle job is routed on: that of its first run, kept in Redis for an hour
   * (`routing-decided-at.lua`, sent alongside the noise state's read: no round trip of its own).
   * A re-run after a crash between the delivery enqueue and the commit, or after a lock lost to
   * a Redis outage, then decides as the first run did, also across the start of quiet hours. A
   * silence that ended in between is no longer in force, so such a re-run does not apply it. A
   * first run's time is also later than the previous cycle's (by 1 ms when this replica's clock
   * is behind, up to `CLOCK_SKEW_MS`, a minute): it is the `createdAt` of the cycle's
   * deliveries, which orders them within their lifecycles (`src/delivery/order.ts`).
   */
  private async decisionTime(jobId: string | undefined): Promise<number> {
    const now = this.now();
    if (jobId === undefined) return now;
    const stored = Number(
      await scripts(this.options.connection).routingDecidedAt(
        [
          this.options.keys.key('routing', 'last-decided-at'),
          this.options.keys.key('routing', 'decided-at', jobId),
        ],
        [String(now), String(CLOCK_SKEW_MS), String(DECISION_TIME_RETENTION_MS)],
      ),
    );
    return Number.isFinite(stored) && stored > 0 ? stored : now;
  }

  private async process(
    job: Job<CycleBatch>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<number> {
    // Real time, not the injectable clock: the budget is how long the queue is held up.
    const started = Date.now();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.routeOnce(job);
      } catch (err) {
        const wait = routingRetryDelay(attempt);
        const { message } = toError(err);
        if (Date.now() - started + wait > ROUTING_RETRY_BUDGET_MS) {
          this.options.log.error(
            { event: 'routing:failed', cycle: job.id, attempts: attempt, err: message },
            `routing cycle ${String(job.id)} failed ${String(attempt)} times; giving up`,
          );
          // Failed for good, also a job of an earlier release that has attempts left: a BullMQ
          // retry would let later cycles route before it.
          throw new UnrecoverableError(message);
        }
        this.options.log.warn(
          { event: 'routing:retry', cycle: job.id, attempt, retryInMs: wait, err: message },
          `routing cycle ${String(job.id)} failed (${message}); retrying in ${String(wait)} ms, later cycles wait`,
        );
        const signals = [this.stopping.signal, ...(signal === undefined ? [] : [signal])];
        try {
          await sleep(wait, undefined, { signal: AbortSignal.any(signals) });
        } catch {
          if (this.stopping.signal.aborted && signal?.aborted !== true && token !== undefined) {
            await job.moveToWait(token);
            throw new WaitingError();
          }
          throw err;
        }
      }
    }
  }

  private async routeOnce(job: Job<CycleBatch>): Promise<number> {
    const { transitions } = job.data;
    const here = (): void => {
      if (job.id !== undefined) this.routedHere.routed(job.id);
    };
    let deliveries: number;
    try {
      deliveries = await this.routeBatch(transitions, () => this.decisionTime(job.id), here);
    } finally {
      here();
    }
    this.options.log.debug(
      {
        event: 'cycle:routed',
        transitions: transitions.length,
        deliveries,
      },
      `routed ${String(transitions.length)} transitions to ${String(deliveries)} deliveries`,
    );
    return deliveries;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.worker !== null) {
      await this.worker.close();
      this.routedHere.routerStopped();
    }
    this.worker = null;
  }
}
