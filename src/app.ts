import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { StatuswatchError, toError } from './errors.js';
import type { Config } from './config/schema.js';
import { answersWithin, createKeys, createRedis, watchRedis, type Keys } from './redis.js';
import type { RedisClient } from './redis.js';
import { SlackInteractions } from './notify/slack/interactions.js';
import { REFUSAL_HINTS, refusalOf, refusalsOf, startupChecks } from './redis/refusals.js';
import { describeOverBudget, planRequests, type Plan } from './budget/plan.js';
import { createUpstreamClient, type UpstreamClient } from './upstream/index.js';
import { POLL_KINDS, type CycleReport, type Pipeline } from './pipeline/cycle.js';
import type { VocabularyRecorder } from './pipeline/vocabulary.js';
import type { Handoff } from './pipeline/handoff.js';
import type { Poller } from './scheduler/poller.js';
import type { CategoryStore } from './routing/categories.js';
import type { Router } from './routing/router.js';
import type { NotifierDeps } from './notify/kind.js';
import { ChannelRegistry } from './delivery/channels.js';
import type { NotifierTemplates } from './notify/template.js';
import type { DeliveryQueue } from './delivery/queue.js';
import type { DeliveryWorker, DeliveryOutcome } from './delivery/worker.js';
import { createMetrics, type Metrics } from './server/metrics.js';
import { OpsServer, type Readiness } from './server/ops.js';
import { trackOwnSockets } from './server/own-sockets.js';
import { SnapshotStore } from './snapshot/store.js';
import type { SilenceStore } from './silences/store.js';
import type { NoiseStore } from './noise/store.js';
import { monthlyFigures } from './noise/monthly.js';
import type { NoiseTicker } from './noise/ticker.js';
import { composeWalk, type Walk } from './stages.js';
import { singleFlight } from './single-flight.js';
import type { Queue } from 'bullmq';
import { QUEUES, type QueueRole } from './queues.js';
import { TenancyApi } from './api/index.js';
import { HistoryStore } from './history/index.js';
import { addLogSecrets } from './log.js';
import { secretValues } from './config/redact.js';
import { channelSecrets } from './notify/kinds.js';
import type { ChannelConfig } from './config/schema.js';
import { egressPolicyOf } from './egress/config.js';
import type { EgressPolicy } from './egress/policy.js';
import { ROLES, type Role } from './runtime/plan.js';

export class BudgetError extends StatuswatchError {
  constructor(readonly plan: Plan) {
    super('budget_exceeded', describeOverBudget(plan));
  }
}

/**
 * The refusals several threads report as one: every reason and command (in the order first
 * seen), since the earliest, with the first reason's hint; undefined when none refuses.
 */
function mergeRefusals(
  all: readonly (Readiness['redis'] | undefined)[],
): Readiness['redis'] | undefined {
  const seen = all.filter((r): r is NonNullable<Readiness['redis']> => r !== undefined);
  const [first] = seen;
  if (first === undefined) return undefined;
  const refusing = [...new Set(seen.flatMap((r) => r.refusing))];
  const commands = [...new Set(seen.flatMap((r) => r.commands ?? []))];
  const since = seen.map((r) => r.since).sort()[0] ?? first.since;
  return {
    refusing,
    hint: first.hint,
    since,
    ...(commands.length === 0 ? {} : { commands }),
  };
}

/** How long /readyz waits for Redis to answer a PING. */
const READINESS_TIMEOUT_MS = 1_000;

/** How long a stop waits for the tombstones of a reload just before to be stored. */
const STOP_TOMBSTONES_MS = 5_000;

export interface AppDeps {
  log: Logger;
  now?: () => number;
  /** Ops server port override (0 = any free port); default config.server.port. */
  port?: number;
  /** Start the ops HTTP server (default true). */
  server?: boolean;
  /** BullMQ lock duration of delivery jobs: how soon a dead replica's deliveries are taken over. */
  deliveryLockMs?: number;
  metrics?: Metrics;
  /** How often the shared noise-control tick runs (groups, catch-ups, reminders, digests). Default 2 s. */
  noiseTickMs?: number;
  /**
   * The ops server refuses, unchecked and uncounted, requests arriving on this process's own
   * outbound connections (src/server/own-sockets.ts). The daemon (`run`) sets it; off by default,
   * as tests drive an in-process App from their own sockets.
   */
  ownOutbound?: boolean;
  /**
   * The stages this App runs (src/runtime/plan.ts): `poll` (the poller), `route` (routing and
   * the noise tick), `deliver` (the delivery worker). Default all. Every App builds every stage;
   * only these start.
   */
  roles?: readonly Role[];
  /**
   * The other threads of this process (src/runtime/supervisor.ts): their readiness is part of
   * `/readyz` and their metrics part of the `/metrics` scrape.
   */
  peers?: AppPeers;
  /**
   * Log each change of readiness (`readiness:changed`); default true. A worker thread's App does
   * not: the process's readiness is the main thread's, which includes the threads'.
   */
  logReadiness?: boolean;
}

/** What the main thread's App knows of the process's other threads. */
export interface AppPeers {
  /** Each thread's readiness by name (null while one is down, starting or restarting). */
  readiness(): Promise<Record<string, { ready: boolean; redis?: Readiness['redis'] } | null>>;
  /** Each running thread's metrics (`registry.getMetricsAsJSON()`), merged into the scrape. */
  metrics(): Promise<unknown[][]>;
}

export interface AppEvents {
  cycle: [CycleReport];
  delivery: [DeliveryOutcome];
}

/** The plan of a config: what its polls cost against its budget. */
export function planOf(config: Config): Plan {
  const hasApiKey = config.upstream.apiKey !== undefined && config.upstream.apiKey !== '';
  const categories = new Set(config.subscriptions.flatMap((s) => s.categories)).size;
  return planRequests({
    poll: config.poll,
    hasApiKey,
    requestsPerMinute: config.upstream.requestsPerMinute,
    categories,
  });
}

/**
 * The daemon in one embeddable object: `start()` brings up pollers, routing, delivery and the ops
 * server; `stop()` drains (no new jobs, in-flight ones finish or go back to the queue); `reload()`
 * swaps channels and subscriptions without a restart. `cli.ts` only parses arguments and signals.
 */
export class App extends EventEmitter<AppEvents> {
  readonly keys: Keys;
  readonly redis: RedisClient;
  readonly metrics: Metrics;
  readonly client: UpstreamClient;
  readonly pipeline: Pipeline;
  readonly handoff: Handoff;
  readonly vocabulary: VocabularyRecorder;
  readonly poller: Poller;
  readonly categories: CategoryStore;
  readonly router: Router;
  readonly noiseStore: NoiseStore;
  readonly silences: SilenceStore;
  readonly noise: NoiseTicker;
  readonly deliveries: DeliveryQueue;
  readonly deliveryWorker: DeliveryWorker;
  /** Subscriptions, channels and tokens managed at run time through /api/v1 (src/api). */
  readonly api: TenancyApi;
  /** Per-service history for the web console (src/history). */
  readonly history: HistoryStore;
  /** Poller, poll cycle, routing, noise control and delivery: `composeWalk` (src/stages.ts). */
  private readonly stages: Walk;
  private channels: ChannelRegistry;
  /** `server.egress` (a restart changes it): where channels may connect. */
  private readonly egress: EgressPolicy;
  private ops: OpsServer | null = null;
  private running = false;
  /** The stages this App starts (`AppDeps.roles`). */
  readonly roles: ReadonlySet<Role>;
  /** Tombstones of config-file subscriptions a reload removed, being stored (never rejects). */
  private burying: Promise<void> = Promise.resolve();
  port: number | null = null;

  constructor(
    private config: Config,
    private readonly deps: AppDeps,
  ) {
    super();
    this.roles = new Set(deps.roles ?? ROLES);
    const plan = planOf(config);
    if (!plan.ok) throw new BudgetError(plan);
    const { log } = deps;
    // The config's secrets are scrubbed from every log line (as are, later, those of channels
    // stored through the API and of reloaded configs).
    addLogSecrets(log, secretValues(config));
    const now = deps.now ?? Date.now;
    this.metrics = deps.metrics ?? createMetrics();
    this.keys = createKeys(config.redis.prefix);
    this.egress = egressPolicyOf(config.server.egress);
    this.redis = createRedis(config.redis, { connectionName: 'statuswatch' });
    this.client = createUpstreamClient({
      baseUrl: config.upstream.baseUrl,
      apiKey: config.upstream.apiKey,
      timeoutMs: config.upstream.timeoutMs,
      onResponse: (info) => {
        this.metrics.upstreamRequests.inc({ route: info.route, status: String(info.status) });
        this.metrics.upstreamDuration.observe({ route: info.route }, info.durationMs / 1000);
        if (info.rateLimit.remaining !== null)
          this.metrics.rateLimitRemaining.set(info.rateLimit.remaining);
        if (info.rateLimit.limit !== null) this.metrics.rateLimitLimit.set(info.rateLimit.limit);
      },
    });
    this.history = new HistoryStore(this.redis, this.keys);
    // Subscriptions and channels are read through `this.api` and `this.channels`, set below.
    this.stages = composeWalk({
      connection: this.redis,
      keys: this.keys,
      log,
      now,
      subscriptions: () => this.api.runtime.subscriptions(),
      refresh: () => this.api.runtime.refresh(),
      owedClosings: () => this.api.runtime.owedClosings(),
      channels: () => this.channels,
      premium: () => this.client.hasPremium,
      monthly: monthlyFigures(this.client),
      lastLook: () => this.history.lastLook(),
      ...(deps.noiseTickMs === undefined ? {} : { noiseTickMs: deps.noiseTickMs }),
      ...(deps.deliveryLockMs === undefined ? {} : { deliveryLockMs: deps.deliveryLockMs }),
      client: this.client,
      rules: { ...config.rules, confirmationsPerCycle: plan.confirmationsPerCycle },
      poll: config.poll,
      requestsPerMinute: config.upstream.requestsPerMinute,
      apiKey: config.upstream.apiKey,
      history: this.history,
      unknownValues: this.metrics.unknownValues,
      subscribedCategories: () => this.subscribedCategories(),
    });
    this.handoff = this.stages.handoff;
    this.categories = this.stages.categories;
    this.deliveries = this.stages.deliveries;
    this.noiseStore = this.stages.noiseStore;
    this.silences = this.stages.silences;
    this.router = this.stages.router;
    this.noise = this.stages.noise;
    this.deliveryWorker = this.stages.deliveryWorker;
    this.vocabulary = this.stages.vocabulary;
    this.pipeline = this.stages.pipeline;
    this.poller = this.stages.poller;
    this.api = new TenancyApi({
      noise: this.noiseStore,
      redis: this.redis,
      keys: this.keys,
      log,
      silences: this.silences,
      now,
      config: () => ({
        channels: this.config.channels,
        subscriptions: this.config.subscriptions,
        adminToken: this.config.server.adminToken,
        trustedProxies: this.config.server.console?.trustedProxies ?? [],
        quotas: this.config.server.quotas,
        publicUrl: this.config.server.publicUrl,
      }),
      onChannels: (channels) => {
        this.swapChannels(channels);
      },
      egressFor: (source) => this.egressFor(source),
      budget: (categories) => {
        const p = planRequests({
          poll: this.config.poll,
          hasApiKey:
            this.config.upstream.apiKey !== undefined && this.config.upstream.apiKey !== '',
          requestsPerMinute: this.config.upstream.requestsPerMinute,
          categories: categories.length,
        });
        return p.ok ? null : describeOverBudget(p);
      },
    });
    this.channels = new ChannelRegistry(config.channels, (name) => ({
      ...this.notifierDeps(name),
      templates: this.templateDeps(name),
    }));
    this.observeWalk();
    // One line per Redis state change, not per reconnect attempt; and an `error` listener on
    // every BullMQ queue (the workers have theirs), else BullMQ dumps each error to stderr.
    // A Redis that comes back may have come back empty: the shared schedules and the
    // one-at-a-time settings of routing and the noise tick are set again at once, not at the next
    // keeper round (30 s later). On every reconnection, not only after an outage was seen: a
    // Redis restarted between two reconnect attempts raises no connection error (`reachable`
    // then never fires), and a thread whose connections were idle sees none either.
    let connectedOnce = false;
    this.redis.on('ready', () => {
      if (connectedOnce) void this.resyncShared();
      connectedOnce = true;
    });
    watchRedis(
      log,
      this.redis,
      Object.fromEntries(
        (Object.entries(this.queues()) as [QueueRole, Queue][]).map(([role, queue]) => [
          `queue:${QUEUES[role]}`,
          queue,
        ]),
      ),
    );
    this.watchRefusals(log);
  }

  /**
   * The refusal model of the connection (src/redis/refusals.ts) logs its episodes and feeds the
   * metrics; when Redis takes work again the shared schedules are checked at once, as after an
   * outage (a schedule's next poll Redis refused to add is restored).
   */
  private watchRefusals(log: Logger): void {
    const refusals = refusalsOf(this.redis);
    refusals.watch(log, this.keys);
    refusals.on('refusal', (reason) => {
      this.metrics.redisRefusals.inc({ reason });
      this.metrics.redisRefusing.set({ reason }, 1);
    });
    refusals.on('accepting', () => {
      this.metrics.redisRefusing.reset();
      void this.resyncShared();
    });
  }

  /** One resync at a time: reconnections that come in bursts (READONLY) share the one running. */
  private readonly resyncShared = singleFlight(() => this.resyncOnce());

  private async resyncOnce(): Promise<void> {
    const route = this.roles.has('route');
    const results = await Promise.allSettled([
      route ? this.router.resync() : undefined,
      route ? this.noise.resync() : undefined,
      this.roles.has('poll') ? this.poller.syncSchedules('keep') : undefined,
    ]);
    for (const r of results) {
      // A refusal is counted and logged as its episode (src/redis/refusals.ts), not once per try.
      if (r.status === 'rejected' && refusalOf(r.reason) === null) {
        this.deps.log.warn(
          { event: 'schedule:failed', err: toError(r.reason).message },
          'could not restore the shared schedules after Redis came back',
        );
      }
    }
  }

  /**
   * What the notifier of channel `name` may use: Redis state under this installation's
   * `{prefix}`, and the egress policy unless the channel is the config file's and the operator
   * exempts those (`server.egress.configChannels`).
   */
  private notifierDeps(name: string): NotifierDeps {
    const source = Object.hasOwn(this.config.channels, name) ? 'config' : 'api';
    const egress = this.egressFor(source);
    return {
      state: { redis: this.redis, key: (...parts) => this.keys.key(...parts) },
      ...(egress === undefined ? {} : { egress }),
      ...(this.config.server.publicUrl === undefined
        ? {}
        : { publicUrl: this.config.server.publicUrl }),
    };
  }

  /** The egress policy a channel defined in the config file or stored through the API follows. */
  private egressFor(source: 'config' | 'api'): EgressPolicy | undefined {
    if (source === 'config' && this.config.server.egress.configChannels === 'exempt')
      return undefined;
    return this.egress;
  }

  get currentConfig(): Config {
    return this.config;
  }

  /**
   * The message templates of channel `name` beyond its own: each subscription's `templates` for
   * it (config file and API alike), and `template:failed` warnings in the log.
   */
  private templateDeps(name: string): NotifierTemplates {
    return {
      subscription: (subscription) => {
        const found = this.api.runtime.subscriptions().find((s) => s.name === subscription);
        const map = found?.templates;
        return map !== undefined && Object.hasOwn(map, name) ? map[name] : undefined;
      },
      warn: (failure) => {
        this.deps.log.warn(
          { event: 'template:failed', ...failure },
          `message template failed (${failure.reason}): the default rendering was sent`,
        );
      },
    };
  }

  /** Poll cycles and deliveries: counted in the metrics and re-emitted as `cycle` / `delivery`. */
  private observeWalk(): void {
    this.poller.on('cycle', (report) => {
      this.metrics.polls.inc({ kind: report.kind, outcome: report.outcome });
      this.metrics.cycleDuration.observe({ kind: report.kind }, report.durationMs / 1000);
      if (report.skipped > 0) this.metrics.skippedRows.inc({ kind: report.kind }, report.skipped);
      for (const t of report.transitions) this.metrics.transitions.inc({ kind: t.kind });
      this.emit('cycle', report);
    });
    this.poller.on('poll:rate_limited', (kind) => {
      this.metrics.polls.inc({ kind, outcome: 'rate_limited' });
    });
    this.deliveryWorker.on('delivery', (d) => {
      this.metrics.deliveries.inc({
        channel_type: d.channelType,
        outcome: d.outcome,
        reason: d.reason ?? '',
      });
      if (d.outcome === 'sent')
        this.metrics.deliveryLatency.observe({ channel_type: d.channelType }, d.latencyMs / 1000);
      this.emit('delivery', d);
    });
  }

  private subscribedCategories(): string[] {
    return this.api.runtime.categories();
  }

  /** The Slack app buttons' handler on the ops server (docs/acting-on-alerts.md). */
  private slackButtons(): { slack?: SlackInteractions } {
    const acks = this.api.acks;
    if (acks === null) return {};
    return {
      slack: new SlackInteractions({
        redis: this.redis,
        keys: this.keys,
        log: this.deps.log,
        path: () => this.config.server.slackInteractionsPath,
        channels: () => this.channels.all(),
        subscriptions: () => this.api.runtime.subscriptions(),
        deps: (name) => this.notifierDeps(name),
        noise: this.noiseStore,
        acks,
        createSilence: (actor, draft) => this.api.createSilence(actor, draft),
        ...(this.deps.now === undefined ? {} : { now: this.deps.now }),
      }),
    };
  }

  /** Replaces the channel registry (config file + API channels); the old one closes in 30 s. */
  private swapChannels(channels: Record<string, ChannelConfig>): void {
    // A channel stored through the API brings secrets no config file held.
    addLogSecrets(this.deps.log, Object.values(channels).flatMap(channelSecrets));
    const old = this.channels;
    this.channels = new ChannelRegistry(channels, (name) => ({
      ...this.notifierDeps(name),
      templates: this.templateDeps(name),
    }));
    setTimeout(() => void old.close(), 30_000).unref();
  }

  async start(): Promise<void> {
    const { log } = this.deps;
    // The ops server first: /healthz answers (and /readyz says "not ready") while the start
    // waits for Redis, so a liveness probe does not restart a pod that waits for its Redis, and
    // a port already in use fails the start before any job is taken.
    if (this.deps.server !== false) await this.startOps();
    // A stop while the start waits (for Redis, say) ends the start: nothing more is started
    // (and the PING its disconnect refuses is not a failure).
    try {
      await this.redis.ping();
    } catch (err) {
      if (this.stopping()) return;
      throw err;
    }
    if (this.stopping()) return;
    // Once, before any job: an evicting maxmemory-policy, and the commands the ACL user lacks.
    await startupChecks(this.redis, this.keys, log);
    if (this.stopping()) return;
    await this.api.start();
    if (this.roles.has('route')) await this.oweClosingsOfVanished();
    if (this.stopping()) return;
    // The router, the noise ticker, the delivery worker; then the poller that feeds them.
    await this.stages.start(this.roles);
    if (this.stopping()) return;
    if (this.roles.has('poll')) await this.poller.start();
    if (this.stopping()) return;
    this.running = true;
    const plan = planOf(this.config);
    log.info(
      {
        event: 'app:started',
        port: this.port,
        planPerMinute: Math.round(plan.total * 100) / 100,
        budgetPerMinute: plan.budget,
        channels: Object.keys(this.config.channels).length,
        subscriptions: this.config.subscriptions.length,
        roles: [...this.roles],
      },
      'statuswatch started',
    );
  }

  private async startOps(): Promise<void> {
    const { log } = this.deps;
    // Loaded here, by the one thread that serves HTTP: the worker threads' isolates never hold
    // the console's code (scripts/bundle.mjs puts it in a chunk of its own).
    const { createAppConsole } = await import('./console/index.js');
    this.ops = new OpsServer({
      ...(this.deps.ownOutbound === true ? { ownSockets: trackOwnSockets() } : {}),
      port: this.deps.port ?? this.config.server.port,
      host: this.config.server.host,
      metrics: this.metrics,
      ...(this.deps.peers === undefined ? {} : { peerMetrics: () => this.peerMetrics() }),
      log,
      readiness: () => this.readiness(),
      adminToken: () => this.config.server.adminToken,
      beforeScrape: () => this.sampleQueuesOnce(),
      admin: {
        deadLetters: () => this.deliveries.deadLetters(),
        retryDeadLetter: (id) => this.stages.retryDeadLetter(id),
        serviceState: (feedId) => this.serviceState(feedId),
        vocabulary: () => this.vocabulary.report(),
      },
      ...this.slackButtons(),
      api: this.api.http,
      console: createAppConsole({
        redis: this.redis,
        keys: this.keys,
        history: this.history,
        catalog: this.pipeline.catalog,
        categories: this.categories,
        deliveries: this.deliveries,
        retryDeadLetter: (id) => this.stages.retryDeadLetter(id),
        silences: this.silences,
        api: this.api,
        server: () => this.config.server,
        pollKinds: () => (this.client.hasPremium ? POLL_KINDS : ['status', 'incidents']),
        log,
        now: this.deps.now ?? Date.now,
      }),
    });
    this.port = await this.ops.start();
  }

  /** The other threads' metrics (none when this App has no peers). */
  private async peerMetrics(): Promise<unknown[][]> {
    return (await this.deps.peers?.metrics()) ?? [];
  }

  /** The last readiness answered (null before the first probe). */
  private wasReady: boolean | null = null;

  /**
   * Ready when Redis answers a PING within a second (never queued: not ready at once while the
   * connection is down, one PING at a time while Redis stalls), workers run and config is loaded.
   * A change is logged once (`readiness:changed`): a paused or stalled Redis raises no connection
   * error, so this line is the only one it leaves.
   */
  async readiness(): Promise<Readiness> {
    // The other threads answer meanwhile (each probes Redis on its own connections).
    const peersAsked = this.deps.peers?.readiness();
    const redis = await answersWithin(this.redis, READINESS_TIMEOUT_MS);
    // Answering is not enough: a full, demoted or paused Redis answers PING and refuses writes.
    const refusals = refusalsOf(this.redis);
    const writes = redis && (await refusals.writable(READINESS_TIMEOUT_MS)).ok;
    const refusing = refusals.current();
    const peers = peersAsked === undefined ? null : Object.values(await peersAsked);
    const checks = {
      redis,
      writes,
      workers: this.running,
      config: true,
      ...(peers === null ? {} : { threads: peers.every((p) => p?.ready === true) }),
    };
    const ready = Object.values(checks).every(Boolean) && refusing === null;
    if (this.deps.logReadiness !== false && this.wasReady !== null && ready !== this.wasReady) {
      const fields = { event: 'readiness:changed', ready, checks };
      if (ready) this.deps.log.info(fields, 'ready again');
      else this.deps.log.warn(fields, 'not ready');
    }
    this.wasReady = ready;
    const own: Readiness['redis'] =
      refusing === null
        ? undefined
        : {
            refusing: refusing.reasons,
            hint: REFUSAL_HINTS[refusing.reasons[0] ?? 'stalled'],
            since: new Date(refusing.since).toISOString(),
            ...(refusing.commands === undefined ? {} : { commands: refusing.commands }),
          };
    // A refusal one thread sees (a command only its stages run, say) is the process's too.
    const redisRefusing = mergeRefusals([own, ...(peers ?? []).map((p) => p?.redis)]);
    return redisRefusing === undefined
      ? { ready, checks }
      : { ready, checks, redis: redisRefusing };
  }

  /** Every queue of the installation, by role (the table in src/queues.ts). */
  private queues(): Record<QueueRole, Queue> {
    return {
      poll: this.poller.queue,
      transitions: this.handoff.queue,
      deliveries: this.deliveries.batches,
      deliveryRetries: this.deliveries.retries,
      noise: this.noise.queue,
    };
  }

  /**
   * One sampling at a time: scrapes during a Redis outage do not pile commands up (a scrape that
   * gave up waiting leaves it running).
   */
  private readonly sampleQueuesOnce = singleFlight(() => this.sampleQueues());

  private async sampleQueues(): Promise<void> {
    const states = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;
    for (const [role, queue] of Object.entries(this.queues()) as [QueueRole, Queue][]) {
      const name = QUEUES[role];
      const counts = await queue.getJobCounts(...states);
      for (const state of states)
        this.metrics.queueDepth.set({ queue: name, state }, counts[state] ?? 0);
    }
    this.metrics.deadLetters.set(await this.deliveries.failedJobs());
  }

  /**
   * What statuswatch currently believes about one service (admin API); null when it knows
   * nothing of it (not in the upstream catalog, in no snapshot).
   */
  async serviceState(feedId: string): Promise<Record<string, unknown> | null> {
    const out: Record<string, unknown> = { feedId };
    let known = (await this.pipeline.catalog.refs([feedId])).has(feedId);
    for (const kind of ['status', 'incidents', 'sla', 'scores'] as const) {
      const store = new SnapshotStore<unknown>(this.redis, this.keys, kind);
      const entry = (await store.get([feedId])).get(feedId) ?? null;
      if (entry !== null) known = true;
      out[kind] = entry;
    }
    return known ? out : null;
  }

  /**
   * Swaps channels and subscriptions. Other sections need a restart (logged). Throws
   * `BudgetError`, changing nothing, when the new subscriptions' categories would take the
   * running polls over the request budget (the check a start makes).
   */
  reload(next: Config): void {
    const { log } = this.deps;
    const plan = planOf({ ...this.config, subscriptions: next.subscriptions });
    if (!plan.ok) throw new BudgetError(plan);
    addLogSecrets(log, secretValues(next));
    const restartNeeded = (
      ['upstream', 'redis', 'poll', 'server', 'rules', 'daemon'] as const
    ).filter((section) => JSON.stringify(next[section]) !== JSON.stringify(this.config[section]));
    const kept = new Set(next.subscriptions.map((s) => s.name));
    const gone = this.config.subscriptions.map((s) => s.name).filter((name) => !kept.has(name));
    this.config = {
      ...this.config,
      channels: next.channels,
      subscriptions: next.subscriptions,
      rules: this.config.rules,
    };
    // Merged again with the API's channels and subscriptions (swaps the channel registry). A
    // subscription gone from the file is owed the closings of what it was told, as one deleted
    // through the API: here at once, on every replica and after a restart once its tombstone is
    // stored.
    const until = (this.deps.now ?? Date.now)() + this.api.store.tombstoneMs;
    const removed = this.api.runtime.configChanged(gone, until);
    this.metrics.configReloads.inc({ outcome: 'ok' });
    log.info(
      {
        event: 'config:reloaded',
        channels: Object.keys(next.channels).length,
        subscriptions: next.subscriptions.length,
      },
      'channels and subscriptions reloaded',
    );
    this.oweClosings(removed, until);
    if (restartNeeded.length > 0) {
      log.warn(
        { event: 'config:restart_needed', sections: restartNeeded },
        `changes to ${restartNeeded.join(', ')} take effect after a restart`,
      );
    }
  }

  /**
   * Subscriptions that were told openings and are no longer defined (by the config file or the
   * API) nor owed their closings: a config file edited while every replica was down (a Helm
   * upgrade restarts the pods with the new file, no reload sees the change). They become
   * tombstones as a reload's removals do, for the same period from now.
   */
  private async oweClosingsOfVanished(): Promise<void> {
    const told = await this.noiseStore.toldSubscriptions();
    const live = new Set(this.api.runtime.subscriptions().map((s) => s.name));
    const owed = this.api.runtime.owedClosings();
    const vanished = [...told].filter((name) => !live.has(name) && !owed.has(name)).sort();
    if (vanished.length === 0) return;
    const until = (this.deps.now ?? Date.now)() + this.api.store.tombstoneMs;
    this.oweClosings(this.api.runtime.configChanged(vanished, until), until);
  }

  /**
   * Config-file subscriptions gone (`removed`, as `ApiRuntime.configChanged` returned them): logged,
   * and stored as tombstones owed closings until `until` (every replica, and after restarts).
   */
  private oweClosings(removed: readonly string[], until: number): void {
    const { log } = this.deps;
    if (removed.length === 0) return;
    const owedUntil = new Date(until).toISOString();
    log.info(
      {
        event: 'config:subscriptions_removed',
        subscriptions: removed,
        closingsOwedUntil: owedUntil,
      },
      `subscriptions removed from the config file: ${removed.join(', ')}; they still get the closings of what they were told until ${owedUntil}`,
    );
    this.burying = this.burying
      .then(() => this.api.store.buryConfigSubscriptions(removed, until))
      .then(
        () => undefined,
        (err: unknown) => {
          log.warn(
            {
              event: 'config:tombstones_failed',
              subscriptions: removed,
              err: toError(err).message,
            },
            'could not store the tombstones of removed subscriptions: only this replica, until it restarts, sends them their owed closings',
          );
        },
      );
  }

  /** Resolves once the tombstones of the reloads so far are stored (or failed), or after `ms`. */
  private tombstonesStored(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      void this.burying.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Drains: stop taking jobs, let in-flight ones finish (BullMQ hands back the rest), close everything. */
  /** Set by `stop()`: a start still in progress starts nothing more. */
  private stopRequested = false;

  /** Whether a stop has begun (read after each await of the start). */
  private stopping(): boolean {
    return this.stopRequested;
  }

  async stop(): Promise<void> {
    const { log } = this.deps;
    this.stopRequested = true;
    this.running = false;
    log.info({ event: 'app:stopping' }, 'draining');
    refusalsOf(this.redis).close();
    await Promise.allSettled([
      this.poller.stop(),
      this.stages.stopWorkers(),
      this.tombstonesStored(STOP_TOMBSTONES_MS),
    ]);
    await Promise.allSettled([this.stages.closeQueues(), this.ops?.stop(), this.api.stop()]);
    await this.channels.close();
    await this.client.close();
    // QUIT waits behind the commands queued while Redis is away (a start waiting for it): a
    // connection that is not up is dropped instead.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    else this.redis.disconnect();
    log.info({ event: 'app:stopped' }, 'stopped');
  }
}
