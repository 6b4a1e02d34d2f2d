/**
 * Delivery fan-out (the performance targets in README.md): deliveries per second to a local
 * webhook sink (a child process answering 200) through the delivery queue —
 * `DeliveryQueue.enqueue` + `DeliveryWorker` (BullMQ, concurrency 16) + the webhook notifier
 * (render, sign, POST, classify) — against raw undici `request` POSTs of the same body to the same
 * sink with the same concurrency.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import type { ChannelConfig } from '../config/schema.js';
import { ChannelRegistry } from '../delivery/channels.js';
import { DeliveryQueue } from '../delivery/queue.js';
import { DeliveryWorker, type DeliveryOutcome } from '../delivery/worker.js';
import { transitionId, type Transition } from '../diff/transition.js';
import { silentLogger } from '../log.js';
import type { Notification } from '../notify/types.js';
import { renderWebhookRequest } from '../notify/webhook/render.js';
import { createKeys, createRedis } from '../redis.js';
import { startChild, type ChildHandle } from './child-protocol.js';
import {
  REDIS_URL,
  ServerCommandCounter,
  fmt,
  measure,
  median,
  ratio,
  scenarioPrefix,
  withTimeout,
  type SectionResult,
  type TargetResult,
} from './support.js';
import { BenchError } from './errors.js';

export const FANOUT_DELIVERIES = 4_000;
export const FANOUT_CONCURRENCY = 16;
const RUNS = 7;
const WARMUP_DELIVERIES = 2_000;
const CHANNEL = 'sink';
const SUBSCRIPTION = 'bench';

interface RunSample {
  mode: 'queue' | 'direct' | 'raw';
  deliveries: number;
  wallMs: number;
  cpuMs: number;
  sinkReceived: number;
  redisCommands: number;
  redisCpuMs: number;
}

function sampleTransition(run: string, i: number, now: number): Transition {
  const incidentId = `inc-bench-${run}-${i}`;
  return {
    id: transitionId(['bench', run, i]),
    kind: 'incident.opened',
    feedId: 'stripe',
    subject: `incident:${incidentId}`,
    service: {
      feedId: 'stripe',
      name: 'Stripe',
      canonicalUrl: 'https://stripe.com',
      officialStatusUrl: 'https://status.stripe.com',
    },
    previous: null,
    current: { status: 'investigating', updateCount: 1 },
    incident: {
      id: incidentId,
      title: 'Elevated API error rates',
      status: 'investigating',
      started: Math.floor(now / 1000),
      updateCount: 1,
      latestUpdate: 'We are investigating elevated error rates on the API.',
    },
    observedAt: now,
  };
}

function notifications(run: string, count: number): Notification[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const t = sampleTransition(run, i, now);
    return {
      id: `${t.id}:${SUBSCRIPTION}:${CHANNEL}`,
      type: 'event',
      subscription: SUBSCRIPTION,
      channel: CHANNEL,
      transitions: [t],
      createdAt: now,
    };
  });
}

/** `count` POSTs of one pre-rendered request, `concurrency` at a time. */
async function rawPosts(
  url: string,
  dispatcher: Agent,
  req: { body: string; headers: Record<string, string> },
  count: number,
  concurrency: number,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      next += 1;
      const res = await request(url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        dispatcher,
      });
      await res.body.dump();
      if (res.statusCode !== 200)
        throw new BenchError('bench_measurement', `sink answered ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

interface Fixture {
  info: ServerCommandCounter;
  sink: ChildHandle;
  registry: ChannelRegistry;
  queue: DeliveryQueue;
  worker: DeliveryWorker;
  dispatcher: Agent;
  rawRequest: { body: string; headers: Record<string, string> };
}

/** Runs `work` measured (wall, CPU, Redis server commands) and counts what the sink received meanwhile. */
async function sampled(
  f: Fixture,
  mode: RunSample['mode'],
  deliveries: number,
  work: () => Promise<void>,
): Promise<RunSample> {
  const before = await f.sink.request({ op: 'count' });
  const { value: m, commands, redisCpuMs } = await f.info.during(() => measure(work));
  const after = await f.sink.request({ op: 'count' });
  return {
    mode,
    deliveries,
    wallMs: m.wallMs,
    cpuMs: m.cpuMs,
    sinkReceived: after - before,
    redisCommands: commands,
    redisCpuMs,
  };
}

async function queueRun(f: Fixture, run: string, count: number): Promise<RunSample> {
  const batch = notifications(run, count);
  const ids = new Set(batch.map((n) => n.id));
  let sent = 0;
  const failures: string[] = [];
  let listener: ((d: DeliveryOutcome) => void) | undefined;
  const done = new Promise<void>((resolve) => {
    listener = (d) => {
      if (!ids.has(d.notification.id)) return;
      if (d.outcome === 'sent') sent += 1;
      else failures.push(`${d.outcome}: ${d.error ?? ''}`);
      if (sent + failures.length === count) resolve();
    };
    f.worker.on('delivery', listener);
  });
  try {
    const sample = await sampled(f, 'queue', count, async () => {
      await f.queue.enqueue(batch);
      await withTimeout(done, 120_000, `${count} deliveries`);
    });
    if (failures.length > 0) {
      throw new BenchError(
        'bench_measurement',
        `${failures.length} deliveries failed, first: ${failures[0] ?? ''}`,
      );
    }
    return { ...sample, deliveries: sent };
  } finally {
    if (listener !== undefined) f.worker.off('delivery', listener);
  }
}

/** The webhook notifier's send() called directly, `FANOUT_CONCURRENCY` at a time: no queue. */
async function directRun(f: Fixture, run: string, count: number): Promise<RunSample> {
  const channel = f.registry.get(CHANNEL);
  if (channel === undefined) throw new BenchError('bench_measurement', 'sink channel missing');
  const batch = notifications(run, count);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let n = batch[next++]; n !== undefined; n = batch[next++]) await channel.notifier.send(n);
  };
  return sampled(f, 'direct', count, async () => {
    await Promise.all(Array.from({ length: FANOUT_CONCURRENCY }, lane));
  });
}

function rawRun(f: Fixture, count: number): Promise<RunSample> {
  return sampled(f, 'raw', count, () =>
    rawPosts(f.sink.url, f.dispatcher, f.rawRequest, count, FANOUT_CONCURRENCY),
  );
}

export async function runFanoutBench(progress: (line: string) => void): Promise<SectionResult> {
  progress('fanout: starting webhook sink');
  const sink = await startChild(['sink']);
  const connection = createRedis(REDIS_URL, { connectionName: 'swbench-fanout' });
  const keys = createKeys(scenarioPrefix('fanout'));
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const channel: ChannelConfig = { type: 'webhook', url: sink.url, secret };
  const registry = new ChannelRegistry({ [CHANNEL]: channel });
  const queue = new DeliveryQueue(connection, keys);
  const worker = new DeliveryWorker({
    connection,
    keys,
    deliveries: queue,
    channels: () => registry,
    log: silentLogger(),
    concurrency: FANOUT_CONCURRENCY,
  });
  const dispatcher = new Agent();
  const info = new ServerCommandCounter();
  const sample = notifications('sample', 1)[0];
  if (sample === undefined) throw new BenchError('bench_measurement', 'no sample notification');
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const rawRequest = renderWebhookRequest(sample, key, Date.now());
  const f: Fixture = { info, sink, registry, queue, worker, dispatcher, rawRequest };
  const samples: RunSample[] = [];
  try {
    await connection.ping();
    await info.calibrate();
    worker.start();
    progress(`fanout: warm-up (${WARMUP_DELIVERIES} each)`);
    await rawRun(f, WARMUP_DELIVERIES);
    await directRun(f, 'warm-direct', WARMUP_DELIVERIES);
    await queueRun(f, 'warm', WARMUP_DELIVERIES);
    for (let r = 0; r < RUNS; r++) {
      progress(
        `fanout: run ${r + 1}/${RUNS} (${FANOUT_DELIVERIES} each: raw POSTs, notifier sends, queued deliveries)`,
      );
      samples.push(await rawRun(f, FANOUT_DELIVERIES));
      samples.push(await directRun(f, `d${r}`, FANOUT_DELIVERIES));
      samples.push(await queueRun(f, `r${r}`, FANOUT_DELIVERIES));
    }
  } finally {
    await worker.stop().catch(() => undefined);
    await queue.close().catch(() => undefined);
    await registry.close().catch(() => undefined);
    await dispatcher.close().catch(() => undefined);
    await connection.quit().catch(() => undefined);
    await info.close().catch(() => undefined);
    await sink.close();
  }

  const summary = (mode: RunSample['mode']) => {
    const runs = samples.filter((s) => s.mode === mode);
    return {
      runs,
      perSecond: median(runs.map((s) => (1000 * s.deliveries) / s.wallMs)),
      wallMs: median(runs.map((s) => s.wallMs)),
      cpuPerDelivery: median(runs.map((s) => s.cpuMs / s.deliveries)),
      redisCmdsPerDelivery: Math.min(...runs.map((s) => s.redisCommands / s.deliveries)),
      redisCpuPerDelivery: median(runs.map((s) => s.redisCpuMs / s.deliveries)),
      received: runs.map((s) => s.sinkReceived),
    };
  };
  const raw = summary('raw');
  const direct = summary('direct');
  const queued = summary('queue');
  // Each round measures raw, then queued, back to back: their ratio cancels the machine's drift
  // between rounds, which a ratio of two medians taken at different moments does not.
  const rate = (x: RunSample): number => (1000 * x.deliveries) / x.wallMs;
  const paired = raw.runs.map((r, i) => {
    const q = queued.runs[i];
    return q === undefined ? Number.NaN : rate(q) / rate(r);
  });
  const throughputRatio = median(paired);
  const targets: TargetResult[] = [
    {
      section: 'fanout',
      target: 'queued webhook deliveries >= 0.5x raw undici POST throughput',
      measured: `${fmt(throughputRatio, 2)}x (median of ${String(paired.length)} rounds, ${fmt(Math.min(...paired), 2)}-${fmt(Math.max(...paired), 2)}); ${fmt(queued.perSecond, 0)}/s vs ${fmt(raw.perSecond, 0)}/s`,
      pass: throughputRatio >= 0.5,
    },
  ];
  const row = (name: string, s: ReturnType<typeof summary>): string[] => [
    name,
    String(s.runs.length),
    fmt(FANOUT_DELIVERIES, 0),
    fmt(s.wallMs, 0),
    fmt(s.perSecond, 0),
    fmt(s.cpuPerDelivery, 3),
    fmt(s.redisCmdsPerDelivery, 1),
    fmt(s.redisCpuPerDelivery, 3),
    s.received.join(' / '),
    ratio(s.perSecond, raw.perSecond),
    ratio(s.cpuPerDelivery, raw.cpuPerDelivery),
  ];
  return {
    name: 'fanout',
    tables: [
      {
        title: `Delivery fan-out to a local webhook sink (concurrency ${FANOUT_CONCURRENCY}, median of ${RUNS})`,
        columns: [
          'path',
          'runs',
          'deliveries',
          'wall ms',
          'deliveries/s',
          'CPU ms/delivery',
          'Redis cmds/delivery',
          'Redis CPU ms/delivery',
          'sink received',
          'throughput vs raw',
          'CPU vs raw',
        ],
        rows: [
          row('raw undici POST', raw),
          row('webhook notifier send(), no queue', direct),
          row('DeliveryQueue + worker + webhook notifier', queued),
        ],
        notes: [
          'queued = enqueue (one addBulk) until the worker reported every delivery sent; each delivery is rendered, signed (HMAC) and POSTed',
          'raw = the same pre-rendered body and headers POSTed with undici request, no queue, no signing',
          'notifier send() = the same notifier the worker uses, called directly (render + sign + POST + classify): separates notifier cost from queue cost',
          'the target is judged on the median of per-round ratios (queued / raw measured back to back); "throughput vs raw" here divides the medians',
          'the sink runs in a child process; CPU ms = this process only; Redis = INFO deltas (cmds: min over runs, includes commands run by Lua scripts; a shared Redis adds noise)',
        ],
      },
    ],
    targets,
  };
}
