/**
 * Soak: the real daemon (`node dist-bench/cli.js run`) for a bounded time (default 10 minutes;
 * `--soak-minutes N`, fractions allowed for a quick check) against a simulator of 20,000 services
 * (`--soak-services N`), polling status and incidents every 2 s, with 1% of the services changing
 * every cycle all along: statuses toggled, incidents opened and resolved (new incident ids each
 * round), so snapshots, the closed-incident memory, routing, deliveries and their ledgers all keep
 * working. Prints, over time: the daemon's RSS (/proc), its V8 heap used (its own /metrics), the
 * Redis server's used_memory (INFO memory; a shared Redis adds other clients' data) and the size
 * of the run's own keys (MEMORY USAGE), and the webhooks delivered so far; then a verdict on
 * growth: the slope of RSS (and of the heap's per-interval minimum, the live set) over the second
 * half, against the noise around that line. Keys are deleted by the bench at the end.
 */
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { createRedis } from '../redis.js';
import { startChild, type ChildHandle } from './child-protocol.js';
import { BenchError } from './errors.js';
import { SHIPPED_FLAGS, POLL_MS, RssSampler, startDaemon, type Daemon } from './memory.js';
import {
  REDIS_URL,
  RUN_PREFIX,
  fmt,
  scenarioPrefix,
  sleep,
  type SectionResult,
  type Table,
  type TargetResult,
} from './support.js';

export interface SoakOptions {
  minutes: number;
  services: number;
  /** Node flags of the daemon: SHIPPED_FLAGS (as the image runs it) unless `--soak-plain`. */
  nodeFlags: readonly string[];
}

export const SOAK_DEFAULTS: SoakOptions = { minutes: 10, services: 20_000, nodeFlags: [] };
export { SHIPPED_FLAGS };

const LABEL = 'soak';
const RSS_SAMPLE_MS = 1_000;
const HEAP_SAMPLE_MS = 5_000;
/** Growth over the second half under this many MB, or under 3x the noise, is no growth. */
const GROWTH_FLOOR_MB = 5;

interface Row {
  atMs: number;
  rss: number;
  heapUsed: number;
  redisUsed: number;
  runKeysMb: number;
  runKeys: number;
  delivered: number;
}

/** The daemon's V8 heap used, in MB, from its /metrics (prom-client default metrics). */
async function heapUsedMb(port: number): Promise<number> {
  const res = await request(`http://127.0.0.1:${String(port)}/metrics`);
  const text = await res.body.text();
  const match = /^statuswatch_nodejs_heap_size_used_bytes\s+([\d.e+]+)/m.exec(text);
  if (match?.[1] === undefined)
    throw new BenchError('bench_measurement', 'no nodejs_heap_size_used_bytes in /metrics');
  return Number(match[1]) / 1024 / 1024;
}

async function redisUsedMb(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  const match = /used_memory:(\d+)/.exec(info);
  if (match?.[1] === undefined)
    throw new BenchError('bench_redis_info', 'INFO memory has no used_memory');
  return Number(match[1]) / 1024 / 1024;
}

/** The keys of the soak's prefix and their MEMORY USAGE, in MB. */
async function runKeysMb(redis: Redis): Promise<{ keys: number; mb: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await redis.scan(
      cursor,
      'MATCH',
      `{${scenarioPrefix(LABEL)}}*`,
      'COUNT',
      1000,
    );
    cursor = next;
    for (const key of found) {
      keys += 1;
      const used = (await redis.call('MEMORY', 'USAGE', key)) as number | null;
      bytes += used ?? 0;
    }
  } while (cursor !== '0');
  return { keys, mb: bytes / 1024 / 1024 };
}

/** Least-squares line through `points`; `noise` is the standard deviation around it. */
export function trend(points: readonly (readonly [number, number])[]): {
  slope: number;
  noise: number;
} {
  const n = points.length;
  if (n < 3) return { slope: Number.NaN, noise: Number.NaN };
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  let ss = 0;
  for (const [x, y] of points) {
    const r = y - (my + slope * (x - mx));
    ss += r * r;
  }
  return { slope, noise: Math.sqrt(ss / (n - 2)) };
}

/** The verdict on one series over the second half of the run: growth = slope x half the run. */
export function growthVerdict(
  what: string,
  points: readonly (readonly [number, number])[],
  durationMs: number,
): { line: string; growing: boolean } {
  const half = points.filter(([t]) => t >= durationMs / 2);
  const { slope, noise } = trend(half);
  if (!Number.isFinite(slope))
    return { line: `${what}: too few samples for a verdict`, growing: false };
  const perMinute = slope * 60_000;
  const growth = slope * (durationMs / 2);
  const limit = Math.max(GROWTH_FLOOR_MB, 3 * noise);
  const growing = growth > limit;
  return {
    line: `${what}: ${perMinute >= 0 ? '+' : ''}${fmt(perMinute, 2)} MB/min over the second half (${
      growth >= 0 ? '+' : ''
    }${fmt(growth, 1)} MB; noise ±${fmt(noise, 1)} MB; limit ${fmt(limit, 1)} MB) → ${
      growing ? 'GROWING' : 'stable'
    }`,
    growing,
  };
}

/** Alternates status and incident changes of the 1% change set, one every poll, until stopped. */
function churn(sim: ChildHandle, stop: { done: boolean }): Promise<number> {
  return (async () => {
    let rounds = 0;
    while (!stop.done) {
      await sim.request({ op: 'change', kind: rounds % 2 === 0 ? 'incidents' : 'status' });
      rounds += 1;
      await sleep(POLL_MS);
    }
    return rounds;
  })();
}

export async function runSoakBench(
  progress: (line: string) => void,
  options: SoakOptions = SOAK_DEFAULTS,
): Promise<SectionResult> {
  const durationMs = Math.round(options.minutes * 60_000);
  const rowEveryMs = durationMs >= 3 * 60_000 ? 60_000 : Math.max(10_000, durationMs / 6);
  progress(
    `soak: ${fmt(options.minutes, 1)} min, ${String(options.services)} services, poll every ${String(POLL_MS / 1000)} s${
      options.nodeFlags.length > 0 ? `, daemon flags ${options.nodeFlags.join(' ')}` : ''
    }`,
  );
  const sim = await startChild(['sim', String(options.services)]);
  const sink = await startChild(['sink']);
  const redis = createRedis(REDIS_URL, { connectionName: 'swbench-soak' });
  let daemon: Daemon | undefined;
  let sampler: RssSampler | undefined;
  const stop = { done: false };
  let churning: Promise<number> | undefined;
  const rows: Row[] = [];
  const heap: [number, number][] = [];
  try {
    const changed = await sim.request({ op: 'prepare', kind: 'status', fraction: 0.01 });
    daemon = await startDaemon({ sim, sink, label: LABEL, nodeFlags: options.nodeFlags });
    const d = daemon;
    sampler = new RssSampler(d.pid, RSS_SAMPLE_MS);
    sampler.start();
    const t0 = performance.now();
    const elapsed = (): number => performance.now() - t0;
    churning = churn(sim, stop);
    let nextRow = rowEveryMs;
    let nextHeap = 0;
    let heapMin = Number.POSITIVE_INFINITY;
    let lastHeap = Number.NaN;
    for (;;) {
      const now = elapsed();
      if (now >= nextHeap) {
        nextHeap += HEAP_SAMPLE_MS;
        try {
          lastHeap = await heapUsedMb(d.port);
          heap.push([elapsed(), lastHeap]);
          heapMin = Math.min(heapMin, lastHeap);
        } catch {
          // the ops server is not up yet: the next sample will tell
        }
      }
      if (now >= nextRow || now >= durationMs) {
        const keys = await runKeysMb(redis);
        rows.push({
          atMs: now,
          rss: sampler.last,
          heapUsed: Number.isFinite(heapMin) ? heapMin : lastHeap,
          redisUsed: await redisUsedMb(redis),
          runKeysMb: keys.mb,
          runKeys: keys.keys,
          delivered: await sink.request({ op: 'count' }),
        });
        progress(
          `soak: ${fmt(now / 60_000, 1)} min: RSS ${fmt(sampler.last, 1)} MB, heap ${fmt(lastHeap, 1)} MB`,
        );
        heapMin = Number.POSITIVE_INFINITY;
        nextRow += rowEveryMs;
        if (now >= durationMs) break;
      }
      if (d.child.exitCode !== null || d.child.signalCode !== null)
        throw new BenchError('bench_child', 'the daemon exited during the soak');
      await sleep(Math.min(1_000, Math.max(50, Math.min(nextRow, nextHeap) - elapsed())));
    }
    stop.done = true;
    const rounds = await churning;
    sampler.stop();
    const delivered = rows.at(-1)?.delivered ?? 0;
    if (delivered === 0)
      throw new BenchError('bench_measurement', 'no webhook was delivered during the soak');

    const rss = growthVerdict('RSS', sampler.series, durationMs);
    // The heap's minimum per sampling window approximates the live set (after a GC).
    const live = growthVerdict(
      'heap used (minimum per 30 s)',
      windowMinimum(heap, 30_000),
      durationMs,
    );
    const table: Table = {
      title: `Soak: ${fmt(options.minutes, 1)} min at ${fmt(options.services, 0)} services (status + incidents every ${String(POLL_MS / 1000)} s, ${String(changed)} services changing every cycle)${
        options.nodeFlags.length > 0 ? ` — daemon flags ${options.nodeFlags.join(' ')}` : ''
      }`,
      columns: [
        'minute',
        'daemon RSS MB',
        'heap used MB',
        'Redis used_memory MB',
        'run keys',
        'run keys MB',
        'deliveries',
      ],
      rows: rows.map((r) => [
        fmt(r.atMs / 60_000, 1),
        fmt(r.rss, 1),
        fmt(r.heapUsed, 1),
        fmt(r.redisUsed, 1),
        String(r.runKeys),
        fmt(r.runKeysMb, 2),
        String(r.delivered),
      ]),
      notes: [
        `${String(rounds)} change rounds (alternately incidents opened/resolved and statuses toggled); RSS sampled every ${String(RSS_SAMPLE_MS / 1000)} s (${String(sampler.samples)} samples), heap every ${String(HEAP_SAMPLE_MS / 1000)} s from the daemon's /metrics (row: the minimum since the previous row)`,
        `Redis used_memory is the whole server's (other clients of a shared Redis add to it); run keys = the soak's own keys {${RUN_PREFIX}-${LABEL}}* and their MEMORY USAGE`,
        `verdict: ${rss.line}`,
        `verdict: ${live.line}`,
      ],
    };
    const targets: TargetResult[] = [
      {
        section: 'soak',
        target: `no memory growth over ${fmt(options.minutes, 1)} min at ${fmt(options.services, 0)} services`,
        measured: `RSS ${rss.growing ? 'growing' : 'stable'}, heap ${live.growing ? 'growing' : 'stable'} (${String(delivered)} deliveries)`,
        pass: !rss.growing && !live.growing,
      },
    ];
    return { name: 'soak', tables: [table], targets };
  } finally {
    stop.done = true;
    await churning?.catch(() => undefined);
    sampler?.stop();
    await daemon?.stop();
    await redis.quit().catch(() => undefined);
    await sim.close();
    await sink.close();
  }
}

/** The minimum of each `windowMs` window of `points` ([ms, value]), at the window's middle. */
function windowMinimum(
  points: readonly (readonly [number, number])[],
  windowMs: number,
): [number, number][] {
  const out = new Map<number, number>();
  for (const [t, v] of points) {
    const w = Math.floor(t / windowMs);
    out.set(w, Math.min(out.get(w) ?? Number.POSITIVE_INFINITY, v));
  }
  return [...out].map(([w, v]) => [w * windowMs + windowMs / 2, v]);
}
