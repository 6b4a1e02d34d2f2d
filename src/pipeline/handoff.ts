import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Keys, RedisClient } from '../redis.js';
import type { Transition } from '../diff/transition.js';
import { QUEUES, openQueue } from '../queues.js';
import { RoutedHere } from './routed-here.js';

export const TRANSITIONS_QUEUE = QUEUES.transitions;

/** Routed cycle jobs are kept this long (their ids make a re-enqueued cycle a no-op meanwhile). */
export const CYCLE_RETENTION_SECONDS = 24 * 3600;

/** One job: the transitions one poll cycle produced, in order. */
export interface CycleBatch {
  transitions: Transition[];
}

/** The job id of a cycle: derived from its transition ids, so the same cycle is added once. */
export function cycleJobId(transitions: readonly Transition[]): string {
  const hash = createHash('sha256');
  for (const t of transitions) hash.update(t.id).update('\n');
  return `c${hash.digest('hex').slice(0, 31)}`;
}

/**
 * Durable hand-off of a cycle's transitions to routing: one BullMQ job per cycle (the unit of
 * routing), job id derived from the transition ids, so enqueueing the same cycle again (a retried
 * poll, a crash before the snapshot commit, two replicas racing) adds nothing. A re-run that
 * derives a different set (the upstream moved on meanwhile) is a new job; the router routes each
 * transition id once (its routed marks), so the overlap is not sent twice.
 */
export class Handoff {
  readonly queue: Queue<CycleBatch>;

  /**
   * `routedHere`: shared with the router of the same stages (`composeStages`), so a cycle handed
   * off here can be waited for until that router has routed it.
   */
  constructor(
    connection: RedisClient,
    keys: Keys,
    private readonly routedHere = new RoutedHere(),
  ) {
    this.queue = openQueue<CycleBatch>(
      'transitions',
      { connection, keys },
      {
        defaultJobOptions: {
          removeOnComplete: { age: CYCLE_RETENTION_SECONDS },
          removeOnFail: { age: 30 * 24 * 3600 },
          // Retried in place by the router (`Router.process`), in order: a BullMQ retry would
          // let later cycles route first.
          attempts: 1,
        },
      },
    );
  }

  private large: { size: number; notify: (count: number) => void } | null = null;

  /**
   * Calls `notify` as a cycle of at least `size` transitions is handed off, before it is added:
   * its deliveries are still to be routed (the spare delivery threads start meanwhile,
   * src/runtime/spares.ts).
   */
  whenLarge(size: number, notify: (count: number) => void): void {
    this.large = { size, notify };
  }

  /** Hands a cycle off; its job id, null when it has no transitions (nothing added). */
  async enqueue(transitions: readonly Transition[]): Promise<string | null> {
    if (transitions.length === 0) return null;
    if (this.large !== null && transitions.length >= this.large.size)
      this.large.notify(transitions.length);
    const jobId = cycleJobId(transitions);
    const expected = this.routedHere.expect(jobId);
    try {
      await this.queue.add('cycle', { transitions: [...transitions] }, { jobId });
    } catch (err) {
      if (expected) this.routedHere.routed(jobId);
      throw err;
    }
    return jobId;
  }

  /**
   * Resolves once a router of this thread has enqueued the deliveries of cycle `jobId` (bounded:
   * `ROUTED_HERE_WAIT_MS`); at once when none runs here. Work that may wait (the history write)
   * waits here so the cycle's first deliveries go out sooner.
   */
  untilRoutedHere(jobId: string): Promise<void> {
    return this.routedHere.until(jobId);
  }

  /** Every transition handed off and still on record, each id once, in hand-off order. */
  async handedOff(
    states: readonly (
      'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'prioritized'
    )[] = ['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized'],
  ): Promise<Transition[]> {
    const jobs = await this.queue.getJobs([...states]);
    jobs.sort((a, b) => a.timestamp - b.timestamp);
    const out = new Map<string, Transition>();
    for (const j of jobs) for (const t of j.data.transitions) if (!out.has(t.id)) out.set(t.id, t);
    return [...out.values()];
  }

  /** Transitions in completed (routed) cycle jobs, each id once. */
  async routedCount(): Promise<number> {
    return (await this.handedOff(['completed'])).length;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
