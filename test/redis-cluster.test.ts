/**
 * The daemon on a real Redis Cluster: a local 3-primary, 3-replica cluster from `redis-server`,
 * the built daemon (`node dist/cli.js run`, a real process) configured with `redis.cluster`, the
 * upstream simulator and a webhook receiver in this process. An incident opened upstream reaches
 * the receiver exactly once, its resolution likewise; a restarted daemon replays nothing; every
 * key the installation wrote carries its `{prefix}` hash tag and lives on the one node that owns
 * the slot (a command spanning slots would have failed with CROSSSLOT on the way). And through a
 * failover: CLUSTER FAILOVER moves the installation's slot to its replica in the middle of a
 * wave of deliveries; every delivery arrives once, and polling goes on against the new primary.
 *
 * Skipped, saying so, when `redis-server` is not on PATH. Set STATUSWATCH_SKIP_TOPOLOGY_TESTS=1
 * to skip it on purpose (CI runs it on one Node version only).
 */
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deliveryWaveThroughFailover } from './helpers/failover-wave.js';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import {
  killAll,
  metricsOf,
  metricValue,
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
  startCluster,
  webhookReceiver,
  type LocalCluster,
  type Receiver,
} from './helpers/redis-topology.js';
import { waitFor } from './helpers/wait.js';

const binary = await redisServerBinary();
const skipped = process.env.STATUSWATCH_SKIP_TOPOLOGY_TESTS === '1';
if (binary === null) console.warn(`redis-cluster.test.ts: ${NO_REDIS_SERVER}`);

const cleanups: (() => Promise<void>)[] = [];
let cluster: LocalCluster | undefined;

afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe.skipIf(binary === null || skipped)('Redis Cluster (3 primaries, 3 replicas)', () => {
  beforeAll(async () => {
    cluster = await startCluster(binary ?? 'redis-server');
  }, 40_000);

  afterAll(async () => {
    await killAll();
    await cluster?.stop();
  });

  it('an incident reaches the webhook once, opened and resolved; a restart replays nothing', async () => {
    if (cluster === undefined) throw new Error('no cluster');
    const clock = { now: Date.now() };
    const sim: Simulator = createSimulator({
      services: 30,
      seed: 11,
      rateLimit: false,
      now: () => clock.now,
    });
    const simUrl = await sim.listen(0, '127.0.0.1');
    cleanups.push(() => sim.close());
    const hook: Receiver = await webhookReceiver();
    cleanups.push(() => hook.close());
    const tmp = await tempDir();
    cleanups.push(() => tmp.cleanup());
    const prefix = `swcluster-${process.pid}`;
    const file = await writeConfig(
      tmp.dir,
      daemonConfig({
        simUrl,
        redis: { cluster: cluster.seeds.slice(0, 2), prefix },
        receiver: hook,
        channels: ['hook'],
        events: ['incident.opened', 'incident.resolved'],
      }),
    );

    const first = await startDaemon(file);
    await morePolls(first, 1); // the baseline: first sight is silent
    expect(hook.hits).toEqual([]);
    clock.now += 1000;
    const feed = sim.feedIds()[0] ?? 'stripe';
    const incident = sim.openIncident(feed, { title: 'Card payments failing' });
    await waitFor(() => hook.delivered().some((h) => h.type === 'incident.opened'), {
      what: 'incident.opened at the webhook',
    });
    clock.now += 1000;
    sim.resolveIncident(feed, incident, 'Fixed');
    await waitFor(() => hook.delivered().some((h) => h.type === 'incident.resolved'), {
      what: 'incident.resolved at the webhook',
    });
    await morePolls(first, 2);
    await queuesIdle(first);
    expect(hook.hits.map((h) => `${h.type} ${h.feedId}`)).toEqual([
      `incident.opened ${feed}`,
      `incident.resolved ${feed}`,
    ]);
    expect(hook.hits.every((h) => h.verified && h.answered)).toBe(true);
    expect(new Set(hook.hits.map((h) => h.id)).size).toBe(2);

    first.proc.signal('SIGTERM');
    expect(await first.proc.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(first.proc.output()).not.toMatch(/CROSSSLOT|MOVED|"level":"error"/);

    // A restart: the snapshots and the ledger are in the cluster, so nothing is news again.
    const second = await startDaemon(file);
    await morePolls(second, 3);
    const text = await queuesIdle(second);
    expect(metricValue(text, 'statuswatch_transitions_total', {})).toBe(0);
    expect(metricValue(text, 'statuswatch_deliveries_total', {})).toBe(0);
    expect(hook.hits).toHaveLength(2);
    expect(
      metricValue(await metricsOf(second), 'statuswatch_polls_total', { outcome: 'ok' }),
    ).toBeGreaterThan(0);

    // Every key of the installation is in one slot, on the master that owns it.
    const observer = new Cluster(
      cluster.seeds.map((seed) => {
        const url = new URL(seed);
        return { host: url.hostname, port: Number(url.port) };
      }),
      { redisOptions: { maxRetriesPerRequest: 2 } },
    );
    cleanups.push(() => observer.quit().then(() => undefined));
    const everything = await scanKeys(observer, '*');
    expect(everything.length).toBeGreaterThan(10);
    expect(everything.filter((key) => !key.startsWith(`{${prefix}}`))).toEqual([]);
    const slots = new Set(
      await Promise.all(everything.slice(0, 50).map((key) => observer.cluster('KEYSLOT', key))),
    );
    expect(slots.size).toBe(1);
    let holders = 0;
    for (const node of observer.nodes('master')) {
      const [, keys] = await node.scan('0', 'MATCH', `{${prefix}}*`, 'COUNT', 10_000);
      if (keys.length > 0) holders += 1;
    }
    expect(holders).toBe(1);

    second.proc.signal('SIGTERM');
    expect(await second.proc.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(second.proc.output()).not.toMatch(/CROSSSLOT|"level":"error"/);
  }, 60_000);

  it('CLUSTER FAILOVER of the installation slot mid-incident under delivery load: every delivery once, polling resumes', async () => {
    if (cluster === undefined) throw new Error('no cluster');
    const c = cluster;
    const prefix = `swclusterfo-${process.pid}`;
    let moved = { from: 0, to: 0 };
    await deliveryWaveThroughFailover({
      redis: { cluster: c.seeds.slice(0, 2), prefix },
      cleanups,
      async failover(left) {
        moved = await c.failover(`{${prefix}}`);
        // The failover happened in the middle of the wave: many deliveries still to come.
        expect(left()).toBeGreaterThanOrEqual(50);
      },
    });
    expect(moved.from).not.toBe(moved.to);
  }, 90_000);
});
