import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { corruptCounts } from '../redis/stored.js';

export interface MetricsOptions {
  /**
   * The process and Node.js metrics (`statuswatch_process_*`, `statuswatch_nodejs_*`): one
   * thread of a process exports them (the main one; src/runtime/supervisor.ts merges the others'
   * registries into its scrape), else the process-wide ones would be summed once per thread.
   * Default true.
   */
  process?: boolean;
  /** The thread these metrics are of, the label of `statuswatch_thread_busy_seconds_total`. */
  thread?: string;
}

/** Every metric statuswatch exports, on a registry of its own (tests create as many as they like). */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  if (options.process !== false) {
    collectDefaultMetrics({ register: registry, prefix: 'statuswatch_' });
    // prom-client exports these totals as gauges with a `_total` suffix, which `promtool check
    // metrics` rejects; the same counts stay available per type in `statuswatch_nodejs_active_*`.
    for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
      registry.removeSingleMetric(`statuswatch_nodejs_${name}`);
  }
  const thread = options.thread ?? 'main';
  // The event loop's busy time of this thread (its JavaScript, GC pauses included), from
  // `performance.eventLoopUtilization()`: per-thread CPU, which Node.js 20 cannot read otherwise.
  let busyMs = 0;
  let lastElu = performance.eventLoopUtilization();
  const m = {
    registry,
    threadBusy: new Counter({
      name: 'statuswatch_thread_busy_seconds_total',
      help: "Time each thread's event loop was busy (running JavaScript or collecting garbage), by thread (main, upstream, deliver-N)",
      labelNames: ['thread'] as const,
      registers: [registry],
      collect() {
        const now = performance.eventLoopUtilization();
        busyMs += performance.eventLoopUtilization(now, lastElu).active;
        lastElu = now;
        this.reset();
        this.inc({ thread }, busyMs / 1000);
      },
    }),
    threadHeap: new Gauge({
      name: 'statuswatch_thread_heap_bytes',
      help: "Each thread's V8 heap by thread and state: used (live and not yet collected objects) and committed (what the isolate holds from the system, young generation included)",
      labelNames: ['thread', 'state'] as const,
      registers: [registry],
      collect() {
        // Every thread is an isolate of its own: the process's RSS is their sum plus Node.js.
        const heap = getHeapStatistics();
        this.set({ thread, state: 'used' }, heap.used_heap_size);
        this.set({ thread, state: 'committed' }, heap.total_heap_size);
      },
    }),
    threadRestarts: new Counter({
      name: 'statuswatch_thread_restarts_total',
      help: 'Worker threads restarted after they ended unexpectedly, by thread',
      labelNames: ['thread'] as const,
      registers: [registry],
    }),
    polls: new Counter({
      name: 'statuswatch_polls_total',
      help: 'Poll cycles by kind and outcome (ok, failed, conflict, rate_limited)',
      labelNames: ['kind', 'outcome'] as const,
      registers: [registry],
    }),
    cycleDuration: new Histogram({
      name: 'statuswatch_poll_cycle_duration_seconds',
      help: 'Duration of a poll cycle (request, diff, hand-off, commit) by kind',
      labelNames: ['kind'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    skippedRows: new Counter({
      name: 'statuswatch_upstream_rows_skipped_total',
      help: 'Malformed or unidentifiable upstream rows skipped, by poll kind',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    unknownValues: new Counter({
      name: 'statuswatch_upstream_unknown_values_total',
      help: 'Upstream values statuswatch does not recognise, by field and value (at most 20 values a field, the rest as "other")',
      labelNames: ['field', 'value'] as const,
      registers: [registry],
    }),
    upstreamRequests: new Counter({
      name: 'statuswatch_upstream_requests_total',
      help: 'HTTP requests to the upstream API by route and status code',
      labelNames: ['route', 'status'] as const,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'statuswatch_upstream_request_duration_seconds',
      help: 'Upstream request duration by route',
      labelNames: ['route'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    rateLimitRemaining: new Gauge({
      name: 'statuswatch_upstream_ratelimit_remaining',
      help: 'X-RateLimit-Remaining of the latest upstream response',
      // Threads merge by the largest: only the upstream thread sets it, the others report 0.
      aggregator: 'max',
      registers: [registry],
    }),
    rateLimitLimit: new Gauge({
      name: 'statuswatch_upstream_ratelimit_limit',
      help: 'X-RateLimit-Limit of the latest upstream response',
      aggregator: 'max',
      registers: [registry],
    }),
    transitions: new Counter({
      name: 'statuswatch_transitions_total',
      help: 'Transitions detected, by event kind',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    deliveries: new Counter({
      name: 'statuswatch_deliveries_total',
      help: 'Delivery attempts by channel type, outcome (sent, retry, dead) and failure reason',
      labelNames: ['channel_type', 'outcome', 'reason'] as const,
      registers: [registry],
    }),
    deliveryLatency: new Histogram({
      name: 'statuswatch_delivery_latency_seconds',
      help: 'From routing to successful delivery, by channel type',
      labelNames: ['channel_type'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'statuswatch_queue_jobs',
      help: 'Jobs in each BullMQ queue by state (sampled at scrape time)',
      labelNames: ['queue', 'state'] as const,
      registers: [registry],
    }),
    unreadableState: new Counter({
      name: 'statuswatch_stored_values_unreadable_total',
      help: 'Values read from Redis that did not decode (corrupt, or written in a format this release does not know), by shape; each is treated as absent',
      labelNames: ['kind'] as const,
      registers: [registry],
      collect() {
        // The counts live in src/redis/stored.ts (they only grow): copied at scrape time.
        this.reset();
        for (const [kind, n] of corruptCounts()) this.inc({ kind }, n);
      },
    }),
    deadLetters: new Gauge({
      name: 'statuswatch_dead_letters',
      help: 'Failed delivery jobs (dead letters; a batch that failed as a whole counts once), sampled at scrape time',
      registers: [registry],
    }),
    redisRefusals: new Counter({
      name: 'statuswatch_redis_refusals_total',
      help: 'Commands Redis refused while up, by reason (oom, readonly, noreplicas, noperm, maxclients, busy, loading, misconf, masterdown, stalled)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    redisRefusing: new Gauge({
      name: 'statuswatch_redis_refusing',
      help: '1 while Redis refuses work for this reason (until a write, or for noperm every command statuswatch uses, succeeds again)',
      // Every thread sees the refusal on its own connection: merged, it is still 1.
      aggregator: 'max',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    configReloads: new Counter({
      name: 'statuswatch_config_reloads_total',
      help: 'Config reloads by outcome (ok, rejected)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
