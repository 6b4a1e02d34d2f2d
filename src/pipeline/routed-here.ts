/**
 * Cycles handed off in a thread that also routes (the upstream thread polls and routes): the
 * poll cycle's history write (`PipelineDeps.committed`) waits until this thread's router has
 * enqueued the cycle's deliveries, or `ROUTED_HERE_WAIT_MS` passed, so the two do not share the
 * thread's CPU before the first delivery batch is out (in a storm of 5,000 openings the history
 * write was about 50 ms of it). An order of work within one thread only: no guarantee depends on
 * it (the history write still follows the snapshot commit, and routing never waits for it).
 * `composeStages` gives its hand-off and its router one `RoutedHere`.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** The longest a history write waits for the router (another replica may route the cycle). */
export const ROUTED_HERE_WAIT_MS = 500;

/**
 * How long a handed-off cycle is remembered at most (one nothing waits for: a failed poll's, a
 * commit that lost, a cycle another replica routes), so the memory stays bounded.
 */
const FORGET_AFTER_MS = 10_000;

export class RoutedHere {
  /** Routers running here. */
  private routers = 0;
  /** Cycle job ids handed off while one was, until routed here (or waited for in vain). */
  private readonly pending = new Map<
    string,
    { promise: Promise<void>; resolve: () => void; expiry: NodeJS.Timeout }
  >();

  routerStarted(): void {
    this.routers += 1;
  }

  routerStopped(): void {
    this.routers = Math.max(0, this.routers - 1);
    if (this.routers === 0) for (const id of [...this.pending.keys()]) this.routed(id);
  }

  /** A cycle job about to be handed off; false (nothing kept) when no router runs here. */
  expect(jobId: string): boolean {
    if (this.routers === 0 || this.pending.has(jobId)) return false;
    let resolve = (): void => {};
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    const expiry = setTimeout(() => {
      this.routed(jobId);
    }, FORGET_AFTER_MS);
    expiry.unref();
    this.pending.set(jobId, { promise, resolve, expiry });
    return true;
  }

  /** The router here enqueued the cycle's deliveries (or gave up on it). */
  routed(jobId: string): void {
    const p = this.pending.get(jobId);
    if (p === undefined) return;
    this.pending.delete(jobId);
    clearTimeout(p.expiry);
    p.resolve();
  }

  /** Resolves when the router here has routed the cycle, or after `maxMs`; at once when not expected. */
  async until(jobId: string, maxMs = ROUTED_HERE_WAIT_MS): Promise<void> {
    const p = this.pending.get(jobId);
    if (p === undefined) return;
    const done = new AbortController();
    const timeout = sleep(maxMs, undefined, { ref: false, signal: done.signal }).catch(() => {});
    try {
      await Promise.race([p.promise, timeout]);
    } finally {
      done.abort();
      this.routed(jobId);
    }
  }
}
