/**
 * `statuswatch run` as one object: the main thread's `App` (ops server, API, console and the
 * roles the thread plan gives it) and the worker threads that run the rest
 * (src/runtime/plan.ts, src/runtime/supervisor.ts). `cli.ts` parses arguments and signals; tests
 * build it the same way.
 */
import type { Logger } from 'pino';
import { App } from '../app.js';
import type { Config } from '../config/schema.js';
import { createMetrics } from '../server/metrics.js';
import { usableCores } from './cores.js';
import { planThreads, type Role, type ThreadPlan } from './plan.js';
import { ThreadSupervisor, type ThreadSpec } from './supervisor.js';
import {
  DELIVERY_YOUNG_GENERATION_MB,
  UPSTREAM_YOUNG_GENERATION_MB,
  applyHeapFlags,
} from './heap.js';
import { processHeapReport, type HeapReport } from './reexec.js';
import { SPARE_START_TRANSITIONS, SpareThreads, type SpareLimits } from './spares.js';

export interface DaemonOptions {
  /** The config file (worker threads load it themselves) and its validated content. */
  configFile: string;
  config: Config;
  log: Logger;
  /** `--role`: overrides `daemon.roles`. */
  roles?: readonly Role[];
  /** Overrides `daemon.threads` (tests). */
  threads?: 'auto' | number;
  /** Overrides the usable cores `threads: auto` follows (tests). */
  cores?: number;
  /** The worker threads' entry module; default the built one beside this module. */
  threadEntry?: URL;
  pretty?: boolean;
  /** Ops server port override (0 = any free port). */
  port?: number;
  ownOutbound?: boolean;
  /** BullMQ lock duration of delivery jobs in every thread (tests). */
  deliveryLockMs?: number;
  /** First restart delay of a thread that ended (tests). */
  restartDelayMs?: number;
  /** `daemonPlan` of these options, when the caller has it already (`run`: for the re-execution). */
  planned?: ReturnType<typeof daemonPlan>;
  /** When the spare delivery threads start and end, and how often the backlog is read (tests). */
  spares?: Partial<SpareLimits> & { checkMs?: number };
}

/** Why the main thread lacks its heap settings, for the `threads:heap_default` line. */
const WITHOUT_REASONS: Record<NonNullable<HeapReport['without']>, string> = {
  no_execve:
    'this Node.js cannot re-execute the process with them (process.execve: Node.js 22.15 or later)',
  profiler: 'a profiler started with the process (--cpu-prof, --prof, --heap-prof)',
  marker: 'STATUSWATCH_REEXECUTED was set in the environment it started with',
};

/** The usable cores and the thread plan a daemon with these options runs (pure but for the cores). */
export function daemonPlan(o: Pick<DaemonOptions, 'config' | 'roles' | 'threads' | 'cores'>): {
  cores: ReturnType<typeof usableCores>;
  plan: ThreadPlan;
} {
  const cores =
    o.cores === undefined ? usableCores() : { cores: o.cores, parallelism: o.cores, quota: null };
  const plan = planThreads({
    threads: o.threads ?? o.config.daemon.threads,
    roles: o.roles ?? o.config.daemon.roles,
    cores: cores.cores,
  });
  return { cores, plan };
}

export class Daemon {
  readonly app: App;
  readonly plan: ThreadPlan;
  /** The worker threads; null when the plan runs everything in the main thread. */
  readonly threads: ThreadSupervisor | null;
  /** Starts and ends the spare delivery threads; null when the plan has none. */
  private readonly spares: SpareThreads | null;
  private readonly cores: ReturnType<typeof usableCores>;

  constructor(private readonly o: DaemonOptions) {
    const { config } = o;
    // Before any worker thread: its isolate then grows its heap the same way.
    applyHeapFlags();
    ({ cores: this.cores, plan: this.plan } = o.planned ?? daemonPlan(o));
    const metrics = createMetrics();
    const specs: ThreadSpec[] = [];
    if (this.plan.upstream !== null) {
      specs.push({
        name: 'upstream',
        roles: this.plan.upstream,
        resourceLimits: { maxYoungGenerationSizeMb: UPSTREAM_YOUNG_GENERATION_MB },
      });
    }
    for (let i = 1; i <= this.plan.delivery; i++)
      specs.push({ name: `deliver-${String(i)}`, roles: ['deliver'] });
    // The main thread polls (2 MB semi-spaces for the whole process: src/runtime/reexec.ts); the
    // spares get the young generation of a thread that only delivers.
    for (let i = 1; i <= this.plan.spare; i++)
      specs.push({
        name: `deliver-${String(this.plan.delivery + i)}`,
        roles: ['deliver'],
        spare: true,
        resourceLimits: { maxYoungGenerationSizeMb: DELIVERY_YOUNG_GENERATION_MB },
      });
    this.threads =
      specs.length === 0
        ? null
        : new ThreadSupervisor({
            entry: o.threadEntry ?? new URL('./thread.js', import.meta.url),
            specs,
            configFile: o.configFile,
            pretty: o.pretty ?? false,
            log: o.log,
            metrics,
            ...(o.deliveryLockMs === undefined ? {} : { deliveryLockMs: o.deliveryLockMs }),
            ...(o.restartDelayMs === undefined ? {} : { restartDelayMs: o.restartDelayMs }),
          });
    const threads = this.threads;
    this.app = new App(config, {
      log: o.log,
      metrics,
      roles: this.plan.main,
      ...(o.port === undefined ? {} : { port: o.port }),
      ...(o.ownOutbound === undefined ? {} : { ownOutbound: o.ownOutbound }),
      ...(o.deliveryLockMs === undefined ? {} : { deliveryLockMs: o.deliveryLockMs }),
      ...(threads === null
        ? {}
        : { peers: { readiness: () => threads.readiness(), metrics: () => threads.metrics() } }),
    });
    const batches = this.app.deliveries.batches;
    this.spares =
      threads === null || this.plan.spare === 0
        ? null
        : new SpareThreads({
            backlog: () => batches.getWaitingCount(),
            start: () => {
              threads.startSpares();
            },
            stop: () => {
              threads.endSpares();
            },
            log: o.log,
            ...(o.spares === undefined ? {} : { limits: o.spares }),
            ...(o.spares?.checkMs === undefined ? {} : { checkMs: o.spares.checkMs }),
          });
    const spares = this.spares;
    if (spares !== null && this.plan.main.includes('poll'))
      this.app.handoff.whenLarge(SPARE_START_TRANSITIONS, (count) => {
        spares.expect(count);
      });
  }

  /** Starts the main thread's App (its ops server first) and the worker threads beside it. */
  async start(): Promise<void> {
    const { cores, parallelism, quota } = this.cores;
    const heap = processHeapReport(this.plan.main);
    this.o.log.info(
      {
        event: 'threads:planned',
        cores,
        parallelism,
        cpuQuota: quota,
        main: this.plan.main,
        threads: this.threads?.names ?? [],
        spares: this.plan.spare,
        heap,
      },
      this.plan.spare > 0
        ? `1 thread on ${String(cores)} usable core(s), up to ${String(this.plan.spare)} more while deliveries pile up: main runs ${this.plan.main.join(', ')}`
        : `${String(this.plan.total)} thread(s) on ${String(cores)} usable core(s): main runs ${this.plan.main.join(', ') || 'the ops server only'}${this.threads === null ? '' : `; ${this.threads.names.join(', ')}`}`,
    );
    if (heap.without !== null)
      this.o.log.info(
        { event: 'threads:heap_default', reason: heap.without },
        `the main thread runs with V8's default young generation, which holds more memory: ${WITHOUT_REASONS[heap.without]}`,
      );
    this.threads?.start();
    await this.app.start();
    this.spares?.run();
  }

  /** Drains every thread and the main App together (each within the caller's grace period). */
  async stop(): Promise<void> {
    this.spares?.close();
    const results = await Promise.allSettled([this.threads?.stop(), this.app.stop()]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** Swaps channels and subscriptions here (throws as `App.reload` does), then in every thread. */
  reload(next: Config): void {
    this.app.reload(next);
    this.threads?.reload();
  }
}
