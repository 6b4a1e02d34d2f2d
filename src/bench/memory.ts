/**
 * Memory (performance targets in README.md: RSS <= 150 MB at 20,000 services, <= 250 MB at
 * 100,000): the real daemon (`node dist-bench/cli.js run`) in a process of its own, polling a simulator
 * of that many services (a child process) for status and incidents every 2 s, with 1% of the
 * services changing every cycle after a silent baseline (so snapshots, diffs, routing and webhook
 * deliveries all run). Its RSS is read from /proc (or `ps`) every 200 ms; the baseline is the RSS
 * of a bare Node.js process (`node -e` with a timer) measured in the same run.
 *
 * Each size is measured twice: the daemon as shipped — with SHIPPED_FLAGS on its node command line,
 * as the Docker image's ENTRYPOINT runs it (V8's heap growth and young generation sized for memory
 * rather than speed) — and as a plain `node dist-bench/cli.js run` for comparison. The targets are
 * judged on the daemon as shipped; the plain run gets target lines of its own, marked as such.
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
import { startChild, type ChildHandle } from './child-protocol.js';
import { BenchError } from './errors.js';
import {
  REDIS_URL,
  benchConfigYaml,
  fmt,
  scenarioPrefix,
  sleep,
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
export const POLL_MS = 2_000;
const BASELINE_CYCLES = 3;
const CHANGE_CYCLES = 8;
const SAMPLE_MS = 200;

export const EVENTS = ['incident.opened', 'incident.resolved', 'status.changed'] as const;

const execFileAsync = promisify(execFile);

/** Resident set size of `pid` in MB: /proc on Linux, else `ps`. */
export async function rssMb(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${String(pid)}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    if (match?.[1] !== undefined) return Number(match[1]) / 1024;
  } catch {
    // not Linux, or the process is gone: try ps
  }
  const { stdout } = await execFileAsync('ps', ['-o', 'rss=', '-p', String(pid)]);
  const kb = Number(stdout.trim());
  if (!Number.isFinite(kb) || kb <= 0)
    throw new BenchError('bench_measurement', `no RSS for process ${String(pid)}`);
  return kb / 1024;
}

/** Samples the RSS of `pid` every `everyMs` until stopped; keeps the peak, the last value and every sample. */
export class RssSampler {
  peak = 0;
  last = 0;
  samples = 0;
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
      rssMb(this.pid).then(
        (mb) => {
          this.samples += 1;
          this.last = mb;
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
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
}

/** RSS of a bare Node.js process (a timer, nothing loaded), after a second of life. */
export async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  try {
    await sleep(1_000);
    if (child.pid === undefined) throw new BenchError('bench_measurement', 'bare node: no pid');
    return await rssMb(child.pid);
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
}

/** Waits until the simulator has answered `count` more cycles' polls (one request per kind each). */
export async function cycles(
  sim: ChildHandle,
  from: number,
  count: number,
  kinds: number,
  pollMs = POLL_MS,
): Promise<number> {
  const want = from + count * kinds;
  const deadline = Date.now() + count * pollMs * 4 + 60_000;
  for (;;) {
    const seen = await sim.request({ op: 'count' });
    if (seen >= want) return seen;
    if (Date.now() > deadline)
      throw new BenchError(
        'bench_timeout',
        `daemon made ${String(seen - from)} polls, expected ${String(count * kinds)}`,
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

export async function startDaemon(o: {
  sim: ChildHandle;
  sink: ChildHandle;
  label: string;
  nodeFlags: readonly string[];
  pollMs?: number;
}): Promise<Daemon> {
  const dir = await mkdtemp(join(tmpdir(), 'swbench-daemon-'));
  const port = await freePort();
  const configFile = join(dir, 'statuswatch.yaml');
  await writeFile(
    configFile,
    benchConfigYaml(EVENTS, undefined, { poll: `${String((o.pollMs ?? POLL_MS) / 1000)}s`, port }),
  );
  const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
  const child = spawn(process.execPath, [...o.nodeFlags, cli, 'run', '--config', configFile], {
    env: {
      ...process.env,
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

interface DaemonRun {
  flags: readonly string[];
  peak: number;
  afterBaseline: number;
  end: number;
  samples: number;
  delivered: number;
}

/** One daemon: silent baseline, then CHANGE_CYCLES cycles of 1% changes; its RSS sampled throughout. */
async function measureDaemon(
  sim: ChildHandle,
  sink: ChildHandle,
  label: string,
  flags: readonly string[],
  changed: number,
  progress: (line: string) => void,
): Promise<DaemonRun> {
  const daemon = await startDaemon({ sim, sink, label, nodeFlags: flags });
  const rss = new RssSampler(daemon.pid);
  rss.start();
  try {
    const kinds = 2; // status and incidents
    const what = flags.length === 0 ? 'daemon' : `daemon (${flags.join(' ')})`;
    progress(`memory: ${what}: baseline (${String(BASELINE_CYCLES)} cycles)`);
    let polls = await cycles(sim, await sim.request({ op: 'count' }), BASELINE_CYCLES, kinds);
    const afterBaseline = rss.last;
    const sentBefore = await sink.request({ op: 'count' });
    progress(
      `memory: ${what}: ${String(CHANGE_CYCLES)} cycles with ${String(changed)} services changing`,
    );
    for (let c = 0; c < CHANGE_CYCLES; c++) {
      await sim.request({ op: 'change', kind: c % 2 === 0 ? 'status' : 'incidents' });
      polls = await cycles(sim, polls, 1, kinds);
    }
    // One more cycle so the last change is routed and delivered while sampling.
    await cycles(sim, polls, 1, kinds);
    rss.stop();
    const delivered = (await sink.request({ op: 'count' })) - sentBefore;
    if (delivered === 0)
      throw new BenchError(
        'bench_measurement',
        'no webhook was delivered: the daemon did not see the changes',
      );
    return {
      flags,
      peak: rss.peak,
      afterBaseline,
      end: rss.last,
      samples: rss.samples,
      delivered,
    };
  } finally {
    rss.stop();
    await daemon.stop();
  }
}

export async function runMemoryBench(
  progress: (line: string) => void,
  sizes: readonly MemorySize[] = MEMORY_SIZES,
): Promise<SectionResult> {
  progress('memory: bare Node.js baseline');
  const bare = await bareNodeRss();
  const tables: Table[] = [];
  const targets: TargetResult[] = [];
  const crashed: string[] = [];
  for (const size of sizes) {
    const runs: DaemonRun[] = [];
    let changed = 0;
    try {
      progress(`memory: starting simulator (${String(size.services)} services) and sink`);
      const sim = await startChild(['sim', String(size.services)]);
      const sink = await startChild(['sink']);
      try {
        changed = await sim.request({ op: 'prepare', kind: 'status', fraction: 0.01 });
        for (const [i, flags] of [SHIPPED_FLAGS, []].entries()) {
          runs.push(
            await measureDaemon(
              sim,
              sink,
              `memory-${String(size.services)}-${String(i)}`,
              flags,
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
    const label = (flags: readonly string[]): string =>
      flags.length === 0
        ? 'node dist-bench/cli.js run (plain, for comparison)'
        : `node ${flags.join(' ')} dist-bench/cli.js run (as shipped)`;
    tables.push({
      title: `Daemon memory at ${fmt(size.services, 0)} services (status + incidents every ${String(POLL_MS / 1000)} s)`,
      columns: [
        'process',
        'RSS peak MB',
        'RSS after baseline MB',
        'RSS at end MB',
        'samples',
        'vs bare Node.js',
      ],
      rows: [
        ['bare Node.js (node -e, a timer)', fmt(bare, 1), '', '', '1', '1.00x'],
        ...runs.map((r) => [
          label(r.flags),
          fmt(r.peak, 1),
          fmt(r.afterBaseline, 1),
          fmt(r.end, 1),
          String(r.samples),
          `${fmt(r.peak / bare, 2)}x`,
        ]),
      ],
      notes: [
        ...crashed.filter((c) => c.startsWith(fmt(size.services, 0))).map((c) => `CRASHED at ${c}`),
        `${String(BASELINE_CYCLES)} silent baseline cycles, then ${String(CHANGE_CYCLES)} cycles with ${String(changed)} services (1%) changing status or opening/resolving incidents; webhooks delivered: ${runs.map((r) => String(r.delivered)).join(' / ')}`,
        'the simulator and the webhook sink run in processes of their own; RSS from /proc/<pid>/status (VmRSS), sampled every 200 ms',
      ],
    });
    for (const r of runs) {
      const plain = r.flags.length === 0;
      targets.push({
        section: 'memory',
        target: `RSS <= ${String(size.targetMb)} MB at ${fmt(size.services, 0)} services${
          plain ? ' (plain node, without the shipped flags)' : ''
        }`,
        measured: `peak ${fmt(r.peak, 1)} MB (${fmt(r.peak / bare, 2)}x a bare Node.js process)`,
        pass: r.peak <= size.targetMb,
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
