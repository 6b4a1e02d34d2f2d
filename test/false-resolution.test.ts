import { afterEach, describe, expect, it } from 'vitest';
import { mulberry32 } from '../src/sim/prng.js';
import type { Pipeline, PollKind } from '../src/pipeline/cycle.js';
import type { Transition } from '../src/diff/transition.js';
import type { Evidence } from '../src/sim/index.js';
import { CatalogStore } from '../src/pipeline/catalog.js';
import { HistoryStore } from '../src/history/store.js';
import { kindsOf, pipelineHarness, type PipelineHarness } from './helpers/pipeline.js';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const FEED = 'okta';
const STATUS = '/api/v1/status';
const INCIDENTS = '/api/v1/incidents';
const CONFIRM = `/api/v1/incidents/${FEED}`;

/** Every handed-off transition about the test's feed (the durable queue: one job per id). */
async function handedOffForFeed(harness: PipelineHarness): Promise<string[]> {
  return (await harness.handedOff()).filter((k) => k.endsWith(` ${FEED}`));
}

describe('a vanished Variant A incident resolves only on evidence as new as its disappearance', () => {
  it('evidence going stale between the status and the incidents response of one instant resolves nothing (the reported race)', async () => {
    h = await pipelineHarness();
    const harness = h;
    await harness.poll('status', 'incidents');
    harness.sim.openIncident(FEED, { id: 'okta-1', title: 'Login errors' });
    expect(kindsOf(await harness.poll('status', 'incidents'))).toEqual([`incident.opened ${FEED}`]);

    // The status response still shows fresh evidence; it goes stale before the incidents response.
    harness.sim.beforeNext({
      path: INCIDENTS,
      run: () => {
        harness.sim.setEvidence(FEED, 'stale');
      },
    });
    expect(await harness.poll('status', 'incidents')).toEqual([]);
    // Back to fresh before the next status response: the incident shows again; nothing to say.
    harness.sim.beforeNext({
      path: STATUS,
      run: () => {
        harness.sim.setEvidence(FEED, 'fresh');
      },
    });
    expect(await harness.poll('status', 'incidents')).toEqual([]);

    // Fresh evidence in the bulk list, stale by the confirming read: still nothing.
    harness.sim.setEvidence(FEED, 'stale');
    harness.sim.beforeNext({
      path: CONFIRM,
      run: () => {
        harness.sim.setEvidence(FEED, 'fresh');
      },
    });
    expect(await harness.poll('incidents')).toEqual([]);

    harness.sim.resolveIncident(FEED, 'okta-1', 'Fixed');
    const resolved = await harness.poll('status', 'incidents');
    expect(kindsOf(resolved)).toEqual([`incident.resolved ${FEED}`]);
    expect(resolved[0]?.incident?.id).toBe('okta-1');
    expect(await harness.poll('status', 'incidents')).toEqual([]);
    expect(harness.sim.stats.byPath[CONFIRM]).toBeGreaterThanOrEqual(2);
  });

  it('the same race as a scenario step held until the incidents request', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    h.sim.openIncident(FEED, { id: 'okta-2', title: 'SSO down' });
    await h.poll('status', 'incidents');
    h.sim.applyStep({
      at: 0,
      action: 'evidence.set',
      feedId: FEED,
      evidence: 'unverified',
      before: 'incidents',
    });
    // The held step has not run yet: the status response shows verified evidence.
    expect(await h.pipeline.runCycle('status')).toMatchObject({ transitions: [] });
    expect((await h.pipeline.runCycle('incidents')).transitions).toEqual([]);
    expect(await handedOffForFeed(h)).toEqual([`incident.opened ${FEED}`]);
  });

  async function interleavings(replicas: 1 | 2, seed: number, rounds: number): Promise<void> {
    h = await pipelineHarness();
    const harness = h;
    const rng = mulberry32(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
    const pipelines: Pipeline[] =
      replicas === 1 ? [harness.pipeline] : [harness.pipeline, harness.newPipeline()];
    const seen: Transition[] = [];
    const cycle = async (kinds: PollKind[]): Promise<void> => {
      // In order on one replica, or (two replicas) sometimes at once, each on a random replica.
      if (replicas === 2 && rng() < 0.4) {
        const reports = await Promise.all(kinds.map((k) => pick(pipelines).runCycle(k)));
        for (const r of reports) seen.push(...r.transitions);
      } else {
        for (const k of kinds) seen.push(...(await pick(pipelines).runCycle(k)).transitions);
      }
    };
    const states: Evidence[] = ['fresh', 'fresh', 'stale', 'unverified'];
    const flip = (): void => {
      if (rng() < 0.8) harness.sim.setEvidence(FEED, pick(states));
      else harness.sim.setIncidentDatasetFresh(rng() < 0.5);
    };

    await cycle(['status', 'incidents']);
    harness.clock.advance(60_000);
    harness.sim.openIncident(FEED, { id: 'okta-r', title: 'Intermittent login failures' });
    let flips = 0;
    for (let round = 0; round < rounds; round++) {
      // A flip before the round, between its two responses (either order), before the
      // confirming read, or several of these.
      if (rng() < 0.5) flip();
      for (const path of [STATUS, INCIDENTS, CONFIRM]) {
        if (rng() < 0.45) {
          flips++;
          harness.sim.beforeNext({ path, run: flip });
        }
      }
      await cycle(rng() < 0.5 ? ['status', 'incidents'] : ['incidents', 'status']);
      harness.clock.advance(pick([1_000, 30_000, 60_000]));
    }
    expect(flips).toBeGreaterThanOrEqual(50);
    const incidentKinds = (ts: Transition[]): string[] =>
      kindsOf(ts.filter((t) => t.kind.startsWith('incident.')));
    // Opened once (the first time it was visible), never resolved while open upstream.
    expect([...new Set(incidentKinds(seen))]).toEqual([`incident.opened ${FEED}`]);
    expect(await handedOffForFeed(harness)).toEqual([`incident.opened ${FEED}`]);

    // The real resolution: delivered exactly once, whatever the evidence does afterwards.
    harness.sim.setIncidentDatasetFresh(true);
    harness.sim.setEvidence(FEED, 'fresh');
    harness.sim.resolveIncident(FEED, 'okta-r', 'Resolved');
    await cycle(['status', 'incidents']);
    harness.clock.advance(60_000);
    for (let round = 0; round < 10; round++) {
      harness.sim.beforeNext({ path: pick([STATUS, INCIDENTS, CONFIRM]), run: flip });
      await cycle(['incidents', 'status']);
      harness.clock.advance(60_000);
    }
    expect(await handedOffForFeed(harness)).toEqual([
      `incident.opened ${FEED}`,
      `incident.resolved ${FEED}`,
    ]);
  }

  it('80 randomized interleavings of evidence flips (seeded): no false resolution, one opening, the real resolution once', async () => {
    await interleavings(1, 20261126, 80);
  });

  it('the same with two replicas, sometimes polling at once', async () => {
    await interleavings(2, 16, 80);
  });
});

describe('what an incidents cycle did not see is kept for the reminders', () => {
  it('an open incident missing from the list counts as unseen until a list or a confirming read shows it again', async () => {
    let history: HistoryStore | undefined;
    h = await pipelineHarness(undefined, undefined, (tr) => {
      history = new HistoryStore(tr.redis, tr.keys);
      const store = history;
      // Unwatched services are left out.
      return { committed: (cycle) => store.record(cycle, (feedId) => feedId !== 'adyen') };
    });
    const unseen = async (): Promise<string[]> =>
      [...((await history?.lastLook())?.unseen ?? [])].sort();
    await h.poll('status', 'incidents');
    h.sim.openIncident(FEED, { id: 'okta-9', title: 'Login errors' });
    h.sim.openIncident('stripe', { id: 'stripe-9', title: 'Payouts delayed' });
    h.sim.openIncident('adyen', { id: 'adyen-9', title: 'Refunds failing' });
    await h.poll('status', 'incidents');
    expect(await unseen()).toEqual([]);
    // All hidden (stale evidence): their confirming reads prove nothing either.
    h.sim.setEvidence(FEED, 'stale');
    h.sim.setEvidence('stripe', 'stale');
    h.sim.setEvidence('adyen', 'stale');
    expect(await h.poll('incidents')).toEqual([]);
    expect(await unseen()).toEqual(['okta|incident:okta-9', 'stripe|incident:stripe-9']);
    // Okta's confirming read shows its incident: seen.
    h.sim.beforeNext({ path: CONFIRM, run: () => h?.sim.setEvidence(FEED, 'fresh') });
    expect(await h.poll('incidents')).toEqual([]);
    expect(await unseen()).toEqual(['stripe|incident:stripe-9']);
    // All listed again.
    h.sim.setEvidence('stripe', 'fresh');
    h.sim.setEvidence('adyen', 'fresh');
    expect(await h.poll('incidents')).toEqual([]);
    expect(await unseen()).toEqual([]);
    // Resolved (gone, and a confirming read says so): unseen for the cycle that resolves it, so
    // no reminder goes out before the resolution is routed; the next cycle forgets it.
    h.sim.resolveIncident(FEED, 'okta-9', 'Fixed');
    expect(kindsOf(await h.poll('incidents'))).toEqual([`incident.resolved ${FEED}`]);
    expect(await unseen()).toEqual(['okta|incident:okta-9']);
    expect(await h.poll('incidents')).toEqual([]);
    expect(await unseen()).toEqual([]);
    expect(await handedOffForFeed(h)).toEqual([
      `incident.opened ${FEED}`,
      `incident.resolved ${FEED}`,
    ]);
  });
});

describe('Variant B keeps its rule: gone from a complete active list', () => {
  it('resolves on the incidents response alone, in either poll order', async () => {
    h = await pipelineHarness({ variant: 'B' });
    await h.poll('incidents', 'status');
    h.sim.openIncident(FEED, { id: 'okta-b', title: 'Push delays' });
    expect(kindsOf(await h.poll('incidents', 'status'))).toEqual([`incident.opened ${FEED}`]);
    h.sim.resolveIncident(FEED, 'okta-b');
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual([`incident.resolved ${FEED}`]);
    // No confirming reads in Variant B.
    expect(h.sim.stats.byPath[CONFIRM]).toBeUndefined();
  });
});

describe('Variant B: a service name several catalog services share', () => {
  it('gives its incidents to none of them and keeps them open, while other incidents resolve as before', async () => {
    h = await pipelineHarness({ variant: 'B' });
    const harness = h;
    await harness.poll('incidents', 'status');
    const other = harness.sim.feedIds().find((f) => f !== FEED) as string;
    harness.sim.openIncident(FEED, { id: 'okta-s', title: 'Sign-in errors' });
    harness.sim.openIncident(other, { id: 'other-s', title: 'API errors' });
    expect(kindsOf(await harness.poll('incidents', 'status')).sort()).toEqual(
      [`incident.opened ${FEED}`, `incident.opened ${other}`].sort(),
    );

    // The catalog now has a second service named as okta is (stored as a catalog refresh does).
    const catalog = new CatalogStore(harness.tr.redis, harness.tr.keys);
    const name = (await catalog.refs([FEED])).get(FEED)?.name as string;
    await harness.tr.redis.hset(
      harness.tr.keys.key('catalog', 'names'),
      name,
      `\u001f${FEED}\u001fokta-eu`,
    );
    expect(await catalog.feedIdsByName([name])).toEqual(new Map([[name, [FEED, 'okta-eu']]]));
    expect(await harness.poll('incidents', 'status')).toEqual([]);
    harness.sim.resolveIncident(other, 'other-s');
    expect(kindsOf(await harness.poll('incidents', 'status'))).toEqual([
      `incident.resolved ${other}`,
    ]);
    expect(await harness.poll('incidents', 'status')).toEqual([]);
  });
});

describe('a response that does not say which variant it is resolves nothing', () => {
  /** A 200 answer with an empty list and none of Variant A's meta (the contract does not promise it). */
  const BARE_EMPTY = JSON.stringify({ success: true, data: [], meta: { total: 0 } });

  it('an empty incidents list without Variant A meta after a Variant A one: no resolution, no second opening', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    h.sim.openIncident(FEED, { id: 'okta-3', title: 'MFA prompts fail' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual([`incident.opened ${FEED}`]);

    h.sim.failNext({ path: INCIDENTS, status: 200, body: BARE_EMPTY });
    expect(await h.poll('incidents')).toEqual([]);
    // The next Variant A list shows it again: nothing to say (it never closed).
    expect(await h.poll('status', 'incidents')).toEqual([]);

    h.sim.resolveIncident(FEED, 'okta-3', 'Fixed');
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual([`incident.resolved ${FEED}`]);
    expect(await handedOffForFeed(h)).toEqual([
      `incident.opened ${FEED}`,
      `incident.resolved ${FEED}`,
    ]);
  });

  it('a switch to Variant B while no incident is open: the empty lists resolve nothing, the first list that shows Variant B is its silent baseline, and the next incident is announced', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.setVariant('B');
    // Empty Variant B lists (the simulator's shows other services' incidents), the status rows
    // of Variant B before or after the first of them.
    h.sim.failNext({ path: INCIDENTS, status: 200, body: BARE_EMPTY, count: 2 });
    expect(await h.poll('incidents', 'status')).toEqual([]);
    expect(await h.poll('status', 'incidents')).toEqual([]);
    expect(h.sim.stats.byPath[INCIDENTS]).toBe(4);
    // The first list that shows its variant is the switch: what it lists (the other services'
    // incidents, and one opened meanwhile) is a silent baseline, as after any switch.
    const ofFeed = (ts: Transition[]): string[] => kindsOf(ts.filter((t) => t.feedId === FEED));
    h.sim.openIncident(FEED, { id: 'okta-7', title: 'Dashboard errors' });
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.openIncident(FEED, { id: 'okta-8', title: 'Reports late' });
    expect(ofFeed(await h.poll('status', 'incidents'))).toEqual([`incident.opened ${FEED}`]);
    h.sim.resolveIncident(FEED, 'okta-8');
    expect(ofFeed(await h.poll('status', 'incidents'))).toEqual([`incident.resolved ${FEED}`]);
  });

  it('status in Variant A, incidents in Variant B: an empty incidents list (read as Variant A) does not make the next Variant B list a switch, and its new incident is announced', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    await h.pipeline.refreshCatalog();
    const name = (await new CatalogStore(h.tr.redis, h.tr.keys).refs([FEED])).get(FEED)?.name;
    expect(name).toBeDefined();
    const rowB = (id: string): object => ({
      service: name,
      id,
      title: `Incident ${id}`,
      status: 'investigating',
      started: Math.floor(Date.now() / 1000) - 60,
      updates: [],
    });
    const listB = (...ids: string[]): string =>
      JSON.stringify({
        success: true,
        data: ids.map(rowB),
        meta: { total: ids.length, services_affected: ids.length === 0 ? 0 : 1 },
      });
    // The incidents endpoint answers Variant B from now on; the status endpoint stays A.
    h.sim.failNext({ path: INCIDENTS, status: 200, body: listB('okta-b1') });
    expect(await h.poll('status', 'incidents')).toEqual([]); // the switch: a silent baseline
    h.sim.failNext({ path: INCIDENTS, status: 200, body: BARE_EMPTY });
    expect(await h.poll('status', 'incidents')).toEqual([]); // read as A: resolves nothing
    h.sim.failNext({ path: INCIDENTS, status: 200, body: listB('okta-b1', 'okta-b2') });
    // (The other services' incidents, left out of these made-up lists, resolve by absence.)
    const found = (await h.poll('status', 'incidents')).filter((t) => t.feedId === FEED);
    expect(found.map((t) => `${t.kind} ${t.incident?.id ?? ''}`)).toEqual([
      'incident.opened okta-b2',
    ]);
  });

  it('a confirming read that answers an empty list without Variant A meta confirms nothing', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    h.sim.openIncident(FEED, { id: 'okta-4', title: 'Admin console slow' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual([`incident.opened ${FEED}`]);

    // A verified Variant A list without it, then a confirming read that proves nothing.
    const verifiedEmpty = JSON.stringify({
      success: true,
      data: [],
      meta: {
        total: 0,
        services_affected: 0,
        sourceKind: 'official',
        verificationState: 'verified',
      },
    });
    h.sim.failNext({ path: INCIDENTS, status: 200, body: verifiedEmpty });
    h.sim.failNext({ path: CONFIRM, status: 200, body: BARE_EMPTY });
    expect(await h.poll('incidents')).toEqual([]);
    expect(h.sim.stats.byPath[CONFIRM]).toBe(1);
    expect(await h.poll('status', 'incidents')).toEqual([]);
    expect(await handedOffForFeed(h)).toEqual([`incident.opened ${FEED}`]);
  });
});

describe('a stored incidents entry that cannot be read (say, written by a newer release)', () => {
  it('is seen again silently, and later changes of the service are still news, with new ids', async () => {
    h = await pipelineHarness();
    const harness = h;
    await harness.poll('status', 'incidents');
    harness.sim.openIncident(FEED, { id: 'okta-5', title: 'Push notifications delayed' });
    expect(kindsOf(await harness.poll('status', 'incidents'))).toEqual([`incident.opened ${FEED}`]);
    harness.sim.updateIncident(FEED, 'okta-5', { body: 'Still investigating' });
    expect(kindsOf(await harness.poll('status', 'incidents'))).toEqual([
      `incident.updated ${FEED}`,
    ]);

    // A replica of a newer release wrote the entry in a format this one does not read.
    const key = harness.tr.keys.key('snap', 'incidents');
    const stored = await harness.tr.redis.hget(key, FEED);
    await harness.tr.redis.hset(key, FEED, JSON.stringify({ v: 99, d: stored }));
    const restarted = harness.newPipeline();
    expect((await restarted.runCycle('incidents')).transitions).toEqual([]);
    harness.clock.advance(60_000);

    harness.sim.openIncident(FEED, { id: 'okta-6', title: 'SMS codes not sent' });
    const opened = (await restarted.runCycle('incidents')).transitions;
    expect(kindsOf(opened)).toEqual([`incident.opened ${FEED}`]);
    expect(opened[0]?.incident?.id).toBe('okta-6');
    harness.clock.advance(60_000);
    // Its second transition again: with the sequence started over, its id would be the one
    // routed before the entry was lost, and the hand-off would take it for that one.
    harness.sim.updateIncident(FEED, 'okta-5', { body: 'Fix deployed, monitoring' });
    expect(kindsOf((await restarted.runCycle('incidents')).transitions)).toEqual([
      `incident.updated ${FEED}`,
    ]);
    harness.clock.advance(60_000);
    harness.sim.resolveIncident(FEED, 'okta-5', 'Fixed');
    expect(kindsOf((await restarted.runCycle('incidents')).transitions)).toEqual([
      `incident.resolved ${FEED}`,
    ]);
    // Every transition is a job of its own: none was taken for one already handed off.
    expect(await handedOffForFeed(harness)).toEqual([
      `incident.opened ${FEED}`,
      `incident.opened ${FEED}`,
      `incident.resolved ${FEED}`,
      `incident.updated ${FEED}`,
      `incident.updated ${FEED}`,
    ]);
  });
});
