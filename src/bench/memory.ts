/**
 * Memory (performance target in README.md: RSS <= 150 MB at 20,000 services): the real daemon
 * (`node dist/cli.js run`) in a process of its own, polling a simulator of 20,000 services (a
 * child process) for status and incidents every 2 s, with 1% of the services changing every cycle
 * after a silent baseline (so snapshots, diffs, routing and webhook deliveries all run). Its RSS
 * is read from /proc (or `ps`) every 200 ms; the baseline is the RSS of a bare Node.js process
 * (`node -e` with a timer) measured in the same run.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startChild, type ChildHandle } from './child-protocol.js';
import { BenchError } from './errors.js';
import {
  REDIS_URL,
  benchConfigYaml,
  fmt,
  scenarioPrefix,
  sleep,
  type SectionResult,
  type TargetResult,
} from './support.js';

export const MEMORY_SERVICES = 20_000;
export const RSS_TARGET_MB = 150;
const POLL_MS = 2_000;
const BASELINE_CYCLES = 3;
const CHANGE_CYCLES = 8;
const SAMPLE_MS = 200;

const CONFIG_YAML = benchConfigYaml(['incident.opened', 'incident.resolved', 'status.changed']);

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

/** Samples the RSS of `pid` every SAMPLE_MS until stopped; keeps the peak and the last value. */
class RssSampler {
  peak = 0;
  last = 0;
  samples = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly pid: number) {}

  start(): void {
    const tick = (): void => {
      rssMb(this.pid).then(
        (mb) => {
          this.samples += 1;
          this.last = mb;
          this.peak = Math.max(this.peak, mb);
        },
        () => undefined,
      );
    };
    tick();
    this.timer = setInterval(tick, SAMPLE_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
}

/** RSS of a bare Node.js process (a timer, nothing loaded), after a second of life. */
async function bareNodeRss(): Promise<number> {
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

/** Waits until the simulator has answered `requests` more polls (each cycle is one request per kind). */
async function cycles(
  sim: ChildHandle,
  from: number,
  count: number,
  kinds: number,
): Promise<number> {
  const want = from + count * kinds;
  const deadline = Date.now() + count * POLL_MS * 4 + 20_000;
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

export async function runMemoryBench(progress: (line: string) => void): Promise<SectionResult> {
  progress('memory: bare Node.js baseline');
  const bare = await bareNodeRss();
  progress(`memory: starting simulator (${String(MEMORY_SERVICES)} services) and sink`);
  const sim = await startChild(['sim', String(MEMORY_SERVICES)]);
  const sink = await startChild(['sink']);
  const dir = await mkdtemp(join(tmpdir(), 'swbench-memory-'));
  let daemon: ChildProcess | undefined;
  const sampler: { current?: RssSampler } = {};
  try {
    const changed = await sim.request({ op: 'prepare', kind: 'status', fraction: 0.01 });
    const configFile = join(dir, 'statuswatch.yaml');
    await writeFile(configFile, CONFIG_YAML);
    const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
    daemon = spawn(process.execPath, [cli, 'run', '--config', configFile], {
      env: {
        ...process.env,
        SIM_URL: sim.url,
        SINK_URL: sink.url,
        SINK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
        REDIS_URL,
        PREFIX: scenarioPrefix('memory'),
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    if (daemon.pid === undefined) throw new BenchError('bench_child', 'could not start the daemon');
    const rss = new RssSampler(daemon.pid);
    sampler.current = rss;
    rss.start();
    const kinds = 2; // status and incidents
    progress(`memory: daemon baseline (${String(BASELINE_CYCLES)} cycles)`);
    let polls = await cycles(sim, 0, BASELINE_CYCLES, kinds);
    const afterBaseline = rss.last;
    const sentBefore = await sink.request({ op: 'count' });
    for (let c = 0; c < CHANGE_CYCLES; c++) {
      progress(
        `memory: cycle ${String(c + 1)}/${String(CHANGE_CYCLES)} with ${String(changed)} services changing`,
      );
      await sim.request({ op: 'change', kind: c % 2 === 0 ? 'status' : 'incidents' });
      polls = await cycles(sim, polls, 1, kinds);
    }
    // One more cycle so the last change is routed and delivered while sampling.
    polls = await cycles(sim, polls, 1, kinds);
    rss.stop();
    const delivered = (await sink.request({ op: 'count' })) - sentBefore;
    if (delivered === 0)
      throw new BenchError(
        'bench_measurement',
        'no webhook was delivered: the daemon did not see the changes',
      );
    const targets: TargetResult[] = [
      {
        section: 'memory',
        target: `RSS <= ${String(RSS_TARGET_MB)} MB at ${fmt(MEMORY_SERVICES, 0)} services`,
        measured: `peak ${fmt(rss.peak, 1)} MB (${fmt(rss.peak / bare, 2)}x a bare Node.js process)`,
        pass: rss.peak <= RSS_TARGET_MB,
      },
    ];
    return {
      name: 'memory',
      tables: [
        {
          title: `Daemon memory at ${fmt(MEMORY_SERVICES, 0)} services (status + incidents every ${String(POLL_MS / 1000)} s)`,
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
            [
              'statuswatch run',
              fmt(rss.peak, 1),
              fmt(afterBaseline, 1),
              fmt(rss.last, 1),
              String(rss.samples),
              `${fmt(rss.peak / bare, 2)}x`,
            ],
          ],
          notes: [
            `${String(BASELINE_CYCLES)} silent baseline cycles, then ${String(CHANGE_CYCLES)} cycles with ${String(changed)} services (1%) changing status or opening/resolving incidents; ${String(delivered)} webhooks delivered`,
            'the simulator and the webhook sink run in processes of their own; RSS from /proc/<pid>/status (VmRSS), sampled every 200 ms',
          ],
        },
      ],
      targets,
    };
  } finally {
    sampler.current?.stop();
    if (daemon !== undefined) {
      daemon.kill('SIGTERM');
      const gone = exited(daemon);
      const timer = setTimeout(() => daemon?.kill('SIGKILL'), 15_000);
      await gone;
      clearTimeout(timer);
    }
    await sim.close();
    await sink.close();
    await rm(dir, { recursive: true, force: true });
  }
}
