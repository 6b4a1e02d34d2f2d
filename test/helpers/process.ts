/**
 * Real child processes of the built CLI (`dist/cli.js`) for end-to-end tests: spawn, capture
 * stdout/stderr, wait for exit, find the ops port from the startup log line, and kill whatever is
 * still running in `afterEach` (`killAll`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { QUEUES } from '../../src/queues.js';
export { freePort } from '../../src/net.js';
import { waitFor } from './wait.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist', 'cli.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** stdout + stderr. */
  output(): string;
  /** Resolves when the process has exited (and its output streams closed). */
  readonly exited: Promise<Exit>;
  /** The exit, or null while it runs. */
  exit(): Exit | null;
  /** Waits for a line of stdout/stderr matching `pattern`; resolves with the match. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Waits for exit, failing after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<Exit>;
  signal(signal: NodeJS.Signals): void;
}

const running = new Set<CliProcess>();

/** Spawns `node dist/cli.js ...args` with its own copy of the environment plus `env`. */
export function spawnCli(args: readonly string[], env: Record<string, string> = {}): CliProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.STATUSWATCH_CONFIG;
  delete childEnv.NODE_OPTIONS;
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${CLI}`);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    out += s;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    err += s;
  });
  let exit: Exit | null = null;
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
  });
  const pid = child.pid;
  const handle: CliProcess = {
    child,
    pid,
    stdout: () => out,
    stderr: () => err,
    output: () => out + err,
    exited,
    exit: () => exit,
    async waitForOutput(pattern, timeoutMs = 10_000) {
      return waitFor(() => (out + err).match(pattern) ?? (exit !== null ? 'exited' : false), {
        timeoutMs,
        what: `output matching ${String(pattern)} from pid ${pid}`,
      }).then((m) => {
        if (m === 'exited')
          throw new Error(
            `pid ${pid} exited (${JSON.stringify(exit)}) before printing ${String(pattern)}:\n${out}${err}`,
          );
        return m;
      });
    },
    async waitForExit(timeoutMs = 10_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`pid ${pid} did not exit within ${timeoutMs} ms`));
        }, timeoutMs);
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    signal(signal) {
      if (exit === null) child.kill(signal);
    },
  };
  running.add(handle);
  void exited.then(() => running.delete(handle));
  return handle;
}

/** Runs the CLI to completion and returns its exit code and output. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, env);
  const exit = await p.waitForExit(timeoutMs);
  return { code: exit.code, stdout: p.stdout(), stderr: p.stderr() };
}

/** SIGKILLs every spawned process still running and waits for each to go. */
export async function killAll(): Promise<void> {
  const left = [...running];
  for (const p of left) p.signal('SIGKILL');
  await Promise.all(left.map((p) => p.exited));
}

/** A temporary directory removed by `cleanup`. */
export async function tempDir(): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'statuswatch-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Writes `config` (an object, or YAML text) as a file in `dir`; returns its path. */
export async function writeConfig(
  dir: string,
  config: Record<string, unknown> | string,
  name = 'statuswatch.yaml',
): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, typeof config === 'string' ? config : stringify(config), 'utf8');
  return file;
}

export interface Daemon {
  proc: CliProcess;
  /** http://127.0.0.1:PORT of the ops server. */
  url: string;
}

/**
 * Starts `statuswatch run --config FILE` and waits for its ops server (the port is taken from
 * the `app:started` log line, so `server.port: 0` works) to answer /readyz with 200.
 */
export async function startDaemon(
  configFile: string,
  env: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<Daemon> {
  const proc = spawnCli(['run', '--config', configFile], env);
  const match = await proc.waitForOutput(/"event":"app:started"[^\n]*"port":(\d+)/, timeoutMs);
  const url = `http://127.0.0.1:${match[1] ?? '?'}`;
  await waitFor(
    async () => {
      const res = await fetch(`${url}/readyz`).catch(() => null);
      return res?.status === 200;
    },
    { timeoutMs, intervalMs: 50, what: `${url}/readyz to answer 200` },
  );
  return { proc, url };
}

/**
 * The sum of every sample of metric `name` whose labels include `labels` (Prometheus text format);
 * 0 when there is none.
 */
export function metricValue(
  metricsText: string,
  name: string,
  labels: Record<string, string>,
): number {
  let sum = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const found: Record<string, string> = {};
    const open = line.indexOf('{');
    if (open === name.length) {
      const body = line.slice(open + 1, line.lastIndexOf('}'));
      for (const m of body.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found[m[1] ?? ''] = m[2] ?? '';
    }
    if (Object.entries(labels).every(([k, v]) => found[k] === v))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The daemon's /metrics text (throws on any status but 200). */
export async function metricsOf(d: Daemon): Promise<string> {
  const res = await fetch(`${d.url}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/** Successful polls of `kind` counted in a /metrics text. */
export const okPolls = (metricsText: string, kind: string): number =>
  metricValue(metricsText, 'statuswatch_polls_total', { kind, outcome: 'ok' });

/**
 * Successful polls of each of `kinds` between the replicas `daemons` (polls are jobs any replica
 * may take); a replica that does not answer /metrics counts none.
 */
export async function okPollTotals(
  daemons: readonly Daemon[],
  kinds: readonly string[],
): Promise<number[]> {
  const texts = await Promise.all(daemons.map((d) => metricsOf(d).catch(() => '')));
  return kinds.map((kind) => texts.reduce((sum, text) => sum + okPolls(text, kind), 0));
}

/**
 * Waits until the replicas `ds` have completed `n` more successful polls of each of `kinds`
 * between them. Polls are jobs any replica may take, so with several replicas running, one of
 * them alone may see none; a replica that does not answer /metrics counts as no progress.
 */
export async function morePolls(
  ds: Daemon | readonly Daemon[],
  n: number,
  {
    kinds = ['status', 'incidents'],
    timeoutMs = 30_000,
  }: { kinds?: string[]; timeoutMs?: number } = {},
): Promise<void> {
  const daemons: readonly Daemon[] = 'url' in ds ? [ds] : ds;
  const totals = (): Promise<number[]> => okPollTotals(daemons, kinds);
  const start = await totals();
  await waitFor(async () => (await totals()).every((total, i) => total >= (start[i] ?? 0) + n), {
    timeoutMs,
    intervalMs: 100,
    what: `${n} more ${kinds.join(' and ')} polls`,
  });
}

/**
 * Waits until the routing and delivery queues hold nothing waiting, active or delayed, as `d`
 * reports them; answers the /metrics text it last read.
 */
export async function queuesIdle(d: Daemon, timeoutMs = 30_000): Promise<string> {
  const queues = [QUEUES.transitions, QUEUES.deliveries, QUEUES.deliveryRetries];
  return waitFor(
    async () => {
      const text = await metricsOf(d);
      const busy = queues.some((queue) =>
        ['waiting', 'active', 'delayed'].some(
          (state) => metricValue(text, 'statuswatch_queue_jobs', { queue, state }) > 0,
        ),
      );
      return busy ? false : text;
    },
    { timeoutMs, intervalMs: 100, what: `idle ${queues.join(', ')} queues` },
  );
}
