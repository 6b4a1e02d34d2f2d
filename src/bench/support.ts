/**
 * Shared pieces of the benchmark: statistics, table printing, CPU/wall measurement, the run's
 * Redis key prefix and command counting (client side and server side).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { createRedis } from '../redis.js';
import { BenchError } from './errors.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every key this run writes starts with `{<RUN_PREFIX>` (one prefix per scenario below it). */
export const RUN_PREFIX = `swbench-${randomBytes(3).toString('hex')}`;

/** The key prefix of one scenario: `swbench-xxxxxx-<label>` (its keys are `{swbench-xxxxxx-<label>}:...`). */
export function scenarioPrefix(label: string): string {
  return `${RUN_PREFIX}-${label}`;
}

export interface Table {
  title: string;
  columns: string[];
  rows: string[][];
  notes?: string[];
}

export interface TargetResult {
  section: string;
  target: string;
  measured: string;
  pass: boolean;
}

export interface SectionResult {
  name: string;
  tables: Table[];
  targets: TargetResult[];
  /** Measurements of the section that crashed (the others' figures are still in the tables). */
  crashed?: string[];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const hi = sorted[mid] ?? Number.NaN;
  if (sorted.length % 2 === 1) return hi;
  const lo = sorted[mid - 1] ?? Number.NaN;
  return (lo + hi) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export function fmt(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

export function ratio(value: number, base: number, digits = 2): string {
  if (!Number.isFinite(value) || !Number.isFinite(base) || base === 0) return 'n/a';
  return `${fmt(value / base, digits)}x`;
}

export function printTable(table: Table): void {
  const widths = table.columns.map((c, i) =>
    Math.max(c.length, ...table.rows.map((r) => (r[i] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => {
        const w = widths[i] ?? cell.length;
        return i === 0 ? cell.padEnd(w) : cell.padStart(w);
      })
      .join('  ');
  const out: string[] = ['', `## ${table.title}`, line(table.columns)];
  out.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table.rows) out.push(line(row));
  for (const note of table.notes ?? []) out.push(`  * ${note}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

export function printTargets(targets: readonly TargetResult[]): void {
  printTable({
    title: 'Targets (the performance targets in README.md)',
    columns: ['section', 'target', 'measured', 'verdict'],
    rows: targets.map((t) => [t.section, t.target, t.measured, t.pass ? 'PASS' : 'FAIL']),
    notes: ['a missed target does not fail the exit code: the machine is shared and noisy'],
  });
}

/** CPU ms (user + system) of this process since `start`. */
export function cpuSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

export interface Measured<T> {
  value: T;
  cpuMs: number;
  wallMs: number;
}

/** CPU (this process, user + system) and wall time of one async call. */
export async function measure<T>(fn: () => Promise<T>): Promise<Measured<T>> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wallMs = performance.now() - t0;
  return { value, cpuMs: cpuSince(cpu0), wallMs };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects after `ms` unless `promise` settles first. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new BenchError('bench_timeout', `timed out after ${ms} ms waiting for ${what}`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Counts what one ioredis connection sends: every command, and the round trips (a command sent
 * on its own is one; a pipeline or MULTI, written as one batch, is one however many commands).
 */
export class ClientCommandCounter {
  commands = 0;
  roundTrips = 0;
  private batches = new WeakSet<object>();

  constructor(redis: Redis) {
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (command, stream) => {
      this.commands += 1;
      if (stream === undefined) {
        this.roundTrips += 1;
      } else if (!this.batches.has(stream)) {
        this.batches.add(stream);
        this.roundTrips += 1;
      }
      return send(command, stream);
    };
  }

  reset(): void {
    this.commands = 0;
    this.roundTrips = 0;
    this.batches = new WeakSet<object>();
  }
}

/**
 * Redis's own counters, read with INFO on a connection of its own: `total_commands_processed`
 * (stats) and the server's CPU time (cpu). Other clients of a shared Redis add to both, so callers
 * keep the minimum over runs; `calibrate` measures what the INFO calls themselves add.
 */
export class ServerCommandCounter {
  private readonly redis: Redis;
  private overhead = 0;

  constructor(url = REDIS_URL) {
    this.redis = createRedis(url, { connectionName: 'swbench-info' });
  }

  async total(): Promise<number> {
    const info = await this.redis.info('stats');
    const match = /total_commands_processed:(\d+)/.exec(info);
    if (match?.[1] === undefined)
      throw new BenchError('bench_redis_info', 'INFO stats has no total_commands_processed');
    return Number(match[1]);
  }

  /** CPU time (user + system, all threads) the Redis server has used, in ms. */
  async cpuMs(): Promise<number> {
    const info = await this.redis.info('cpu');
    const user = /used_cpu_user:([\d.]+)/.exec(info)?.[1];
    const sys = /used_cpu_sys:([\d.]+)/.exec(info)?.[1];
    if (user === undefined || sys === undefined)
      throw new BenchError('bench_redis_info', 'INFO cpu has no used_cpu_*');
    return (Number(user) + Number(sys)) * 1000;
  }

  /** The delta two back-to-back reads show with nothing in between (minimum of a few tries). */
  async calibrate(): Promise<void> {
    const deltas: number[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await this.total();
      const b = await this.total();
      deltas.push(b - a);
    }
    this.overhead = Math.min(...deltas);
  }

  /** Commands processed (minus the INFO overhead) and Redis CPU ms used while `fn` ran. */
  async during<T>(
    fn: () => Promise<T>,
  ): Promise<{ value: T; commands: number; redisCpuMs: number }> {
    const cpuBefore = await this.cpuMs();
    const before = await this.total();
    const value = await fn();
    const after = await this.total();
    const cpuAfter = await this.cpuMs();
    return { value, commands: after - before - this.overhead, redisCpuMs: cpuAfter - cpuBefore };
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

/** Deletes every key of this run (all scenarios) and closes the connection. */
export async function deleteRunKeys(url = REDIS_URL): Promise<number> {
  const redis = createRedis(url, { connectionName: 'swbench-cleanup' });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `{${RUN_PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length > 0) deleted += await redis.del(...found);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
  return deleted;
}

/**
 * The daemon config of the sections that run the whole daemon (latency, memory, storm): status and
 * incidents polled every 2 s (or `options.poll`), one webhook sink subscribed to `events` on every
 * service, no grouping, the ops server on a free port (or `options.port`). With `options.premium`
 * the daemon has an API key (`${SIM_KEY}`, one the simulator accepts) and polls SLA and scores
 * that often. The `${VAR}`s (SIM_URL, SIM_KEY, REDIS_URL, PREFIX, SINK_URL, SINK_SECRET) are
 * filled in by the loader. `requestsPerMinute: 600` leaves the request plan room for all of it
 * (status and incidents every second are 120/min of the 480 it may plan).
 */
export function benchConfigYaml(
  events: readonly string[],
  statusConfirmations?: number,
  options: { poll?: string; port?: number; premium?: string } = {},
): string {
  const poll = options.poll ?? '2s';
  const rules =
    statusConfirmations === undefined
      ? ''
      : `rules:\n  statusConfirmations: ${String(statusConfirmations)}\n`;
  const apiKey = options.premium === undefined ? '' : '  apiKey: ${SIM_KEY}\n';
  const premium =
    options.premium === undefined
      ? ''
      : `  sla: ${options.premium}\n  scores: ${options.premium}\n`;
  return `
upstream:
  baseUrl: \${SIM_URL}
${apiKey}  requestsPerMinute: 600
redis:
  url: \${REDIS_URL}
  prefix: \${PREFIX}
poll:
  status: ${poll}
  incidents: ${poll}
${premium}${rules}server:
  port: ${String(options.port ?? 0)}
channels:
  sink:
    type: webhook
    url: \${SINK_URL}
    secret: \${SINK_SECRET}
subscriptions:
  - name: bench
    services: ['*']
    events: [${events.join(', ')}]
    channels: [sink]
`;
}

/** One sample of a Prometheus text exposition: its labels and value. */
export interface MetricSample {
  labels: Record<string, string>;
  value: number;
}

/**
 * The samples of metric `name` in a Prometheus text exposition (`name{a="x",b="y"} 1.5` or
 * `name 3`). Enough for the daemon's own /metrics: label values hold no `"` or `,` there.
 */
export function metricSamples(text: string, name: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    const labels: Record<string, string> = {};
    let valueText = rest.trim();
    if (rest[0] === '{') {
      const close = rest.indexOf('}');
      if (close < 0) continue;
      for (const match of rest.slice(1, close).matchAll(/(\w+)="([^"]*)"/g))
        if (match[1] !== undefined && match[2] !== undefined) labels[match[1]] = match[2];
      valueText = rest.slice(close + 1).trim();
    }
    const value = Number(valueText.split(' ')[0]);
    if (Number.isFinite(value)) out.push({ labels, value });
  }
  return out;
}

/** The sum of metric `name`'s samples whose labels include every one of `where`. */
export function metricSum(
  text: string,
  name: string,
  where: Readonly<Record<string, string>> = {},
): number {
  let total = 0;
  for (const s of metricSamples(text, name))
    if (Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  return total;
}

/** Event-loop busy seconds of each of the daemon's threads (`statuswatch_thread_busy_seconds_total`). */
export function threadBusySeconds(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of metricSamples(text, 'statuswatch_thread_busy_seconds_total')) {
    const thread = s.labels['thread'] ?? '?';
    out.set(thread, (out.get(thread) ?? 0) + s.value);
  }
  return out;
}

/** Each thread's heap in MB, used and committed (`statuswatch_thread_heap_bytes`). */
export function threadHeaps(text: string): Map<string, { used: number; committed: number }> {
  const out = new Map<string, { used: number; committed: number }>();
  for (const s of metricSamples(text, 'statuswatch_thread_heap_bytes')) {
    const thread = s.labels['thread'] ?? '?';
    const heap = out.get(thread) ?? { used: 0, committed: 0 };
    if (s.labels['state'] === 'used') heap.used = s.value / 1e6;
    if (s.labels['state'] === 'committed') heap.committed = s.value / 1e6;
    out.set(thread, heap);
  }
  return out;
}

/** The daemon's /metrics text (the ops server on 127.0.0.1:`port`; every thread's registry). */
export async function scrapeMetrics(port: number, timeoutMs = 10_000): Promise<string> {
  const res = await request(`http://127.0.0.1:${String(port)}/metrics`, {
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200)
    throw new BenchError('bench_measurement', `/metrics answered ${String(res.statusCode)}`);
  return text;
}

/**
 * The daemon's Node.js flags as the Docker image's ENTRYPOINT sets them (a test keeps the two
 * equal): none since the daemon sets its heap settings itself (src/runtime/daemon.ts). The
 * benches that judge the daemon (memory, soak, storm) run it so.
 */
export const SHIPPED_FLAGS: readonly string[] = [];

/**
 * The `--threads` values to measure the daemon with, from STATUSWATCH_BENCH_THREADS (`auto`, `1`
 * .. `64`, comma-separated); unset: one run with no `--threads` (the config default, auto, as the
 * image runs it), shown as null.
 */
export function benchThreadSettings(
  value = process.env['STATUSWATCH_BENCH_THREADS'],
): (string | null)[] {
  if (value === undefined || value.trim() === '') return [null];
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const v = raw.trim();
    const n = Number(v);
    if (v !== 'auto' && !(Number.isInteger(n) && n >= 1 && n <= 64))
      throw new BenchError(
        'bench_usage',
        `STATUSWATCH_BENCH_THREADS: expected auto or 1..64, comma-separated (got "${v}")`,
      );
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

/**
 * Node.js flags for the daemon process: SHIPPED_FLAGS (as the image runs it) unless
 * STATUSWATCH_BENCH_PLAIN_NODE=1, then STATUSWATCH_BENCH_DAEMON_ARGS (space-separated).
 */
export function daemonNodeArgs(): string[] {
  const shipped = process.env['STATUSWATCH_BENCH_PLAIN_NODE'] === '1' ? [] : SHIPPED_FLAGS;
  const extra = (process.env['STATUSWATCH_BENCH_DAEMON_ARGS'] ?? '').split(/\s+/);
  return [...shipped, ...extra.filter((a) => a !== '')];
}
