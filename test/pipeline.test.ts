import { afterEach, describe, expect, it } from 'vitest';
import { captureLog } from './helpers/log.js';
import { kindsOf, pipelineHarness, type PipelineHarness } from './helpers/pipeline.js';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ALL = ['status', 'incidents', 'sla', 'scores'] as const;

describe('poll → snapshot → diff → hand-off (real Redis, simulator)', () => {
  it('a full incident lifecycle gives opened, updated, resolved — each handed off once', async () => {
    h = await pipelineHarness();
    expect(await h.poll('status', 'incidents')).toEqual([]); // first sight: silent baseline
    const id = h.sim.openIncident('stripe', {
      title: 'Card payments failing',
      body: 'Investigating',
    });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.opened stripe']);
    h.sim.updateIncident('stripe', id, { status: 'identified', body: 'Root cause found' });
    const updated = await h.poll('status', 'incidents');
    expect(kindsOf(updated)).toEqual(['incident.updated stripe']);
    expect(updated[0]?.incident?.latestUpdate).toBe('Root cause found');
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.resolveIncident('stripe', id, 'Fixed');
    const resolved = await h.poll('status', 'incidents');
    expect(kindsOf(resolved)).toEqual(['incident.resolved stripe']);
    expect(resolved[0]?.service.name).toBeTruthy();
    expect(await h.poll('status', 'incidents')).toEqual([]);
    expect(await h.handedOff()).toEqual([
      'incident.opened stripe',
      'incident.resolved stripe',
      'incident.updated stripe',
    ]);
  });

  it('catalog refreshes that overlap in one process fetch /services once; a stale catalog is fetched again', async () => {
    h = await pipelineHarness();
    const services = '/api/v1/services';
    // At start the catalog schedule and the first cycle both find the catalog missing.
    expect(
      await Promise.all([h.pipeline.refreshCatalog(), h.pipeline.refreshCatalog(60_000)]),
    ).toEqual([true, true]);
    expect(h.sim.stats.byPath[services]).toBe(1);
    expect(await h.pipeline.refreshCatalog()).toBe(false);
    expect(h.sim.stats.byPath[services]).toBe(1);
    // Older than the caller allows: fetched again, once however many ask.
    h.clock.advance(120_000);
    expect(
      await Promise.all([h.pipeline.refreshCatalog(60_000), h.pipeline.refreshCatalog(60_000)]),
    ).toEqual([true, true]);
    expect(h.sim.stats.byPath[services]).toBe(2);
    // A fetch that fails fails every caller that joined it, and the next refresh fetches anew.
    h.clock.advance(120_000);
    h.sim.failNext({ path: services, status: 500 });
    const failed = await Promise.allSettled([
      h.pipeline.refreshCatalog(60_000),
      h.pipeline.refreshCatalog(60_000),
    ]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(h.sim.stats.byPath[services]).toBe(3);
    expect(await h.pipeline.refreshCatalog(60_000)).toBe(true);
    expect(h.sim.stats.byPath[services]).toBe(4);
  });

  it('logs one info line per cycle that found something, with the count per kind (none per transition, none for a quiet cycle)', async () => {
    const { log, lines } = captureLog();
    h = await pipelineHarness(undefined, undefined, () => ({ log }));
    await h.poll('incidents');
    for (const feedId of ['stripe', 'github', 'okta'])
      h.sim.openIncident(feedId, { title: 'down' });
    expect(await h.poll('incidents')).toHaveLength(3);
    await h.poll('incidents');
    const done = lines.filter((l) => l.event === 'poll:done');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({
      level: 'info',
      kind: 'incidents',
      transitions: 3,
      found: { 'incident.opened': 3 },
      msg: 'poll of incidents done: 3 incident.opened',
    });
    expect(lines.filter((l) => l.event === 'transition:detected')).toEqual([]);
  });

  it('a status flap shorter than the confirmations gives nothing; a held change gives one status.changed', async () => {
    h = await pipelineHarness();
    await h.poll('status');
    h.sim.setStatus('github', 'major_outage');
    expect(await h.poll('status')).toEqual([]);
    h.sim.setStatus('github', 'operational');
    expect(await h.poll('status')).toEqual([]);
    h.sim.setStatus('github', 'degraded');
    expect(await h.poll('status')).toEqual([]);
    const changed = await h.poll('status');
    expect(kindsOf(changed)).toEqual(['status.changed github']);
    expect(changed[0]?.previous?.status).toBe('operational');
    expect(changed[0]?.current.status).toBe('degraded');
    expect(await h.poll('status')).toEqual([]);
  });

  it('an SLA going at_risk, then breached, then recovered', async () => {
    h = await pipelineHarness();
    h.sim.setSla('adyen', { slaTarget: 99.5, uptime30d: 99.9 });
    await h.poll('sla');
    h.sim.setSla('adyen', { uptime30d: 99.55 });
    const atRisk = await h.poll('sla');
    expect(kindsOf(atRisk)).toEqual(['sla.at_risk adyen']);
    h.sim.setSla('adyen', { uptime30d: 99.1 });
    const breached = await h.poll('sla');
    expect(kindsOf(breached)).toEqual(['sla.breached adyen']);
    expect(breached[0]?.current.margin).toBeCloseTo(-0.4, 5);
    h.sim.setSla('adyen', { uptime30d: 99.9 });
    expect(kindsOf(await h.poll('sla'))).toEqual(['sla.recovered adyen']);
    expect(await h.poll('sla')).toEqual([]);
  });

  it('a slow score drift gives exactly one score.dropped', async () => {
    h = await pipelineHarness();
    h.sim.setScore('slack', 92);
    await h.poll('scores');
    const seen = [];
    for (const score of [91, 90, 89.5, 88.5, 87.9, 87.5, 87]) {
      h.sim.setScore('slack', score);
      seen.push(...(await h.poll('scores')));
    }
    expect(kindsOf(seen)).toEqual(['score.dropped slack']);
    expect(seen[0]?.previous?.score).toBe(92);
    expect(seen[0]?.current.score).toBe(87);
  });

  it('evidence going stale with an incident open resolves nothing; fresh again, still nothing until it really resolves', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    const id = h.sim.openIncident('okta', { title: 'Login errors' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.opened okta']);
    h.sim.setEvidence('okta', 'stale');
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.setIncidentDatasetFresh(false);
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.setIncidentDatasetFresh(true);
    h.sim.setEvidence('okta', 'fresh');
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.resolveIncident('okta', id);
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.resolved okta']);
  });

  it('a Variant A → B → A switch mid-run repeats nothing and misses nothing', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    const id = h.sim.openIncident('github', { title: 'Actions delayed' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.opened github']);
    h.sim.setVariant('B');
    h.clock.advance(120_000); // let the Variant B cache refresh
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.updateIncident('github', id, { body: 'Mitigation rolling out' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.updated github']);
    h.sim.setVariant('A');
    expect(await h.poll('status', 'incidents')).toEqual([]);
    h.sim.resolveIncident('github', id);
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.resolved github']);
  });

  it('a restart mid-timeline repeats nothing and misses nothing', async () => {
    h = await pipelineHarness();
    await h.poll(...ALL);
    const id = h.sim.openIncident('twilio', { title: 'SMS delays' });
    h.sim.setStatus('twilio', 'degraded');
    await h.poll(...ALL);
    const restarted = h.newPipeline(); // a new process: nothing cached in memory
    const out = [];
    for (const kind of ALL) out.push(...(await restarted.runCycle(kind)).transitions);
    h.clock.advance(60_000);
    expect(kindsOf(out)).toEqual(['status.changed twilio']);
    h.sim.resolveIncident('twilio', id);
    const third = h.newPipeline();
    const out2 = [];
    for (const kind of ALL) out2.push(...(await third.runCycle(kind)).transitions);
    expect(kindsOf(out2)).toEqual(['incident.resolved twilio']);
    expect(await h.handedOff()).toEqual([
      'incident.opened twilio',
      'incident.resolved twilio',
      'status.changed twilio',
    ]);
  });

  it('losing all state (a flush) between cycles is a silent re-baseline, not a storm', async () => {
    h = await pipelineHarness();
    await h.poll(...ALL);
    h.sim.openIncident('datadog', { title: 'Metrics delayed' });
    for (const feed of ['stripe', 'github', 'slack']) h.sim.setStatus(feed, 'major_outage');
    h.sim.setScore('okta', 20);
    await h.tr.flush();
    await h.poll(...ALL);
    expect(await h.poll(...ALL)).toEqual([]);
    expect(await h.handedOff()).toEqual([]);
  });

  it('a crash between hand-off and snapshot commit re-derives the same ids: nothing doubled', async () => {
    h = await pipelineHarness();
    await h.poll('incidents');
    const pd = h.sim.openIncident('pagerduty', { title: 'Notifications delayed' });
    const key = h.tr.keys.key('snap', 'incidents');
    const before = {
      entries: await h.tr.redis.dumpBuffer(key),
      meta: await h.tr.redis.dumpBuffer(`${key}:meta`),
    };
    const first = await h.pipeline.runCycle('incidents');
    // Put the snapshot back as it was before the commit, as if the process died right after enqueueing.
    await h.tr.redis.del(key, `${key}:meta`);
    await h.tr.redis.restore(key, 0, before.entries);
    await h.tr.redis.restore(`${key}:meta`, 0, before.meta);
    // The incident gains an update before the re-run: still the same opening, the same id.
    h.sim.updateIncident('pagerduty', pd, { body: 'Still investigating' });
    const again = await h.newPipeline().runCycle('incidents');
    expect(again.transitions.map((t) => t.kind)).toEqual(['incident.opened']);
    expect(again.transitions.map((t) => t.id)).toEqual(first.transitions.map((t) => t.id));
    expect(await h.handedOff()).toEqual(['incident.opened pagerduty']);
  });

  it('two pipeline instances on the same Redis hand off every transition exactly once', async () => {
    h = await pipelineHarness();
    const a = h.pipeline;
    const b = h.newPipeline();
    await Promise.all([
      a.runCycle('status'),
      b.runCycle('status'),
      a.runCycle('incidents'),
      b.runCycle('incidents'),
    ]);
    h.clock.advance(60_000);
    const ids = ['stripe', 'adyen', 'github'].map((feed) =>
      h!.sim.openIncident(feed, { title: `${feed} down` }),
    );
    for (const feed of ['slack', 'aws-s3']) h.sim.setStatus(feed, 'partial_outage');
    for (let round = 0; round < 3; round++) {
      await Promise.all([
        a.runCycle('status'),
        b.runCycle('status'),
        a.runCycle('incidents'),
        b.runCycle('incidents'),
      ]);
      h.clock.advance(60_000);
    }
    h.sim.resolveIncident('adyen', ids[1]!);
    for (let round = 0; round < 2; round++) {
      await Promise.all([b.runCycle('incidents'), a.runCycle('incidents')]);
      h.clock.advance(60_000);
    }
    expect(await h.handedOff()).toEqual([
      'incident.opened adyen',
      'incident.opened github',
      'incident.opened stripe',
      'incident.resolved adyen',
      'status.changed aws-s3',
      'status.changed slack',
    ]);
  });

  it('malformed upstream rows are skipped and counted without erasing the state of other services', async () => {
    h = await pipelineHarness();
    await h.poll('status');
    h.sim.failNext({
      path: '/api/v1/status',
      status: 200,
      body: JSON.stringify({
        success: true,
        data: [
          { feedId: 'stripe', status: 'up', lastCheck: 1, indicator: 'none' },
          { feedId: 42 },
          { nope: true },
        ],
        meta: { total: 3, generated: 1, age_seconds: 1 },
      }),
    });
    const report = await h.pipeline.runCycle('status');
    expect(report.skipped).toBe(2);
    expect(report.transitions).toEqual([]);
    h.clock.advance(60_000);
    expect(await h.poll('status')).toEqual([]); // github etc. still known: no re-baseline, no storm
    h.sim.setStatus('github', 'major_outage');
    await h.poll('status');
    expect(kindsOf(await h.poll('status'))).toEqual(['status.changed github']);
  });

  it('failed polls change nothing; repeated failures raise upstream.degraded once, then upstream.recovered', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    const id = h.sim.openIncident('stripe', { title: 'Payouts delayed' });
    h.sim.failNext({ path: '/api/v1/incidents', status: 503, count: 1 });
    expect(await h.poll('incidents')).toEqual([]);
    h.sim.failNext({ path: '/api/v1/incidents', status: 500, count: 3 });
    const failing = [
      ...(await h.poll('incidents')),
      ...(await h.poll('incidents')),
      ...(await h.poll('incidents')),
    ];
    expect(kindsOf(failing)).toEqual(['upstream.degraded upstream']);
    expect(failing[0]?.current.reason).toBe('upstream_server_error');
    const back = await h.poll('incidents');
    expect(kindsOf(back).sort()).toEqual(['incident.opened stripe', 'upstream.recovered upstream']);
    h.sim.resolveIncident('stripe', id);
    expect(kindsOf(await h.poll('incidents'))).toEqual(['incident.resolved stripe']);
  });

  it('a malformed incident row resolves nothing: the list is incomplete this cycle', async () => {
    h = await pipelineHarness();
    await h.poll('status', 'incidents');
    const id = h.sim.openIncident('stripe', { title: 'Card payments failing' });
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.opened stripe']);
    h.sim.failNext({
      path: '/api/v1/incidents',
      status: 200,
      body: JSON.stringify({
        success: true,
        data: [
          {
            service: 'Stripe',
            id,
            title: 'Card payments failing',
            status: 'investigating',
            started: null,
            updates: [],
          },
        ],
        meta: { total: 1, services_affected: 1 },
      }),
    });
    const report = await h.pipeline.runCycle('incidents');
    expect(report.skipped).toBe(1);
    expect(report.transitions).toEqual([]);
    h.clock.advance(60_000);
    expect(await h.poll('status', 'incidents')).toEqual([]); // still open, not re-opened
    h.sim.resolveIncident('stripe', id);
    expect(kindsOf(await h.poll('status', 'incidents'))).toEqual(['incident.resolved stripe']);
  });
});
