/**
 * How one `statuswatch run` spreads its stages over threads (pure; `docs/architecture.md`,
 * "Threads and roles").
 *
 * A role is a set of stages: `poll` (the poller and the poll cycle: parse, diff, hand-off),
 * `route` (routing and the noise tick) and `deliver` (the delivery worker). Every thread runs its
 * stages as a replica does: BullMQ queues, leases and compare-and-set in Redis keep threads apart
 * exactly as they keep replicas apart, so no guarantee depends on which thread runs what.
 *
 * `threads: auto` (the default): the main thread runs every role of the process, as one thread
 * would, and the other usable cores get spare delivery threads that start only when deliveries
 * pile up (a storm) and end once the queue has been empty a while (src/runtime/spares.ts). Each
 * thread is a V8 isolate that loads the program again (about 60 MB of RSS): a daemon at rest
 * runs one, a storm gets every core (docs/architecture.md, "Threads and roles").
 *
 * An explicit count (`threads: 2` to 64) keeps that many threads running all the time: the poll
 * and route roles share one thread of their own (the upstream thread), whose isolate gets a small
 * young generation (memory at 20,000 services), and which delivers as well when the process
 * delivers (its core is free once a storm is routed); the main thread delivers (with a larger
 * one, sized for speed: src/runtime/reexec.ts) and serves HTTP; further delivery threads take
 * the remaining cores. One thread (`threads: 1`, or `auto` on one core) runs every role in the
 * main thread, as before.
 */

export const ROLES = ['poll', 'route', 'deliver'] as const;
export type Role = (typeof ROLES)[number];

/** The most threads `auto` gives, whatever the node's size: memory must not grow with it. */
export const MAX_AUTO_THREADS = 8;

export interface ThreadPlan {
  /** Roles the main thread runs (beside the ops server, the API and the console). */
  main: Role[];
  /** Roles of the upstream thread (poll and/or route); null when the main thread runs them or none is run. */
  upstream: Role[] | null;
  /** Delivery threads besides the main thread, running all the time. */
  delivery: number;
  /** Delivery threads started when deliveries pile up and ended when the queue is empty (`auto`). */
  spare: number;
  /** Threads in all at most, the main one included. */
  total: number;
}

export interface PlanInput {
  /** `daemon.threads`: `auto` (from the usable cores) or an explicit count (1 = one thread). */
  threads: 'auto' | number;
  /** The roles this process runs (`daemon.roles`, `--role`). */
  roles: readonly Role[];
  /** Usable cores (`usableCores()`). */
  cores: number;
}

/** How many threads `threads: auto` gives at most on `cores` usable cores. */
export function autoThreads(cores: number): number {
  return Math.min(MAX_AUTO_THREADS, Math.max(1, Math.floor(cores)));
}

export function planThreads(input: PlanInput): ThreadPlan {
  const roles = ROLES.filter((r) => input.roles.includes(r));
  if (input.threads === 'auto') {
    const spare = roles.includes('deliver') ? autoThreads(input.cores) - 1 : 0;
    return { main: roles, upstream: null, delivery: 0, spare, total: 1 + spare };
  }
  const want = input.threads;
  if (want <= 1) return { main: roles, upstream: null, delivery: 0, spare: 0, total: 1 };
  const upstreamRoles = roles.filter((r) => r !== 'deliver');
  const delivers = roles.includes('deliver');
  if (upstreamRoles.length === 0) {
    // A delivery-only process (a Deployment of its own): the main thread and every other one deliver.
    return { main: ['deliver'], upstream: null, delivery: want - 1, spare: 0, total: want };
  }
  const delivery = delivers ? Math.max(0, want - 2) : 0;
  return {
    main: delivers ? ['deliver'] : [],
    // The upstream thread delivers too: in a storm it routes first, then its core would sit idle
    // while the others deliver (2 cores: 1.30 s -> 0.97 s for 5,000 webhooks, docs/performance.md).
    upstream: delivers ? [...upstreamRoles, 'deliver'] : upstreamRoles,
    delivery,
    spare: 0,
    total: 1 + 1 + delivery,
  };
}

/**
 * The CPU quota of a cgroup v2 `cpu.max` file (`"200000 100000"` = 2 cores; `"max 100000"` = no
 * quota): cores, or null when there is no quota or the text is not understood.
 */
export function quotaOfCpuMax(text: string): number | null {
  const [quota, period] = text.trim().split(/\s+/);
  if (quota === undefined || quota === 'max') return null;
  return quotaOf(Number(quota), Number(period ?? 100_000));
}

/** The CPU quota of cgroup v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us` (-1 = no quota). */
export function quotaOfCfs(quotaText: string, periodText: string): number | null {
  return quotaOf(Number(quotaText.trim()), Number(periodText.trim()));
}

function quotaOf(quota: number, period: number): number | null {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return null;
  return quota / period;
}

/**
 * Usable cores: what the scheduler lets the process run on (`os.availableParallelism()`), bounded
 * by the container's CPU quota rounded up (a pod limited to 1.5 CPUs gets 2 threads, not 64 when
 * its node has 64 cores and no `resources.limits.cpu`: that case is bounded by MAX_AUTO_THREADS).
 */
export function usableCoresOf(parallelism: number, quota: number | null): number {
  const bound = quota === null ? Infinity : Math.max(1, Math.ceil(quota - 1e-9));
  return Math.max(1, Math.min(parallelism, bound));
}
