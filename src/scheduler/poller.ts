import { EventEmitter } from 'node:events';
import { createHash } from 'node:crypto';
import { Worker, type Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import { CATALOG_INTERVAL_MS, CATEGORY_CHECK_MS, limiterFor } from '../budget/plan.js';
import {
  PREMIUM_KINDS,
  type CycleReport,
  type Pipeline,
  type PollKind,
} from '../pipeline/cycle.js';
import { UpstreamError } from '../upstream/index.js';
import type { RateLimitInfo } from '../upstream/model.js';
import { QUEUES, openQueue, startKeeper, startWorker } from '../queues.js';
import { refusalsOf } from '../redis/refusals.js';

export const POLL_QUEUE = QUEUES.poll;

export type PollJobKind = PollKind | 'catalog' | 'categories';
export interface PollJob {
  kind: PollJobKind;
}

export interface PollerOptions {
  connection: RedisClient;
  keys: Keys;
  pipeline: Pipeline;
  /** Intervals (ms) of the polls to schedule; a kind left out is not polled (and its schedule removed). */
  intervals: Partial<Record<PollKind, number>>;
  /** Requests per minute the upstream allows this installation (shared by all replicas). */
  budget: number;
  /** Any stable fingerprint of the API key: premium polls disabled on 401/403 re-enable when it changes. */
  apiKey: string | undefined;
  log: Logger;
  concurrency?: number;
  /** Resolves subscribed categories (GET /services?category=); looked at every minute when given. */
  refreshCategories?: () => Promise<unknown>;
  /** How often each replica checks that its schedules still exist (they vanish with a FLUSHALL). */
  keeperIntervalMs?: number;
  /** A cycle's lease on its kind, renewed every third of it while the cycle runs; default 120 s. */
  leaseMs?: number;
  now?: () => number;
}

export interface PollerEvents {
  cycle: [CycleReport];
  'poll:disabled': [PollKind, string];
  'poll:rate_limited': [PollJobKind, number];
}

/** Pause the queue once Remaining falls to this share of the limit, until the window resets. */
const LOW_WATER_SHARE = 0.1;
const MAX_PAUSE_MS = 120_000;
/**
 * One cycle's lease on its kind: a crashed holder frees it after this. A live cycle renews it
 * every third of it, so a slow one (confirming reads that time out one after another) is not
 * joined by a second cycle of its kind that would load the same snapshot and hand off the same
 * changes.
 */
const LEASE_MS = 120_000;
/** How many leases a cycle may run for (renewed) before its lease is left to expire. */
const MAX_CYCLE_LEASES = 5;
/** First and longest pause between tries to release a lease whose release failed. */
const RELEASE_RETRY_MS = 250;
const RELEASE_RETRY_MAX_MS = 2_000;
const RELEASE_SCRIPT =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
const RENEW_SCRIPT =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

/**
 * Poll kinds start this far apart (at most; less when an interval is short): an incidents cycle
 * and a status cycle that fire together share one event loop, and a new incident waits for the
 * status list (thousands of rows) to be parsed too. Incidents go first.
 */
export const STAGGER_STEP_MS = 500;
export const STAGGER_ORDER: readonly PollKind[] = ['incidents', 'status', 'sla', 'scores'];
/** How far a kind's phase may drift off its stagger before a start puts it back. */
export const REALIGN_TOLERANCE_MS = 100;

/**
 * How long after a schedule is (re)created its first poll comes: the kind's place in
 * STAGGER_ORDER times STAGGER_STEP_MS, or a fair share of a short interval. Schedules created
 * together (a first start, a new budget) keep these phases apart from then on.
 */
export function staggerMs(kind: PollJobKind, everyMs: number): number {
  const place = (STAGGER_ORDER as readonly PollJobKind[]).indexOf(kind);
  if (place <= 0) return 0;
  return place * Math.min(STAGGER_STEP_MS, Math.floor(everyMs / STAGGER_ORDER.length));
}

function fingerprint(apiKey: string | undefined): string {
  return apiKey === undefined || apiKey === ''
    ? 'none'
    : createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
}

/**
 * Polls on BullMQ: one job scheduler per configured kind (upserted idempotently, so N replicas
 * still make one poll per interval), one worker per replica, and BullMQ's global rate limiter on
 * the shared queue so the replicas together stay within the upstream's budget. A 429 pauses the
 * whole queue (every replica) for Retry-After and puts the job back; a low X-RateLimit-Remaining
 * pauses it until the window resets, before a 429 happens.
 */
export class Poller extends EventEmitter<PollerEvents> {
  readonly queue: Queue<PollJob>;
  private worker: Worker<PollJob> | null = null;
  private stopKeeper: (() => void) | null = null;
  private readonly disabledKey: string;
  private readonly now: () => number;

  constructor(private readonly options: PollerOptions) {
    super();
    this.now = options.now ?? Date.now;
    this.queue = openQueue<PollJob>('poll', options, {
      defaultJobOptions: {
        removeOnComplete: { count: 200 },
        removeOnFail: { count: 200 },
        attempts: 1,
      },
    });
    this.disabledKey = options.keys.key('poll', 'disabled');
  }

  private schedulerId(kind: PollJobKind): string {
    return `poll-${kind}`;
  }

  /** The wanted schedules: configured kinds minus disabled premium ones, plus the catalog. */
  private async wanted(): Promise<Map<PollJobKind, number>> {
    const disabled = await this.options.connection.hgetall(this.disabledKey);
    const fp = fingerprint(this.options.apiKey);
    const out = new Map<PollJobKind, number>();
    for (const [kind, every] of Object.entries(this.options.intervals) as [PollKind, number][]) {
      if (disabled[kind] === fp) continue;
      out.set(kind, every);
    }
    out.set('catalog', CATALOG_INTERVAL_MS);
    if (this.options.refreshCategories !== undefined) out.set('categories', CATEGORY_CHECK_MS);
    return out;
  }

  /** Upserts the wanted schedules that are missing or changed and removes the others. Idempotent. */
  async syncSchedules(mode: 'start' | 'keep' = 'start'): Promise<void> {
    const wanted = await this.wanted();
    const existing = await this.queue.getJobSchedulers(0, -1);
    const have = new Map(existing.map((s) => [s.key, s.every ?? null]));
    for (const [kind, every] of wanted) {
      const id = this.schedulerId(kind);
      const current = have.get(id);
      // At start a replica applies its own intervals; afterwards it only restores missing
      // schedules, so replicas with different configs during a rollout do not flip-flop them.
      if (current === every || (mode === 'keep' && current !== undefined)) continue;
      // BullMQ's clock (Date.now), not the injected one: the start date is compared with it.
      const startDate = Date.now() + staggerMs(kind, every);
      await this.queue.upsertJobScheduler(id, { every, startDate }, { name: kind, data: { kind } });
      this.options.log.info(
        { event: 'schedule:upserted', kind, everyMs: every },
        `poll ${kind} every ${every} ms`,
      );
    }
    if (mode === 'start') await this.realign(wanted);
    for (const s of existing) {
      const kind = s.key.replace(/^poll-/, '') as PollJobKind;
      if (!wanted.has(kind)) {
        await this.queue.removeJobScheduler(s.key);
        this.options.log.info(
          { event: 'schedule:removed', kind },
          `poll ${kind} no longer scheduled`,
        );
      }
    }
  }

  /**
   * Puts each kind polled as often as incidents back at its stagger after the incidents slots
   * (`staggerMs`), when it drifted off it by more than REALIGN_TOLERANCE_MS: schedules created
   * before the stagger existed, or by replicas that started apart. Only the drifted kind moves,
   * to the first slot of its phase from now (one poll of it may come up to an interval late).
   */
  private async realign(wanted: ReadonlyMap<PollJobKind, number>): Promise<void> {
    const schedulers = await this.queue.getJobSchedulers(0, -1);
    const nextOf = (kind: PollJobKind): number | undefined =>
      schedulers.find((s) => s.key === this.schedulerId(kind))?.next ?? undefined;
    const every = wanted.get('incidents');
    const anchor = nextOf('incidents');
    if (every === undefined || anchor === undefined) return;
    for (const kind of STAGGER_ORDER) {
      if (kind === 'incidents' || wanted.get(kind) !== every) continue;
      const next = nextOf(kind);
      if (next === undefined) continue;
      const wantedPhase = staggerMs(kind, every) % every;
      const phase = (((next - anchor) % every) + every) % every;
      const off = Math.abs(phase - wantedPhase);
      if (Math.min(off, every - off) <= REALIGN_TOLERANCE_MS) continue;
      let startDate = anchor + wantedPhase;
      const now = Date.now();
      while (startDate < now) startDate += every;
      const id = this.schedulerId(kind);
      await this.queue.removeJobScheduler(id);
      await this.queue.upsertJobScheduler(id, { every, startDate }, { name: kind, data: { kind } });
      this.options.log.info(
        {
          event: 'schedule:realigned',
          kind,
          everyMs: every,
          phaseMs: phase,
          wantedMs: wantedPhase,
        },
        `poll ${kind} moved to ${String(wantedPhase)} ms after the incidents polls (was ${String(phase)} ms)`,
      );
    }
  }

  async start(): Promise<void> {
    await this.syncSchedules();
    await this.queue.add(
      'catalog',
      { kind: 'catalog' },
      { jobId: 'catalog-start', removeOnComplete: true, removeOnFail: true },
    );
    this.worker = startWorker('poll', (job: Job<PollJob>) => this.process(job), this.options, {
      concurrency: this.options.concurrency ?? 2,
      limiter: limiterFor(this.options.budget),
      removeOnComplete: { count: 200 },
      removeOnFail: { count: 200 },
    });
    this.stopKeeper = startKeeper(
      this.options.keeperIntervalMs ?? 30_000,
      () => this.syncSchedules('keep'),
      this.options.log,
      {
        event: 'schedule:failed',
        message: 'could not sync poll schedules',
        refusals: refusalsOf(this.options.connection),
      },
    );
  }

  private async process(job: Job<PollJob>): Promise<void> {
    const { kind } = job.data;
    try {
      if (kind === 'catalog') {
        await this.options.pipeline.refreshCatalog(CATALOG_INTERVAL_MS / 2);
        return;
      }
      if (kind === 'categories') {
        // One look at a time across replicas: a slow one (timeouts, one category after the
        // other) is not joined by the next minute's.
        const lease = await this.lease(kind);
        if (lease === null) return;
        try {
          await this.options.refreshCategories?.();
        } finally {
          await lease.release();
        }
        return;
      }
      // One cycle per kind at a time across replicas: a cycle slower than its interval is not
      // joined by the next one (the snapshot compare-and-set would refuse one of them anyway).
      const lease = await this.lease(kind);
      if (lease === null) {
        this.options.log.debug({ event: 'poll:skipped', kind }, `a ${kind} cycle is still running`);
        return;
      }
      let report: CycleReport;
      try {
        report = await this.options.pipeline.runCycle(kind);
      } finally {
        await lease.release();
      }
      this.emit('cycle', report);
      if (
        report.error !== null &&
        PREMIUM_KINDS.has(kind) &&
        (report.error.code === 'upstream_unauthorized' ||
          report.error.code === 'upstream_forbidden')
      ) {
        await this.disable(kind, report.error.code);
      }
      if (report.rateLimit !== null) await this.slowDown(report.rateLimit);
    } catch (err) {
      if (err instanceof UpstreamError && err.code === 'upstream_rate_limited') {
        const waitMs = Math.min(MAX_PAUSE_MS, Math.max(1000, (err.retryAfterSeconds ?? 60) * 1000));
        this.options.log.warn(
          { event: 'poll:rate_limited', kind, retryAfterMs: waitMs },
          `429 from upstream: pausing polls ${waitMs} ms`,
        );
        await this.queue.rateLimit(waitMs);
        this.emit('poll:rate_limited', kind, waitMs);
        throw Worker.RateLimitError();
      }
      if (err instanceof UpstreamError && (kind === 'catalog' || kind === 'categories')) {
        // The next scheduled refresh tries again; stale membership is better than a retry storm.
        this.options.log.warn(
          { event: `${kind}:failed`, code: err.code },
          `${kind} refresh failed`,
        );
        return;
      }
      throw err;
    }
  }

  private async lease(kind: PollKind | 'categories'): Promise<{ release(): Promise<void> } | null> {
    const key = this.options.keys.key('poll', 'lease', kind);
    const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
    const leaseMs = this.options.leaseMs ?? LEASE_MS;
    const ok = await this.options.connection.set(key, token, 'PX', leaseMs, 'NX');
    if (ok !== 'OK') return null;
    const release = async (): Promise<void> => {
      await this.options.connection.eval(RELEASE_SCRIPT, 1, key, token);
    };
    // Renewed for at most MAX_CYCLE_LEASES leases: a cycle stuck for ever (an await that never
    // settles) must not keep its kind unpolled for ever.
    let renewals = 0;
    const renewal = setInterval(
      () => {
        renewals += 1;
        if (renewals > MAX_CYCLE_LEASES * 3) {
          clearInterval(renewal);
          this.options.log.warn(
            { event: 'poll:lease_abandoned', kind },
            `a ${kind} cycle has run for ${String(MAX_CYCLE_LEASES)} leases: its lease is no longer renewed`,
          );
          return;
        }
        this.options.connection
          .eval(RENEW_SCRIPT, 1, key, token, String(leaseMs))
          .then((renewed) => {
            if (renewed === 0)
              this.options.log.warn(
                { event: 'poll:lease_lost', kind },
                `the ${kind} poll lease expired while its cycle ran`,
              );
          })
          .catch((err: unknown) => {
            this.options.log.warn(
              { event: 'poll:lease_renew_failed', kind, err: toError(err).message },
              `could not renew the ${kind} poll lease`,
            );
          });
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    renewal.unref();
    return {
      release: async () => {
        clearInterval(renewal);
        try {
          await release();
        } catch (err) {
          // A release refused mid-failover (or on a lost connection) would leave the kind
          // unpolled for the rest of LEASE_MS: keep trying in the background instead.
          this.options.log.warn(
            { event: 'poll:lease_release_failed', kind, err: toError(err).message },
            `could not release the ${kind} poll lease; trying again`,
          );
          void this.retryRelease(kind, release);
        }
      },
    };
  }

  /** Tries `release` again, backing off, until it succeeds, the lease expires or the poller stops. */
  private async retryRelease(
    kind: PollKind | 'categories',
    release: () => Promise<void>,
  ): Promise<void> {
    const until = Date.now() + (this.options.leaseMs ?? LEASE_MS);
    let pause = RELEASE_RETRY_MS;
    while (this.worker !== null && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
      try {
        await release();
        this.options.log.info(
          { event: 'poll:lease_released', kind },
          `released the ${kind} poll lease`,
        );
        return;
      } catch {
        pause = Math.min(RELEASE_RETRY_MAX_MS, pause * 2);
      }
    }
  }

  /** Pause before a 429: when Remaining is at the low-water mark, wait for the window to reset. */
  private async slowDown(rate: RateLimitInfo): Promise<void> {
    if (rate.remaining === null || rate.limit === null || rate.reset === null) return;
    if (rate.remaining > Math.max(1, Math.floor(rate.limit * LOW_WATER_SHARE))) return;
    const waitMs = Math.min(MAX_PAUSE_MS, rate.reset * 1000 - this.now() + 250);
    if (waitMs <= 0) return;
    this.options.log.info(
      { event: 'poll:slowdown', remaining: rate.remaining, waitMs },
      'rate limit nearly used up: pausing polls until it resets',
    );
    await this.queue.rateLimit(waitMs);
  }

  private async disable(kind: PollKind, code: string): Promise<void> {
    await this.options.connection.hset(this.disabledKey, kind, fingerprint(this.options.apiKey));
    await this.queue.removeJobScheduler(this.schedulerId(kind));
    this.options.log.error(
      { event: 'poll:disabled', kind, code },
      `premium poll ${kind} disabled after ${code}: check the API key and its scopes, then restart or change the key`,
    );
    this.emit('poll:disabled', kind, code);
  }

  /** Stops taking jobs, lets in-flight cycles finish, closes the queue. */
  async stop(): Promise<void> {
    this.stopKeeper?.();
    this.stopKeeper = null;
    if (this.worker !== null) await this.worker.close();
    this.worker = null;
    await this.queue.close();
  }
}
