/**
 * Memory (performance targets in README.md: RSS <= 150 MB at 20,000 services, <= 250 MB at
 * 100,000): the real daemon in a process of its own, started as the image starts it (a plain
 * `node dist-bench/cli.js run`, no Node.js flags: the program sets its heap settings itself,
 * `daemon.threads: auto`), polling a simulator of that many services (a child process) for status
 * and incidents every 5 s and, with an API key the simulator accepts, for SLA and scores every
 * 10 s; after a silent baseline 1% of the services change every cycle (so snapshots, diffs,
 * routing and webhook deliveries all run). The RSS of the whole process (every thread: they share
 * one address space) is read from /proc (or `ps`) every 200 ms: its peak and its median (p50) are
 * reported; the baseline is the RSS of a bare Node.js process (`node -e` with a timer) measured in
 * the same run.
 *
 * Each size is measured twice: as the image runs it (threads auto), and with `--threads 1` (every
 * stage in the main thread, as before the worker threads) for comparison. Both are judged against
 * the target: it holds however the daemon is started.
 *
 * For a quicker look at one figure: STATUSWATCH_BENCH_SERVICES (`20000`, `100000` or both,
 * comma-separated) picks the sizes, STATUSWATCH_BENCH_THREADS (as for the storm: `auto`, `1`,
 * `auto,1`) the daemons.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { toError } from '../errors.js';
import { freePort } from '../net.js';
import { SIM_KEY_ENV, startChild, type ChildHandle } from './child-protocol.js';
import { BenchError } from './errors.js';
import {
  REDIS_URL,
  benchConfigYaml,
  benchThreadSettings,
  daemonNodeArgs,
  fmt,
  median,
  metricSum,
  scenarioPrefix,
  scrapeMetrics,
  sleep,
  threadBusySeconds,
  threadHeaps,
  type SectionResult,
  type Table,
  type TargetResult,
  SHIPPED_FLAGS,
} from './support.js';

export interface MemorySize {
  services: number;
  targetMb: number;
}

export const MEMORY_SIZES: readonly MemorySize[] = [
  { services: 20_000, targetMb: 150 },
  { services: 100_000, targetMb: 250 },
];
export { SHIPPED_FLAGS };
/** The soak's poll interval (status and incidents), and startDaemon's default. */
export const POLL_MS = 2_000;
/** The memory bench's: status and incidents every 5 s, SLA and scores every 10 s (as in issue #30's figures). */
export const MEMORY_POLL_MS = 5_000;
export const MEMORY_PREMIUM_POLL_MS = 10_000;
/** The pathname of the bulk incidents poll: one per cycle (the simulator counts them). */
const INCIDENTS_PATH = '/api/v1/incidents';
const BASELINE_CYCLES = 3;
const CHANGE_CYCLES = 8;
const SAMPLE_MS = 200;

export const EVENTS = ['incident.opened', 'incident.resolved', 'status.changed'] as const;

const execFileAsync = promisify(execFile);

/**
 * Resident set size of `pid` in MB, and its file-backed part (`RssFile`: pages of the files it
 * maps, Node.js's own binary with its code and ICU data first of all): one read of /proc on
 * Linux; elsewhere `ps`, which does not say the part (null).
 */
export async function rssOf(pid: number): Promise<{ rss: number; file: number | null }> {
  try {
    const status = await readFile(`/proc/${String(pid)}/status`, 'utf8');
    const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    const file = /^RssFile:\s+(\d+)\s+kB/m.exec(status)?.[1];
    if (rss !== undefined)
      return { rss: Number(rss) / 1024, file: file === undefined ? null : Number(file) / 1024 };
  } catch {
    // not Linux, or the process is gone: try ps
  }
  const { stdout } = await execFileAsync('ps', ['-o', 'rss=', '-p', String(pid)]);
  const kb = Number(stdout.trim());
  if (!Number.isFinite(kb) || kb <= 0)
    throw new BenchError('bench_measurement', `no RSS for process ${String(pid)}`);
  return { rss: kb / 1024, file: null };
}

/** Samples the RSS of `pid` every `everyMs` until stopped; keeps the peak, the last value and every sample. */
export class RssSampler {
  peak = 0;
  last = 0;
  samples = 0;
  /** The file-backed part of the RSS (`rssOf`) at the last sample, null where unknown. */
  lastFile: number | null = null;
  /** [ms since start, MB] of every sample. */
  readonly series: [number, number][] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly t0 = performance.now();

  constructor(
    private readonly pid: number,
    private readonly everyMs = SAMPLE_MS,
  ) {}

  start(): void {
    const tick = (): void => {
      rssOf(this.pid).then(
        ({ rss: mb, file }) => {
          this.samples += 1;
          this.last = mb;
          this.lastFile = file;
          this.peak = Math.max(this.peak, mb);
          this.series.push([performance.now() - this.t0, mb]);
        },
        () => undefined,
      );
    };
    tick();
    this.timer = setInterval(tick, this.everyMs);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The median of every sample (NaN before the first). */
  p50(): number {
    return median(this.series.map(([, mb]) => mb));
  }
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
}

/** RSS of a bare Node.js process (a timer, nothing loaded), after a second of life, and its file-backed part. */
export async function bareNodeRss(): Promise<{ rss: number; file: number | null }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  try {
    await sleep(1_000);
    if (child.pid === undefined) throw new BenchError('bench_measurement', 'bare node: no pid');
    return await rssOf(child.pid);
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
}

/**
 * Waits until the simulator has answered `count` more cycles' bulk incidents polls (one a cycle;
 * the other kinds' requests, SLA and scores among them, do not count): returns the new total.
 */
export async function cycles(
  sim: ChildHandle,
  from: number,
  count: number,
  pollMs = POLL_MS,
): Promise<number> {
  const want = from + count;
  const deadline = Date.now() + count * pollMs * 4 + 60_000;
  for (;;) {
    const seen = await sim.request({ op: 'count', path: INCIDENTS_PATH });
    if (seen >= want) return seen;
    if (Date.now() > deadline)
      throw new BenchError(
        'bench_timeout',
        `daemon made ${String(seen - from)} incidents polls, expected ${String(count)}`,
      );
    await sleep(250);
  }
}

/** The real daemon (`node [flags] dist-bench/cli.js run`) against a simulator and a webhook sink. */
export interface Daemon {
  child: ChildProcess;
  pid: number;
  /** The ops server's port (/metrics). */
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts the daemon. `threads`: passed as `--threads` (absent: the config's default, auto, as
 * the image runs it). `premium`: the simulator's API key and how often to poll SLA and scores
 * with it (absent: no key, no premium polls).
 */
export async function startDaemon(o: {
  sim: ChildHandle;
  sink: ChildHandle;
  label: string;
  nodeFlags: readonly string[];
  pollMs?: number;
  threads?: 'auto' | number;
  premium?: { key: string; pollMs: number };
}): Promise<Daemon> {
  const dir = await mkdtemp(join(tmpdir(), 'swbench-daemon-'));
  const port = await freePort();
  const configFile = join(dir, 'statuswatch.yaml');
  await writeFile(
    configFile,
    benchConfigYaml(EVENTS, undefined, {
      poll: `${String((o.pollMs ?? POLL_MS) / 1000)}s`,
      port,
      ...(o.premium === undefined ? {} : { premium: `${String(o.premium.pollMs / 1000)}s` }),
    }),
  );
  const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
  const threads = o.threads === undefined ? [] : ['--threads', String(o.threads)];
  const args = [...o.nodeFlags, cli, 'run', '--config', configFile, ...threads];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      ...(o.premium === undefined ? {} : { SIM_KEY: o.premium.key }),
      SIM_URL: o.sim.url,
      SINK_URL: o.sink.url,
      SINK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      REDIS_URL,
      PREFIX: scenarioPrefix(o.label),
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  if (child.pid === undefined) {
    await rm(dir, { recursive: true, force: true });
    throw new BenchError('bench_child', 'could not start the daemon');
  }
  return {
    child,
    pid: child.pid,
    port,
    stop: async () => {
      child.kill('SIGTERM');
      const gone = exited(child);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await gone;
      clearTimeout(timer);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** How one daemon of the memory bench is started: as the image does, or with one thread. */
export interface MemoryVariant {
  label: string;
  /** `--threads`; undefined: none (the config default, auto). */
  threads?: number;
}

const AS_THE_IMAGE: MemoryVariant = {
  label: 'node dist-bench/cli.js run (as the image runs it, threads auto)',
};
export const MEMORY_VARIANTS: readonly MemoryVariant[] = [
  AS_THE_IMAGE,
  { label: 'node dist-bench/cli.js run --threads 1 (one thread, for comparison)', threads: 1 },
];

/** The daemons to measure: MEMORY_VARIANTS, or the STATUSWATCH_BENCH_THREADS values' (auto: none). */
export function memoryVariants(
  value = process.env['STATUSWATCH_BENCH_THREADS'],
): readonly MemoryVariant[] {
  if (value === undefined || value.trim() === '') return MEMORY_VARIANTS;
  return benchThreadSettings(value).map((v) =>
    v === null || v === 'auto'
      ? AS_THE_IMAGE
      : { label: `node dist-bench/cli.js run --threads ${v}`, threads: Number(v) },
  );
}

/** The sizes to measure: MEMORY_SIZES, or those STATUSWATCH_BENCH_SERVICES names. */
export function memorySizes(
  value = process.env['STATUSWATCH_BENCH_SERVICES'],
): readonly MemorySize[] {
  if (value === undefined || value.trim() === '') return MEMORY_SIZES;
  return value.split(',').map((raw) => {
    const size = MEMORY_SIZES.find((s) => String(s.services) === raw.trim());
    if (size === undefined)
      throw new BenchError(
        'bench_usage',
        `STATUSWATCH_BENCH_SERVICES: expected ${MEMORY_SIZES.map((s) => String(s.services)).join(' or ')}, comma-separated (got "${raw.trim()}")`,
      );
    return size;
  });
}

interface DaemonRun {
  variant: MemoryVariant;
  peak: number;
  p50: number;
  afterBaseline: number;
  end: number;
  samples: number;
  delivered: number;
  /** Polls answered ok, by kind, over the daemon's life (from its /metrics). */
  okPolls: Record<'status' | 'incidents' | 'sla' | 'scores', number>;
  /** The threads its /metrics reported (statuswatch_thread_busy_seconds_total's labels). */
  threads: string[];
  /** The file-backed part of the RSS at the end (Node.js's own code and data), null where unknown. */
  endFile: number | null;
  /** Each thread's heap at the end, used / committed MB (statuswatch_thread_heap_bytes). */
  heaps: Map<string, { used: number; committed: number }>;
}

/** One daemon: silent baseline, then CHANGE_CYCLES cycles of 1% changes; its RSS sampled throughout. */
async function measureDaemon(
  sim: ChildHandle,
  sink: ChildHandle,
  label: string,
  variant: MemoryVariant,
  key: string,
  changed: number,
  progress: (line: string) => void,
): Promise<DaemonRun> {
  const daemon = await startDaemon({
    sim,
    sink,
    label,
    nodeFlags: daemonNodeArgs(),
    pollMs: MEMORY_POLL_MS,
    ...(variant.threads === undefined ? {} : { threads: variant.threads }),
    premium: { key, pollMs: MEMORY_PREMIUM_POLL_MS },
  });
  const rss = new RssSampler(daemon.pid);
  rss.start();
  try {
    const what =
      variant.threads === undefined ? 'threads auto' : `--threads ${String(variant.threads)}`;
    progress(`memory: daemon (${what}): baseline (${String(BASELINE_CYCLES)} cycles)`);
    const from = await sim.request({ op: 'count', path: INCIDENTS_PATH });
    let polls = await cycles(sim, from, BASELINE_CYCLES, MEMORY_POLL_MS);
    const afterBaseline = rss.last;
    const sentBefore = await sink.request({ op: 'count' });
    progress(
      `memory: daemon (${what}): ${String(CHANGE_CYCLES)} cycles with ${String(changed)} services changing`,
    );
    for (let c = 0; c < CHANGE_CYCLES; c++) {
      await sim.request({ op: 'change', kind: c % 2 === 0 ? 'status' : 'incidents' });
      polls = await cycles(sim, polls, 1, MEMORY_POLL_MS);
    }
    // One more cycle so the last change is routed and delivered while sampling.
    await cycles(sim, polls, 1, MEMORY_POLL_MS);
    rss.stop();
    const delivered = (await sink.request({ op: 'count' })) - sentBefore;
    if (delivered === 0)
      throw new BenchError(
        'bench_measurement',
        'no webhook was delivered: the daemon did not see the changes',
      );
    const metrics = await scrapeMetrics(daemon.port, 30_000);
    const ok = (kind: string): number =>
      metricSum(metrics, 'statuswatch_polls_total', { kind, outcome: 'ok' });
    return {
      variant,
      peak: rss.peak,
      p50: rss.p50(),
      afterBaseline,
      end: rss.last,
      endFile: rss.lastFile,
      samples: rss.samples,
      delivered,
      okPolls: {
        status: ok('status'),
        incidents: ok('incidents'),
        sla: ok('sla'),
        scores: ok('scores'),
      },
      threads: [...threadBusySeconds(metrics).keys()],
      heaps: threadHeaps(metrics),
    };
  } finally {
    rss.stop();
    await daemon.stop();
  }
}

export async function runMemoryBench(
  progress: (line: string) => void,
  sizes: readonly MemorySize[] = memorySizes(),
): Promise<SectionResult> {
  progress('memory: bare Node.js baseline');
  const { rss: bare, file: bareFile } = await bareNodeRss();
  const tables: Table[] = [];
  const targets: TargetResult[] = [];
  const crashed: string[] = [];
  for (const size of sizes) {
    const runs: DaemonRun[] = [];
    let changed = 0;
    try {
      progress(`memory: starting simulator (${String(size.services)} services) and sink`);
      // A key of this run only, given to the simulator and the daemon through the environment.
      const key = `swbench-${randomBytes(16).toString('hex')}`;
      const sim = await startChild(['sim', String(size.services)], 120_000, { [SIM_KEY_ENV]: key });
      const sink = await startChild(['sink']);
      try {
        changed = await sim.request({ op: 'prepare', kind: 'status', fraction: 0.01 });
        for (const [i, variant] of memoryVariants().entries()) {
          runs.push(
            await measureDaemon(
              sim,
              sink,
              `memory-${String(size.services)}-${String(i)}`,
              variant,
              key,
              changed,
              progress,
            ),
          );
        }
      } finally {
        await sim.close();
        await sink.close();
      }
    } catch (err) {
      // One size crashing must not hide the others' figures.
      const e = toError(err);
      crashed.push(`${fmt(size.services, 0)} services: ${e.message}`);
      progress(`memory: ${String(size.services)} services crashed: ${e.stack ?? e.message}`);
    }
    tables.push({
      title: `Daemon memory at ${fmt(size.services, 0)} services (status + incidents every ${String(MEMORY_POLL_MS / 1000)} s, SLA + scores every ${String(MEMORY_PREMIUM_POLL_MS / 1000)} s)`,
      columns: [
        'process',
        'RSS peak MB',
        'RSS p50 MB',
        'after baseline MB',
        'at end MB',
        'of it file-backed MB',
        'samples',
        'threads',
        'ok polls st/inc/sla/sc',
        'heap at end MB (used/committed)',
        'peak vs bare',
      ],
      rows: [
        [
          'bare Node.js (node -e, a timer)',
          fmt(bare, 1),
          '',
          '',
          '',
          bareFile === null ? '?' : fmt(bareFile, 1),
          '1',
          '1',
          '',
          '',
          '1.00x',
        ],
        ...runs.map((r) => [
          r.variant.label,
          fmt(r.peak, 1),
          fmt(r.p50, 1),
          fmt(r.afterBaseline, 1),
          fmt(r.end, 1),
          r.endFile === null ? '?' : fmt(r.endFile, 1),
          String(r.samples),
          r.threads.length === 0 ? '?' : `${String(r.threads.length)} (${r.threads.join(', ')})`,
          [r.okPolls.status, r.okPolls.incidents, r.okPolls.sla, r.okPolls.scores]
            .map((n) => fmt(n, 0))
            .join('/'),
          [...r.heaps].map(([t, h]) => `${t} ${fmt(h.used, 1)}/${fmt(h.committed, 1)}`).join(', '),
          `${fmt(r.peak / bare, 2)}x`,
        ]),
      ],
      notes: [
        ...crashed.filter((c) => c.startsWith(fmt(size.services, 0))).map((c) => `CRASHED at ${c}`),
        `${String(BASELINE_CYCLES)} silent baseline cycles, then ${String(CHANGE_CYCLES)} cycles with ${String(changed)} services (1%) changing status or opening/resolving incidents; webhooks delivered: ${runs.map((r) => String(r.delivered)).join(' / ')}`,
        'the daemon has an API key the simulator accepts (scopes sla:read, scores:read); "ok polls" are statuswatch_polls_total{outcome="ok"} per kind from its /metrics at the end',
        'no Node.js flags on either command line (the image passes none): the daemon sets its heap settings itself; "threads" are the thread labels of statuswatch_thread_busy_seconds_total',
        'file-backed = RssFile from /proc/<pid>/status: pages of mapped files, mostly the Node.js binary (its code, V8 snapshot and ICU data), shared with any other process running the same binary; the rest of the RSS is anonymous memory (heaps, buffers, the allocator)',
        'heap at end: statuswatch_thread_heap_bytes per thread from the last scrape (used = live and uncollected objects, committed = what the isolate holds, young generation included); RSS is their sum plus Node.js itself (code, buffers, allocator)',
        'RSS = VmRSS of the daemon process (every thread) from /proc/<pid>/status, sampled every 200 ms from its start to the end; p50 = median of the samples; the simulator and the webhook sink run in processes of their own',
      ],
    });
    for (const r of runs) {
      targets.push({
        section: 'memory',
        target: `RSS <= ${String(size.targetMb)} MB at ${fmt(size.services, 0)} services, SLA and scores on (${
          r.variant.threads === undefined
            ? 'as the image runs it'
            : `--threads ${String(r.variant.threads)}`
        })`,
        measured: `peak ${fmt(r.peak, 1)} MB, p50 ${fmt(r.p50, 1)} MB (${fmt(r.peak / bare, 2)}x a bare Node.js process)`,
        pass: r.peak <= size.targetMb && r.okPolls.sla > 0 && r.okPolls.scores > 0,
      });
    }
  }
  for (const c of crashed) {
    targets.push({
      section: 'memory',
      target: 'every size measured',
      measured: `crashed at ${c}`,
      pass: false,
    });
  }
  return { name: 'memory', tables, targets, crashed };
}
