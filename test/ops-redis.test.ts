/**
 * The daemon (`node dist/cli.js run`, a real process) against a private `redis-server` of its own
 * that the test pauses, stops and restarts: /readyz stays time-bounded (503 within its own
 * timeout, never a queued PING per probe), and an outage is logged as two JSON lines
 * (`redis:down`, `redis:up`), not one per reconnect attempt or a stderr dump per BullMQ object.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator } from '../src/sim/index.js';
import { startRedisServer, type RedisServer } from './helpers/global-setup.js';
import { freePort, killAll, startDaemon, tempDir, writeConfig } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A private redis-server on a free loopback port, stopped after the test. */
async function privateRedis(port?: number): Promise<RedisServer> {
  const server = await startRedisServer({ host: '127.0.0.1', port: port ?? (await freePort()) });
  cleanups.push(() => server.stop());
  return server;
}

/** A daemon config file: an in-process simulator upstream, Redis at `redisUrl`, ops on a free port. */
async function daemonConfig(redisUrl: string): Promise<string> {
  const sim = createSimulator({ services: 20, seed: 3, rateLimit: false });
  const simUrl = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return writeConfig(tmp.dir, {
    upstream: { baseUrl: simUrl, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: redisUrl, prefix: 'ops-redis' },
    poll: { status: '1s', incidents: '1s' },
    server: { port: 0 },
    channels: {},
    subscriptions: [],
  });
}

/** GET /readyz: its status (0 when no answer came within 3 s) and how long the answer took. */
async function readyz(url: string): Promise<{ status: number; ms: number; redis: unknown }> {
  const started = Date.now();
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) });
    const body = (await res.json()) as { checks: { redis: unknown } };
    return { status: res.status, ms: Date.now() - started, redis: body.checks.redis };
  } catch {
    return { status: 0, ms: Date.now() - started, redis: undefined };
  }
}

async function pingCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_ping:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the daemon while its Redis is paused or down', () => {
  it('/readyz answers 503 within 1.5 s while Redis is paused (one PING at a time), 200 after', async () => {
    const server = await privateRedis();
    const url = `redis://127.0.0.1:${server.port}`;
    const d = await startDaemon(await daemonConfig(url));
    const observer = new Redis(url, { maxRetriesPerRequest: null });
    cleanups.push(() => {
      observer.disconnect();
      return Promise.resolve();
    });
    const pingsBefore = await pingCalls(observer);

    // CLIENT PAUSE ALL stalls every client, this one's later commands too: a connection of its own.
    const pauser = new Redis(url, { maxRetriesPerRequest: null });
    cleanups.push(() => {
      pauser.disconnect();
      return Promise.resolve();
    });
    expect(await pauser.call('CLIENT', 'PAUSE', '5000', 'ALL')).toBe('OK');
    const pausedAt = Date.now();
    // Concurrent probes and then consecutive ones: each answers 503 on its own timeout.
    const probes = [
      ...(await Promise.all([readyz(d.url), readyz(d.url), readyz(d.url)])),
      await readyz(d.url),
      await readyz(d.url),
    ];
    for (const probe of probes) {
      expect(probe.ms, 'a probe answers within its own timeout').toBeLessThan(1500);
      expect(probe.status).toBe(503);
      expect(probe.redis).toBe(false);
    }
    expect(Date.now() - pausedAt, 'the probes ran while Redis was paused').toBeLessThan(5000);

    // After the pause: ready again, and the five probes had left one PING, not five.
    await waitFor(async () => (await readyz(d.url)).status === 200, {
      timeoutMs: 8000,
      intervalMs: 100,
      what: '/readyz 200 after the pause',
    });
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(4900);
    // The one PING left waiting by the five probes in the pause, plus those of the few probes
    // made after it (one each); the unfixed daemon had left five.
    const pings = (await pingCalls(observer)) - pingsBefore;
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(pings).toBeLessThanOrEqual(4);
  }, 30_000);

  it('an outage logs one redis:down and one redis:up JSON line, no stderr dumps; /readyz follows', async () => {
    const port = await freePort();
    let server = await privateRedis(port);
    const d = await startDaemon(await daemonConfig(`redis://127.0.0.1:${port}`));
    await d.proc.waitForOutput(/"event":"schedule:upserted"/);
    await sleep(1500); // pollers, routing, delivery and noise workers all busy on Redis
    const outFrom = d.proc.stdout().length;
    const errFrom = d.proc.stderr().length;

    await server.stop();
    const stoppedAt = Date.now();
    await sleep(1000);
    const down = await readyz(d.url); // checked last: the logs are this test's point
    await sleep(Math.max(0, 5000 - (Date.now() - stoppedAt)));

    server = await startRedisServer({ host: '127.0.0.1', port });
    cleanups.push(() => server.stop());
    await waitFor(async () => (await readyz(d.url)).status === 200, {
      timeoutMs: 10_000,
      intervalMs: 100,
      what: '/readyz 200 after the outage',
    });
    await sleep(1000); // anything late about the outage would show up here

    const stdout = d.proc.stdout().slice(outFrom);
    const stderr = d.proc.stderr().slice(errFrom);
    const lines = (stdout + stderr).split('\n').filter((l) => l !== '');
    const notJson = lines.filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    expect(notJson.slice(0, 10), 'every output line is a JSON log line').toEqual([]);
    expect(stderr, 'nothing on stderr').toBe('');
    const redisLines = lines.filter((l) =>
      /redis|ECONNREFUSED|ECONNRESET|Connection is closed|worker:error|queue:/i.test(l),
    );
    expect(redisLines.length, redisLines.slice(0, 20).join('\n')).toBeLessThanOrEqual(10);
    // Per thread (`threads: auto`: two here, each with its own connections): one line each way.
    const parsed = lines.map((l) => JSON.parse(l) as { event?: string; thread?: string });
    for (const thread of new Set(parsed.map((p) => p.thread))) {
      const own = parsed.filter((p) => p.thread === thread).map((p) => p.event);
      const downs = own.filter((e) => e === 'redis:down').length;
      expect(downs, `redis:down lines of ${thread ?? 'main'}`).toBeLessThanOrEqual(1);
      expect(own.filter((e) => e === 'redis:up')).toHaveLength(downs);
    }
    const events = parsed.filter((p) => p.thread === undefined).map((p) => p.event);
    expect(events.filter((e) => e === 'redis:down')).toHaveLength(1);
    expect(events.filter((e) => e === 'redis:up')).toHaveLength(1);
    const up = JSON.parse(
      lines.find((l) => l.includes('"event":"redis:up"') && !l.includes('"thread"')) ?? '{}',
    ) as {
      downMs?: number;
      failedAttempts?: number;
    };
    expect(up.downMs).toBeGreaterThanOrEqual(4000);
    expect(up.failedAttempts).toBeGreaterThan(1);
    // While it was down, /readyz said so at once.
    expect(down.status).toBe(503);
    expect(down.ms).toBeLessThan(1500);
  }, 40_000);
});
