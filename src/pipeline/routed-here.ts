/**
 * Cycles handed off in a thread that also routes (the upstream thread polls and routes): the
 * poll cycle's history write (`PipelineDeps.committed`) waits until this thread's router has
 * enqueued the cycle's deliveries, or `ROUTED_HERE_WAIT_MS` passed, so the two do not share the
 * thread's CPU before the first delivery batch is out (in a storm of 5,000 openings the history
 * write was about 50 ms of it). An order of work within one thread only: no guarantee depends on
 * it (the history write still follows the snapshot commit, and routing never waits for it).
 * Keyed by the Redis connection the hand-off and the router share (`composeStages`).
 */

/** The longest a history write waits for the router (another replica may route the cycle). */
export const ROUTED_HERE_WAIT_MS = 500;

/**
 * How long a handed-off cycle is remembered at most (one nothing waits for: a failed poll's, a
 * commit that lost, a cycle another replica routes), so the memory stays bounded.
 */
const FORGET_AFTER_MS = 10_000;

interface Local {
  /** Routers running on this connection. */
  routers: number;
  /** Cycle job ids handed off while one was, until routed here (or waited for in vain). */
  pending: Map<string, { promise: Promise<void>; resolve: () => void; expiry: NodeJS.Timeout }>;
}

const locals = new WeakMap<object, Local>();

function local(connection: object): Local {
  let l = locals.get(connection);
  if (l === undefined) {
    l = { routers: 0, pending: new Map() };
    locals.set(connection, l);
  }
  return l;
}

export function routerStarted(connection: object): void {
  local(connection).routers += 1;
}

export function routerStopped(connection: object): void {
  const l = local(connection);
  l.routers = Math.max(0, l.routers - 1);
  if (l.routers === 0) for (const id of [...l.pending.keys()]) routedHere(connection, id);
}

/** A cycle job about to be handed off; false (nothing kept) when no router runs here. */
export function expectRouting(connection: object, jobId: string): boolean {
  const l = local(connection);
  if (l.routers === 0 || l.pending.has(jobId)) return false;
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  const expiry = setTimeout(() => {
    routedHere(connection, jobId);
  }, FORGET_AFTER_MS);
  expiry.unref();
  l.pending.set(jobId, { promise, resolve, expiry });
  return true;
}

/** The router here enqueued the cycle's deliveries (or gave up on it). */
export function routedHere(connection: object, jobId: string): void {
  const l = locals.get(connection);
  const p = l?.pending.get(jobId);
  if (l === undefined || p === undefined) return;
  l.pending.delete(jobId);
  clearTimeout(p.expiry);
  p.resolve();
}

/** Resolves when the router here has routed the cycle, or after `maxMs`; at once when not expected. */
export async function untilRoutedHere(
  connection: object,
  jobId: string,
  maxMs = ROUTED_HERE_WAIT_MS,
): Promise<void> {
  const p = locals.get(connection)?.pending.get(jobId);
  if (p === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, maxMs);
    timer.unref();
  });
  try {
    await Promise.race([p.promise, timeout]);
  } finally {
    clearTimeout(timer);
    routedHere(connection, jobId);
  }
}
