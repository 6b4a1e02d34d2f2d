/**
 * The simulator's HTTP contract: every endpoint in both variants, against a real listening
 * simulator on 127.0.0.1:0, with an injected clock.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../src/sim/index.js';

const ALL_SCOPES = ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'];
const KEYS = {
  'key-all': { scopes: ALL_SCOPES },
  'key-sla': { scopes: ['sla:read'] },
};
const T0 = Date.UTC(2025, 10, 25, 12, 0, 30);

interface Got {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}
type Row = Record<string, unknown>;

let clock = T0;
let sim: Simulator;
let base = '';

async function get(path: string, init: RequestInit = {}): Promise<Got> {
  const res = await fetch(`${base}/api/v1${path}`, init);
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}
const premium = (path: string, key = 'key-all'): Promise<Got> =>
  get(path, { headers: { 'X-API-Key': key } });
const rows = (g: Got): Row[] => g.body['data'] as Row[];
const obj = (g: Got): Row => g.body['data'] as Row;
const meta = (g: Got): Row => g.body['meta'] as Row;

function findFeed(r: Row[], feedId: string): Row {
  const row = r.find((x) => x['feedId'] === feedId);
  if (!row) throw new Error(`no row ${feedId}`);
  return row;
}

beforeAll(async () => {
  sim = createSimulator({ services: 300, keys: KEYS, rateLimit: false, now: () => clock });
  base = await sim.listen();
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.setVariant('A');
});

/** A feedId of the given source kind (from the Variant A catalog). */
async function feedOfKind(kind: string): Promise<string> {
  const all = rows(await get('/services'));
  const row = all.find((r) => r['sourceKind'] === kind);
  if (!row) throw new Error(`no ${kind} service`);
  return String(row['feedId']);
}

describe('services', () => {
  it('lists the catalog in Variant A with citation fields and no category', async () => {
    const g = await get('/services');
    expect(g.status).toBe(200);
    expect(g.body['success']).toBe(true);
    expect(meta(g)).toEqual({ total: 300 });
    const data = rows(g);
    expect(data.map((r) => r['feedId'])).toEqual(sim.feedIds());
    expect(Object.keys(findFeed(data, 'stripe')).sort()).toEqual(
      [
        'canonicalUrl',
        'description',
        'feedId',
        'feedType',
        'name',
        'officialStatusUrl',
        'sourceKind',
        'sourceLabel',
        'url',
      ].sort(),
    );
    expect(findFeed(data, 'stripe')).toMatchObject({
      name: 'Stripe',
      canonicalUrl: 'https://status-directory.example/services/stripe',
      sourceKind: 'official',
      feedType: 'statuspage',
    });
    expect(new Set(data.map((r) => r['sourceKind']))).toEqual(
      new Set(['official', 'reachability', 'community']),
    );
    const reach = data.find((r) => r['sourceKind'] === 'reachability');
    expect(reach?.['feedType']).toBe('healthcheck');
    expect(reach?.['officialStatusUrl']).toBeNull();
  });

  it('lists the catalog in Variant B with the earlier fields only', async () => {
    sim.setVariant('B');
    const g = await get('/services');
    expect(meta(g)).toEqual({ total: 300 });
    expect(Object.keys(findFeed(rows(g), 'github')).sort()).toEqual([
      'description',
      'feedId',
      'feedType',
      'name',
      'url',
    ]);
  });

  it('filters by category slug (which is not a field of the rows)', async () => {
    const payments = await get('/services?category=payments');
    const ids = rows(payments).map((r) => r['feedId']);
    expect(ids).toContain('stripe');
    expect(ids).toContain('adyen');
    expect(ids).not.toContain('github');
    expect(meta(payments)['total']).toBe(ids.length);
    let sum = 0;
    for (const c of [
      'payments',
      'cloud',
      'devtools',
      'communication',
      'observability',
      'identity',
      'ecommerce',
      'ai',
      'security',
      'data',
    ]) {
      sum += Number(meta(await get(`/services?category=${c}`))['total']);
    }
    expect(sum).toBe(300);
    const unknown = await get('/services?category=gardening');
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ success: true, data: [], meta: { total: 0 } });
  });

  it('answers one service without meta, and 404 for an unknown feedId', async () => {
    const one = await get('/services/aws-s3');
    expect(one.body['meta']).toBeUndefined();
    expect(obj(one)).toMatchObject({ feedId: 'aws-s3', name: 'Amazon S3', sourceKind: 'official' });
    sim.setVariant('B');
    expect(Object.keys(obj(await get('/services/aws-s3'))).sort()).toEqual([
      'description',
      'feedId',
      'feedType',
      'name',
      'url',
    ]);
    const missing = await get('/services/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ success: false, error: 'Unknown feedId: nope' });
  });
});

describe('status, Variant A', () => {
  it('has evidence rows: legacy status only on official rows, reachability on the others', async () => {
    const g = await get('/status');
    expect(g.status).toBe(200);
    const m = meta(g);
    expect(m['total']).toBe(300);
    expect(m['includes']).toEqual({ incidents: false, maintenances: false, details: false });
    expect(typeof m['generated']).toBe('number');
    expect(Number(m['age_seconds'])).toBeGreaterThanOrEqual(0);
    const data = rows(g);
    expect(data).toHaveLength(300);
    for (const r of data) {
      const official = r['sourceKind'] === 'official';
      expect(r['status'] !== undefined).toBe(official);
      expect(r['endpointReachabilityStatus'] !== undefined).toBe(!official);
      expect(['reachable', 'degraded', 'unreachable', undefined]).toContain(
        r['endpointReachabilityStatus'],
      );
      expect(['verified', 'stale', 'unverified']).toContain(r['verificationState']);
      expect(r['verifiedAt']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
      expect(r['incidents']).toBeUndefined();
    }
    const stripe = findFeed(data, 'stripe');
    expect(stripe).toMatchObject({
      status: 'operational',
      displayStatus: 'operational',
      availabilityStatus: 'operational',
      incidentScope: 'none',
      incidentScopeLabel: null,
      verificationState: 'verified',
      activeIncidentCount: 0,
    });
    expect(Number(stripe['lastSuccessfulCheck'])).toBeLessThanOrEqual(Math.floor(clock / 1000));
  });

  it('reflects status changes at once, with lastChanged', async () => {
    clock += 1000;
    sim.setStatus('cloudflare', 'partial_outage');
    const row = findFeed(rows(await get('/status')), 'cloudflare');
    expect(row).toMatchObject({
      status: 'partial_outage',
      displayStatus: 'partial_outage',
      lastChanged: Math.floor(clock / 1000),
    });
    const reach = await feedOfKind('reachability');
    sim.setStatus(reach, 'major_outage');
    const r2 = findFeed(rows(await get('/status')), reach);
    expect(r2).toMatchObject({
      endpointReachabilityStatus: 'unreachable',
      displayStatus: 'major_outage',
    });
    expect(r2['status']).toBeUndefined();
    sim.setStatus('cloudflare', 'operational');
    sim.setStatus(reach, 'operational');
  });

  it('freezes the shown condition while evidence is stale', async () => {
    sim.setEvidence('datadog', 'stale');
    sim.setStatus('datadog', 'major_outage');
    const stale = findFeed(rows(await get('/status')), 'datadog');
    expect(stale).toMatchObject({ displayStatus: 'operational', verificationState: 'stale' });
    sim.setEvidence('datadog', 'fresh');
    const fresh = findFeed(rows(await get('/status')), 'datadog');
    expect(fresh).toMatchObject({ displayStatus: 'major_outage', verificationState: 'verified' });
    sim.setStatus('datadog', 'operational');
  });

  it('adds incidents, maintenances or details to official rows with include', async () => {
    const id = sim.openIncident('twilio', { title: 'SMS delays', body: 'Looking into it' });
    const withInc = await get('/status?include=incidents');
    expect(meta(withInc)['includes']).toEqual({
      incidents: true,
      maintenances: false,
      details: false,
    });
    const twilio = findFeed(rows(withInc), 'twilio');
    expect(twilio['activeIncidentCount']).toBe(1);
    expect(twilio['incidentScope']).toBe('partial');
    expect(twilio['incidents']).toEqual([
      expect.objectContaining({ id, feedId: 'twilio', title: 'SMS delays' }),
    ]);
    expect(findFeed(rows(withInc), 'stripe')['incidents']).toEqual([]);
    const reach = await feedOfKind('reachability');
    expect(findFeed(rows(withInc), reach)['incidents']).toBeUndefined();
    sim.resolveIncident('twilio', id);

    sim.setStatus('pagerduty', 'maintenance');
    const maint = findFeed(rows(await get('/status?include=maintenances')), 'pagerduty');
    expect(maint['displayStatus']).toBe('maintenance');
    expect(maint['availabilityStatus']).toBe('operational');
    expect(maint['maintenances']).toEqual([expect.objectContaining({ status: 'in_progress' })]);
    sim.setStatus('pagerduty', 'operational');

    const details = await get('/status/okta?include=details');
    expect(obj(details)['details']).toMatchObject({ checkIntervalSeconds: 60 });
    expect((await get('/status?include=everything')).status).toBe(400);
  });

  it('answers one service fully or compact, and 404 for unknown feedIds', async () => {
    const full = await get('/status/github');
    expect(full.body['meta']).toBeUndefined();
    expect(obj(full)).toMatchObject({
      feedId: 'github',
      name: 'GitHub',
      displayStatus: 'operational',
    });
    const compact = await get('/status/github?compact=1');
    expect(Object.keys(obj(compact)).sort()).toEqual(['displayStatus', 'feedId', 'lastChanged']);
    expect((await get('/status/nope')).status).toBe(404);
  });
});

describe('status, Variant B', () => {
  it('serves a cached snapshot refreshed every variantBRefreshMs', async () => {
    sim.setVariant('B');
    const first = await get('/status');
    const m = meta(first);
    expect(Object.keys(m).sort()).toEqual(['age_seconds', 'generated', 'total']);
    expect(m['total']).toBe(300);
    const row = findFeed(rows(first), 'slack');
    expect(Object.keys(row).sort()).toEqual(['feedId', 'indicator', 'lastCheck', 'status']);
    expect(row).toMatchObject({ status: 'up', indicator: 'none' });

    sim.setStatus('slack', 'major_outage');
    clock += 10_000;
    const cached = await get('/status');
    expect(findFeed(rows(cached), 'slack')).toMatchObject({ status: 'up', indicator: 'none' });
    expect(meta(cached)['generated']).toBe(m['generated']);
    expect(Number(meta(cached)['age_seconds'])).toBeGreaterThanOrEqual(10);
    expect(obj(await get('/status/slack'))).toMatchObject({ status: 'up' });

    clock += 300_000;
    const refreshed = await get('/status');
    expect(findFeed(rows(refreshed), 'slack')).toMatchObject({
      status: 'down',
      indicator: 'critical',
    });
    expect(Number(meta(refreshed)['generated'])).toBeGreaterThan(Number(m['generated']));
    expect(obj(await get('/status/slack?compact=1'))).toEqual({
      feedId: 'slack',
      status: 'down',
      lastCheck: findFeed(rows(refreshed), 'slack')['lastCheck'],
    });
    sim.setStatus('slack', 'operational');
  });
});

describe('incidents', () => {
  it('Variant A returns only verified official incidents, with feedId and updates', async () => {
    clock += 1000;
    const id = sim.openIncident('stripe', { title: 'Elevated errors', body: 'Investigating' });
    sim.updateIncident('stripe', id, { status: 'identified', body: 'Found it' });
    const reach = await feedOfKind('reachability');
    const hidden = sim.openIncident(reach, { title: 'Endpoint down' });
    const g = await get('/incidents');
    expect(meta(g)).toMatchObject({ sourceKind: 'official', verificationState: 'verified' });
    const inc = findFeed(rows(g), 'stripe');
    expect(inc).toMatchObject({
      service: 'Stripe',
      id,
      title: 'Elevated errors',
      status: 'identified',
      started: Math.floor(clock / 1000),
      sourceKind: 'official',
      verificationState: 'verified',
      officialStatusUrl: 'https://status.stripe.com',
      canonicalServiceUrl: 'https://status-directory.example/services/stripe',
    });
    expect(inc['updates']).toEqual([
      {
        id: `${id}-u1`,
        status: 'investigating',
        body: 'Investigating',
        created: Math.floor(clock / 1000),
      },
      { id: `${id}-u2`, status: 'identified', body: 'Found it', created: Math.floor(clock / 1000) },
    ]);
    expect(rows(g).some((r) => r['id'] === hidden)).toBe(false);
    expect(meta(g)['total']).toBe(rows(g).length);

    const one = await get('/incidents/stripe');
    expect(rows(one).map((r) => r['id'])).toEqual([id]);
    expect(meta(one)).toMatchObject({ total: 1, services_affected: 1 });
    expect(meta(await get(`/incidents/${reach}`))).toMatchObject({
      total: 0,
      verificationState: 'unverified',
    });

    sim.setVariant('B');
    const b = await get('/incidents');
    expect(Object.keys(meta(b)).sort()).toEqual(['services_affected', 'total']);
    const bStripe = rows(b).find((r) => r['id'] === id);
    expect(bStripe && Object.keys(bStripe).sort()).toEqual([
      'id',
      'service',
      'started',
      'status',
      'title',
      'updates',
    ]);
    expect(bStripe?.['service']).toBe('Stripe');
    expect(rows(b).some((r) => r['id'] === hidden)).toBe(true);
    expect(rows(await get(`/incidents/${reach}`)).map((r) => r['id'])).toEqual([hidden]);

    sim.resolveIncident('stripe', id, 'Fixed');
    sim.resolveIncident(reach, hidden);
    expect(rows(await get('/incidents')).some((r) => r['id'] === id || r['id'] === hidden)).toBe(
      false,
    );
    sim.setVariant('A');
    expect(rows(await get('/incidents/stripe'))).toEqual([]);
  });

  it('Variant A omits incidents when evidence is stale and empties the list when the dataset is stale', async () => {
    const id = sim.openIncident('github', { title: 'Actions delayed' });
    sim.setEvidence('github', 'stale');
    expect(rows(await get('/incidents')).some((r) => r['id'] === id)).toBe(false);
    expect(meta(await get('/incidents/github'))).toMatchObject({
      total: 0,
      verificationState: 'stale',
    });
    sim.setEvidence('github', 'fresh');
    expect(rows(await get('/incidents')).some((r) => r['id'] === id)).toBe(true);

    sim.setIncidentDatasetFresh(false);
    const empty = await get('/incidents');
    expect(empty.body).toEqual({
      success: true,
      data: [],
      meta: {
        total: 0,
        services_affected: 0,
        sourceKind: 'official',
        verificationState: 'unverified',
      },
    });
    sim.setVariant('B');
    expect(rows(await get('/incidents')).some((r) => r['id'] === id)).toBe(true);
    sim.setVariant('A');
    sim.setIncidentDatasetFresh(true);
    sim.resolveIncident('github', id);
  });
});

describe('premium', () => {
  it('needs a valid key (401) with the right scope (403)', async () => {
    for (const path of [
      '/sla',
      '/sla/stripe',
      '/scores',
      '/scores/stripe',
      '/rankings',
      '/analytics',
    ]) {
      const none = await get(path);
      expect(none.status).toBe(401);
      expect(none.body['success']).toBe(false);
      expect(typeof none.body['error']).toBe('string');
      expect((await premium(path, 'wrong-key')).status).toBe(401);
    }
    expect((await premium('/sla', 'key-sla')).status).toBe(200);
    for (const path of ['/scores', '/rankings', '/analytics']) {
      const g = await premium(path, 'key-sla');
      expect(g.status).toBe(403);
      expect(String(g.body['error'])).toMatch(/scope/);
    }
    expect((await premium('/sla/nope')).status).toBe(404);
  });

  it('reports SLA with status from the margin', async () => {
    const g = await premium('/sla');
    const data = obj(g);
    const services = data['services'] as Row[];
    expect(services).toHaveLength(300);
    expect(data['summary']).toEqual({
      services_tracked: 300,
      compliance_rate: 100,
      services_breaching_sla: 0,
    });
    expect(services.every((s) => s['status'] === 'met')).toBe(true);
    expect(Object.keys(findFeed(services, 'slack')).sort()).toEqual([
      'feedId',
      'margin',
      'name',
      'sla_target',
      'status',
      'uptime_30d',
    ]);

    sim.setSla('slack', { slaTarget: 99.5, uptime30d: 99.55 });
    expect(obj(await premium('/sla/slack'))).toEqual({
      feedId: 'slack',
      name: 'Slack',
      sla_target: 99.5,
      uptime_30d: 99.55,
      status: 'at_risk',
      margin: 0.05,
    });
    sim.setSla('slack', { uptime30d: 99.3 });
    expect(obj(await premium('/sla/slack'))).toMatchObject({ status: 'breached', margin: -0.2 });
    const summary = obj(await premium('/sla'))['summary'];
    expect(summary).toEqual({
      services_tracked: 300,
      compliance_rate: 99.67,
      services_breaching_sla: 1,
    });
    sim.setSla('slack', { uptime30d: 99.6 });
    expect(obj(await premium('/sla/slack'))).toMatchObject({ status: 'met', margin: 0.1 });
  });

  it('reports scores with grade, tier and components', async () => {
    const data = obj(await premium('/scores'));
    const scores = data['scores'] as Row[];
    expect(scores).toHaveLength(300);
    for (const s of scores) {
      expect(Number(s['score'])).toBeGreaterThanOrEqual(70);
      expect(Number(s['score'])).toBeLessThanOrEqual(99);
      expect(Object.keys(s['components'] as Row).sort()).toEqual([
        'incidents',
        'resolution',
        'sla',
        'uptime',
      ]);
    }
    expect(data['summary']).toMatchObject({ services_scored: 300 });
    sim.setScore('okta', 55);
    expect(obj(await premium('/scores/okta'))).toMatchObject({
      feedId: 'okta',
      name: 'Okta',
      score: 55,
      grade: 'F',
      tier: 'poor',
    });
    sim.setScore('okta', 96);
    expect(obj(await premium('/scores/okta'))).toMatchObject({
      score: 96,
      grade: 'A+',
      tier: 'excellent',
    });
  });

  it('answers month=YYYY-MM with deterministic history and 400 for invalid months', async () => {
    const june = await premium('/sla?month=2025-06');
    expect(june.status).toBe(200);
    expect(await premium('/sla?month=2025-06')).toMatchObject({ body: june.body });
    expect(june.body).not.toEqual((await premium('/sla')).body);
    const other = createSimulator({
      services: 300,
      rateLimit: false,
      keys: KEYS,
      now: () => clock,
    });
    const otherBase = await other.listen();
    const again = await fetch(`${otherBase}/api/v1/sla?month=2025-06`, {
      headers: { 'X-API-Key': 'key-all' },
    });
    expect(await again.json()).toEqual(june.body);
    await other.close();
    const scoresMay = obj(await premium('/scores/stripe?month=2025-05'));
    expect(scoresMay).toMatchObject({ feedId: 'stripe' });
    expect(obj(await premium('/scores/stripe?month=2025-05'))).toEqual(scoresMay);
    for (const bad of ['2025-13', '2025-6', 'june', '', '2999-01']) {
      const g = await premium(`/sla?month=${bad}`);
      expect(g.status).toBe(400);
      expect(g.body['success']).toBe(false);
    }
  });

  it('ranks by uptime and reports analytics', async () => {
    const r = obj(await premium('/rankings'));
    const ranking = r['rankings'] as Row[];
    expect(ranking).toHaveLength(300);
    expect(ranking[0]).toMatchObject({ rank: 1 });
    for (let i = 1; i < ranking.length; i++) {
      expect(Number(ranking[i - 1]!['uptime_30d'])).toBeGreaterThanOrEqual(
        Number(ranking[i]!['uptime_30d']),
      );
    }
    expect(Object.keys(ranking[0]!).sort()).toEqual([
      'feedId',
      'incidents_30d',
      'incidents_90d',
      'name',
      'rank',
      'uptime_30d',
      'uptime_90d',
    ]);
    expect(r['summary']).toMatchObject({ month: '2025-11', services_ranked: 300 });
    expect(obj(await premium('/rankings?month=2025-02'))['summary']).toMatchObject({
      month: '2025-02',
    });

    const a = obj(await premium('/analytics?month=2025-03'));
    expect(Object.keys(a).sort()).toEqual(
      [
        'components',
        'day_of_week',
        'mttr_trend',
        'severity_distribution',
        'summary',
        'top_affected_services',
      ].sort(),
    );
    const total = Number((a['summary'] as Row)['total_incidents']);
    const severities = Object.values(a['severity_distribution'] as Record<string, number>);
    expect(severities.reduce((x, y) => x + y, 0)).toBe(total);
    expect((a['mttr_trend'] as Row[]).map((t) => t['month'])).toEqual([
      '2024-10',
      '2024-11',
      '2024-12',
      '2025-01',
      '2025-02',
      '2025-03',
    ]);
    expect((a['top_affected_services'] as Row[]).length).toBeLessThanOrEqual(10);
    expect((await premium('/analytics?month=nope')).status).toBe(400);
  });
});

describe('protocol errors', () => {
  it('404 for unknown endpoints, 405 with Allow: GET for other methods', async () => {
    for (const path of ['/nope', '/rankings/stripe', '/status/stripe/extra', '/trends']) {
      const g = await get(path);
      expect(g.status).toBe(404);
      expect(g.body['success']).toBe(false);
    }
    const v2 = await fetch(`${base}/api/v2/status`);
    expect(v2.status).toBe(404);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${base}/api/v1/status`, {
        method,
        body: method === 'DELETE' ? null : '{}',
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
      expect(await res.json()).toMatchObject({ success: false });
    }
  });
});
