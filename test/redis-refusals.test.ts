/**
 * "Redis refuses work" under the real daemon (`node dist/cli.js run`): a private `redis-server`
 * of this file's own (never the shared one) is made to refuse while it stays up — full
 * (maxmemory with noeviction), demoted to a replica (REPLICAOF, then back with its data), an ACL
 * user that loses a command, maxclients reached, CLIENT PAUSE WRITE, a failed RDB save
 * (MISCONF), a script past busy-reply-threshold (BUSY) — while an incident opens upstream.
 * LOADING is not driven (it needs a restart with a dataset big enough to take seconds to load).
 * For each case:
 * - the daemon stays up and does not spin (CPU share measured);
 * - /readyz is 503 with the reason in its body while Redis refuses, 200 within 2 s after;
 * - a handful of log lines (counted): one when the refusal starts, one when it ends;
 * - `statuswatch_redis_refusals_total{reason}` counts it;
 * - the incident is delivered within one poll interval + 10 s of Redis taking writes again,
 *   under one webhook-id.
 * Plus the start-up checks: an evicting maxmemory-policy and a missing ACL permission, named;
 * and, in the process, a job whose lock lapsed during a refusal runs again once Redis takes writes.
 */
import { rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openQueue, startWorker, type QueueRole } from '../src/queues.js';
import { createKeys, createRedis } from '../src/redis.js';
import { REFUSAL_HINTS, refusalsOf } from '../src/redis/refusals.js';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { captureLog } from './helpers/log.js';
import { WEBHOOK_SECRET } from './helpers/delivery.js';
import { cpuSeconds, faultServer, verifiedDeliveries, type FaultServer } from './helpers/faults.js';
import { startRedisServer, type RedisServer } from './helpers/global-setup.js';
import {
  freePort,
  killAll,
  metricValue,
  metricsOf,
  okPolls,
  queuesIdle,
  spawnCli,
  startDaemon,
  tempDir,
  writeConfig,
  type Daemon,
} from './helpers/process.js';
import { waitFor } from './helpers/wait.js';

const POLL_MS = 1000;
const USER = 'sw';
const PASSWORD = 'refusals-test-pw';

const cleanups: (() => Promise<void>)[] = [];

interface World {
  sim: Simulator;
  clock: { now: number; tick(ms?: number): void };
  server: RedisServer;
  admin: Redis;
  hook: FaultServer;
  daemon: Daemon;
}

/** A private redis-server with an ACL user for the daemon, and an admin connection of the test. */
async function privateRedis(): Promise<{ server: RedisServer; admin: Redis }> {
  const server = await startRedisServer({ host: '127.0.0.1', port: await freePort() });
  cleanups.push(() => server.stop());
  const admin = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
  cleanups.push(() => {
    admin.disconnect();
    return Promise.resolve();
  });
  await admin.call('ACL', 'SETUSER', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
  return { server, admin };
}

async function configFile(o: {
  server: RedisServer;
  simUrl: string;
  hookUrl: string;
}): Promise<string> {
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return writeConfig(tmp.dir, {
    upstream: { baseUrl: o.simUrl, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: `redis://${USER}:${PASSWORD}@127.0.0.1:${o.server.port}`, prefix: 'refusals' },
    // Two threads running all the time (the upstream thread and the main one), whatever the cores.
    daemon: { threads: 2 },
    poll: { status: '1s', incidents: '1s' },
    server: { port: 0 },
    channels: {
      hook: { type: 'webhook', url: `${o.hookUrl}/hook`, secret: WEBHOOK_SECRET, timeoutMs: 5000 },
    },
    subscriptions: [
      {
        name: 'core',
        services: ['stripe', 'github', 'slack', 'twilio', 'okta', 'datadog', 'cloudflare'],
        events: ['incident.opened'],
        channels: ['hook'],
      },
    ],
  });
}

async function simulator(): Promise<{ sim: Simulator; clock: World['clock']; url: string }> {
  const clock = {
    now: Date.now(),
    tick(ms = 1000) {
      clock.now += ms;
    },
  };
  const sim = createSimulator({ services: 30, seed: 5, rateLimit: false, now: () => clock.now });
  const url = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  return { sim, clock, url };
}

async function webhookSink(): Promise<FaultServer> {
  const hook = await faultServer({ mode: 'ok' });
  cleanups.push(() => hook.close());
  return hook;
}

interface Readyz {
  status: number;
  body: {
    checks?: Record<string, boolean>;
    redis?: { refusing: string[]; hint?: string; commands?: string[] };
  };
}

async function readyz(d: Daemon): Promise<Readyz> {
  try {
    const res = await fetch(`${d.url}/readyz`, { signal: AbortSignal.timeout(3000) });
    return { status: res.status, body: (await res.json()) as Readyz['body'] };
  } catch {
    return { status: 0, body: {} };
  }
}

/**
 * How long after `since` the daemon first answered /readyz 200: the time the answering request
 * was *sent* (polled every 50 ms). A loaded test machine delays the answer's trip back to the
 * test, which is not the daemon's recovery time; the request sent before that is the bound.
 */
async function readyAgainAfterMs(d: Daemon, since: number, what: string): Promise<number> {
  let sentAt = 0;
  await waitFor(
    async () => {
      sentAt = Date.now();
      return (await readyz(d)).status === 200;
    },
    { timeoutMs: 10_000, intervalMs: 50, what },
  );
  return sentAt - since;
}

/** The daemon's JSON log lines from stdout offset `from` on (stderr must stay empty). */
function linesSince(d: Daemon, from: number): { event: string; thread: string; line: string }[] {
  return d.proc
    .stdout()
    .slice(from)
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const parsed = JSON.parse(line) as { event?: string; thread?: string };
      return { event: parsed.event ?? '', thread: parsed.thread ?? 'main', line };
    });
}

interface DaemonConnection {
  id: string;
  cmd: string;
}

/** The daemon's connections to the private Redis (its ACL user's), from CLIENT LIST. */
async function daemonConnections(): Promise<DaemonConnection[]> {
  const list = (await w.admin.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .map(
      (line) =>
        Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2))) as Record<
          string,
          string | undefined
        >,
    )
    .filter((c) => c.user === USER)
    .map((c) => ({ id: c.id ?? '', cmd: c.cmd ?? '' }));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let w: World;

beforeAll(async () => {
  const { server, admin } = await privateRedis();
  const { sim, clock, url } = await simulator();
  const hook = await webhookSink();
  const daemon = await startDaemon(await configFile({ server, simUrl: url, hookUrl: hook.url }));
  w = { sim, clock, server, admin, hook, daemon };
  await waitFor(
    async () => {
      const text = await metricsOf(daemon);
      return okPolls(text, 'status') >= 1 && okPolls(text, 'incidents') >= 1;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: 'baseline polls' },
  );
}, 30_000);

afterAll(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Measured {
  reason: string;
  linesDuring: number;
  linesTotal: number;
  events: string[];
  cpuShare: number;
  notReadyAfterMs: number;
  readyAfterMs: number;
  deliveredAfterMs: number;
  sends: number;
  refusals: number;
}

/**
 * One case: `begin` makes Redis refuse; /readyz turns 503 with `reason`; an incident opens on
 * `feedId` upstream; Redis keeps refusing for `holdMs` in all; `end` lets it take work again.
 */
async function refusalCase(o: {
  reason: string;
  feedId: string;
  holdMs?: number;
  begin: () => Promise<unknown>;
  end: () => Promise<unknown>;
  /** How /readyz shows it (default: the reason in `redis.refusing`, with its hint). */
  shown?: (r: Readyz) => boolean;
  /** Delivery within one poll interval plus this after Redis takes writes (default 10 s). */
  deliveryBoundMs?: number;
}): Promise<Measured> {
  const d = w.daemon;
  await queuesIdle(d);
  const from = d.proc.stdout().length;
  const errFrom = d.proc.stderr().length;
  const metricBefore = metricValue(await metricsOf(d), 'statuswatch_redis_refusals_total', {
    reason: o.reason,
  });
  const cpuBefore = await cpuSeconds(d.proc.pid);
  const began = Date.now();
  await o.begin();
  const shown =
    o.shown ??
    ((r: Readyz) =>
      r.body.redis?.refusing.includes(o.reason) === true &&
      r.body.redis.hint === REFUSAL_HINTS[r.body.redis.refusing[0] as keyof typeof REFUSAL_HINTS]);
  const notReady = await waitFor(
    async () => {
      const r = await readyz(d);
      return r.status === 503 && shown(r) ? r : false;
    },
    { timeoutMs: 5000, intervalMs: 100, what: `/readyz 503 (${o.reason})` },
  ).catch(async (err: unknown) => {
    console.info(JSON.stringify(await readyz(d)), d.proc.stdout().slice(from));
    throw err;
  });
  const notReadyAfterMs = Date.now() - began;
  w.clock.tick();
  w.sim.openIncident(o.feedId, { title: `during ${o.reason}` });
  // The refusal itself lasts this long (the scenario, not a synchronisation).
  await sleep(Math.max(0, began + (o.holdMs ?? 4000) - Date.now()));
  expect((await readyz(d)).status, 'still not ready while Redis refuses').toBe(503);
  expect(d.proc.exit(), 'the daemon is still running').toBeNull();
  const cpuShare = ((await cpuSeconds(d.proc.pid)) - cpuBefore) / ((Date.now() - began) / 1000);
  const duringTo = d.proc.stdout().length;
  await o.end();
  const endedAt = Date.now();
  const readyAfterMs = await readyAgainAfterMs(d, endedAt, `/readyz 200 after ${o.reason}`);
  await waitFor(
    () => verifiedDeliveries(w.hook, WEBHOOK_SECRET).some((x) => x.feedId === o.feedId),
    {
      timeoutMs: POLL_MS + 10_000 + 5000,
      intervalMs: 50,
      what: `the incident opened on ${o.feedId} during ${o.reason}`,
    },
  ).catch((err: unknown) => {
    console.info(d.proc.stdout().slice(from));
    throw err;
  });
  const deliveredAfterMs = Date.now() - endedAt;
  await queuesIdle(d);
  const sent = verifiedDeliveries(w.hook, WEBHOOK_SECRET).filter((x) => x.feedId === o.feedId);
  expect(new Set(sent.map((x) => x.id)).size, 'one webhook-id').toBe(1);
  expect(sent.map((x) => x.type)).toContain('incident.opened');
  const refusals =
    metricValue(await metricsOf(d), 'statuswatch_redis_refusals_total', { reason: o.reason }) -
    metricBefore;
  const lines = linesSince(d, from);
  const measured: Measured = {
    reason: o.reason,
    linesDuring: linesSince(d, from).length - linesSince(d, duringTo).length,
    linesTotal: lines.length,
    events: lines.map((l) => l.event),
    cpuShare: Math.round(cpuShare * 1000) / 1000,
    notReadyAfterMs,
    readyAfterMs,
    deliveredAfterMs,
    sends: sent.length,
    refusals,
  };
  console.info(`refusal ${o.reason}: ${JSON.stringify(measured)}`);
  expect(d.proc.stderr().slice(errFrom), 'nothing on stderr').toBe('');
  expect(notReady.body.checks?.redis === undefined).toBe(false);
  expect(readyAfterMs, '/readyz 200 within 2 s of Redis taking writes').toBeLessThan(2000);
  expect(deliveredAfterMs).toBeLessThan(POLL_MS + (o.deliveryBoundMs ?? 10_000));
  expect(refusals, 'counted in statuswatch_redis_refusals_total').toBeGreaterThan(0);
  expect(cpuShare, 'no spinning').toBeLessThan(0.3);
  // Per thread (the daemon runs two here, `threads: 2`, each with its own
  // connections and its own episodes): one line when it starts, one when it ends, readiness
  // each way, the delivery, and a few warnings of jobs whose locks or schedules Redis refused.
  const byThread = new Map<string, typeof lines>();
  for (const l of lines) byThread.set(l.thread, [...(byThread.get(l.thread) ?? []), l]);
  for (const [thread, own] of byThread)
    expect(own.length, `${thread}: ${own.map((l) => l.line).join('\n')}`).toBeLessThanOrEqual(12);
  expect(lines.filter((l) => l.event === 'redis:refusing').length).toBeGreaterThanOrEqual(1);
  // Each thread that saw the episode begin says once that it ended.
  for (const own of byThread.values()) {
    const began = own.filter((l) => l.event === 'redis:refusing').length;
    expect(own.filter((l) => l.event === 'redis:accepting')).toHaveLength(began > 0 ? 1 : 0);
  }
  expect(lines.filter((l) => l.event === 'worker:error')).toEqual([]);
  // The keepers (schedules, the API's refresh) leave a refusal to the refusal model too.
  expect(lines.filter((l) => ['api:refresh_failed', 'schedule:failed'].includes(l.event))).toEqual(
    [],
  );
  return measured;
}

describe('the daemon while Redis refuses work', () => {
  it('Redis full (maxmemory, noeviction): OOM', async () => {
    const m = await refusalCase({
      reason: 'oom',
      feedId: 'stripe',
      begin: () => w.admin.call('CONFIG', 'SET', 'maxmemory', '1'),
      end: () => w.admin.call('CONFIG', 'SET', 'maxmemory', '0'),
    });
    const start = linesSince(w.daemon, 0).find((l) => l.event === 'redis:refusing');
    expect(start?.line).toContain('maxmemory reached: raise it or free memory');
    expect(m.sends).toBeGreaterThanOrEqual(1);
  }, 40_000);

  it('the primary demoted to a read-only replica (REPLICAOF) and back, its data kept: READONLY', async () => {
    await w.admin.set('refusals-test:kept', 'yes');
    const nowhere = await freePort();
    let before: DaemonConnection[] = [];
    await refusalCase({
      reason: 'readonly',
      feedId: 'github',
      begin: async () => {
        before = await daemonConnections();
        await w.admin.call('REPLICAOF', '127.0.0.1', String(nowhere));
      },
      end: () => w.admin.call('REPLICAOF', 'NO', 'ONE'),
    });
    expect(await w.admin.get('refusals-test:kept')).toBe('yes');
    // READONLY made the connections that were refused connect again (reconnectOnError: with a
    // plain URL, a name that moved to the new primary is followed); REPLICAOF itself closes
    // none. The blocking ones (BZPOPMIN) were never refused a write.
    const after = new Set((await daemonConnections()).map((c) => c.id));
    const writers = before.filter((c) => c.cmd !== 'bzpopmin');
    const replaced = writers.filter((c) => !after.has(c.id));
    console.info(
      `readonly: ${String(replaced.length)} of ${String(writers.length)} non-blocking connections re-established (${String(before.length)} in all)`,
    );
    expect(writers.length).toBeGreaterThan(0);
    expect(replaced.length).toBeGreaterThan(0);
  }, 40_000);

  it('the ACL user loses a command its scripts run (XADD): NOPERM, the command named', async () => {
    let named: string[] | undefined;
    await refusalCase({
      reason: 'noperm',
      feedId: 'slack',
      begin: () => w.admin.call('ACL', 'SETUSER', USER, '-xadd'),
      end: () => w.admin.call('ACL', 'SETUSER', USER, '+xadd'),
      shown: (r) => {
        named = r.body.redis?.commands;
        return r.body.redis?.refusing.includes('noperm') === true && named !== undefined;
      },
    });
    expect(named).toEqual(['xadd']);
  }, 40_000);

  it('maxclients reached while the daemon reconnects', async () => {
    await refusalCase({
      reason: 'maxclients',
      feedId: 'twilio',
      begin: async () => {
        await w.admin.call('CONFIG', 'SET', 'maxclients', '1');
        await w.admin.call('CLIENT', 'KILL', 'USER', USER);
      },
      end: () => w.admin.call('CONFIG', 'SET', 'maxclients', '10000'),
    });
  }, 40_000);

  it('writes paused (CLIENT PAUSE WRITE): not answered, PING is', async () => {
    await refusalCase({
      reason: 'stalled',
      feedId: 'okta',
      begin: () => w.admin.call('CLIENT', 'PAUSE', '30000', 'WRITE'),
      end: () => w.admin.call('CLIENT', 'UNPAUSE'),
    });
  }, 40_000);

  it('an RDB save that fails with stop-writes-on-bgsave-error (its dir removed): MISCONF', async () => {
    // The server runs as whoever runs the tests (often root, whom permissions do not stop): its
    // working directory is removed instead, so the save cannot create its file there.
    const [, dir] = (await w.admin.call('CONFIG', 'GET', 'dir')) as [string, string];
    expect(dir).toMatch(/statuswatch-redis-/);
    await refusalCase({
      reason: 'misconf',
      feedId: 'datadog',
      begin: async () => {
        await w.admin.call('CONFIG', 'SET', 'stop-writes-on-bgsave-error', 'yes');
        await w.admin.call('CONFIG', 'SET', 'save', '3600 1');
        await rm(dir, { recursive: true, force: true });
        await w.admin.call('BGSAVE');
      },
      // What an operator may do without a disk to fix: no RDB snapshots (or turn the stop off).
      end: () => w.admin.call('CONFIG', 'SET', 'save', ''),
    });
  }, 40_000);

  it('a script that runs too long (EVAL busy loop past busy-reply-threshold): BUSY', async () => {
    const scripter = new Redis({
      host: '127.0.0.1',
      port: w.server.port,
      maxRetriesPerRequest: null,
    });
    cleanups.push(() => {
      scripter.disconnect();
      return Promise.resolve();
    });
    let running: Promise<unknown> = Promise.resolve();
    await refusalCase({
      reason: 'busy',
      feedId: 'cloudflare',
      begin: async () => {
        await w.admin.call('CONFIG', 'SET', 'busy-reply-threshold', '100');
        running = scripter.eval('while true do end', 0).catch((err: unknown) => err);
      },
      end: async () => {
        await w.admin.call('SCRIPT', 'KILL');
        expect(String(await running)).toMatch(/Script killed/);
      },
    });
  }, 40_000);
});

describe('start-up checks', () => {
  it('warns once of an evicting maxmemory-policy and names a command the ACL user lacks', async () => {
    const { server, admin } = await privateRedis();
    await admin.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    await admin.call('ACL', 'SETUSER', USER, '-publish');
    const { url } = await simulator();
    const hook = await webhookSink();
    const proc = spawnCli([
      'run',
      '--config',
      await configFile({ server, simUrl: url, hookUrl: hook.url }),
    ]);
    const started = await proc.waitForOutput(/"event":"app:started"[^\n]*"port":(\d+)/, 15_000);
    const d: Daemon = { proc, url: `http://127.0.0.1:${started[1] ?? '?'}` };
    const events = linesSince(d, 0);
    const policy = events.filter((l) => l.event === 'redis:eviction_policy');
    expect(policy).toHaveLength(1);
    expect(policy[0]?.line).toContain('noeviction');
    const refusing = events.filter((l) => l.event === 'redis:refusing');
    expect(refusing).toHaveLength(1);
    expect(JSON.parse(refusing[0]?.line ?? '{}')).toMatchObject({
      reason: 'noperm',
      commands: ['publish'],
    });
    const r = await readyz(d);
    expect(r.status).toBe(503);
    expect(r.body.redis).toMatchObject({ refusing: ['noperm'], commands: ['publish'] });
    await admin.call('ACL', 'SETUSER', USER, '+publish');
    const t0 = Date.now();
    expect(
      await readyAgainAfterMs(d, t0, '/readyz 200 once the permission is granted'),
    ).toBeLessThan(2000);
    // BullMQ prints its own warning of the policy on stderr, once per connection.
    for (const line of proc
      .stderr()
      .split('\n')
      .filter((l) => l !== ''))
      expect(line).toMatch(/^IMPORTANT! Eviction policy is allkeys-lru/);
  }, 30_000);
});

describe('a job whose lock lapsed while Redis refused writes', () => {
  // In the process (the daemon's poll and routing locks are BullMQ's 30 s, not configurable):
  // a worker with a 1.5 s lock takes a job; Redis is demoted to a replica as the job runs, so
  // its completion is refused (READONLY; a full Redis would let it through: its script's first
  // write frees memory) and, the job done, its lock lapses while Redis refuses. Once Redis takes
  // writes, the job runs again at once (BullMQ's stalled check alone would take 30 to 60 s).
  it.each<QueueRole>(['transitions', 'deliveries'])(
    '%s: the job runs again within seconds of Redis taking writes',
    async (role) => {
      const { server, admin } = await privateRedis();
      const connection = createRedis(`redis://${USER}:${PASSWORD}@127.0.0.1:${server.port}`);
      const keys = createKeys(`lapsed-${role}`);
      const { log, lines } = captureLog();
      const nowhere = await freePort();
      refusalsOf(connection).watch(log, keys);
      const runs: number[] = [];
      const home = { connection, keys, log };
      const queue = openQueue(role, home);
      const worker = startWorker(
        role,
        async () => {
          runs.push(Date.now());
          if (runs.length === 1) await admin.call('REPLICAOF', '127.0.0.1', String(nowhere));
        },
        home,
        { lockDuration: 1500, stalledInterval: 30_000 },
      );
      cleanups.push(async () => {
        await worker.close(true);
        await queue.close();
        connection.disconnect();
      });
      const job = await queue.add('lapsed', {});
      await waitFor(() => runs.length === 1, { timeoutMs: 5000, what: 'the first run' });
      const lock = `${keys.tag}:${queue.name}:${job.id ?? '?'}:lock`;
      await waitFor(async () => (await admin.exists(lock)) === 0, {
        timeoutMs: 5000,
        intervalMs: 100,
        what: 'the lock to lapse',
      });
      expect(await admin.lrange(`${keys.tag}:${queue.name}:active`, 0, -1)).toEqual([job.id]);
      await admin.call('REPLICAOF', 'NO', 'ONE');
      const recovered = Date.now();
      await waitFor(() => runs.length >= 2, { timeoutMs: 15_000, what: 'the second run' });
      const againAfterMs = (runs[1] ?? 0) - recovered;
      await waitFor(async () => (await job.getState()) === 'completed', {
        timeoutMs: 5000,
        what: 'the job completed',
      });
      console.info(
        `lapsed lock (${role}): ran again ${String(againAfterMs)} ms after Redis took writes`,
      );
      expect(againAfterMs).toBeLessThan(5000);
      expect(runs).toHaveLength(2);
      expect(lines.filter((l) => l.event === 'worker:jobs_released')).toHaveLength(1);
      expect(lines.filter((l) => l.event === 'worker:error')).toEqual([]);
    },
    30_000,
  );
});
