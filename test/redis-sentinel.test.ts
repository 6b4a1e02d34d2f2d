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
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deliveryWaveThroughFailover } from './helpers/failover-wave.js';
import { killAll } from './helpers/process.js';
import { scanKeys } from './helpers/redis.js';
import {
  NO_REDIS_SERVER,
  redisServerBinary,
  startSentinels,
  type LocalSentinels,
} from './helpers/redis-topology.js';

const binary = await redisServerBinary();
const skipped = process.env.STATUSWATCH_SKIP_TOPOLOGY_TESTS === '1';
if (binary === null) console.warn(`redis-sentinel.test.ts: ${NO_REDIS_SERVER}`);

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
      const t = topology;
      const prefix = `swsentinel-${process.pid}`;
      let moved = { from: 0, to: 0 };
      await deliveryWaveThroughFailover({
        redis: { sentinels: t.sentinels, name: t.name, prefix },
        cleanups,
        async failover(left) {
          moved = await t.startFailover();
          // The failover starts in the middle of the wave: many deliveries still to come.
          expect(left()).toBeGreaterThanOrEqual(100);
          await t.failedOver(moved.to);
        },
      });
      // The daemon worked on the new master.
      expect(moved.from).not.toBe(moved.to);
      const master = new Redis(moved.to, '127.0.0.1', { maxRetriesPerRequest: 2 });
      cleanups.push(() => master.quit().then(() => undefined));
      expect(await master.info('replication')).toMatch(/^role:master/m);
      expect((await scanKeys(master, `{${prefix}}*`)).length).toBeGreaterThan(10);
    }, 90_000);
  },
);
