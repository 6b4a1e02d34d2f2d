/**
 * Redis outages under the real daemon (`node dist/cli.js run`): a private `redis-server` with an
 * append-only file fsynced on every write (test/helpers/faults.ts) is paused (SIGSTOP) or killed
 * (SIGKILL) for 20–25 s while incidents open and resolve upstream (the simulator, whose clock the
 * test moves), then resumed or restarted on the same dir and port, or restarted empty.
 * - the daemon neither crashes nor spins: a handful of JSON log lines for the whole outage;
 * - /readyz is 503 during the outage and 200 after;
 * - every transition made during the outage is delivered once (one 200 per webhook-id);
 * - a Redis that comes back empty is a silent re-baseline: incidents already open are not
 *   announced again, a new one is.
 * The outages take about two minutes: CI runs them once (test/helpers/once-per-ci.ts), not on its
 * second Node version (STATUSWATCH_SKIP_TOPOLOGY_TESTS=1).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { RECONNECT_MAX_DELAY_MS, reconnectDelay } from '../src/redis.js';
import { WEBHOOK_SECRET } from './helpers/delivery.js';
import {
  cpuSeconds,
  faultServer,
  persistentRedis,
  verifiedDeliveries,
  type FaultServer,
  type PersistentRedis,
  type VerifiedDelivery,
} from './helpers/faults.js';
import {
  killAll,
  morePolls,
  queuesIdle,
  startDaemon,
  tempDir,
  writeConfig,
  type Daemon,
} from './helpers/process.js';
import { itOncePerCi } from './helpers/once-per-ci.js';
import { baselined } from './helpers/baselined.js';
import { waitFor } from './helpers/wait.js';

const WATCHED = ['stripe', 'github', 'slack', 'twilio', 'okta'];
const EVENTS = ['incident.opened', 'incident.updated', 'incident.resolved', 'status.changed'];

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface World {
  sim: Simulator;
  clock: { now: number; tick(ms?: number): void };
  redis: PersistentRedis;
  hook: FaultServer;
  daemon: Daemon;
}

/** Simulator (a clock the test moves), persistent Redis, webhook receiver, and the daemon on them. */
async function world(): Promise<World> {
  const clock = {
    now: Date.now(),
    tick(ms = 1000) {
      clock.now += ms;
    },
  };
  const sim = createSimulator({ services: 50, seed: 11, rateLimit: false, now: () => clock.now });
  const simUrl = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  const redis = await persistentRedis();
  cleanups.push(() => redis.cleanup());
  const hook = await faultServer({ mode: 'ok' });
  cleanups.push(() => hook.close());
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  const file = await writeConfig(tmp.dir, {
    upstream: { baseUrl: simUrl, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: redis.url, prefix: 'outage' },
    // Two threads running all the time (the upstream thread and the main one), whatever the cores.
    daemon: { threads: 2 },
    poll: { status: '1s', incidents: '1s' },
    server: { port: 0 },
    channels: {
      hook: { type: 'webhook', url: `${hook.url}/hook`, secret: WEBHOOK_SECRET, timeoutMs: 5000 },
    },
    subscriptions: [{ name: 'core', services: WATCHED, events: EVENTS, channels: ['hook'] }],
  });
  const daemon = await startDaemon(file);
  return { sim, clock, redis, hook, daemon };
}

// ---------------------------------------------------------------------------------------------

/** GET /readyz: its status, 0 when no answer came within 3 s. */
async function readyz(d: Daemon): Promise<number> {
  try {
    const res = await fetch(`${d.url}/readyz`, { signal: AbortSignal.timeout(3000) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

async function readyzBecomes(d: Daemon, status: number, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  await waitFor(async () => (await readyz(d)) === status, {
    timeoutMs,
    intervalMs: 100,
    what: `/readyz ${status}`,
  });
  return Date.now() - t0;
}

const pairsOf = (list: readonly VerifiedDelivery[]): string[] =>
  list.map((d) => `${d.type} ${d.feedId}`).sort();

async function arrived(w: World, pairs: readonly string[], timeoutMs = 15_000): Promise<void> {
  await waitFor(
    () => pairs.every((p) => pairsOf(verifiedDeliveries(w.hook, WEBHOOK_SECRET)).includes(p)),
    {
      timeoutMs,
      intervalMs: 100,
      what: `webhooks ${pairs.join(', ')} (have ${pairsOf(verifiedDeliveries(w.hook, WEBHOOK_SECRET)).join(', ')})`,
    },
  );
}

/** Each webhook-id answered 200 exactly once. */
function expectOncePerId(hook: FaultServer): void {
  const counts = new Map<string, number>();
  for (const d of verifiedDeliveries(hook, WEBHOOK_SECRET))
    counts.set(d.id, (counts.get(d.id) ?? 0) + 1);
  const doubled = [...counts].filter(([, n]) => n !== 1);
  expect(doubled, 'webhook-ids answered more than once').toEqual([]);
}

interface Mark {
  out: number;
  err: number;
}

function mark(d: Daemon): Mark {
  return { out: d.proc.stdout().length, err: d.proc.stderr().length };
}

/** The daemon's output lines between two marks (to: now), and its stderr in that span. */
function linesBetween(
  d: Daemon,
  from: Mark,
  to: Mark = mark(d),
): { lines: string[]; stderr: string } {
  const stdout = d.proc.stdout().slice(from.out, to.out);
  const stderr = d.proc.stderr().slice(from.err, to.err);
  return { lines: (stdout + stderr).split('\n').filter((l) => l !== ''), stderr };
}

/**
 * Every line is a pino JSON line; their events, a worker thread's as `event@thread` (the daemon
 * runs two threads here, `threads: 2`: each has its own Redis connections and
 * says once that they went down and came back).
 */
function eventsOf(lines: readonly string[]): string[] {
  const notJson = lines.filter((line) => {
    try {
      return typeof JSON.parse(line) !== 'object';
    } catch {
      return true;
    }
  });
  expect(notJson.slice(0, 5), 'every output line is a JSON log line').toEqual([]);
  return lines.map((l) => {
    const { event = '', thread } = JSON.parse(l) as { event?: string; thread?: string };
    return thread === undefined ? event : `${event}@${thread}`;
  });
}

/** For each worker thread: at most one `down` line, and as many `up` lines as `down` ones. */
function expectOnceEachThread(events: readonly string[], down: string, up: string): void {
  const threads = new Set(events.flatMap((e) => (e.includes('@') ? [e.split('@')[1]] : [])));
  for (const thread of threads) {
    const downs = events.filter((e) => e === `${down}@${thread}`).length;
    expect(downs, `${down} lines of thread ${String(thread)}`).toBeLessThanOrEqual(1);
    expect(events.filter((e) => e === `${up}@${thread}`).length).toBe(downs);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Holds a change until the daemon's next incidents request and runs `outage` right as that
 * response is served: the poll that sees the change finds Redis gone when it writes.
 */
async function changeThenOutage(w: World, change: () => void, outage: () => void): Promise<number> {
  let at: number | null = null;
  w.sim.beforeNext({
    path: '/api/v1/incidents',
    run: () => {
      w.clock.tick();
      change();
      outage();
      at = Date.now();
    },
  });
  return waitFor(() => at ?? false, { timeoutMs: 5000, what: 'the next incidents poll' });
}

// ---------------------------------------------------------------------------------------------

const ALL_FOUR = [
  'incident.opened github',
  'incident.opened slack',
  'incident.opened stripe',
  'incident.resolved stripe',
];

/**
 * The scenario of the pause and kill tests: an incident delivered before the outage; one opening
 * in the very response whose cycle finds Redis gone; a resolution and another opening during the
 * outage; `outageMs` later `recover`. Returns what was measured.
 */
async function outageScenario(
  w: World,
  o: { outageMs: number; stop: () => void; recover: () => Promise<void> },
): Promise<{
  during: string[];
  after: string[];
  /** The error-level lines, during and after the outage. */
  errorLines: string[];
  /** The warnings that a job's lock lapsed (`worker:lock_lost`), during and after. */
  lockLines: string[];
  stderr: string;
  cpuShare: number;
  downAfterMs: number;
  upAfterMs: number;
  allDeliveredMs: number;
}> {
  const d = w.daemon;
  await baselined(d);
  w.clock.tick();
  const stripe = w.sim.openIncident('stripe', { title: 'Card payments failing' });
  await arrived(w, ['incident.opened stripe']);
  await queuesIdle(d);

  const start = mark(d);
  const cpuBefore = await cpuSeconds(d.proc.pid);
  const stoppedAt = await changeThenOutage(
    w,
    () => w.sim.openIncident('github', { title: 'Actions queued' }),
    o.stop,
  );
  const downAfterMs = await readyzBecomes(d, 503, 5000);
  w.clock.tick();
  w.sim.resolveIncident('stripe', stripe, 'Fixed');
  w.sim.openIncident('slack', { title: 'Messages delayed' });
  await sleep(stoppedAt + o.outageMs - Date.now()); // the outage itself
  expect(await readyz(d), 'not ready until the end of the outage').toBe(503);
  // A scrape still answers (with the last queue samples) before Prometheus gives up on it.
  const scraped = await fetch(`${d.url}/metrics`, { signal: AbortSignal.timeout(3000) });
  expect(scraped.status, '/metrics answers during the outage').toBe(200);
  expect(await scraped.text()).toContain('statuswatch_queue_jobs');
  expect(d.proc.exit(), 'the daemon is still running').toBeNull();
  const cpuShare = ((await cpuSeconds(d.proc.pid)) - cpuBefore) / (o.outageMs / 1000);
  const end = mark(d);

  await o.recover();
  const recoveredAt = Date.now();
  const upAfterMs = await readyzBecomes(d, 200, 10_000);
  await arrived(w, ALL_FOUR);
  const allDeliveredMs = Date.now() - recoveredAt;
  await morePolls(d, 2);
  await queuesIdle(d);

  expect(pairsOf(verifiedDeliveries(w.hook, WEBHOOK_SECRET))).toEqual(ALL_FOUR);
  expectOncePerId(w.hook);
  const during = linesBetween(d, start, end);
  const after = linesBetween(d, end);
  return {
    during: eventsOf(during.lines),
    after: eventsOf(after.lines),
    errorLines: [...during.lines, ...after.lines].filter((l) => l.includes('"level":"error"')),
    lockLines: [...during.lines, ...after.lines].filter((l) =>
      l.includes('"event":"worker:lock_lost"'),
    ),
    stderr: during.stderr + after.stderr,
    cpuShare,
    downAfterMs,
    upAfterMs,
    allDeliveredMs,
  };
}

describe('the daemon through a Redis outage', () => {
  it('reconnects with a bounded backoff: 100 ms doubling to at most RECONNECT_MAX_DELAY_MS, never giving up', () => {
    expect(reconnectDelay(1, () => 1)).toBe(100);
    expect(reconnectDelay(2, () => 1)).toBe(200);
    for (const times of [5, 6, 10, 100, 10_000])
      for (const r of [0, 0.5, 1]) {
        const delay = reconnectDelay(times, () => r);
        expect(delay).toBeLessThanOrEqual(RECONNECT_MAX_DELAY_MS);
        expect(delay).toBeGreaterThanOrEqual(times >= 6 ? RECONNECT_MAX_DELAY_MS * 0.8 : 80);
      }
  });

  itOncePerCi(
    'Redis paused (SIGSTOP) for 40 s, past the 30 s job locks, while incidents open and resolve: 503 meanwhile, quiet logs, then each delivered once',
    async () => {
      const w = await world();
      const m = await outageScenario(w, {
        outageMs: 40_000,
        stop: () => {
          w.redis.pause();
        },
        recover: () => {
          w.redis.resume();
          return Promise.resolve();
        },
      });
      console.info(`paused 40 s: ${JSON.stringify(m)}`);
      expect(m.stderr).toBe('');
      // A paused Redis keeps its connections: no connection error, only readiness to tell.
      expect(m.during.length, m.during.join(', ')).toBeLessThanOrEqual(10);
      expect(m.during.filter((e) => e === 'readiness:changed')).toHaveLength(1);
      expect(m.after.filter((e) => e === 'readiness:changed')).toHaveLength(1);
      expect(m.during.filter((e) => e.includes('error'))).toEqual([]);
      // The jobs in flight when Redis stopped lost their locks meanwhile: a warning or three
      // each (lock not renewed, missing at completion), once; BullMQ then runs them again.
      expect(m.errorLines).toEqual([]);
      expect(m.lockLines.length).toBeLessThanOrEqual(10);
      for (const line of m.lockLines) expect(line).toMatch(/"level":"warn"/);
      expect(m.cpuShare, 'no spinning while Redis is paused').toBeLessThan(0.15);
      expect(m.downAfterMs).toBeLessThan(2500);
      expect(m.upAfterMs).toBeLessThan(2000);
    },
    60_000,
  );

  itOncePerCi(
    'Redis killed (SIGKILL) for 20 s, restarted on its append-only file: one redis:down, one redis:up, each transition delivered once',
    async () => {
      const w = await world();
      const m = await outageScenario(w, {
        outageMs: 20_000,
        stop: () => {
          void w.redis.kill();
        },
        recover: () => w.redis.restart(),
      });
      console.info(`killed 20 s: ${JSON.stringify(m)}`);
      expect(m.stderr).toBe('');
      expect(m.during.length, m.during.join(', ')).toBeLessThanOrEqual(10);
      expect(m.during.filter((e) => e === 'redis:down')).toHaveLength(1);
      expect(m.during.filter((e) => e === 'readiness:changed')).toHaveLength(1);
      // A job in flight at the kill may find its lock expired after the restart: a warning.
      expect(m.errorLines).toEqual([]);
      expect(m.lockLines.length).toBeLessThanOrEqual(10);
      expect([...m.during, ...m.after].filter((e) => e === 'redis:up')).toHaveLength(1);
      expectOnceEachThread([...m.during, ...m.after], 'redis:down', 'redis:up');
      expect(m.cpuShare, 'no spinning while Redis is down').toBeLessThan(0.15);
      expect(m.downAfterMs).toBeLessThan(2500);
      // Back within one reconnect delay (RECONNECT_MAX_DELAY_MS) and a ready check.
      expect(m.upAfterMs).toBeLessThan(RECONNECT_MAX_DELAY_MS + 1500);
      const up = JSON.parse(
        w.daemon.proc
          .stdout()
          .split('\n')
          .find((l) => l.includes('"event":"redis:up"')) ?? '{}',
      ) as { downMs: number; failedAttempts: number };
      expect(up.downMs).toBeGreaterThanOrEqual(19_000);
      // Bounded backoff: about one attempt every RECONNECT_MAX_DELAY_MS, not a spin.
      expect(up.failedAttempts).toBeGreaterThan(3);
      expect(up.failedAttempts).toBeLessThanOrEqual(25);
    },
    60_000,
  );

  itOncePerCi(
    'Redis back EMPTY: a silent re-baseline (open incidents not announced again), then a new incident is delivered',
    async () => {
      const w = await world();
      const d = w.daemon;
      await baselined(d);
      w.clock.tick();
      w.sim.openIncident('stripe', { title: 'Card payments failing' });
      w.sim.openIncident('github', { title: 'Actions queued' });
      await arrived(w, ['incident.opened stripe', 'incident.opened github']);
      await queuesIdle(d);
      const before = verifiedDeliveries(w.hook, WEBHOOK_SECRET).length;
      const from = mark(d);

      await w.redis.kill();
      await readyzBecomes(d, 503, 5000);
      // While Redis is down an incident opens upstream; then Redis comes back with nothing.
      w.clock.tick();
      w.sim.openIncident('okta', { title: 'SSO errors' });
      await w.redis.restart({ empty: true });
      const restartedAt = Date.now();
      const upAfterMs = await readyzBecomes(d, 200, 10_000);
      // The daemon polls again (its schedules restored) and takes what it sees as its new baseline.
      await morePolls(d, 2, { timeoutMs: 45_000 });
      const pollingAfterMs = Date.now() - restartedAt;
      await queuesIdle(d);
      expect(
        verifiedDeliveries(w.hook, WEBHOOK_SECRET),
        'nothing announced again at the re-baseline',
      ).toHaveLength(before);

      // A new incident after the re-baseline is news, once.
      w.clock.tick();
      w.sim.openIncident('twilio', { title: 'SMS delays' });
      await arrived(w, ['incident.opened twilio']);
      await morePolls(d, 2);
      await queuesIdle(d);
      expect(pairsOf(verifiedDeliveries(w.hook, WEBHOOK_SECRET))).toEqual([
        'incident.opened github',
        'incident.opened stripe',
        'incident.opened twilio',
      ]);
      expectOncePerId(w.hook);
      const { lines, stderr } = linesBetween(d, from);
      const events = eventsOf(lines);
      const errorLines = lines.filter((l) => /"event":"[^"]*error/.test(l));
      console.info(
        `back empty: ${JSON.stringify({ upAfterMs, pollingAfterMs, events, errorLines })}`,
      );
      expect(stderr).toBe('');
      expect(events.filter((e) => e.includes('error'))).toEqual([]);
      // A restart quicker than the first reconnect attempt raises no connection error to log.
      const downs = events.filter((e) => e === 'redis:down').length;
      expect(downs).toBeLessThanOrEqual(1);
      expect(events.filter((e) => e === 'redis:up')).toHaveLength(downs);
      expectOnceEachThread(events, 'redis:down', 'redis:up');
      expect(lines.length, events.join(', ')).toBeLessThanOrEqual(15);
    },
    60_000,
  );
});
