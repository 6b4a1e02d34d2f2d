/**
 * The failover scenario the Cluster and Sentinel suites share: the built daemon (a real process)
 * on the topology, the upstream simulator (90 services) and a webhook receiver in this process.
 * Incidents open on every service (about 230 deliveries over four webhook channels, answered
 * slowly so many are in flight); once 30 have arrived the suite's `failover` runs; then every
 * incident resolves. Every delivery arrives exactly once (counted by webhook-id), polling goes on
 * after the failover, and the daemon stops cleanly without an error line.
 */
import { expect, onTestFailed } from 'vitest';
import { createSimulator } from '../../src/sim/index.js';
import { morePolls, queuesIdle, startDaemon, tempDir, writeConfig } from './process.js';
import { daemonConfig, webhookReceiver } from './redis-topology.js';
import { waitFor } from './wait.js';

const CHANNELS = ['hook-a', 'hook-b', 'hook-c', 'hook-d'];

export async function deliveryWaveThroughFailover(o: {
  /** The config's `redis` section (with the test's own prefix). */
  redis: Record<string, unknown>;
  /**
   * Fails the topology over, in the middle of the wave; `left()` is how many opening
   * deliveries are still to come (for the suite to assert that the failover met a busy daemon).
   */
  failover(left: () => number): Promise<void>;
  cleanups: (() => Promise<void>)[];
}): Promise<void> {
  const clock = { now: Date.now() };
  const sim = createSimulator({ services: 90, seed: 5, rateLimit: false, now: () => clock.now });
  const simUrl = await sim.listen(0, '127.0.0.1');
  o.cleanups.push(() => sim.close());
  const hook = await webhookReceiver();
  o.cleanups.push(() => hook.close());
  const tmp = await tempDir();
  o.cleanups.push(() => tmp.cleanup());
  const file = await writeConfig(
    tmp.dir,
    daemonConfig({
      simUrl,
      redis: o.redis,
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
  const perWave =
    listed.data.filter((i) => incidents.get(i.feedId) === i.id).length * CHANNELS.length;
  expect(perWave).toBeGreaterThanOrEqual(200);
  await waitFor(() => of('incident.opened').size >= 30, {
    timeoutMs: 15_000,
    what: 'the first incident.opened deliveries',
  });
  await o.failover(() => perWave - of('incident.opened').size);

  await waitFor(() => of('incident.opened').size === perWave, {
    timeoutMs: 30_000,
    what: `${perWave} incident.opened deliveries`,
  });
  // A transition seen after the failover: polling goes on against the new primary.
  clock.now += 1000;
  for (const [feed, id] of incidents) sim.resolveIncident(feed, id, 'Fixed');
  await waitFor(() => of('incident.resolved').size === perWave, {
    timeoutMs: 30_000,
    what: `${perWave} incident.resolved deliveries`,
  });
  await morePolls(d, 2);
  await queuesIdle(d);

  expect(hook.duplicates()).toEqual([]);
  expect(hook.delivered()).toHaveLength(2 * perWave);
  expect(hook.hits).toHaveLength(2 * perWave); // not even an unanswered second try
  expect(hook.hits.every((h) => h.verified)).toBe(true);
  d.proc.signal('SIGTERM');
  expect(await d.proc.waitForExit(15_000)).toEqual({ code: 0, signal: null });
  // The failover cost the daemon no error: what the old primary refused went to the new one.
  expect(d.proc.output()).not.toMatch(/CROSSSLOT|"level":"error"/);
}
