/**
 * Poll-cycle cost (the performance targets in README.md): one `Pipeline.runCycle(kind)` against
 * a simulator of 2,000 / 20,000 / 100,000 services running in a child process (its CPU is not
 * ours), with no changes and with 1% of the services changed before every cycle. Per cycle: CPU
 * of this process, wall time, the share spent in the upstream client (HTTP + JSON parse +
 * normalize), and the Redis commands it caused, counted by Redis (INFO stats) and by the client
 * (commands and round trips). Baselines from the same run: a bare undici GET + JSON.parse of the
 * same body, and a bare JSON.parse of it.
 */
import { Agent, request } from 'undici';
import { toError } from '../errors.js';
import { Pipeline, type PollKind } from '../pipeline/cycle.js';
import { Handoff } from '../pipeline/handoff.js';
import { createKeys, createRedis } from '../redis.js';
import { silentLogger } from '../log.js';
import { createUpstreamClient, type UpstreamClient } from '../upstream/index.js';
import {
  normalizeIncidentList,
  normalizeStatusSnapshot,
  parseEnvelope,
} from '../upstream/normalize.js';
import { startChild, type ChangeKind, type ChildHandle } from './child-protocol.js';
import {
  ClientCommandCounter,
  REDIS_URL,
  ServerCommandCounter,
  cpuSince,
  fmt,
  measure,
  median,
  ratio,
  scenarioPrefix,
  type SectionResult,
  type Table,
  type TargetResult,
} from './support.js';
import { BenchError } from './errors.js';

export interface CycleScenario {
  services: number;
  kinds: ChangeKind[];
  /** Measured cycles per case (after warm-up); the median is reported. */
  runs: number;
}

export const CYCLE_SCENARIOS: readonly CycleScenario[] = [
  { services: 2_000, kinds: ['status', 'incidents'], runs: 15 },
  { services: 20_000, kinds: ['status'], runs: 7 },
  { services: 100_000, kinds: ['status'], runs: 5 },
];

export const CHANGE_FRACTION = 0.01;
const MAX_BODY_BYTES = 512 * 1024 * 1024;

interface CycleSample {
  cpuMs: number;
  wallMs: number;
  fetchCpuMs: number;
  fetchWallMs: number;
  clientCommands: number;
  roundTrips: number;
  serverCommands: number;
  transitions: number;
}

interface CaseResult {
  services: number;
  kind: ChangeKind;
  changes: 'none' | '1%';
  samples: CycleSample[];
}

interface Baseline {
  services: number;
  kind: ChangeKind;
  bodyBytes: number;
  parseCpuMs: number;
  /** parseEnvelope + normalize (zod) of an already parsed body: what the client adds to GET+parse. */
  normalizeCpuMs: number;
  getCpuMs: number;
  getWallMs: number;
}

interface FetchCost {
  cpuMs: number;
  wallMs: number;
}

/** The client with its status() and incidents() calls timed (CPU and wall) into `cost`. */
function timedClient(inner: UpstreamClient, cost: FetchCost): UpstreamClient {
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    try {
      return await call();
    } finally {
      cost.cpuMs += cpuSince(cpu0);
      cost.wallMs += performance.now() - t0;
    }
  };
  return {
    ...inner,
    status: (o) => timed(() => inner.status(o)),
    incidents: () => timed(() => inner.incidents()),
  };
}

const PATHS: Record<ChangeKind, string> = {
  status: '/api/v1/status',
  incidents: '/api/v1/incidents',
};

const NORMALIZERS = {
  status: normalizeStatusSnapshot,
  incidents: normalizeIncidentList,
} satisfies Record<ChangeKind, (data: unknown, meta: unknown) => { ok: boolean }>;

async function measureBaseline(
  url: string,
  services: number,
  kind: ChangeKind,
  runs: number,
  dispatcher: Agent,
): Promise<Baseline> {
  const get = async (): Promise<string> => {
    const res = await request(`${url}${PATHS[kind]}`, { dispatcher });
    const text = await res.body.text();
    JSON.parse(text);
    return text;
  };
  let text = await get(); // warm-up
  const getCpu: number[] = [];
  const getWall: number[] = [];
  for (let i = 0; i < runs; i++) {
    const m = await measure(get);
    text = m.value;
    getCpu.push(m.cpuMs);
    getWall.push(m.wallMs);
  }
  const parseCpu: number[] = [];
  for (let i = 0; i < runs + 1; i++) {
    const cpu0 = process.cpuUsage();
    JSON.parse(text);
    parseCpu.push(cpuSince(cpu0));
  }
  parseCpu.shift(); // warm-up
  const normalizeCpu: number[] = [];
  for (let i = 0; i < runs + 1; i++) {
    const body: unknown = JSON.parse(text);
    const cpu0 = process.cpuUsage();
    const env = parseEnvelope(body);
    if (!env.ok) throw new BenchError('bench_measurement', `${PATHS[kind]}: ${env.problem}`);
    const normalized = NORMALIZERS[kind](env.envelope.data, env.envelope.meta);
    normalizeCpu.push(cpuSince(cpu0));
    if (!normalized.ok)
      throw new BenchError('bench_measurement', `${PATHS[kind]}: ${normalized.problem}`);
  }
  normalizeCpu.shift(); // warm-up
  return {
    services,
    kind,
    bodyBytes: Buffer.byteLength(text),
    parseCpuMs: median(parseCpu),
    normalizeCpuMs: median(normalizeCpu),
    getCpuMs: median(getCpu),
    getWallMs: median(getWall),
  };
}

interface Harness {
  sim: ChildHandle;
  pipeline: Pipeline;
  counter: ClientCommandCounter;
  server: ServerCommandCounter;
  cost: FetchCost;
}

async function runCycles(
  h: Harness,
  kind: PollKind,
  runs: number,
  before: (() => Promise<unknown>) | null,
): Promise<CycleSample[]> {
  const samples: CycleSample[] = [];
  for (let i = 0; i < runs; i++) {
    if (before !== null) await before();
    h.counter.reset();
    h.cost.cpuMs = 0;
    h.cost.wallMs = 0;
    const { value: m, commands } = await h.server.during(() =>
      measure(() => h.pipeline.runCycle(kind)),
    );
    const report = m.value;
    if (report.outcome !== 'ok') {
      throw new BenchError(
        'bench_measurement',
        `${kind} cycle ended ${report.outcome}: ${report.error?.message ?? 'no error'}`,
      );
    }
    samples.push({
      cpuMs: m.cpuMs,
      wallMs: m.wallMs,
      fetchCpuMs: h.cost.cpuMs,
      fetchWallMs: h.cost.wallMs,
      clientCommands: h.counter.commands,
      roundTrips: h.counter.roundTrips,
      serverCommands: commands,
      transitions: report.transitions.length,
    });
  }
  return samples;
}

/** Runs one catalog size; results are pushed into `cases` / `baselines` as they complete. */
async function runScenario(
  scenario: CycleScenario,
  server: ServerCommandCounter,
  progress: (line: string) => void,
  cases: CaseResult[],
  baselines: Baseline[],
): Promise<void> {
  const { services, runs } = scenario;
  progress(`cycle: starting simulator with ${services} services`);
  const sim = await startChild(['sim', String(services)]);
  const redis = createRedis(REDIS_URL, { connectionName: 'swbench-cycle' });
  const counter = new ClientCommandCounter(redis);
  const keys = createKeys(scenarioPrefix(`c${services}`));
  const handoff = new Handoff(redis, keys);
  const inner = createUpstreamClient({
    baseUrl: sim.url,
    timeoutMs: 120_000,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  const cost: FetchCost = { cpuMs: 0, wallMs: 0 };
  const pipeline = new Pipeline({
    client: timedClient(inner, cost),
    redis,
    keys,
    handoff,
    log: silentLogger(),
    rules: { statusConfirmations: 1, scoreDrop: 5 },
  });
  const dispatcher = new Agent();
  const h: Harness = { sim, pipeline, counter, server, cost };
  try {
    await redis.ping();
    for (const kind of scenario.kinds) {
      progress(`cycle: ${services} services, ${kind}: warm-up (first sight stores every entry)`);
      // First sight, then enough cycles for the JIT to settle: a daemon polls for weeks, so the
      // steady state is what counts.
      const warmups = services >= 100_000 ? 3 : 8;
      for (let i = 0; i < warmups; i++) await pipeline.runCycle(kind);
      progress(`cycle: ${services} services, ${kind}: no changes x${runs}`);
      cases.push({
        services,
        kind,
        changes: 'none',
        samples: await runCycles(h, kind, runs, null),
      });
      await sim.request({ op: 'prepare', kind, fraction: CHANGE_FRACTION });
      await pipeline.runCycle(kind); // absorbs the preparation
      progress(`cycle: ${services} services, ${kind}: 1% changed x${runs}`);
      cases.push({
        services,
        kind,
        changes: '1%',
        samples: await runCycles(h, kind, runs, () => sim.request({ op: 'change', kind })),
      });
      progress(`cycle: ${services} services, ${kind}: baselines`);
      baselines.push(await measureBaseline(sim.url, services, kind, runs, dispatcher));
    }
  } finally {
    await handoff.close().catch(() => undefined);
    await inner.close().catch(() => undefined);
    await dispatcher.close().catch(() => undefined);
    await redis.quit().catch(() => undefined);
    await sim.close();
  }
}

const med = (samples: readonly CycleSample[], pick: (s: CycleSample) => number): number =>
  median(samples.map(pick));
const min = (samples: readonly CycleSample[], pick: (s: CycleSample) => number): number =>
  Math.min(...samples.map(pick));
const max = (samples: readonly CycleSample[], pick: (s: CycleSample) => number): number =>
  Math.max(...samples.map(pick));

function span(samples: readonly CycleSample[], pick: (s: CycleSample) => number): string {
  const lo = min(samples, pick);
  const hi = max(samples, pick);
  return lo === hi ? String(lo) : `${lo}..${hi}`;
}

export async function runCycleBench(
  progress: (line: string) => void,
  scenarios: readonly CycleScenario[] = CYCLE_SCENARIOS,
): Promise<SectionResult> {
  const server = new ServerCommandCounter();
  const cases: CaseResult[] = [];
  const baselines: Baseline[] = [];
  const crashed: string[] = [];
  try {
    await server.calibrate();
    for (const scenario of scenarios) {
      try {
        await runScenario(scenario, server, progress, cases, baselines);
      } catch (err) {
        // One size crashing must not hide the others' figures.
        const e = toError(err);
        crashed.push(`${fmt(scenario.services, 0)} services: ${e.message}`);
        progress(`cycle: ${scenario.services} services crashed: ${e.stack ?? e.message}`);
      }
    }
  } finally {
    await server.close().catch(() => undefined);
  }

  const baselineOf = (c: CaseResult): Baseline | undefined =>
    baselines.find((b) => b.services === c.services && b.kind === c.kind);

  const cost: Table = {
    title: 'Poll cycle cost (median per cycle; CPU = this process, user+system)',
    columns: [
      'services',
      'kind',
      'changes',
      'cycles',
      'CPU ms',
      'wall ms',
      'HTTP+parse CPU ms',
      'diff+store CPU ms',
      'HTTP+parse share',
      'transitions',
      'CPU / GET+parse',
      'CPU / JSON.parse',
    ],
    rows: cases.map((c) => {
      const cpu = med(c.samples, (s) => s.cpuMs);
      const fetchCpu = med(c.samples, (s) => s.fetchCpuMs);
      const rest = med(c.samples, (s) => s.cpuMs - s.fetchCpuMs);
      const b = baselineOf(c);
      return [
        fmt(c.services, 0),
        c.kind,
        c.changes,
        String(c.samples.length),
        fmt(cpu),
        fmt(med(c.samples, (s) => s.wallMs)),
        fmt(fetchCpu),
        fmt(rest),
        `${fmt((100 * fetchCpu) / cpu, 0)}%`,
        span(c.samples, (s) => s.transitions),
        b === undefined ? 'n/a' : ratio(cpu, b.getCpuMs),
        b === undefined ? 'n/a' : ratio(cpu, b.parseCpuMs),
      ];
    }),
    notes: [
      ...crashed.map((c) => `CRASHED at ${c}`),
      'HTTP+parse = the upstream client call (undici GET, body, JSON.parse, zod/normalize); diff+store = the rest of runCycle (snapshot load, diff, hand-off, commit)',
      `1% = ${fmt(CHANGE_FRACTION * 100, 0)}% of the services changed before each cycle (status toggled operational <-> major_outage; incidents opened / resolved); statusConfirmations 1`,
      'wall includes the simulator (child process) rebuilding its response after a change',
    ],
  };

  const redisTable: Table = {
    title: 'Redis work per cycle',
    columns: [
      'services',
      'kind',
      'changes',
      'server cmds (min)',
      'server cmds (median)',
      'client cmds',
      'client round trips',
    ],
    rows: cases.map((c) => [
      fmt(c.services, 0),
      c.kind,
      c.changes,
      String(min(c.samples, (s) => s.serverCommands)),
      fmt(
        med(c.samples, (s) => s.serverCommands),
        0,
      ),
      span(c.samples, (s) => s.clientCommands),
      span(c.samples, (s) => s.roundTrips),
    ]),
    notes: [
      'server cmds = delta of INFO total_commands_processed (includes commands Lua scripts run; other clients of a shared Redis add noise, hence the min)',
      'client = commands this process sent on its connection; a pipeline / MULTI counts as one round trip',
    ],
  };

  const baseTable: Table = {
    title: 'Baselines (same run, same body, median)',
    columns: [
      'services',
      'endpoint',
      'body MB',
      'JSON.parse CPU ms',
      'normalize CPU ms',
      'GET+parse CPU ms',
      'GET+parse wall ms',
    ],
    rows: baselines.map((b) => [
      fmt(b.services, 0),
      PATHS[b.kind],
      fmt(b.bodyBytes / 1e6, 2),
      fmt(b.parseCpuMs),
      fmt(b.normalizeCpuMs),
      fmt(b.getCpuMs),
      fmt(b.getWallMs),
    ]),
    notes: [
      'GET+parse = undici request + body.text() + JSON.parse, no validation',
      'normalize = parseEnvelope + normalize (zod, row by row) of an already parsed body: what the upstream client adds to GET+parse',
    ],
  };

  const targets: TargetResult[] = [];
  const find = (services: number, kind: ChangeKind, changes: CaseResult['changes']) =>
    cases.find((c) => c.services === services && c.kind === kind && c.changes === changes);
  const cpuTarget = (services: number, limitMs: number): void => {
    const c = find(services, 'status', 'none');
    if (c === undefined) return;
    const cpu = med(c.samples, (s) => s.cpuMs);
    const b = baselineOf(c);
    targets.push({
      section: 'cycle',
      target: `${fmt(services, 0)} services, no change: <= ${fmt(limitMs, 0)} ms CPU`,
      measured: `${fmt(cpu)} ms (${b === undefined ? 'n/a' : ratio(cpu, b.getCpuMs)} of GET+parse)`,
      pass: cpu <= limitMs,
    });
  };
  cpuTarget(2_000, 20);
  cpuTarget(100_000, 1_000);

  const noChange = cases.filter((c) => c.kind === 'status' && c.changes === 'none');
  if (noChange.length > 1) {
    // The verdict uses this connection's exact counts; Redis's own counter (shared with other
    // clients) is shown beside them as corroboration.
    const trips = noChange.flatMap((c) => c.samples.map((s) => s.roundTrips));
    const commands = noChange.flatMap((c) => c.samples.map((s) => s.clientCommands));
    const serverMins = noChange.map((c) => min(c.samples, (s) => s.serverCommands));
    const constant =
      Math.min(...trips) === Math.max(...trips) && Math.min(...commands) === Math.max(...commands);
    const serverConstant = Math.min(...serverMins) === Math.max(...serverMins);
    targets.push({
      section: 'cycle',
      target: 'Redis round trips constant in the number of services (no change)',
      measured: `${noChange.map((c) => fmt(c.services, 0)).join(' / ')}: round trips ${noChange
        .map((c) => span(c.samples, (s) => s.roundTrips))
        .join(' / ')}, server cmds ${serverMins.join(' / ')}${
        serverConstant ? '' : ' (server count disagrees: other clients of the shared Redis?)'
      }`,
      pass: constant,
    });
  }
  for (const c of crashed) {
    targets.push({
      section: 'cycle',
      target: 'every size measured',
      measured: `crashed at ${c}`,
      pass: false,
    });
  }
  return { name: 'cycle', tables: [cost, redisTable, baseTable], targets, crashed };
}
