/**
 * When `threads: auto` starts and ends its spare delivery threads (src/runtime/plan.ts): the
 * decision is pure (`spareStep`); `SpareThreads` reads the delivery queue's backlog on a timer and
 * acts on it.
 *
 * Why spares: each thread is a V8 isolate that loads the program again, about 60 MB of RSS. A
 * daemon at rest needs one thread (a poll of 20,000 services is a few percent of one core); a
 * storm of thousands of deliveries needs every core. So the main thread runs every stage, and
 * once deliveries pile up the other cores get delivery threads, which end when the queue has
 * been empty for SPARE_IDLE_MS. Every thread takes batch jobs from the same BullMQ queue, so a
 * spare that starts or ends changes who sends, never what is sent: a spare that ends drains as a
 * replica does on SIGTERM (its in-flight batches finish), one that crashes leaves its locked
 * batches to the others once the lock lapses (docs/guarantees.md).
 */
import type { Logger } from 'pino';
import { BATCH_SIZE } from '../delivery/queue.js';

/**
 * Waiting batch jobs (of up to 100 deliveries each) that start the spares: 2,000 deliveries are
 * about a second of the main thread's work, and a spare takes 0.5-1 s to start
 * (docs/performance.md). Up to a thousand deliveries a cycle (1% of 100,000 services changing
 * every 5 s in the memory bench) stay on the main thread.
 */
export const SPARE_START_BATCHES = 20;
/**
 * A cycle handed off with this many transitions starts the spares at once, while it is routed:
 * the main thread that routes it reads no backlog meanwhile, and a spare takes longer to start
 * than the routing (docs/performance.md).
 */
export const SPARE_START_TRANSITIONS = SPARE_START_BATCHES * BATCH_SIZE;
/** How long the delivery queue stays empty before the spares end. */
export const SPARE_IDLE_MS = 60_000;
/**
 * How often the backlog is read (one BullMQ count script on the main thread's connection, at rest
 * too). A storm this replica routes starts the spares without it (`expect`); the reads catch the
 * deliveries other replicas route, and the queue going quiet.
 */
export const SPARE_CHECK_MS = 250;

export interface SpareState {
  /** Whether the spares are wanted (started, or starting). */
  running: boolean;
  /** Since when the queue has been seen empty while they run; null when it was not. */
  idleSince: number | null;
}

export interface SpareLimits {
  startBatches: number;
  idleMs: number;
}

/** The next state for a backlog of `waiting` batch jobs read at `now`, and what to do. */
export function spareStep(
  state: SpareState,
  waiting: number,
  now: number,
  limits: SpareLimits = { startBatches: SPARE_START_BATCHES, idleMs: SPARE_IDLE_MS },
): { state: SpareState; action: 'start' | 'stop' | null } {
  if (!state.running) {
    return waiting >= limits.startBatches
      ? { state: { running: true, idleSince: null }, action: 'start' }
      : { state, action: null };
  }
  if (waiting > 0) return { state: { running: true, idleSince: null }, action: null };
  const idleSince = state.idleSince ?? now;
  if (now - idleSince >= limits.idleMs)
    return { state: { running: false, idleSince: null }, action: 'stop' };
  return { state: { running: true, idleSince }, action: null };
}

export interface SpareThreadsOptions {
  /** Waiting batch jobs in the delivery queue (rejects while Redis does not answer). */
  backlog: () => Promise<number>;
  start: () => void;
  stop: () => void;
  log: Logger;
  limits?: Partial<SpareLimits>;
  checkMs?: number;
}

/** Reads the backlog every `checkMs`, one read at a time, and starts or ends the spares. */
export class SpareThreads {
  private state: SpareState = { running: false, idleSince: null };
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly limits: SpareLimits;

  constructor(private readonly o: SpareThreadsOptions) {
    this.limits = {
      startBatches: o.limits?.startBatches ?? SPARE_START_BATCHES,
      idleMs: o.limits?.idleMs ?? SPARE_IDLE_MS,
    };
  }

  run(): void {
    this.stopped = false;
    this.schedule();
  }

  /** A cycle of `transitions` transitions is being routed here: the spares start now. */
  expect(transitions: number): void {
    if (this.stopped || this.state.running) return;
    this.state = { running: true, idleSince: null };
    this.o.log.info(
      { event: 'threads:spares_started', transitions },
      `a cycle of ${String(transitions)} transitions to route: starting the spare delivery threads`,
    );
    this.o.start();
  }

  /** Stops reading (the spares themselves are drained with the other threads). */
  close(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.check(), this.o.checkMs ?? SPARE_CHECK_MS);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    this.timer = null;
    let waiting: number;
    try {
      waiting = await this.o.backlog();
    } catch {
      // Redis away: the stages say so themselves; the spares stay as they are.
      this.schedule();
      return;
    }
    if (this.stopped) return;
    const { state, action } = spareStep(this.state, waiting, Date.now(), this.limits);
    this.state = state;
    if (action === 'start') {
      this.o.log.info(
        { event: 'threads:spares_started', waitingBatches: waiting },
        `${String(waiting)} delivery batches waiting: starting the spare delivery threads`,
      );
      this.o.start();
    } else if (action === 'stop') {
      this.o.log.info(
        { event: 'threads:spares_ended', idleMs: this.limits.idleMs },
        `the delivery queue has been empty for ${String(this.limits.idleMs / 1000)} s: ending the spare delivery threads`,
      );
      this.o.stop();
    }
    this.schedule();
  }
}
