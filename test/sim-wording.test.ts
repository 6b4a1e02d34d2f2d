/**
 * The simulator's alternate wording over HTTP: every field the contract does not enumerate is
 * worded differently (status rows of both variants, incident rows and update items, incidents
 * meta, SLA, scores), the words the contract names stay, and switching back restores the
 * standard words. Against a real listening simulator on 127.0.0.1:0 with an injected clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { errorCode } from '../src/errors.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../src/sim/index.js';

const KEYS = {
  'key-all': { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] },
};
const T0 = Date.UTC(2025, 10, 25, 12, 0, 30);

type Row = Record<string, unknown>;
interface Got {
  status: number;
  body: Row;
  text: string;
}
interface Harness {
  sim: Simulator;
  get(path: string): Promise<Got>;
  premium(path: string): Promise<Got>;
  advance(ms: number): void;
  nowSec(): number;
}

const started: Simulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

async function start(o: SimulatorOptions = {}): Promise<Harness> {
  let clock = T0;
  const sim = createSimulator({
    services: 300,
    keys: KEYS,
    rateLimit: false,
    now: () => clock,
    ...o,
  });
  started.push(sim);
  const api = `${await sim.listen()}/api/v1`;
  const fetchJson = async (path: string, init: RequestInit = {}): Promise<Got> => {
    const res = await fetch(`${api}${path}`, init);
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) as Row, text };
  };
  return {
    sim,
    get: (path) => fetchJson(path),
    premium: (path) => fetchJson(path, { headers: { 'X-API-Key': 'key-all' } }),
    advance: (ms) => {
      clock += ms;
    },
    nowSec: () => Math.floor(clock / 1000),
  };
}

const data = (g: Got): Row => {
  expect(g.status).toBe(200);
  return g.body['data'] as Row;
};
const list = (g: Got): Row[] => {
  expect(g.status).toBe(200);
  return g.body['data'] as Row[];
};
const meta = (g: Got): Row => g.body['meta'] as Row;
function byFeed(rows: Row[], feedId: string): Row {
  const row = rows.find((r) => r['feedId'] === feedId);
  if (!row) throw new Error(`no row ${feedId}`);
  return row;
}
const values = (rows: Row[], field: string): Set<unknown> => new Set(rows.map((r) => r[field]));

/** Reachability feeds with fresh evidence, so their status changes show at once. */
async function reachabilityFeeds(h: Harness, n: number): Promise<string[]> {
  const ids = list(await h.get('/services'))
    .filter((r) => r['sourceKind'] === 'reachability')
    .slice(0, n)
    .map((r) => String(r['feedId']));
  expect(ids).toHaveLength(n);
  for (const id of ids) h.sim.setEvidence(id, 'fresh');
  return ids;
}

const A_STATUS_ALT = [
  'operational',
  'performance_issues',
  'partially_unavailable',
  'unavailable',
  'scheduled_work',
];
const A_STATUS_STD = ['operational', 'degraded', 'partial_outage', 'major_outage', 'maintenance'];

describe('alternate wording, Variant A status', () => {
  it('words every status field differently in /status (fast path), /status/{feedId}, compact and includes', async () => {
    const h = await start({ wording: 'alternate' });
    const { sim } = h;
    sim.setStatus('github', 'degraded');
    const ghInc = sim.openIncident('github', { title: 'Slow API', status: 'identified' });
    sim.setStatus('cloudflare', 'partial_outage');
    sim.setStatus('slack', 'major_outage');
    sim.openIncident('slack', { title: 'Slack down' });
    sim.setStatus('pagerduty', 'maintenance');
    sim.setEvidence('okta', 'stale');
    sim.setEvidence('datadog', 'unverified');
    const [up, slow, down] = await reachabilityFeeds(h, 3);
    sim.setStatus(slow!, 'degraded');
    sim.setStatus(down!, 'major_outage');

    const all = await h.get('/status');
    const rows = list(all);
    // words the contract names: unchanged
    expect(byFeed(rows, 'stripe')).toMatchObject({
      status: 'operational',
      displayStatus: 'operational',
      availabilityStatus: 'operational',
      incidentScope: 'none',
      incidentScopeLabel: null,
      verificationState: 'verified',
      sourceKind: 'official',
    });
    expect(byFeed(rows, 'github')).toMatchObject({
      status: 'performance_issues',
      displayStatus: 'performance_issues',
      availabilityStatus: 'performance_issues',
      incidentScope: 'some_components',
      summary: 'Slow API (cause_found)',
    });
    expect(byFeed(rows, 'cloudflare')).toMatchObject({
      status: 'partially_unavailable',
      displayStatus: 'partially_unavailable',
      availabilityStatus: 'partially_unavailable',
    });
    expect(byFeed(rows, 'slack')).toMatchObject({
      status: 'unavailable',
      displayStatus: 'unavailable',
      availabilityStatus: 'unavailable',
      incidentScope: 'all_components',
    });
    expect(byFeed(rows, 'pagerduty')).toMatchObject({
      status: 'scheduled_work',
      displayStatus: 'scheduled_work',
      availabilityStatus: 'operational',
    });
    expect(byFeed(rows, 'okta')['verificationState']).toBe('outdated');
    expect(byFeed(rows, 'datadog')['verificationState']).toBe('unconfirmed');
    expect(byFeed(rows, up!)).toMatchObject({
      sourceKind: 'reachability',
      displayStatus: 'operational',
      endpointReachabilityStatus: 'responding',
    });
    expect(byFeed(rows, slow!)).toMatchObject({
      displayStatus: 'performance_issues',
      endpointReachabilityStatus: 'slow',
    });
    expect(byFeed(rows, down!)).toMatchObject({
      displayStatus: 'unavailable',
      endpointReachabilityStatus: 'not_responding',
    });
    expect(byFeed(rows, down!)['status']).toBeUndefined();

    // over the whole catalog, no standard word of these fields is left
    for (const f of ['status', 'displayStatus', 'availabilityStatus']) {
      for (const w of values(rows, f)) expect([...A_STATUS_ALT, undefined], f).toContain(w);
    }
    expect([...values(rows, 'incidentScope')].sort()).toEqual(
      ['all_components', 'none', 'some_components'].sort(),
    );
    expect([...values(rows, 'verificationState')].sort()).toEqual(
      ['outdated', 'unconfirmed', 'verified'].sort(),
    );
    for (const w of values(rows, 'endpointReachabilityStatus')) {
      expect(['responding', 'slow', 'not_responding', undefined]).toContain(w);
    }
    expect(new Set(rows.map((r) => r['sourceKind']))).toEqual(
      new Set(['official', 'reachability', 'community']),
    );

    // one row (the non-fast path) equals the row of the list
    for (const id of ['github', 'slack', 'okta', down!]) {
      expect(data(await h.get(`/status/${id}`))).toEqual(byFeed(rows, id));
    }
    expect(data(await h.get('/status/cloudflare?compact=1'))).toEqual({
      feedId: 'cloudflare',
      displayStatus: 'partially_unavailable',
      lastChanged: byFeed(rows, 'cloudflare')['lastChanged'],
    });

    // includes: the same words, plus the words inside incidents / maintenances / details
    const withInc = list(await h.get('/status?include=incidents'));
    expect(byFeed(withInc, 'github')).toMatchObject({
      displayStatus: 'performance_issues',
      incidentScope: 'some_components',
    });
    expect(byFeed(withInc, 'github')['incidents']).toEqual([
      expect.objectContaining({ id: ghInc, status: 'cause_found', verificationState: 'verified' }),
    ]);
    const maint = byFeed(list(await h.get('/status?include=maintenances')), 'pagerduty');
    expect(maint['maintenances']).toEqual([expect.objectContaining({ status: 'ongoing' })]);
    const details = data(await h.get('/status/slack?include=details'))['details'] as Row;
    expect(details['components']).toEqual([
      { name: 'API', status: 'unavailable' },
      { name: 'Dashboard', status: 'unavailable' },
    ]);
    const ghDetails = data(await h.get('/status/github?include=details'))['details'] as Row;
    expect(ghDetails['components']).toEqual([
      { name: 'API', status: 'performance_issues' },
      { name: 'Dashboard', status: 'operational' },
    ]);
  });

  it('setWording switches both ways at once, past the cached bodies', async () => {
    const h = await start();
    const { sim } = h;
    sim.setStatus('github', 'major_outage');
    sim.openIncident('github', { title: 'Down' });
    sim.setEvidence('okta', 'stale');

    const standard = await h.get('/status');
    expect(byFeed(list(standard), 'github')).toMatchObject({
      displayStatus: 'major_outage',
      incidentScope: 'full',
    });
    expect(byFeed(list(standard), 'okta')['verificationState']).toBe('stale');
    expect((await h.get('/status')).text).toBe(standard.text); // cached

    sim.setWording('alternate');
    const alternate = await h.get('/status');
    expect(byFeed(list(alternate), 'github')).toMatchObject({
      displayStatus: 'unavailable',
      incidentScope: 'all_components',
    });
    expect(byFeed(list(alternate), 'okta')['verificationState']).toBe('outdated');
    expect(data(await h.get('/status/github?compact=1'))['displayStatus']).toBe('unavailable');

    sim.setWording('standard');
    const back = await h.get('/status');
    expect(byFeed(list(back), 'github')).toMatchObject({
      displayStatus: 'major_outage',
      incidentScope: 'full',
    });
    expect(byFeed(list(back), 'okta')['verificationState']).toBe('stale');
    for (const w of values(list(back), 'displayStatus')) expect(A_STATUS_STD).toContain(w);
    expect(data(await h.get('/status/github?compact=1'))['displayStatus']).toBe('major_outage');

    sim.setWording('alternate');
    expect((await h.get('/status')).text).toBe(alternate.text);
  });
});

describe('alternate wording, Variant B status', () => {
  it('words status and indicator differently, and the snapshot follows a wording switch at once', async () => {
    const h = await start({ variant: 'B', wording: 'alternate' });
    const { sim } = h;
    sim.setStatus('github', 'degraded');
    sim.setStatus('cloudflare', 'partial_outage');
    sim.setStatus('slack', 'major_outage');
    sim.setStatus('pagerduty', 'maintenance');
    h.advance(300_000); // next snapshot boundary
    const first = await h.get('/status');
    const rows = list(first);
    const pick = (id: string): Row => {
      const r = byFeed(rows, id);
      return { status: r['status'], indicator: r['indicator'] };
    };
    expect(pick('stripe')).toEqual({ status: 'up', indicator: 'none' });
    expect(pick('github')).toEqual({ status: 'impaired', indicator: 'low' });
    expect(pick('cloudflare')).toEqual({ status: 'impaired', indicator: 'high' });
    expect(pick('slack')).toEqual({ status: 'offline', indicator: 'severe' });
    expect(pick('pagerduty')).toEqual({ status: 'scheduled_work', indicator: 'scheduled_work' });
    expect([...values(rows, 'status')].sort()).toEqual(
      ['impaired', 'offline', 'scheduled_work', 'up'].sort(),
    );
    for (const w of values(rows, 'indicator')) {
      expect(['none', 'low', 'high', 'severe', 'scheduled_work']).toContain(w);
    }
    expect(data(await h.get('/status/slack'))).toEqual(byFeed(rows, 'slack'));
    expect(data(await h.get('/status/slack?compact=1'))).toEqual({
      feedId: 'slack',
      status: 'offline',
      lastCheck: byFeed(rows, 'slack')['lastCheck'],
    });

    // A change after the snapshot does not show before the next refresh; a wording switch does.
    sim.setStatus('stripe', 'major_outage');
    h.advance(10_000);
    sim.setWording('standard');
    const std = await h.get('/status');
    expect(meta(std)['generated']).toBe(meta(first)['generated']);
    const stdRows = list(std);
    expect(byFeed(stdRows, 'stripe')).toMatchObject({ status: 'up', indicator: 'none' });
    expect(byFeed(stdRows, 'github')).toMatchObject({ status: 'degraded', indicator: 'minor' });
    expect(byFeed(stdRows, 'cloudflare')).toMatchObject({ status: 'degraded', indicator: 'major' });
    expect(byFeed(stdRows, 'slack')).toMatchObject({ status: 'down', indicator: 'critical' });
    expect(byFeed(stdRows, 'pagerduty')).toMatchObject({
      status: 'maintenance',
      indicator: 'maintenance',
    });
    expect(data(await h.get('/status/slack'))).toMatchObject({ status: 'down' });
    expect(data(await h.get('/status/slack?compact=1'))).toMatchObject({ status: 'down' });
    expect(byFeed(stdRows, 'slack')['lastCheck']).toBe(byFeed(rows, 'slack')['lastCheck']);

    sim.setWording('alternate');
    const again = await h.get('/status');
    expect(again.text).toBe(first.text.replace(/"age_seconds":\d+/, '"age_seconds":10'));
    expect(data(await h.get('/status/slack'))).toMatchObject({ status: 'offline' });
  });
});

describe('alternate wording, incidents', () => {
  it('words incident and update statuses, update keys and verification states in both variants', async () => {
    const h = await start({ wording: 'alternate' });
    const { sim } = h;
    const t = h.nowSec();
    const id = sim.openIncident('stripe', { title: 'Errors', body: 'Looking' });
    sim.updateIncident('stripe', id, { status: 'identified', body: 'Found' });
    sim.updateIncident('stripe', id, { status: 'monitoring', body: 'Fix out' });
    sim.updateIncident('stripe', id, { status: 'resolved', body: 'Done' });
    sim.updateIncident('stripe', id, { status: 'investigating', body: 'Back again' });
    const gh = sim.openIncident('github', { title: 'Slow', status: 'monitoring' });
    const expectedUpdates = [
      { id: `${id}-u1`, status: 'investigating', message: 'Looking', timestamp: t },
      { id: `${id}-u2`, status: 'cause_found', message: 'Found', timestamp: t },
      { id: `${id}-u3`, status: 'fix_deployed', message: 'Fix out', timestamp: t },
      { id: `${id}-u4`, status: 'closed', message: 'Done', timestamp: t },
      { id: `${id}-u5`, status: 'investigating', message: 'Back again', timestamp: t },
    ];

    const all = await h.get('/incidents');
    expect(meta(all)).toMatchObject({ sourceKind: 'official', verificationState: 'verified' });
    const stripe = list(all).find((r) => r['id'] === id);
    expect(stripe).toMatchObject({
      feedId: 'stripe',
      status: 'investigating',
      sourceKind: 'official',
      verificationState: 'verified',
    });
    expect(stripe?.['updates']).toEqual(expectedUpdates);
    expect(list(all).find((r) => r['id'] === gh)).toMatchObject({ status: 'fix_deployed' });
    for (const r of list(all)) {
      expect(['investigating', 'cause_found', 'fix_deployed']).toContain(r['status']);
      for (const u of r['updates'] as Row[]) {
        expect(Object.keys(u)).toEqual(['id', 'status', 'message', 'timestamp']);
      }
    }
    const oneGh = await h.get('/incidents/github');
    expect(list(oneGh)).toEqual([
      expect.objectContaining({
        id: gh,
        status: 'fix_deployed',
        updates: [{ id: `${gh}-u1`, status: 'fix_deployed', message: 'Slow', timestamp: t }],
      }),
    ]);
    expect(meta(oneGh)).toMatchObject({ verificationState: 'verified' });

    // meta.verificationState of the gaps
    sim.setEvidence('okta', 'stale');
    expect(meta(await h.get('/incidents/okta'))).toMatchObject({
      total: 0,
      sourceKind: 'official',
      verificationState: 'outdated',
    });
    const [reach] = await reachabilityFeeds(h, 1);
    expect(meta(await h.get(`/incidents/${reach!}`))).toMatchObject({
      sourceKind: 'reachability',
      verificationState: 'unconfirmed',
    });
    sim.setIncidentDatasetFresh(false);
    expect((await h.get('/incidents')).body).toEqual({
      success: true,
      data: [],
      meta: {
        total: 0,
        services_affected: 0,
        sourceKind: 'official',
        verificationState: 'unconfirmed',
      },
    });
    sim.setIncidentDatasetFresh(true);

    sim.setVariant('B');
    const b = list(await h.get('/incidents'));
    const bStripe = b.find((r) => r['id'] === id);
    expect(bStripe).toMatchObject({ service: 'Stripe', status: 'investigating' });
    expect(bStripe?.['updates']).toEqual(expectedUpdates);
    expect(b.find((r) => r['id'] === gh)).toMatchObject({ status: 'fix_deployed' });

    // back to the standard words and keys
    sim.setWording('standard');
    const bStd = list(await h.get('/incidents')).find((r) => r['id'] === id);
    expect((bStd?.['updates'] as Row[]).map((u) => u['status'])).toEqual([
      'investigating',
      'identified',
      'monitoring',
      'resolved',
      'investigating',
    ]);
    expect(Object.keys((bStd?.['updates'] as Row[])[0]!)).toEqual([
      'id',
      'status',
      'body',
      'created',
    ]);
    sim.setVariant('A');
    const aStd = await h.get('/incidents');
    expect(list(aStd).find((r) => r['id'] === gh)).toMatchObject({ status: 'monitoring' });
    expect(list(aStd).find((r) => r['id'] === id)?.['updates']).toEqual(
      expectedUpdates.map((u, i) => ({
        id: u.id,
        status: ['investigating', 'identified', 'monitoring', 'resolved', 'investigating'][i],
        body: u.message,
        created: u.timestamp,
      })),
    );
    expect(meta(await h.get('/incidents/okta'))['verificationState']).toBe('stale');
    expect(meta(await h.get(`/incidents/${reach!}`))['verificationState']).toBe('unverified');
  });
});

describe('alternate wording, premium', () => {
  it('words SLA status and score tiers differently; at_risk and grades stay', async () => {
    const h = await start({ wording: 'alternate' });
    const { sim } = h;
    sim.setSla('stripe', { slaTarget: 99.5, uptime30d: 99.9 });
    sim.setSla('slack', { slaTarget: 99.5, uptime30d: 99.55 });
    sim.setSla('github', { slaTarget: 99.5, uptime30d: 99.3 });
    const sla = data(await h.premium('/sla'));
    const services = sla['services'] as Row[];
    expect(byFeed(services, 'stripe')['status']).toBe('within_target');
    expect(byFeed(services, 'slack')['status']).toBe('at_risk');
    expect(byFeed(services, 'github')['status']).toBe('missed');
    expect([...values(services, 'status')].sort()).toEqual(
      ['at_risk', 'missed', 'within_target'].sort(),
    );
    expect(sla['summary']).toEqual({
      services_tracked: 300,
      compliance_rate: 99.67,
      services_breaching_sla: 1,
    });
    expect(data(await h.premium('/sla/github'))).toMatchObject({ status: 'missed', margin: -0.2 });
    const june = data(await h.premium('/sla?month=2025-06'))['services'] as Row[];
    for (const w of values(june, 'status')) {
      expect(['within_target', 'at_risk', 'missed']).toContain(w);
    }

    const tiers: [string, number, string, string][] = [
      ['stripe', 96, 'A+', 'platinum'],
      ['github', 85, 'B', 'gold'],
      ['slack', 75, 'C', 'silver'],
      ['okta', 55, 'F', 'bronze'],
      ['datadog', 40, 'F', 'iron'],
    ];
    for (const [feedId, score] of tiers) sim.setScore(feedId, score);
    const scores = data(await h.premium('/scores'))['scores'] as Row[];
    for (const [feedId, score, grade, tier] of tiers) {
      expect(byFeed(scores, feedId)).toMatchObject({ score, grade, tier });
      expect(data(await h.premium(`/scores/${feedId}`))).toMatchObject({ score, grade, tier });
    }
    for (const w of values(scores, 'tier')) {
      expect(['platinum', 'gold', 'silver', 'bronze', 'iron']).toContain(w);
    }
    const may = data(await h.premium('/scores?month=2025-05'))['scores'] as Row[];
    for (const w of values(may, 'tier')) {
      expect(['platinum', 'gold', 'silver', 'bronze', 'iron']).toContain(w);
    }

    sim.setWording('standard');
    const slaStd = data(await h.premium('/sla'));
    expect(byFeed(slaStd['services'] as Row[], 'stripe')['status']).toBe('met');
    expect(byFeed(slaStd['services'] as Row[], 'github')['status']).toBe('breached');
    expect(byFeed(slaStd['services'] as Row[], 'slack')['status']).toBe('at_risk');
    expect(slaStd['summary']).toMatchObject({ services_breaching_sla: 1 });
    const juneStd = data(await h.premium('/sla?month=2025-06'))['services'] as Row[];
    for (const w of values(juneStd, 'status')) expect(['met', 'at_risk', 'breached']).toContain(w);
    const scoresStd = data(await h.premium('/scores'))['scores'] as Row[];
    expect(byFeed(scoresStd, 'stripe')).toMatchObject({ grade: 'A+', tier: 'excellent' });
    expect(byFeed(scoresStd, 'datadog')).toMatchObject({ grade: 'F', tier: 'critical' });
    const mayStd = data(await h.premium('/scores?month=2025-05'))['scores'] as Row[];
    for (const w of values(mayStd, 'tier')) {
      expect(['excellent', 'good', 'fair', 'poor', 'critical']).toContain(w);
    }
  });
});

describe('wording switches', () => {
  it('validates the option and setWording, and applies the wording.set step', async () => {
    expect(() => createSimulator({ wording: 'loud' as 'standard' })).toThrow(
      /wording must be standard or alternate, got loud/,
    );
    let optionError: unknown;
    try {
      createSimulator({ wording: 'loud' as 'standard' });
    } catch (e) {
      optionError = e;
    }
    expect(errorCode(optionError)).toBe('sim_invalid_option');

    const h = await start();
    let err: unknown;
    try {
      h.sim.setWording('fancy' as 'alternate');
    } catch (e) {
      err = e;
    }
    expect(errorCode(err)).toBe('sim_invalid_argument');
    expect((err as Error).message).toMatch(/fancy/);
    h.sim.setStatus('github', 'degraded');
    expect(data(await h.get('/status/github'))['displayStatus']).toBe('degraded');

    h.sim.applyStep({ at: '0s', action: 'wording.set', wording: 'alternate' });
    expect(data(await h.get('/status/github'))['displayStatus']).toBe('performance_issues');
    await h.sim.play({ steps: [{ at: '5ms', action: 'wording.set', wording: 'standard' }] }).done;
    expect(data(await h.get('/status/github'))['displayStatus']).toBe('degraded');
  });
});
