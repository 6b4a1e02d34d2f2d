import type { Logger } from 'pino';
import { toError } from './errors.js';
import type { Keys, RedisClient } from './redis.js';
import type { SubscriptionConfig } from './config/schema.js';
import { Handoff } from './pipeline/handoff.js';
import { RoutedHere } from './pipeline/routed-here.js';
import { CategoryStore } from './routing/categories.js';
import { Router } from './routing/router.js';
import type { ChannelRegistry } from './delivery/channels.js';
import { DeliveryQueue, type DeadLetterRetry } from './delivery/queue.js';
import { DeliveryWorker } from './delivery/worker.js';
import { NoiseStore } from './noise/store.js';
import { lifecycleKey, roleOf } from './noise/policy.js';
import { routeKey } from './routing/route.js';
import type { Notification } from './notify/types.js';
import { NoiseTicker, type LastLook } from './noise/ticker.js';
import { SilenceStore, type SilenceStoreOptions } from './silences/store.js';
import { budgetOf } from './budget/plan.js';
import type { Config } from './config/schema.js';
import { historyHook, type HistoryStore } from './history/index.js';
import { Pipeline, type PipelineRules, type PollKind } from './pipeline/cycle.js';
import { VocabularyRecorder, type VocabularyRecorderOptions } from './pipeline/vocabulary.js';
import { Poller } from './scheduler/poller.js';
import type { UpstreamClient } from './upstream/index.js';
import type { Role } from './runtime/plan.js';

/** What the routing → noise → delivery stages are built from. */
export interface StageDeps {
  /** The installation's Redis: every stage's queues, workers and state. */
  connection: RedisClient;
  keys: Keys;
  log: Logger;
  /** The clock of every stage (Unix ms); default `Date.now`. */
  now?: () => number;
  /** The subscriptions in force; routing and the noise tick read them on every use. */
  subscriptions: () => readonly SubscriptionConfig[];
  /** Brings `subscriptions()` up to date before each routed cycle (subscriptions stored through the API). */
  refresh?: () => Promise<void>;
  /** Deleted subscriptions still owed the closings of openings they were told. */
  owedClosings?: () => ReadonlySet<string>;
  /** The channel registry in force, read per delivery (the daemon swaps it on a reload). */
  channels: () => ChannelRegistry;
  /** Options of the silence store (tests that add a silence and route at once set `cacheMs: 0`). */
  silenceStore?: SilenceStoreOptions;
  /** Whether the upstream's premium endpoints are available (month-end digest figures). */
  premium: () => boolean;
  /** Month figures for month-end digests (premium); without it digests carry none. */
  monthly?: (month: string, feedIds: readonly string[]) => Promise<string[]>;
  /** How often the shared noise tick runs; default that of `NoiseTicker` (2 s). */
  noiseTickMs?: number;
  /** What the last committed polls saw (reminders wait for a fresh look; `NoiseTicker`). */
  lastLook?: () => Promise<LastLook>;
  /**
   * The noise tick is driven by the caller (`noise.tick()`): `start()` starts neither its
   * schedule nor its worker. For tests on an injected clock.
   */
  manualNoiseTick?: boolean;
  /** BullMQ lock duration of delivery jobs: how soon a dead replica's deliveries are taken over. */
  deliveryLockMs?: number;
  /** BullMQ lock duration of routing jobs: how soon a dead replica's cycle is taken over. */
  routingLockMs?: number;
}

/**
 * The routing → noise → delivery stages of one replica, built together. `start()` and `stop()`
 * keep the daemon's order; `stopWorkers()` and `closeQueues()` are the two halves of `stop()`,
 * for a caller that drains other components alongside each half.
 */
export interface Stages {
  /** Queue `transitions`: the poll cycle hands its transitions to routing here. */
  readonly handoff: Handoff;
  readonly categories: CategoryStore;
  readonly deliveries: DeliveryQueue;
  readonly noiseStore: NoiseStore;
  readonly silences: SilenceStore;
  readonly router: Router;
  readonly noise: NoiseTicker;
  readonly deliveryWorker: DeliveryWorker;
  /**
   * Retries a dead letter (the admin API, the console) with a fresh set of attempts, unless it
   * is an opening whose lifecycle is not open on its route any more (the told ledger no longer
   * holds it): sent after its closing, it would open an alert that nothing resolves (for
   * PagerDuty, an incident).
   */
  retryDeadLetter(id: string): Promise<DeadLetterRetry>;
  /**
   * Starts the router, then the noise ticker (unless `manualNoiseTick`), then the delivery worker;
   * with `roles`, the router and the noise ticker only for `route` and the worker only for
   * `deliver` (src/runtime/plan.ts).
   */
  start(roles?: ReadonlySet<Role>): Promise<void>;
  /**
   * Stops the router, the noise ticker and the delivery worker at once (in-flight jobs finish,
   * BullMQ hands back the rest); settles all three, then throws the first failure.
   */
  stopWorkers(): Promise<void>;
  /** Closes the hand-off and delivery queues at once; settles both, then throws the first failure. */
  closeQueues(): Promise<void>;
  /** `stopWorkers()`, then `closeQueues()` (also when the workers failed to stop). */
  stop(): Promise<void>;
}

/**
 * The lifecycle a dead letter would open on its receiver: a single event's opening. Updates are
 * not looked at (many lifecycles are never in the told ledger: score drops, forecasts, a
 * subscription that does not take the opening kind), nor batches and catch-ups, which are
 * retried whole (refusing one would lose what it carries that is still open).
 */
function openedBy(n: Notification): string | null {
  const [t, ...more] = n.transitions;
  if (n.type !== 'event' || t === undefined || more.length > 0 || roleOf(t) !== 'opening')
    return null;
  return lifecycleKey(t);
}

/** Waits for every task, then throws the first failure. */
async function settle(tasks: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(tasks)).find(
    (r): r is PromiseRejectedResult => r.status === 'rejected',
  );
  if (failed !== undefined) throw toError(failed.reason);
}

/**
 * The composition root of routing, noise control and delivery: the daemon (`App`) and the test
 * harnesses build these stages here and nowhere else.
 */
export function composeStages(deps: StageDeps): Stages {
  const { connection, keys, log } = deps;
  const now = deps.now ?? Date.now;
  // The hand-off's cycles are waited for until this router has routed them (src/pipeline/routed-here.ts).
  const routedHere = new RoutedHere();
  const handoff = new Handoff(connection, keys, routedHere);
  const categories = new CategoryStore(connection, keys, now);
  const deliveries = new DeliveryQueue(connection, keys);
  const noiseStore = new NoiseStore(connection, keys);
  const silences = new SilenceStore(connection, keys, now, deps.silenceStore);
  const router = new Router({
    connection,
    keys,
    routedHere,
    subscriptions: deps.subscriptions,
    ...(deps.refresh === undefined ? {} : { refresh: deps.refresh }),
    ...(deps.owedClosings === undefined ? {} : { owedClosings: deps.owedClosings }),
    categories,
    deliveries,
    noise: { store: noiseStore, silences: () => silences.active() },
    log,
    now,
    ...(deps.routingLockMs === undefined ? {} : { lockDurationMs: deps.routingLockMs }),
  });
  const noise = new NoiseTicker({
    connection,
    keys,
    store: noiseStore,
    deliveries,
    subscriptions: deps.subscriptions,
    silences: () => silences.active(),
    premium: deps.premium,
    ...(deps.monthly === undefined ? {} : { monthly: deps.monthly }),
    log,
    now,
    ...(deps.noiseTickMs === undefined ? {} : { everyMs: deps.noiseTickMs }),
    ...(deps.lastLook === undefined ? {} : { lastLook: deps.lastLook }),
  });
  const deliveryWorker = new DeliveryWorker({
    connection,
    keys,
    deliveries,
    channels: deps.channels,
    log,
    now,
    // A reminder retried after its lifecycle closed: its told entry is gone.
    reminderObsolete: async (n) => {
      const [t] = n.transitions;
      return t !== undefined && !(await noiseStore.isTold(routeKey(n), lifecycleKey(t)));
    },
    ...(deps.deliveryLockMs === undefined ? {} : { lockDurationMs: deps.deliveryLockMs }),
  });
  const stopWorkers = (): Promise<void> =>
    settle([router.stop(), noise.stop(), deliveryWorker.stop()]);
  const closeQueues = (): Promise<void> => settle([handoff.close(), deliveries.close()]);
  return {
    handoff,
    categories,
    deliveries,
    noiseStore,
    silences,
    router,
    noise,
    deliveryWorker,
    async retryDeadLetter(id) {
      return deliveries.retryDeadLetterUnless(id, async (n) => {
        const key = openedBy(n);
        return key !== null && !(await noiseStore.isTold(routeKey(n), key)) ? key : null;
      });
    },
    async start(roles) {
      if (roles?.has('route') !== false) {
        await router.start();
        if (deps.manualNoiseTick !== true) await noise.start();
      }
      if (roles?.has('deliver') !== false) deliveryWorker.start();
    },
    stopWorkers,
    closeQueues,
    async stop() {
      const stopped = await stopWorkers().then(
        () => null,
        (err: unknown) => toError(err),
      );
      await closeQueues();
      if (stopped !== null) throw stopped;
    },
  };
}

/** What the whole walk (poll → cycle → routing → noise → delivery) is built from. */
export interface WalkDeps extends StageDeps {
  client: UpstreamClient;
  /** The poll cycle's rules (`config.rules` with the plan's `confirmationsPerCycle`). */
  rules: PipelineRules;
  /** Poll intervals (ms); SLA and scores are polled only when the client has premium access. */
  poll: Pick<Config['poll'], 'status' | 'incidents' | 'sla' | 'scores'>;
  /** Requests per minute the upstream allows this installation (shared by all replicas). */
  requestsPerMinute: 'auto' | number;
  /** The API key (premium polls disabled on 401/403 re-enable when it changes). */
  apiKey: string | undefined;
  /** The per-service history: every committed cycle is recorded there. */
  history: HistoryStore;
  /** Counts the upstream's unknown values (vocabulary drift). */
  unknownValues?: VocabularyRecorderOptions['unknownValues'];
  /** The categories the subscriptions name (resolved every minute by the poller). */
  subscribedCategories: () => string[];
}

/** The whole walk of one replica: the stages plus the poller and the poll cycle they run. */
export interface Walk extends Stages {
  readonly vocabulary: VocabularyRecorder;
  readonly pipeline: Pipeline;
  readonly poller: Poller;
}

/**
 * The composition root of the daemon's walk: the routing → noise → delivery stages
 * (`composeStages`), then the poll cycle that hands off to them (`Pipeline`, recording each
 * committed cycle in the history and the upstream's words in the vocabulary) and the `Poller`
 * that schedules it. `start()`/`stop()` are the stages'; the caller runs the poller.
 */
export function composeWalk(deps: WalkDeps): Walk {
  const stages = composeStages(deps);
  const { connection: redis, keys, log, client } = deps;
  const now = deps.now ?? Date.now;
  const { categories } = stages;
  const vocabulary = new VocabularyRecorder({
    redis,
    keys,
    log,
    ...(deps.unknownValues === undefined ? {} : { unknownValues: deps.unknownValues }),
    now,
  });
  const pipeline = new Pipeline({
    vocabulary,
    client,
    redis,
    keys,
    handoff: stages.handoff,
    log,
    rules: deps.rules,
    committed: historyHook({
      store: deps.history,
      subscriptions: deps.subscriptions,
      categories: { load: (s) => categories.load(s), has: (s, f) => categories.has(s, f) },
    }),
    now,
  });
  const intervals: Partial<Record<PollKind, number>> = {
    status: deps.poll.status,
    incidents: deps.poll.incidents,
  };
  if (client.hasPremium) {
    intervals.sla = deps.poll.sla;
    intervals.scores = deps.poll.scores;
  }
  const poller = new Poller({
    connection: redis,
    keys,
    pipeline,
    intervals,
    budget: budgetOf(deps.requestsPerMinute, client.hasPremium),
    apiKey: deps.apiKey,
    log,
    now,
    refreshCategories: () => categories.refresh(client, deps.subscribedCategories(), log),
  });
  return { ...stages, vocabulary, pipeline, poller };
}
