/**
 * Incident storm (the performance targets in README.md): the real daemon as the image runs it
 * (`node dist-bench/cli.js run`, no Node.js flags, `daemon.threads: auto`; a process of its own)
 * polling an in-process simulator of 9,000 services (Variant A, no rate limit) for status and incidents every second, one subscription `"*"` → one webhook channel, no
 * grouping. After its first cycles have baselined, 5,000 incidents open at once on 5,000 distinct
 * services; measured from the moment the simulator answers the first `/api/v1/incidents` request
 * after that (the response that reveals them) to the last webhook a recording sink (a child
 * process) received: deliveries/s, first-delivery delay, total time, the daemon's CPU (from
 * /proc/<pid>/stat) per delivery, and duplicates (a `webhook-id` received twice); beside them the
 * cores used (CPU seconds / wall seconds of the storm), each thread's event-loop busy seconds
 * (the daemon's `statuswatch_thread_busy_seconds_total`, scraped before and after) and the
 * process's peak RSS (every thread). Then 30 incidents opened one at a time, each revealed by a
 * poll of its own: poll response → webhook.
 *
 * STATUSWATCH_BENCH_THREADS (`1`, `auto`, or a list: `auto,1`) measures the daemon once per
 * value with `--threads <value>`, all against the same Alertmanager run.
 *
 * The baseline of the same run is Prometheus Alertmanager, when installed (Debian's
 * `prometheus-alertmanager`): one webhook receiver pointing at the same kind of sink,
 * `group_by: ['...']` (every alert a group of its own), `group_wait: 0s`; 5,000 distinct alerts
 * POSTed to `/api/v2/alerts` in a few large requests, then 30 single alerts, measured the same
 * way (from the first POST; alerts delivered are counted from the webhook bodies' `alerts`).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { constants, createWriteStream, readFileSync } from 'node:fs';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { request } from 'undici';
import { toError } from '../errors.js';
import { freePort } from '../net.js';
import { buildCatalog, createSimulator, type Simulator } from '../sim/index.js';
import { SIM_SEED, clockMs, startChild, type ChildHandle } from './child-protocol.js';
import { BenchError } from './errors.js';
import { RssSampler } from './memory.js';
import {
  REDIS_URL,
  ServerCommandCounter,
  benchThreadSettings,
  daemonNodeArgs,
  benchConfigYaml,
  fmt,
  median,
  percentile,
  scenarioPrefix,
  scrapeMetrics,
  sleep,
  threadBusySeconds,
  withTimeout,
  type SectionResult,
  type Table,
  type TargetResult,
} from './support.js';

export const STORM_INCIDENTS = 5_000;
/** Variant A shows incidents of official services only: 9,000 services hold 5,398 of them. */
export const STORM_SERVICES = 9_000;
export const SINGLE_SAMPLES = 30;
const POLL_MS = 1_000;
const READY_TIMEOUT_MS = 120_000;
/** From the revealing poll (or the first POST) until the last of the 5,000 has to arrive. */
const STORM_TIMEOUT_MS = 180_000;
const REVEAL_TIMEOUT_MS = 20_000;
const SAMPLE_TIMEOUT_MS = 30_000;
/** Idle CPU is measured over this long before the storm (statuswatch keeps polling meanwhile). */
const IDLE_MS = 5_000;
/** After the last delivery, how long late duplicates are waited for. */
const GRACE_MS = 3_000;
const WATCH_MS = 100;
const AM_BATCH = 1_000;
/**
 * The daemon's log level: its default (info, a line per delivery), read by the bench (tail kept);
 * STATUSWATCH_BENCH_LOG_LEVEL overrides it, STATUSWATCH_BENCH_DAEMON_LOG names a file that gets
 * the daemon's whole output (to read a storm's timeline).
 */
const DAEMON_LOG_LEVEL = process.env['STATUSWATCH_BENCH_LOG_LEVEL'] ?? 'info';
const AM_INSTALL_HINT = 'apt-get install prometheus-alertmanager';

const execFileAsync = promisify(execFile);

// ---- processes -----------------------------------------------------------------------------

/** The last few KB a process wrote, for the message when it dies. */
class Tail {
  private text = '';

  push(chunk: Buffer): void {
    this.text = (this.text + chunk.toString('utf8')).slice(-4_000);
  }

  toString(): string {
    const lines = this.text.trim().split('\n').slice(-6);
    return lines.length === 0 || lines[0] === '' ? '(no output)' : lines.join(' | ');
  }
}

interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  tail: Tail;
}

/** `copyTo`: a file that also gets the process's whole output (none when empty). */
function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  copyTo?: string,
): Proc {
  const child = spawn(command, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = new Tail();
  const copy = copyTo === undefined || copyTo === '' ? null : createWriteStream(copyTo);
  // Both streams are read to the end (a full pipe would block the process); only the tail is kept.
  child.stdout.on('data', (chunk: Buffer) => {
    tail.push(chunk);
    copy?.write(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    tail.push(chunk);
    copy?.write(chunk);
  });
  child.on('close', () => copy?.end());
  child.on('error', (err) => {
    tail.push(Buffer.from(`spawn error: ${err.message}\n`));
  });
  if (child.pid === undefined) {
    child.kill('SIGKILL');
    throw new BenchError('bench_child', `could not start ${name} (${command})`);
  }
  return { name, child, pid: child.pid, tail };
}

function hasExited(p: Proc): boolean {
  return p.child.exitCode !== null || p.child.signalCode !== null;
}

function assertAlive(p: Proc): void {
  if (hasExited(p)) {
    const how =
      p.child.signalCode !== null
        ? `signal ${p.child.signalCode}`
        : `code ${String(p.child.exitCode)}`;
    throw new BenchError('bench_child', `${p.name} exited (${how}): ${p.tail.toString()}`);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
async function stopProcess(p: Proc, graceMs: number): Promise<void> {
  if (hasExited(p)) return;
  const gone = new Promise<void>((resolve) =>
    p.child.once('exit', () => {
      resolve();
    }),
  );
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  try {
    await withTimeout(gone, graceMs + 5_000, `${p.name} to exit`);
  } finally {
    clearTimeout(timer);
  }
}

/** What to undo at the end of a measurement, most recent first; a failing step stops no other. */
class Cleanup {
  private readonly steps: (() => Promise<unknown>)[] = [];

  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await step().catch(() => undefined);
    this.steps.length = 0;
  }
}

/**
 * The CPU time (user + system, all threads) a process has used, in ms, from /proc/<pid>/stat:
 * read synchronously (a few microseconds), so it can be taken at an exact moment.
 */
class ProcessCpu {
  private constructor(
    readonly pid: number,
    private readonly ticksPerSecond: number,
  ) {}

  static async of(pid: number): Promise<ProcessCpu> {
    let ticks = 100;
    try {
      const { stdout } = await execFileAsync('getconf', ['CLK_TCK']);
      const n = Number(stdout.trim());
      if (Number.isInteger(n) && n > 0) ticks = n;
    } catch {
      // Linux's USER_HZ is 100 nearly everywhere
    }
    const cpu = new ProcessCpu(pid, ticks);
    cpu.ms();
    return cpu;
  }

  ms(): number {
    const file = `/proc/${String(this.pid)}/stat`;
    let stat: string;
    try {
      stat = readFileSync(file, 'utf8');
    } catch (err) {
      throw new BenchError(
        'bench_measurement',
        `cannot read ${file} (the storm section needs Linux /proc and a live process)`,
        err,
      );
    }
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime))
      throw new BenchError('bench_measurement', `unexpected ${file}: ${stat}`);
    return ((utime + stime) * 1000) / this.ticksPerSecond;
  }
}

/** Calls `probe` every `everyMs` until it returns a value; a BenchError on timeout. */
async function waitFor<T>(
  what: string,
  timeoutMs: number,
  everyMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline)
      throw new BenchError('bench_timeout', `timed out after ${fmt(timeoutMs, 0)} ms: ${what}`);
    await sleep(everyMs);
  }
}

// ---- what the sink received -----------------------------------------------------------------

/** The bench's copy of a recording sink's entries, fetched incrementally. */
class Received {
  private readonly sink: ChildHandle;
  posts = 0;
  /** First arrival (clockMs) of each id. */
  readonly firstAt = new Map<string, number>();
  /** Arrivals of each id (more than one: a duplicate). */
  readonly keyCount = new Map<string, number>();
  /** Arrivals of each `webhook-id` header. */
  readonly webhookIds = new Map<string, number>();
  /** The ids of each POST, in arrival order. */
  private readonly postKeys: string[][] = [];

  constructor(sink: ChildHandle) {
    this.sink = sink;
  }

  async sync(): Promise<void> {
    const fresh = await this.sink.entries(this.posts);
    for (const entry of fresh) {
      this.posts += 1;
      this.postKeys.push(entry.keys);
      if (entry.webhookId !== '')
        this.webhookIds.set(entry.webhookId, (this.webhookIds.get(entry.webhookId) ?? 0) + 1);
      for (const key of entry.keys) {
        if (!this.firstAt.has(key)) this.firstAt.set(key, entry.at);
        this.keyCount.set(key, (this.keyCount.get(key) ?? 0) + 1);
      }
    }
  }

  /** POSTs about any of `keys` (an Alertmanager webhook may carry several alerts). */
  postsAbout(keys: ReadonlySet<string>): number {
    let n = 0;
    for (const ids of this.postKeys) if (ids.some((k) => keys.has(k))) n += 1;
    return n;
  }

  /** How many of `keys` arrived. */
  arrived(keys: readonly string[]): number {
    let n = 0;
    for (const key of keys) if (this.firstAt.has(key)) n += 1;
    return n;
  }

  /** Extra arrivals of `keys` (a key received three times counts 2). */
  duplicateKeys(keys: readonly string[]): number {
    let n = 0;
    for (const key of keys) n += Math.max(0, (this.keyCount.get(key) ?? 0) - 1);
    return n;
  }

  /** Extra arrivals of every `webhook-id`. */
  duplicateWebhookIds(): number {
    let n = 0;
    for (const count of this.webhookIds.values()) n += Math.max(0, count - 1);
    return n;
  }

  /** Ids other than `known` that arrived, plus POSTs about no id: what the bench did not cause. */
  others(known: ReadonlySet<string>): number {
    let n = 0;
    for (const key of this.firstAt.keys()) if (!known.has(key)) n += 1;
    for (const ids of this.postKeys) if (ids.length === 0) n += 1;
    return n;
  }

  /** Earliest and latest first arrival of `keys` (NaN when none). */
  span(keys: readonly string[]): { first: number; last: number } {
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const key of keys) {
      const at = this.firstAt.get(key);
      if (at === undefined) continue;
      first = Math.min(first, at);
      last = Math.max(last, at);
    }
    return Number.isFinite(first) ? { first, last } : { first: Number.NaN, last: Number.NaN };
  }
}

// ---- figures ----------------------------------------------------------------------------------

interface StormFigures {
  /** Items caused (incidents opened, alerts posted). */
  items: number;
  /** Distinct items delivered. */
  delivered: number;
  /** POSTs the sink received carrying them. */
  webhooks: number;
  /** clockMs of the revealing poll response (statuswatch) or of the first POST (Alertmanager). */
  startAt: number;
  firstAt: number;
  lastAt: number;
  /** CPU of the process from just before the storm to the moment the last item was seen. */
  cpuMs: number;
  cpuWindowMs: number;
  idleCpuMsPerSec: number;
  redisCpuMs: number | null;
  /** `webhook-id` headers received more than once (null: the system sends none). */
  dupWebhookIds: number | null;
  /** Items received more than once. */
  dupItems: number;
  /** The wait for the last item ran out: delivered and lastAt are as of the deadline. */
  timedOut: boolean;
  /** RSS of the whole process (MB): just before the storm, and the peak until the last delivery. */
  rssStartMb: number;
  rssPeakMb: number;
}

/** Each thread's event-loop busy seconds over `windowMs` (the daemon's own metric). */
interface ThreadBusy {
  windowMs: number;
  seconds: Map<string, number>;
}

interface SystemFigures {
  /** How the system was run, for the tables. */
  name: string;
  storm: StormFigures | null;
  /** statuswatch's threads over the storm (null: not measured, or not statuswatch). */
  busy: ThreadBusy | null;
  single: number[];
  /** Keys received that the bench did not cause. */
  others: number;
  errors: string[];
  notes: string[];
}

const perSecond = (s: StormFigures): number => s.delivered / ((s.lastAt - s.startAt) / 1000);
const cpuPerItem = (s: StormFigures): number => s.cpuMs / s.delivered;
const netCpuPerItem = (s: StormFigures): number =>
  (s.cpuMs - (s.idleCpuMsPerSec * s.cpuWindowMs) / 1000) / s.delivered;
/** Cores the process kept busy over the storm: CPU seconds / wall seconds. */
const coresUsed = (s: StormFigures): number => s.cpuMs / s.cpuWindowMs;

/** Where a storm's measurement starts: when (clockMs), the process's CPU then, Redis's CPU then. */
interface StormStart {
  at: number;
  cpuMs: number;
  redisCpuMs: number | null;
}

/**
 * Waits until every key of `keys` arrived at `received`, reading the CPU of the process the
 * moment they have. On timeout the figures say how far it got.
 */
async function drain(
  received: Received,
  keys: readonly string[],
  proc: Proc,
  cpu: ProcessCpu,
  start: StormStart,
  idleCpuMsPerSec: number,
  redis: ServerCommandCounter | null,
  progress: (line: string) => void,
  label: string,
  rss: RssSampler,
  /** Runs the moment every item has arrived (or the deadline passed), after the CPU is read. */
  atEnd: () => Promise<void> = () => Promise.resolve(),
): Promise<StormFigures> {
  let timedOut = false;
  const t0 = performance.now();
  let lastReport = t0;
  try {
    await waitFor(
      `all ${fmt(keys.length, 0)} ${label} deliveries`,
      STORM_TIMEOUT_MS,
      WATCH_MS,
      async () => {
        assertAlive(proc);
        await received.sync();
        const n = received.arrived(keys);
        if (performance.now() - lastReport > 10_000) {
          lastReport = performance.now();
          progress(`storm: ${label}: ${fmt(n, 0)}/${fmt(keys.length, 0)} delivered`);
        }
        return n === keys.length ? true : undefined;
      },
    );
  } catch (err) {
    // Only the storm's own deadline is a result; any other failure (a dead child, IPC) is not.
    const expired = performance.now() - t0 >= STORM_TIMEOUT_MS;
    if (!(err instanceof BenchError) || err.code !== 'bench_timeout' || !expired) throw err;
    timedOut = true;
  }
  const cpuMs = cpu.ms();
  const cpuAt = clockMs();
  rss.stop();
  await atEnd();
  const wanted = new Set(keys);
  const deliveredByDeadline = received.arrived(keys);
  const webhooksByDeadline = received.postsAbout(wanted);
  const redisCpuMs =
    redis === null || start.redisCpuMs === null ? null : await redis.cpuMs().catch(() => null);
  await sleep(GRACE_MS);
  await received.sync();
  const { first, last } = received.span(keys);
  return {
    items: keys.length,
    delivered: timedOut ? deliveredByDeadline : received.arrived(keys),
    webhooks: timedOut ? webhooksByDeadline : received.postsAbout(wanted),
    startAt: start.at,
    firstAt: first,
    lastAt: timedOut ? cpuAt : last,
    cpuMs: cpuMs - start.cpuMs,
    cpuWindowMs: cpuAt - start.at,
    idleCpuMsPerSec,
    redisCpuMs:
      redisCpuMs === null || start.redisCpuMs === null ? null : redisCpuMs - start.redisCpuMs,
    dupWebhookIds: received.webhookIds.size > 0 ? received.duplicateWebhookIds() : null,
    dupItems: received.duplicateKeys(keys),
    timedOut,
    rssStartMb: rss.series[0]?.[1] ?? Number.NaN,
    rssPeakMb: rss.peak,
  };
}

/** CPU ms per second the process uses while nothing happens (over IDLE_MS). */
async function idleCpuRate(cpu: ProcessCpu): Promise<number> {
  const cpu0 = cpu.ms();
  const t0 = clockMs();
  await sleep(IDLE_MS);
  const cpu1 = cpu.ms();
  return ((cpu1 - cpu0) * 1000) / (clockMs() - t0);
}

// ---- statuswatch ------------------------------------------------------------------------------

/**
 * Runs `change` right before the simulator answers its next bulk `/api/v1/incidents` request, so
 * that response is the first to show it; resolves with when the request arrived, when its
 * response had been written (the simulator answers synchronously: the next turn of the event
 * loop comes after the response) and the daemon's CPU at that moment.
 */
function onNextIncidentsPoll(
  sim: Simulator,
  cpu: ProcessCpu,
  change: () => void = () => undefined,
): Promise<{ requestAt: number; producedAt: number; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    sim.beforeNext({
      path: '/api/v1/incidents',
      run: () => {
        const requestAt = clockMs();
        change();
        setImmediate(() => {
          try {
            resolve({ requestAt, producedAt: clockMs(), cpuMs: cpu.ms() });
          } catch (err) {
            reject(toError(err));
          }
        });
      },
    });
  });
}

/** `reveal`, or why it did not come: a daemon that died, or a timeout. */
async function revealed<T>(proc: Proc, reveal: Promise<T>, what: string): Promise<T> {
  try {
    return await withTimeout(reveal, REVEAL_TIMEOUT_MS, what);
  } catch (err) {
    assertAlive(proc);
    throw err;
  }
}

async function pollsOk(port: number): Promise<{ status: number; incidents: number }> {
  const res = await request(`http://127.0.0.1:${String(port)}/metrics`, {
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
  });
  const text = await res.body.text();
  const count = (kind: string): number => {
    let total = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith('statuswatch_polls_total{')) continue;
      if (!line.includes(`kind="${kind}"`) || !line.includes('outcome="ok"')) continue;
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return total;
  };
  return { status: count('status'), incidents: count('incidents') };
}

/**
 * What any poller pays before it can see a single new incident: one `JSON.parse` (native, in
 * this process) of the incidents response the daemon reads each poll, with every storm incident
 * still open. A note beside the single-incident figures, not a figure of the daemon.
 */
async function parseFloor(simUrl: string): Promise<string> {
  const res = await request(`${simUrl}/api/v1/incidents`);
  const body = await res.body.text();
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    JSON.parse(body);
    times.push(performance.now() - started);
  }
  return `floor: one JSON.parse of the incidents response each poll reads (${fmt(body.length / 1e6, 1)} MB) takes ${fmt(median(times), 1)} ms (median of 7, in the bench process)`;
}

/** Official services (Variant A shows their incidents), storm ones first, then the single ones. */
function officialFeeds(): string[] {
  const official = buildCatalog(STORM_SERVICES, SIM_SEED)
    .filter((e) => e.sourceKind === 'official')
    .map((e) => e.feedId);
  if (official.length < STORM_INCIDENTS + SINGLE_SAMPLES)
    throw new BenchError(
      'bench_measurement',
      `${fmt(STORM_SERVICES, 0)} services hold only ${fmt(official.length, 0)} official ones`,
    );
  return official;
}

/** `threads`: the `--threads` value (null: none, the config default auto, as the image runs it). */
async function measureStatuswatch(
  progress: (line: string) => void,
  threads: string | null,
): Promise<SystemFigures> {
  const name = `statuswatch run${threads === null ? '' : ` --threads ${threads}`}`;
  const out: SystemFigures = {
    name,
    storm: null,
    busy: null,
    single: [],
    others: 0,
    errors: [],
    notes: [],
  };
  const tag = randomBytes(3).toString('hex');
  const feeds = officialFeeds();
  const stormFeeds = feeds.slice(0, STORM_INCIDENTS);
  const singleFeeds = feeds.slice(STORM_INCIDENTS, STORM_INCIDENTS + SINGLE_SAMPLES);
  const stormKeys = stormFeeds.map((_, i) => `storm-${tag}-${String(i)}`);
  const singleKeys = singleFeeds.map((_, i) => `single-${tag}-${String(i)}`);
  const known = new Set([...stormKeys, ...singleKeys]);

  const cleanup = new Cleanup();
  let received: Received | undefined;
  try {
    progress(`storm: starting simulator (${fmt(STORM_SERVICES, 0)} services) and webhook sink`);
    const sim: Simulator = createSimulator({
      services: STORM_SERVICES,
      seed: SIM_SEED,
      rateLimit: false,
    });
    cleanup.add(() => sim.close());
    // Fresh evidence before the daemon's baseline: the incidents show, nothing else changes later.
    for (const feedId of [...stormFeeds, ...singleFeeds]) sim.setEvidence(feedId, 'fresh');
    const simUrl = await sim.listen(0, '127.0.0.1');
    const sink = await startChild(['sink', 'record']);
    cleanup.add(() => sink.close());
    const rec = new Received(sink);
    received = rec;
    const dir = await mkdtemp(join(tmpdir(), 'swbench-storm-'));
    cleanup.add(() => rm(dir, { recursive: true, force: true }));
    const redis = new ServerCommandCounter();
    cleanup.add(() => redis.close());
    const port = await freePort();
    const configFile = join(dir, 'statuswatch.yaml');
    await writeFile(
      configFile,
      benchConfigYaml(['incident.opened'], undefined, { poll: `${String(POLL_MS / 1000)}s`, port }),
    );
    const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
    const proc = startProcess(
      'statuswatch run',
      process.execPath,
      // STATUSWATCH_BENCH_DAEMON_ARGS: extra Node.js flags for the daemon alone (e.g. --cpu-prof).
      [
        ...daemonNodeArgs(),
        cli,
        'run',
        '--config',
        configFile,
        ...(threads === null ? [] : ['--threads', threads]),
      ],
      {
        ...process.env,
        SIM_URL: simUrl,
        SINK_URL: sink.url,
        SINK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
        REDIS_URL,
        PREFIX: scenarioPrefix('storm'),
        LOG_LEVEL: DAEMON_LOG_LEVEL,
        STATUSWATCH_GRACE_MS: '10000',
      },
      process.env['STATUSWATCH_BENCH_DAEMON_LOG'],
    );
    cleanup.add(() => stopProcess(proc, 20_000));
    progress(`storm: ${name} (pid ${String(proc.pid)}) baselining, polls every 1 s`);
    await waitFor(
      'the daemon to baseline (2 ok polls of status and of incidents)',
      READY_TIMEOUT_MS,
      250,
      async () => {
        assertAlive(proc);
        const polls = await pollsOk(port).catch(() => null);
        return polls !== null && polls.status >= 2 && polls.incidents >= 2 ? true : undefined;
      },
    );
    const cpu = await ProcessCpu.of(proc.pid);
    const idle = await idleCpuRate(cpu);
    await rec.sync();
    if (rec.posts > 0) out.notes.push(`${String(rec.posts)} webhooks arrived during the baseline`);

    // Each thread's busy time from here to the last delivery; the RSS over the same span.
    const busyBefore = threadBusySeconds(await scrapeMetrics(port));
    const busyFrom = clockMs();
    const rss = new RssSampler(proc.pid, WATCH_MS);
    rss.start();
    const busyAtEnd = async (): Promise<void> => {
      const after = threadBusySeconds(await scrapeMetrics(port));
      const seconds = new Map<string, number>();
      for (const [thread, busy] of after) seconds.set(thread, busy - (busyBefore.get(thread) ?? 0));
      out.busy = { windowMs: clockMs() - busyFrom, seconds };
    };
    // The storm: every incident opens in one synchronous loop, so no poll sees only some of them.
    progress(`storm: ${name}: opening ${fmt(STORM_INCIDENTS, 0)} incidents`);
    stormFeeds.forEach((feedId, i) => {
      sim.openIncident(feedId, { id: stormKeys[i], title: 'Benchmark storm incident' });
    });
    const reveal = await revealed(
      proc,
      onNextIncidentsPoll(sim, cpu),
      'the poll that reveals the storm',
    );
    // Redis's CPU a moment later: the daemon is still reading the response.
    const start: StormStart = {
      at: reveal.producedAt,
      cpuMs: reveal.cpuMs,
      redisCpuMs: await redis.cpuMs().catch(() => null),
    };
    out.notes.push(
      `the simulator took ${fmt(reveal.producedAt - reveal.requestAt, 0)} ms to answer the revealing poll (not counted)`,
    );
    progress('storm: statuswatch: revealed by a poll; waiting for every webhook');
    const storm = await drain(
      rec,
      stormKeys,
      proc,
      cpu,
      start,
      idle,
      redis,
      progress,
      'statuswatch',
      rss,
      () =>
        busyAtEnd().catch((err: unknown) => {
          out.notes.push(`per-thread busy time not measured: ${toError(err).message}`);
        }),
    );
    out.storm = storm;
    if (storm.timedOut) {
      out.errors.push(
        `statuswatch storm timed out after ${fmt(STORM_TIMEOUT_MS / 1000, 0)} s: ${fmt(storm.delivered, 0)} of ${fmt(storm.items, 0)} delivered`,
      );
      return out;
    }

    progress(`storm: statuswatch: ${String(SINGLE_SAMPLES)} single incidents, one per poll`);
    const renderMs: number[] = [];
    for (let i = 0; i < SINGLE_SAMPLES; i++) {
      await sleep(randomInt(0, POLL_MS));
      const feedId = singleFeeds[i] ?? '';
      const key = singleKeys[i] ?? '';
      const reveal = await revealed(
        proc,
        onNextIncidentsPoll(sim, cpu, () => {
          sim.openIncident(feedId, { id: key, title: 'Benchmark single incident' });
        }),
        `the poll that reveals ${key}`,
      );
      renderMs.push(reveal.producedAt - reveal.requestAt);
      const at = await waitFor(`the webhook for ${key}`, SAMPLE_TIMEOUT_MS, 20, async () => {
        assertAlive(proc);
        await rec.sync();
        return rec.firstAt.get(key);
      });
      out.single.push(at - reveal.producedAt);
    }
    out.notes.push(
      `the simulator took ${fmt(median(renderMs), 0)} ms (median) to answer each single sample's revealing poll (not counted)`,
    );
    out.notes.push(await parseFloor(simUrl));
    await sleep(GRACE_MS);
    await rec.sync();
    storm.dupWebhookIds = rec.duplicateWebhookIds();
    storm.dupItems = rec.duplicateKeys([...stormKeys, ...singleKeys]);
  } catch (err) {
    out.errors.push(`statuswatch: ${toError(err).message}`);
  } finally {
    if (received !== undefined) out.others = received.others(known);
    await cleanup.run();
  }
  return out;
}

// ---- Alertmanager -----------------------------------------------------------------------------

/**
 * `$ALERTMANAGER_BIN` when set (only it), else Debian's binary, else `prometheus-alertmanager` or
 * `alertmanager` on PATH; null when none is executable.
 */
async function findAlertmanager(): Promise<string | null> {
  const candidates: string[] = [];
  const explicit = process.env.ALERTMANAGER_BIN;
  if (explicit !== undefined && explicit !== '') candidates.push(explicit);
  else {
    candidates.push('/usr/bin/prometheus-alertmanager');
    for (const dir of (process.env.PATH ?? '').split(delimiter).filter((d) => d !== ''))
      for (const name of ['prometheus-alertmanager', 'alertmanager'])
        candidates.push(join(dir, name));
  }
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK);
      return file;
    } catch {
      // next candidate
    }
  }
  return null;
}

function alertmanagerConfig(sinkUrl: string): string {
  return `route:
  receiver: sink
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: sink
    webhook_configs:
      - url: '${sinkUrl}'
        send_resolved: false
`;
}

function alert(key: string, i: number): Record<string, unknown> {
  return {
    labels: {
      alertname: 'BenchmarkStorm',
      storm_id: key,
      service: `service-${String(i)}`,
      severity: 'critical',
    },
    annotations: { summary: `Benchmark storm alert ${String(i)}` },
    startsAt: new Date().toISOString(),
  };
}

async function postAlerts(base: string, alerts: readonly Record<string, unknown>[]): Promise<void> {
  const res = await request(`${base}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(alerts),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200)
    throw new BenchError(
      'bench_measurement',
      `Alertmanager answered POST /api/v2/alerts with ${String(res.statusCode)}: ${text.slice(0, 200)}`,
    );
}

async function alertmanagerVersion(bin: string): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync(bin, ['--version'], { timeout: 10_000 });
    const match = /version (\S+)/.exec(`${stdout}${stderr}`);
    return match?.[1] ?? 'unknown version';
  } catch {
    return 'unknown version';
  }
}

async function measureAlertmanager(
  bin: string,
  progress: (line: string) => void,
): Promise<SystemFigures> {
  const out: SystemFigures = {
    name: 'Alertmanager',
    storm: null,
    busy: null,
    single: [],
    others: 0,
    errors: [],
    notes: [],
  };
  const stormKeys = Array.from({ length: STORM_INCIDENTS }, (_, i) => `am-storm-${String(i)}`);
  const singleKeys = Array.from({ length: SINGLE_SAMPLES }, (_, i) => `am-single-${String(i)}`);
  const known = new Set([...stormKeys, ...singleKeys]);
  out.notes.push(`Alertmanager ${await alertmanagerVersion(bin)} (${bin})`);
  const cleanup = new Cleanup();
  let received: Received | undefined;
  try {
    const sink = await startChild(['sink', 'record']);
    cleanup.add(() => sink.close());
    const rec = new Received(sink);
    received = rec;
    const dir = await mkdtemp(join(tmpdir(), 'swbench-alertmanager-'));
    cleanup.add(() => rm(dir, { recursive: true, force: true }));
    const port = await freePort();
    const base = `http://127.0.0.1:${String(port)}`;
    const configFile = join(dir, 'alertmanager.yml');
    await writeFile(configFile, alertmanagerConfig(sink.url));
    const proc = startProcess(
      'alertmanager',
      bin,
      [
        `--config.file=${configFile}`,
        `--storage.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${String(port)}`,
        '--cluster.listen-address=',
      ],
      { ...process.env },
    );
    cleanup.add(() => stopProcess(proc, 10_000));
    progress(`storm: Alertmanager (pid ${String(proc.pid)}) starting`);
    await waitFor('Alertmanager to be ready (/-/ready)', 30_000, 100, async () => {
      assertAlive(proc);
      try {
        const res = await request(`${base}/-/ready`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
        await res.body.dump();
        return res.statusCode === 200 ? true : undefined;
      } catch {
        return undefined;
      }
    });
    const cpu = await ProcessCpu.of(proc.pid);
    const idle = await idleCpuRate(cpu);

    progress(`storm: Alertmanager: posting ${fmt(STORM_INCIDENTS, 0)} alerts`);
    const alerts = stormKeys.map((key, i) => alert(key, i));
    const rss = new RssSampler(proc.pid, WATCH_MS);
    rss.start();
    const start: StormStart = { at: clockMs(), cpuMs: cpu.ms(), redisCpuMs: null };
    for (let i = 0; i < alerts.length; i += AM_BATCH)
      await postAlerts(base, alerts.slice(i, i + AM_BATCH));
    const storm = await drain(
      rec,
      stormKeys,
      proc,
      cpu,
      start,
      idle,
      null,
      progress,
      'Alertmanager',
      rss,
    );
    out.storm = storm;
    if (storm.timedOut) {
      out.errors.push(
        `Alertmanager storm timed out after ${fmt(STORM_TIMEOUT_MS / 1000, 0)} s: ${fmt(storm.delivered, 0)} of ${fmt(storm.items, 0)} delivered`,
      );
      return out;
    }

    progress(`storm: Alertmanager: ${String(SINGLE_SAMPLES)} single alerts`);
    for (let i = 0; i < SINGLE_SAMPLES; i++) {
      await sleep(randomInt(0, POLL_MS));
      const key = singleKeys[i] ?? '';
      const postedAt = clockMs();
      await postAlerts(base, [alert(key, STORM_INCIDENTS + i)]);
      const at = await waitFor(`the webhook for ${key}`, SAMPLE_TIMEOUT_MS, 20, async () => {
        assertAlive(proc);
        await rec.sync();
        return rec.firstAt.get(key);
      });
      out.single.push(at - postedAt);
    }
    await sleep(GRACE_MS);
    await rec.sync();
    storm.dupItems = rec.duplicateKeys([...stormKeys, ...singleKeys]);
  } catch (err) {
    out.errors.push(`Alertmanager: ${toError(err).message}`);
  } finally {
    if (received !== undefined) out.others = received.others(known);
    await cleanup.run();
  }
  return out;
}

// ---- the section ------------------------------------------------------------------------------

function stormRow(name: string, s: StormFigures | null): string[] {
  if (s === null) return [name, ...Array<string>(11).fill('n/a')];
  return [
    name,
    `${fmt(s.delivered, 0)}/${fmt(s.items, 0)}${s.timedOut ? ' (timed out)' : ''}`,
    fmt(s.webhooks, 0),
    fmt(s.firstAt - s.startAt, 0),
    fmt((s.lastAt - s.startAt) / 1000, 2),
    fmt(perSecond(s), 0),
    fmt(cpuPerItem(s), 3),
    fmt(netCpuPerItem(s), 3),
    fmt(s.idleCpuMsPerSec, 0),
    s.redisCpuMs === null ? '-' : fmt(s.redisCpuMs / s.delivered, 3),
    s.dupWebhookIds === null ? '-' : String(s.dupWebhookIds),
    String(s.dupItems),
  ];
}

function singleRow(name: string, samples: readonly number[]): string[] {
  if (samples.length === 0) return [name, '0', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'];
  return [
    name,
    String(samples.length),
    fmt(percentile(samples, 50), 0),
    fmt(percentile(samples, 90), 0),
    fmt(percentile(samples, 99), 0),
    fmt(Math.min(...samples), 0),
    fmt(Math.max(...samples), 0),
  ];
}

const x = (value: number): string => (Number.isFinite(value) ? `${fmt(value, 2)}x` : 'n/a');

/** Cores, CPU and memory of one system over its storm. */
function resourceRow(name: string, s: StormFigures | null): string[] {
  if (s === null) return [name, ...Array<string>(5).fill('n/a')];
  return [
    name,
    fmt(s.cpuWindowMs / 1000, 2),
    fmt(s.cpuMs / 1000, 2),
    fmt(coresUsed(s), 2),
    fmt(s.rssStartMb, 1),
    fmt(s.rssPeakMb, 1),
  ];
}

/** One row per thread: busy seconds over the window and their share of it. */
function busyRows(name: string, busy: ThreadBusy | null): string[][] {
  if (busy === null) return [[name, 'n/a', 'n/a', 'n/a']];
  const rows: string[][] = [];
  let total = 0;
  for (const [thread, seconds] of [...busy.seconds].sort(([a], [b]) => a.localeCompare(b))) {
    total += seconds;
    rows.push([
      name,
      thread,
      fmt(seconds, 2),
      `${fmt((100 * seconds * 1000) / busy.windowMs, 0)}%`,
    ]);
  }
  rows.push([
    name,
    'all threads',
    fmt(total, 2),
    `${fmt((100 * total * 1000) / busy.windowMs, 0)}%`,
  ]);
  return rows;
}

export async function runStormBench(progress: (line: string) => void): Promise<SectionResult> {
  const skipped = `Alertmanager comparison skipped: no Alertmanager binary found (install it with \`${AM_INSTALL_HINT}\`, or set ALERTMANAGER_BIN)`;
  const settings = benchThreadSettings();
  const runs: SystemFigures[] = [];
  for (const threads of settings) runs.push(await measureStatuswatch(progress, threads));
  const bin = await findAlertmanager();
  let am: SystemFigures | null = null;
  if (bin === null) {
    progress(`storm: ${skipped}`);
  } else {
    am = await measureAlertmanager(bin, progress);
  }
  const errors = [...runs.flatMap((r) => r.errors), ...(am?.errors ?? [])];
  for (const e of errors) progress(`storm: ${e}`);

  const a = am?.storm ?? null;
  const amP50 = am === null ? Number.NaN : percentile(am.single, 50);
  const stormRows: string[][] = [];
  const singleRows: string[][] = [];
  const resourceRows: string[][] = [];
  const threadRows: string[][] = [];
  const targets: TargetResult[] = [];
  for (const sw of runs) {
    const s = sw.storm;
    const swP50 = percentile(sw.single, 50);
    const rateRatio = s !== null && a !== null ? perSecond(s) / perSecond(a) : Number.NaN;
    const cpuRatio = s !== null && a !== null ? cpuPerItem(s) / cpuPerItem(a) : Number.NaN;
    const netCpuRatio = s !== null && a !== null ? netCpuPerItem(s) / netCpuPerItem(a) : Number.NaN;
    const p50Ratio = swP50 / amP50;
    stormRows.push(stormRow(`${sw.name} (incidents -> webhooks)`, s));
    singleRows.push(singleRow(`${sw.name}: poll response -> webhook`, sw.single));
    resourceRows.push(resourceRow(sw.name, s));
    threadRows.push(...busyRows(sw.name, sw.busy));
    if (am !== null) {
      stormRows.push([
        `${sw.name} / Alertmanager`,
        '',
        '',
        s !== null && a !== null ? x((s.firstAt - s.startAt) / (a.firstAt - a.startAt)) : 'n/a',
        s !== null && a !== null ? x((s.lastAt - s.startAt) / (a.lastAt - a.startAt)) : 'n/a',
        x(rateRatio),
        x(cpuRatio),
        x(netCpuRatio),
        '',
        '',
        '',
        '',
      ]);
      singleRows.push([
        `${sw.name} / Alertmanager`,
        '',
        x(p50Ratio),
        x(percentile(sw.single, 90) / percentile(am.single, 90)),
        x(percentile(sw.single, 99) / percentile(am.single, 99)),
        '',
        '',
      ]);
    }
    const who = runs.length > 1 ? ` (${sw.name})` : '';
    targets.push({
      section: 'storm',
      target: `duplicate webhooks (same webhook-id, or same incident) = 0${who}`,
      measured:
        s === null
          ? 'n/a (no storm measured)'
          : `${String(s.dupWebhookIds ?? 0)} webhook-ids, ${String(s.dupItems)} incidents${a === null ? '' : ` (Alertmanager: ${String(a.dupItems)} alerts)`}`,
      pass: s !== null && (s.dupWebhookIds ?? 0) === 0 && s.dupItems === 0,
    });
    if (am !== null) {
      targets.push(
        {
          section: 'storm',
          target: `storm deliveries/s >= 1.0x Alertmanager alerts/s${who}`,
          measured: `${x(rateRatio)} (${s === null ? 'n/a' : fmt(perSecond(s), 0)}/s vs ${a === null ? 'n/a' : fmt(perSecond(a), 0)}/s; cores ${s === null ? 'n/a' : fmt(coresUsed(s), 2)} vs ${a === null ? 'n/a' : fmt(coresUsed(a), 2)})`,
          pass: rateRatio >= 1.0,
        },
        {
          section: 'storm',
          target: `daemon CPU per delivery <= 1.0x Alertmanager CPU per alert${who}`,
          measured: `${x(cpuRatio)} (${s === null ? 'n/a' : fmt(cpuPerItem(s), 3)} ms vs ${a === null ? 'n/a' : fmt(cpuPerItem(a), 3)} ms; net of idle ${x(netCpuRatio)})`,
          pass: cpuRatio <= 1.0,
        },
        {
          section: 'storm',
          target: `single-incident p50 <= 3.0x Alertmanager single-alert p50 (issue #30)${who}`,
          measured: `${x(p50Ratio)} (${fmt(swP50, 0)} ms vs ${fmt(amP50, 0)} ms)`,
          pass: p50Ratio <= 3.0,
        },
      );
    }
  }
  if (am !== null) {
    stormRows.push(stormRow('Alertmanager (alerts -> webhooks)', a));
    singleRows.push(singleRow('Alertmanager: POST -> webhook', am.single));
    resourceRows.push(resourceRow('Alertmanager', a));
  }

  const stormNotes = [
    `statuswatch: the daemon (node ${[...daemonNodeArgs(), 'dist-bench/cli.js'].join(' ')} run [--threads N], LOG_LEVEL=${DAEMON_LOG_LEVEL}) polls ${fmt(STORM_SERVICES, 0)} services (Variant A, in-process simulator) for status and incidents every ${String(POLL_MS / 1000)} s; subscription "*" -> one webhook channel, no grouping; ${fmt(STORM_INCIDENTS, 0)} incidents open at once on distinct services`,
    'statuswatch times start when the simulator has written its answer to the first /api/v1/incidents request after the opening (the response that reveals them); Alertmanager times start just before the first of its POSTs (batches of 1,000 alerts); both end when the sink has read a webhook',
    'CPU = /proc/<pid>/stat utime + stime of the daemon (or Alertmanager) process, every thread, from just before the storm to the last delivery; "net" subtracts the process\'s idle rate (CPU ms/s measured over 5 s before the storm: statuswatch keeps polling meanwhile) times the window',
    'Redis CPU = INFO cpu of the whole (shared) Redis server while the daemon worked; Alertmanager uses no Redis',
    'dup webhook-ids = POSTs repeating an earlier webhook-id header (Alertmanager sends none); dup items = incidents (alerts) received more than once; both over the storm and the single samples',
    ...runs.flatMap((sw) => sw.notes.map((n) => `${sw.name}: ${n}`)),
  ];
  for (const sw of runs)
    if (sw.others > 0)
      stormNotes.push(
        `${sw.name} also delivered ${String(sw.others)} webhooks not about the bench's incidents`,
      );
  if (am === null) stormNotes.push(skipped);
  else {
    stormNotes.push(
      `Alertmanager: one webhook receiver (send_resolved false), group_by ['...'] (each alert its own group), group_wait 0s, group_interval 1s, repeat_interval 1h, no cluster`,
      ...am.notes,
    );
    if (am.others > 0)
      stormNotes.push(`Alertmanager also delivered ${String(am.others)} other alerts`);
  }
  for (const e of errors) stormNotes.push(`FAILED: ${e}`);

  const tables: Table[] = [
    {
      title: `Incident storm: ${fmt(STORM_INCIDENTS, 0)} at once -> webhooks`,
      columns: [
        'system',
        'delivered',
        'webhooks',
        'first ms',
        'total s',
        'delivered/s',
        'CPU ms/item',
        'net CPU ms/item',
        'idle CPU ms/s',
        'Redis CPU ms/item',
        'dup webhook-ids',
        'dup items',
      ],
      rows: stormRows,
      notes: stormNotes,
    },
    {
      title: 'Storm: cores used and memory (same storms)',
      columns: ['system', 'wall s', 'CPU s', 'cores used', 'RSS before MB', 'RSS peak MB'],
      rows: resourceRows,
      notes: [
        'wall s and CPU s: the CPU window above (statuswatch: from the revealing poll response; Alertmanager: from the first POST; to the last delivery); cores used = CPU s / wall s (the machine has the cores os.availableParallelism() says, shared with the simulator, the sink, Redis and this bench)',
        'RSS = VmRSS of the whole process (every thread) from /proc/<pid>/status, sampled every 100 ms from just before the storm to its last delivery',
      ],
    },
    {
      title: 'Storm: statuswatch threads, event-loop busy time',
      columns: ['daemon', 'thread', 'busy s', 'share of window'],
      rows: threadRows,
      notes: [
        "statuswatch_thread_busy_seconds_total per thread from the daemon's /metrics (one scrape merges every thread), scraped just before the incidents open and again the moment the last webhook arrived; the window (share's denominator) is the time between the two scrapes, so a little longer than the CPU window (it includes the wait for the revealing poll, under 1 s)",
        "busy time is the wall time each thread's event loop was not idle (Node's event-loop utilization): it counts time the thread was runnable but waiting for a core, and not GC on V8's helper threads nor libuv's pool, so on a machine with more runnable threads than cores the threads' sum exceeds the process's CPU seconds",
      ],
    },
    {
      title: `Single-event latency after the storm (${String(SINGLE_SAMPLES)} samples, one at a time)`,
      columns: ['span', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'min ms', 'max ms'],
      rows: singleRows,
      notes: [
        'statuswatch: each incident opens right before a poll is answered (so that poll reveals it); the time runs from the written response to its webhook at the sink',
        'Alertmanager: from just before the POST of one alert to its webhook at the sink',
        `the ${fmt(STORM_INCIDENTS, 0)} storm incidents (alerts) stay open meanwhile`,
        ...(am === null ? [skipped] : []),
      ],
    },
  ];
  return { name: 'storm', tables, targets, crashed: errors };
}
