/**
 * The main thread's side of `statuswatch run`'s worker threads: starts each one (with its own
 * heap limits), starts again one that ended unexpectedly (after a delay that doubles while it
 * keeps failing), asks them for their readiness and metrics, tells them to reload, and drains
 * them on stop. A thread that dies mid-delivery leaves its jobs locked in Redis; another thread
 * (or its replacement) takes them over once the lock lapses, as for a dead replica
 * (docs/guarantees.md).
 *
 * Spare threads (`spare` specs, `threads: auto`) run only between `startSpares` and `endSpares`
 * (src/runtime/spares.ts decides when). One that ends hands its last counters and histograms
 * over, and /metrics keeps adding them, so no counter of the process goes down when it ends.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { AggregatorRegistry } from 'prom-client';
import type { Logger } from 'pino';
import type { Metrics } from '../server/metrics.js';
import {
  fromThreadSchema,
  peerReadinessOf,
  threadReadinessSchema,
  type PeerReadiness,
  type ThreadData,
  type ToThread,
} from './protocol.js';
import type { Role } from './plan.js';

export interface ThreadSpec {
  name: string;
  roles: Role[];
  /** V8 heap limits of the thread's isolate (the upstream thread's small young generation). */
  resourceLimits?: ResourceLimits;
  /** Started by `startSpares`, ended by `endSpares`, not by `start`. */
  spare?: boolean;
}

export interface SupervisorOptions {
  /** The thread's entry module (built: dist/runtime/thread.js). */
  entry: URL;
  specs: readonly ThreadSpec[];
  configFile: string;
  pretty: boolean;
  /** The worker threads' log level (default info). */
  logLevel?: string;
  log: Logger;
  metrics: Metrics;
  deliveryLockMs?: number;
  /** First delay before a thread that ended is started again; doubles up to 30 s. Default 1 s. */
  restartDelayMs?: number;
}

/** How long a question to a thread waits for its answer. */
const ASK_TIMEOUT_MS = 1_500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A thread up this long is healthy again: its next restart waits the first delay again. */
const HEALTHY_AFTER_MS = 60_000;

interface Slot {
  spec: ThreadSpec;
  /** Whether the thread should run (a spare between `startSpares` and `endSpares`). */
  wanted: boolean;
  /** `endSpares` told it to stop: its end is no crash. */
  ending: boolean;
  worker: Worker | null;
  started: boolean;
  startedAt: number;
  delayMs: number;
  timer: NodeJS.Timeout | null;
  /** Resolves when the current worker has ended. */
  exited: Promise<void>;
}

export class ThreadSupervisor {
  private readonly slots: Slot[];
  private stopping = false;
  private nextId = 1;
  private readonly pending = new Map<number, (value: unknown) => void>();
  /** The counters and histograms of spares that ended, summed. */
  private retired: object[] = [];
  /** Retirements one at a time (each sums into `retired`). */
  private retiring: Promise<void> = Promise.resolve();

  constructor(private readonly o: SupervisorOptions) {
    this.slots = o.specs.map((spec) => ({
      spec,
      wanted: false,
      ending: false,
      worker: null,
      started: false,
      startedAt: 0,
      delayMs: o.restartDelayMs ?? 1_000,
      timer: null,
      exited: Promise.resolve(),
    }));
  }

  /** The threads' names, in the order they were planned. */
  get names(): string[] {
    return this.slots.map((s) => s.spec.name);
  }

  /** Starts every thread but the spares; each reports when its stages run (`readiness()` tells). */
  start(): void {
    for (const slot of this.slots) {
      if (slot.spec.spare === true) continue;
      slot.wanted = true;
      this.spawn(slot);
    }
  }

  /** The spares that run (or are starting). */
  get sparesRunning(): string[] {
    return this.slots.filter((s) => s.spec.spare === true && s.wanted).map((s) => s.spec.name);
  }

  /** Starts every spare not running (one still draining starts again once it has ended). */
  startSpares(): void {
    for (const slot of this.slots) {
      if (slot.spec.spare !== true || slot.wanted || this.stopping) continue;
      slot.wanted = true;
      if (slot.timer !== null) continue;
      if (slot.worker === null) this.spawn(slot);
      else
        void slot.exited.then(() => {
          if (slot.wanted && !this.stopping && slot.worker === null && slot.timer === null)
            this.spawn(slot);
        });
    }
  }

  /** Drains the spares (in-flight batches finish); they are not started again until `startSpares`. */
  endSpares(): void {
    const message: ToThread = { type: 'stop' };
    for (const slot of this.slots) {
      if (slot.spec.spare !== true || !slot.wanted) continue;
      slot.wanted = false;
      if (slot.timer !== null) clearTimeout(slot.timer);
      slot.timer = null;
      if (slot.worker === null) continue;
      slot.ending = true;
      slot.worker.postMessage(message);
    }
  }

  private spawn(slot: Slot): void {
    const { spec } = slot;
    const data: ThreadData = {
      name: spec.name,
      configFile: this.o.configFile,
      roles: spec.roles,
      pretty: this.o.pretty,
      ...(this.o.logLevel === undefined ? {} : { logLevel: this.o.logLevel }),
      ...(this.o.deliveryLockMs === undefined ? {} : { deliveryLockMs: this.o.deliveryLockMs }),
      ...(spec.spare === true ? { spare: true } : {}),
    };
    const worker = new Worker(this.o.entry, {
      workerData: data,
      ...(spec.resourceLimits === undefined ? {} : { resourceLimits: spec.resourceLimits }),
    });
    slot.worker = worker;
    slot.started = false;
    let ended!: () => void;
    slot.exited = new Promise((resolve) => {
      ended = resolve;
    });
    worker.on('message', (raw: unknown) => {
      const parsed = fromThreadSchema.safeParse(raw);
      if (!parsed.success) return;
      const m = parsed.data;
      if (m.type === 'started') {
        slot.started = true;
        slot.startedAt = Date.now();
        this.o.log.info(
          { event: 'thread:started', thread: spec.name, roles: spec.roles },
          `thread ${spec.name} runs ${spec.roles.join(', ')}`,
        );
      } else if (m.type === 'failed') {
        this.o.log.error(
          { event: 'thread:start_failed', thread: spec.name, err: m.message },
          `thread ${spec.name} could not start`,
        );
      } else if (m.type === 'reply') {
        const resolve = this.pending.get(m.id);
        this.pending.delete(m.id);
        resolve?.(m.value);
      } else {
        // `stopped`: drained, and no longer asked (its port closes; its last metrics are here).
        slot.started = false;
        if (m.metrics !== undefined) this.retire(m.metrics);
      }
    });
    worker.on('error', (err) => {
      this.o.log.error(
        { event: 'thread:error', thread: spec.name, err: err.message },
        `thread ${spec.name} failed`,
      );
    });
    worker.on('exit', (code) => {
      slot.worker = null;
      slot.started = false;
      const ending = slot.ending;
      slot.ending = false;
      ended();
      if (this.stopping || ending || !slot.wanted) return;
      // Unexpected: the thread crashed (or was terminated). Its locked jobs return to their
      // queues when their locks lapse; a new thread takes its place after a delay.
      this.o.metrics.threadRestarts.inc({ thread: spec.name });
      if (Date.now() - slot.startedAt > HEALTHY_AFTER_MS)
        slot.delayMs = this.o.restartDelayMs ?? 1_000;
      const delay = slot.delayMs;
      slot.delayMs = Math.min(MAX_RESTART_DELAY_MS, slot.delayMs * 2);
      this.o.log.error(
        { event: 'thread:exited', thread: spec.name, code, restartInMs: delay },
        `thread ${spec.name} ended (code ${String(code)}); starting it again in ${String(delay)} ms`,
      );
      slot.timer = setTimeout(() => {
        slot.timer = null;
        if (!this.stopping) this.spawn(slot);
      }, delay);
      slot.timer.unref();
    });
  }

  /** Adds the counters and histograms of a spare that ended to `retired` (gauges end with it). */
  private retire(metrics: readonly unknown[]): void {
    const kept = metrics.filter(
      (m): m is object =>
        typeof m === 'object' &&
        m !== null &&
        ['counter', 'histogram'].includes(String((m as { type?: unknown }).type)),
    );
    this.retiring = this.retiring
      .then(async () => {
        this.retired =
          this.retired.length === 0
            ? kept
            : await AggregatorRegistry.aggregate([this.retired, kept]).getMetricsAsJSON();
      })
      .catch((err: unknown) => {
        this.o.log.warn(
          { event: 'thread:metrics_lost', err: String(err) },
          'could not keep the counters of a spare thread that ended',
        );
      });
  }

  private ask(slot: Slot, type: 'metrics' | 'readiness'): Promise<unknown> {
    const worker = slot.worker;
    if (worker === null || !slot.started) return Promise.resolve(undefined);
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, ASK_TIMEOUT_MS);
      this.pending.set(id, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
      const message: ToThread = { type, id };
      worker.postMessage(message);
    });
  }

  /**
   * Each thread's readiness (its App's: checks, and why Redis refuses work when it does); null
   * while it is down, starting, restarting or not answering.
   */
  async readiness(): Promise<Record<string, PeerReadiness | null>> {
    // A spare counts while it runs: one that is off, starting or ending is no fault.
    const slots = this.slots.filter((s) => s.spec.spare !== true || (s.wanted && s.started));
    const answers = await Promise.all(slots.map((s) => this.ask(s, 'readiness')));
    return Object.fromEntries(
      slots.map((s, i) => {
        const parsed = threadReadinessSchema.safeParse(answers[i]);
        return [s.spec.name, parsed.success ? peerReadinessOf(parsed.data) : null];
      }),
    );
  }

  /**
   * The metrics of each thread that answers (`registry.getMetricsAsJSON()`), and the summed
   * counters and histograms of the spares that ended.
   */
  async metrics(): Promise<unknown[][]> {
    const answers = await Promise.all(this.slots.map((s) => this.ask(s, 'metrics')));
    await this.retiring;
    const live = answers.filter((a): a is unknown[] => Array.isArray(a));
    return this.retired.length === 0 ? live : [...live, this.retired];
  }

  /** Tells every running thread to reload the config file (channels and subscriptions). */
  reload(): void {
    const message: ToThread = { type: 'reload' };
    for (const slot of this.slots) slot.worker?.postMessage(message);
  }

  /**
   * Ends a thread at once, as a crash would (tests): no drain; it is started again after the
   * restart delay.
   */
  async kill(name: string): Promise<void> {
    const slot = this.slots.find((s) => s.spec.name === name);
    if (slot?.worker == null) throw new Error(`no running thread "${name}"`);
    await slot.worker.terminate();
  }

  /** Drains every thread (each stops its stages as `App.stop()` does) and waits for them to end. */
  async stop(): Promise<void> {
    this.stopping = true;
    const message: ToThread = { type: 'stop' };
    for (const slot of this.slots) {
      if (slot.timer !== null) clearTimeout(slot.timer);
      slot.timer = null;
      slot.worker?.postMessage(message);
    }
    await Promise.all(this.slots.map((s) => s.exited));
  }
}
