/**
 * The daemon on Redis Sentinel through a failover: a local primary, a replica and three sentinels
 * from `redis-server`, the built daemon (`node dist/cli.js run`, a real process) configured with
 * `redis.sentinels` / `redis.name`, the upstream simulator and a webhook receiver in this
 * process. 50 incidents open upstream (200 deliveries over four webhook channels, answered
 * slowly so many are in flight); in the middle of that, SENTINEL FAILOVER moves the master to
 * the replica. Every delivery arrives exactly once (counted by webhook-id), and polling resumes
 * on the new master: the 50 resolutions seen after the failover are delivered too, once each.
 *
 * Skipped, saying so, when `redis-server` is not on PATH. Set STATUSWATCH_SKIP_TOPOLOGY_TESTS=1
 * to skip it on purpose (CI runs it on one Node version only).
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createSimulator } from '../src/sim/index.js';
import {
  killAll,
  morePolls,
  queuesIdle,
  startDaemon,
  tempDir,
  writeConfig,
} from './helpers/process.js';
import { scanKeys } from './helpers/redis.js';
import {
  daemonConfig,
  NO_REDIS_SERVER,
  redisServerBinary,
  startSentinels,
  webhookReceiver,
  type LocalSentinels,
} from './helpers/redis-topology.js';
import { waitFor } from './helpers/wait.js';

const binary = await redisServerBinary();
const skipped = process.env.STATUSWATCH_SKIP_TOPOLOGY_TESTS === '1';
if (binary === null) console.warn(`redis-sentinel.test.ts: ${NO_REDIS_SERVER}`);

const CHANNELS = ['hook-a', 'hook-b', 'hook-c', 'hook-d'];

const cleanups: (() => Promise<void>)[] = [];
let topology: LocalSentinels | undefined;

afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe.skipIf(binary === null || skipped)(
  'Redis Sentinel (primary, replica, 3 sentinels)',
  () => {
    beforeAll(async () => {
      topology = await startSentinels(binary ?? 'redis-server');
    }, 40_000);

    afterAll(async () => {
      await killAll();
      await topology?.stop();
    });

    it('SENTINEL FAILOVER mid-incident under delivery load: every delivery once, polling resumes', async () => {
      if (topology === undefined) throw new Error('no sentinels');
      const clock = { now: Date.now() };
      const sim = createSimulator({
        services: 90,
        seed: 5,
        rateLimit: false,
        now: () => clock.now,
      });
      const simUrl = await sim.listen(0, '127.0.0.1');
      cleanups.push(() => sim.close());
      const hook = await webhookReceiver();
      cleanups.push(() => hook.close());
      const tmp = await tempDir();
      cleanups.push(() => tmp.cleanup());
      const prefix = `swsentinel-${process.pid}`;
      const file = await writeConfig(
        tmp.dir,
        daemonConfig({
          simUrl,
          redis: { sentinels: topology.sentinels, name: topology.name, prefix },
          receiver: hook,
          channels: CHANNELS,
          events: ['incident.opened', 'incident.resolved'],
        }),
      );
      const d = await startDaemon(file);
      onTestFailed(() => {
        // What the daemon said (JSON lines): the story of a failure.
        console.error(
          `daemon output (last 60 lines):\n${d.proc.output().split('\n').slice(-60).join('\n')}`,
        );
      });
      await morePolls(d, 1); // the baseline: first sight is silent
      expect(hook.hits).toEqual([]);

      const of = (type: string) =>
        new Set(
          hook
            .delivered()
            .filter((h) => h.type === type)
            .map((h) => h.id),
        );
      const incidents = new Map<string, string>();
      hook.delayMs = 250; // 16 sends in flight at a time, the rest queued behind them
      clock.now += 1000;
      for (const feed of sim.feedIds())
        incidents.set(feed, sim.openIncident(feed, { title: `${feed} is down` }));
      // The upstream lists the incidents of official, verified sources only: those are news.
      const listed = (await (await fetch(`${simUrl}/api/v1/incidents`)).json()) as {
        data: { feedId: string; id: string }[];
      };
      const PER_WAVE =
        listed.data.filter((i) => incidents.get(i.feedId) === i.id).length * CHANNELS.length;
      expect(PER_WAVE).toBeGreaterThanOrEqual(200);
      await waitFor(() => of('incident.opened').size >= 30, {
        timeoutMs: 15_000,
        what: 'the first incident.opened deliveries',
      });
      const { from, to } = await topology.startFailover();
      // The failover starts in the middle of the wave: many deliveries still to come.
      expect(PER_WAVE - of('incident.opened').size).toBeGreaterThanOrEqual(100);
      await topology.failedOver(to);

      await waitFor(() => of('incident.opened').size === PER_WAVE, {
        timeoutMs: 30_000,
        what: `${PER_WAVE} incident.opened deliveries`,
      });
      // A transition seen after the failover: polling goes on against the new master.
      clock.now += 1000;
      for (const [feed, id] of incidents) sim.resolveIncident(feed, id, 'Fixed');
      await waitFor(() => of('incident.resolved').size === PER_WAVE, {
        timeoutMs: 30_000,
        what: `${PER_WAVE} incident.resolved deliveries`,
      });
      await morePolls(d, 2);
      await queuesIdle(d);

      expect(hook.duplicates()).toEqual([]);
      expect(hook.delivered()).toHaveLength(2 * PER_WAVE);
      expect(hook.hits).toHaveLength(2 * PER_WAVE); // not even an unanswered second try
      expect(hook.hits.every((h) => h.verified)).toBe(true);
      // The daemon works on the new master, and the failover cost it no error: the writes the
      // old master refused were sent again to the new one.
      const master = new Redis(to, '127.0.0.1', { maxRetriesPerRequest: 2 });
      cleanups.push(() => master.quit().then(() => undefined));
      expect(await master.info('replication')).toMatch(/^role:master/m);
      expect((await scanKeys(master, `{${prefix}}*`)).length).toBeGreaterThan(10);
      expect(from).not.toBe(to);
      d.proc.signal('SIGTERM');
      expect(await d.proc.waitForExit(15_000)).toEqual({ code: 0, signal: null });
      expect(d.proc.output()).not.toContain('"level":"error"');
    }, 90_000);
  },
);
