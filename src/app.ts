import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { StatuswatchError } from './errors.js';
import type { Config } from './config/schema.js';
import { answersWithin, createKeys, createRedis, watchRedis, type Keys } from './redis.js';
import { budgetOf, describeOverBudget, planRequests, type Plan } from './budget/plan.js';
import { createUpstreamClient, type UpstreamClient } from './upstream/index.js';
import { Pipeline, type CycleReport, type PollKind } from './pipeline/cycle.js';
import { VocabularyRecorder } from './pipeline/vocabulary.js';
import { Handoff } from './pipeline/handoff.js';
import { Poller } from './scheduler/poller.js';
import { CategoryStore } from './routing/categories.js';
import { Router } from './routing/router.js';
import type { NotifierDeps } from './notify/kind.js';
import { ChannelRegistry } from './delivery/channels.js';
import { DeliveryQueue } from './delivery/queue.js';
import { DeliveryWorker, type DeliveryOutcome } from './delivery/worker.js';
import { createMetrics, type Metrics } from './server/metrics.js';
import { OpsServer, type Readiness } from './server/ops.js';
import { SnapshotStore } from './snapshot/store.js';
import { SilenceStore } from './silences/store.js';
import { NoiseStore } from './noise/store.js';
import { monthlyFigures } from './noise/monthly.js';
import { NoiseTicker } from './noise/ticker.js';
import type { Queue } from 'bullmq';
import { QUEUES, type QueueRole } from './queues.js';

export class BudgetError extends StatuswatchError {
  constructor(readonly plan: Plan) {
    super('budget_exceeded', describeOverBudget(plan));
  }
}

/** How long /readyz waits for Redis to answer a PING. */
const READINESS_TIMEOUT_MS = 1_000;

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
  readonly redis: Redis;
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
  private channels: ChannelRegistry;
  private ops: OpsServer | null = null;
  private running = false;
  port: number | null = null;

  constructor(
    private config: Config,
    private readonly deps: AppDeps,
  ) {
    super();
    const plan = planOf(config);
    if (!plan.ok) throw new BudgetError(plan);
    const { log } = deps;
    const now = deps.now ?? Date.now;
    this.metrics = deps.metrics ?? createMetrics();
    this.keys = createKeys(config.redis.prefix);
    this.redis = createRedis(config.redis.url, { connectionName: 'statuswatch' });
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
    this.handoff = new Handoff(this.redis, this.keys);
    this.vocabulary = new VocabularyRecorder({
      redis: this.redis,
      keys: this.keys,
      log,
      unknownValues: this.metrics.unknownValues,
      now,
    });
    this.pipeline = new Pipeline({
      vocabulary: this.vocabulary,
      client: this.client,
      redis: this.redis,
      keys: this.keys,
      handoff: this.handoff,
      log,
      rules: { ...config.rules, confirmationsPerCycle: plan.confirmationsPerCycle },
      now,
    });
    const intervals: Partial<Record<PollKind, number>> = {
      status: config.poll.status,
      incidents: config.poll.incidents,
    };
    if (this.client.hasPremium) {
      intervals.sla = config.poll.sla;
      intervals.scores = config.poll.scores;
    }
    this.categories = new CategoryStore(this.redis, this.keys, now);
    this.poller = new Poller({
      connection: this.redis,
      keys: this.keys,
      pipeline: this.pipeline,
      intervals,
      budget: budgetOf(config.upstream.requestsPerMinute, this.client.hasPremium),
      apiKey: config.upstream.apiKey,
      log,
      now,
      refreshCategories: () =>
        this.categories.refresh(this.client, this.subscribedCategories(), log),
    });
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
    this.deliveries = new DeliveryQueue(this.redis, this.keys);
    this.noiseStore = new NoiseStore(this.redis, this.keys);
    this.silences = new SilenceStore(this.redis, this.keys, now);
    this.router = new Router({
      connection: this.redis,
      keys: this.keys,
      subscriptions: () => this.config.subscriptions,
      categories: this.categories,
      deliveries: this.deliveries,
      noise: { store: this.noiseStore, silences: () => this.silences.active() },
      log,
      now,
    });
    this.noise = new NoiseTicker({
      connection: this.redis,
      keys: this.keys,
      store: this.noiseStore,
      deliveries: this.deliveries,
      subscriptions: () => this.config.subscriptions,
      silences: () => this.silences.active(),
      premium: () => this.client.hasPremium,
      monthly: monthlyFigures(this.client),
      log,
      now,
      ...(deps.noiseTickMs === undefined ? {} : { everyMs: deps.noiseTickMs }),
    });
    this.channels = new ChannelRegistry(config.channels, this.notifierDeps());
    this.deliveryWorker = new DeliveryWorker({
      connection: this.redis,
      keys: this.keys,
      deliveries: this.deliveries,
      channels: () => this.channels,
      log,
      now,
      ...(deps.deliveryLockMs === undefined ? {} : { lockDurationMs: deps.deliveryLockMs }),
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
    // One line per Redis state change, not per reconnect attempt; and an `error` listener on
    // every BullMQ queue (the workers have theirs), else BullMQ dumps each error to stderr.
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
  }

  /** What every notifier may use: Redis state under this installation's `{prefix}`. */
  private notifierDeps(): NotifierDeps {
    return { state: { redis: this.redis, key: (...parts) => this.keys.key(...parts) } };
  }

  get currentConfig(): Config {
    return this.config;
  }

  private subscribedCategories(): string[] {
    return [...new Set(this.config.subscriptions.flatMap((s) => s.categories))];
  }

  async start(): Promise<void> {
    const { log } = this.deps;
    await this.redis.ping();
    await this.router.start();
    await this.noise.start();
    this.deliveryWorker.start();
    await this.poller.start();
    if (this.deps.server !== false) {
      this.ops = new OpsServer({
        port: this.deps.port ?? this.config.server.port,
        host: this.config.server.host,
        metrics: this.metrics,
        log,
        readiness: () => this.readiness(),
        adminToken: () => this.config.server.adminToken,
        beforeScrape: () => this.sampleQueues(),
        admin: {
          silences: this.silences,
          deadLetters: () => this.deliveries.deadLetters(),
          retryDeadLetter: (id) => this.deliveries.retryDeadLetter(id),
          serviceState: (feedId) => this.serviceState(feedId),
          vocabulary: () => this.vocabulary.report(),
        },
      });
      this.port = await this.ops.start();
    }
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
      },
      'statuswatch started',
    );
  }

  /**
   * Ready when Redis answers a PING within a second (never queued: not ready at once while the
   * connection is down, one PING at a time while Redis stalls), workers run and config is loaded.
   */
  async readiness(): Promise<Readiness> {
    const redis = await answersWithin(this.redis, READINESS_TIMEOUT_MS);
    const checks = { redis, workers: this.running, config: true };
    return { ready: Object.values(checks).every(Boolean), checks };
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

  /** Swaps channels and subscriptions. Other sections need a restart (logged). */
  reload(next: Config): void {
    const { log } = this.deps;
    const restartNeeded = (['upstream', 'redis', 'poll', 'server'] as const).filter(
      (section) => JSON.stringify(next[section]) !== JSON.stringify(this.config[section]),
    );
    const old = this.channels;
    this.config = {
      ...this.config,
      channels: next.channels,
      subscriptions: next.subscriptions,
      rules: this.config.rules,
    };
    this.channels = new ChannelRegistry(next.channels, this.notifierDeps());
    this.metrics.configReloads.inc({ outcome: 'ok' });
    log.info(
      {
        event: 'config:reloaded',
        channels: Object.keys(next.channels).length,
        subscriptions: next.subscriptions.length,
      },
      'channels and subscriptions reloaded',
    );
    if (restartNeeded.length > 0) {
      log.warn(
        { event: 'config:restart_needed', sections: restartNeeded },
        `changes to ${restartNeeded.join(', ')} take effect after a restart`,
      );
    }
    setTimeout(() => void old.close(), 30_000).unref();
  }

  /** Drains: stop taking jobs, let in-flight ones finish (BullMQ hands back the rest), close everything. */
  async stop(): Promise<void> {
    const { log } = this.deps;
    this.running = false;
    log.info({ event: 'app:stopping' }, 'draining');
    await Promise.allSettled([
      this.poller.stop(),
      this.router.stop(),
      this.noise.stop(),
      this.deliveryWorker.stop(),
    ]);
    await Promise.allSettled([this.handoff.close(), this.deliveries.close(), this.ops?.stop()]);
    await this.channels.close();
    await this.client.close();
    await this.redis.quit().catch(() => undefined);
    log.info({ event: 'app:stopped' }, 'stopped');
  }
}
