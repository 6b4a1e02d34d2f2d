/**
 * Contract test: the upstream client against a listening simulator (src/sim), every endpoint in
 * both variants, and every error status the API defines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { createUpstreamClient, type UpstreamClient } from '../src/upstream/client.js';
import { UpstreamError } from '../src/upstream/errors.js';
import type { ServiceState, Variant } from '../src/upstream/model.js';

const START = Date.parse('2025-11-20T12:00:00Z');
const KEYS = {
  k1: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] },
  k2: { scopes: [] },
};

let clock = START;
let sim: Simulator;
let premium: UpstreamClient;
let anon: UpstreamClient;

beforeAll(async () => {
  sim = createSimulator({
    services: 300,
    seed: 7,
    keys: KEYS,
    rateLimit: { public: 100_000, premium: 100_000 },
    now: () => clock,
  });
  const url = await sim.listen();
  premium = createUpstreamClient({ baseUrl: url, apiKey: 'k1', timeoutMs: 5_000 });
  anon = createUpstreamClient({ baseUrl: url, timeoutMs: 5_000 });
});

afterAll(async () => {
  await premium.close();
  await anon.close();
  await sim.close();
});

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(UpstreamError);
    return e as UpstreamError;
  }
  throw new Error('expected the call to fail');
}

function stateOf(services: ServiceState[], feedId: string): ServiceState {
  const s = services.find((x) => x.feedId === feedId);
  if (s === undefined) throw new Error(`no ${feedId} in status`);
  return s;
}

const KNOWN_STATUSES = ['operational', 'degraded', 'partial_outage', 'major_outage', 'maintenance'];

describe.each(['A', 'B'] as const)('Variant %s', (variant: Variant) => {
  beforeAll(() => {
    sim.setVariant(variant);
    clock += 600_000; // a fresh Variant B snapshot
  });

  it('services: whole catalog, every row valid, variant detected', async () => {
    const res = await anon.services();
    expect(res.httpStatus).toBe(200);
    expect(res.skipped).toBe(0);
    expect(res.data.variant).toBe(variant);
    expect(res.data.total).toBe(300);
    expect(res.data.services.map((s) => s.feedId)).toEqual(sim.feedIds());
    expect(res.rateLimit.limit).toBe(100_000);
    expect(res.rateLimit.remaining).toBeGreaterThan(0);
    expect(res.rateLimit.reset).toBeGreaterThan(START / 1000);
    const stripe = res.data.services.find((s) => s.feedId === 'stripe');
    expect(stripe).toMatchObject({ name: 'Stripe', url: 'https://status.stripe.com' });
    if (variant === 'A') {
      expect(res.data.services.every((s) => s.sourceKind !== 'unknown')).toBe(true);
      expect(res.data.services.every((s) => s.canonicalUrl !== null)).toBe(true);
      expect(stripe?.sourceKind).toBe('official');
    } else {
      expect(res.data.services.every((s) => s.sourceKind === 'unknown')).toBe(true);
      expect(res.data.services.every((s) => s.canonicalUrl === null)).toBe(true);
    }
  });

  it('services?category and services/{feedId}', async () => {
    const pay = await anon.services({ category: 'payments' });
    expect(pay.data.services.map((s) => s.feedId)).toContain('stripe');
    expect(pay.data.total).toBe(pay.data.services.length);
    expect(pay.data.total).toBeLessThan(300);
    const one = await anon.service('stripe');
    expect(one.skipped).toBe(0);
    expect(one.data.feedId).toBe('stripe');
    expect(one.data.canonicalUrl === null).toBe(variant === 'B');
  });

  it('status: every row valid and mapped to a known status', async () => {
    const res = await anon.status();
    expect(res.skipped).toBe(0);
    expect(res.data.variant).toBe(variant);
    expect(res.data.total).toBe(300);
    expect(res.data.services).toHaveLength(300);
    expect(res.data.services.every((s) => s.variant === variant)).toBe(true);
    expect(res.data.services.filter((s) => !KNOWN_STATUSES.includes(s.status))).toEqual([]);
    expect(res.data.generated).not.toBeNull();
    expect(res.data.ageSeconds).toBeGreaterThanOrEqual(0);
    expect(res.data.includes === null).toBe(variant === 'B');
    if (variant === 'B') {
      expect(res.data.services.every((s) => s.indicator !== null && s.lastCheck !== null)).toBe(
        true,
      );
    } else {
      expect(res.data.services.every((s) => s.sourceKind !== 'unknown')).toBe(true);
      expect(res.data.services.every((s) => s.lastChanged !== null)).toBe(true);
    }
  });

  it('status follows setStatus (through the Variant B snapshot refresh)', async () => {
    sim.setEvidence('stripe', 'fresh');
    sim.setStatus('stripe', 'major_outage');
    sim.setStatus('github', 'maintenance');
    clock += 600_000;
    const res = await anon.status();
    expect(stateOf(res.data.services, 'stripe')).toMatchObject({
      status: 'major_outage',
      statusRaw: variant === 'A' ? 'major_outage' : 'down',
    });
    expect(stateOf(res.data.services, 'github').status).toBe('maintenance');
    const one = await anon.serviceStatus('stripe');
    expect(one.data).toMatchObject({ feedId: 'stripe', variant, status: 'major_outage' });
    const compact = await anon.serviceStatus('stripe', { compact: true });
    expect(compact.data).toMatchObject({ feedId: 'stripe', variant, status: 'major_outage' });
    if (variant === 'A') expect(compact.data.lastChanged).not.toBeNull();
    else expect(compact.data.lastCheck).not.toBeNull();
    sim.setStatus('stripe', 'operational');
    sim.setStatus('github', 'operational');
  });

  it('partial outage: Variant B takes the more severe of `status` and `indicator`', async () => {
    sim.setEvidence('slack', 'fresh');
    sim.setStatus('slack', 'partial_outage');
    clock += 600_000;
    const one = await anon.serviceStatus('slack');
    expect(one.data).toMatchObject(
      variant === 'A'
        ? { status: 'partial_outage', statusRaw: 'partial_outage', indicator: null }
        : { status: 'partial_outage', statusRaw: 'degraded', indicator: 'major' },
    );
    sim.setStatus('slack', 'operational');
  });

  it('status?include', async () => {
    const res = await anon.status({ include: 'incidents' });
    expect(res.skipped).toBe(0);
    if (variant === 'A')
      expect(res.data.includes).toEqual({ incidents: true, maintenances: false });
    else expect(res.data.includes).toBeNull();
    const one = await anon.serviceStatus('stripe', { include: 'details' });
    expect(one.data.feedId).toBe('stripe');
  });

  it('incidents: an opened incident appears with its updates', async () => {
    sim.setEvidence('stripe', 'fresh');
    sim.setIncidentDatasetFresh(true);
    const id = sim.openIncident('stripe', {
      title: `Card payments failing (${variant})`,
      status: 'investigating',
      body: 'We are investigating',
    });
    sim.updateIncident('stripe', id, { status: 'identified', body: 'Cause identified' });
    const res = await anon.incidents();
    expect(res.skipped).toBe(0);
    expect(res.data.variant).toBe(variant);
    expect(res.data.total).toBe(res.data.incidents.length);
    const inc = res.data.incidents.find((i) => i.id === id);
    expect(inc).toMatchObject({
      serviceName: 'Stripe',
      feedId: variant === 'A' ? 'stripe' : null,
      title: `Card payments failing (${variant})`,
      status: 'identified',
      sourceKind: variant === 'A' ? 'official' : null,
      verificationState: variant === 'A' ? 'verified' : null,
    });
    expect(inc?.updates.map((u) => [u.status, u.text])).toEqual([
      ['investigating', 'We are investigating'],
      ['identified', 'Cause identified'],
    ]);
    expect(inc?.updates.every((u) => typeof u.at === 'number')).toBe(true);
    expect(res.data.incidents.filter((i) => i.status === 'unknown')).toEqual([]);

    const per = await anon.serviceIncidents('stripe');
    expect(per.data.incidents.map((i) => i.id)).toContain(id);
    sim.resolveIncident('stripe', id, 'Fixed');
    const after = await anon.serviceIncidents('stripe');
    expect(after.data.incidents.map((i) => i.id)).not.toContain(id);
  });

  if (variant === 'A') {
    it('incidents: unverified evidence gives an empty Variant A list', async () => {
      sim.setIncidentDatasetFresh(false);
      const res = await anon.incidents();
      expect(res.data).toMatchObject({ variant: 'A', incidents: [] });
      expect(res.data.verificationState).toBe('unverified');
      sim.setIncidentDatasetFresh(true);
    });
  }

  it('sla and sla/{feedId}, current and by month', async () => {
    sim.setSla('stripe', { slaTarget: 99.5, uptime30d: 99.95 });
    sim.setSla('adyen', { slaTarget: 99.9, uptime30d: 99.95 });
    sim.setSla('github', { slaTarget: 99.9, uptime30d: 99.95 - 0.9 });
    const res = await premium.sla();
    expect(res.skipped).toBe(0);
    expect(res.data.services).toHaveLength(300);
    expect(res.data.summary.servicesTracked).toBe(300);
    expect(res.data.services.filter((s) => s.status === 'unknown')).toEqual([]);
    const stripe = res.data.services.find((s) => s.feedId === 'stripe');
    expect(stripe).toMatchObject({ slaTarget: 99.5, uptime30d: 99.95, status: 'met' });
    expect(stripe?.margin).toBeCloseTo(0.45, 5);
    const adyen = res.data.services.find((s) => s.feedId === 'adyen');
    expect(adyen).toMatchObject({ status: 'at_risk', statusRaw: 'at_risk' });
    const github = await premium.serviceSla('github');
    expect(github.data.status).toBe('breached');
    expect(github.data.margin).toBeLessThan(0);
    const past = await premium.sla({ month: '2025-09' });
    expect(past.skipped).toBe(0);
    expect(past.data.services).toHaveLength(300);
    const pastOne = await premium.serviceSla('stripe', { month: '2025-09' });
    expect(pastOne.data.feedId).toBe('stripe');
  });

  it('scores and scores/{feedId}', async () => {
    sim.setScore('stripe', 88.5);
    const res = await premium.scores();
    expect(res.skipped).toBe(0);
    expect(res.data.scores).toHaveLength(300);
    expect(res.data.summary.servicesScored).toBe(300);
    expect(res.data.summary.avgScore).toBeGreaterThan(0);
    expect(res.data.scores.every((s) => s.grade !== null && s.tier !== null)).toBe(true);
    const one = await premium.serviceScores('stripe');
    expect(one.data.score).toBe(88.5);
    expect(one.data.components.uptime).not.toBeNull();
    const past = await premium.scores({ month: '2025-09' });
    expect(past.data.scores).toHaveLength(300);
    const pastOne = await premium.serviceScores('stripe', { month: '2025-09' });
    expect(pastOne.data.feedId).toBe('stripe');
  });

  it('rankings and analytics come back as JSON objects', async () => {
    const r = await premium.rankings();
    expect(r.data).not.toBeNull();
    expect(typeof r.data).toBe('object');
    const past = await premium.rankings({ month: '2025-09' });
    expect(typeof past.data).toBe('object');
    const a = await premium.analytics({ month: '2025-09' });
    expect(typeof a.data).toBe('object');
    expect(a.data).not.toBeNull();
  });
});

describe('error statuses from the simulator', () => {
  it('401 without a key and with an unknown key on premium endpoints', async () => {
    const err = await failure(anon.sla());
    expect(err).toMatchObject({ code: 'upstream_unauthorized', status: 401, retryable: false });
    expect(err.upstreamMessage).toMatch(/API key required/);
    expect(err.rateLimit.limit).toBe(100_000);
    const wrong = createUpstreamClient({ baseUrl: sim.url, apiKey: 'nope' });
    const err2 = await failure(wrong.rankings());
    expect(err2.code).toBe('upstream_unauthorized');
    expect(err2.upstreamMessage).toMatch(/Invalid API key/);
    expect(err2.message).not.toContain('nope');
    await wrong.close();
  });

  it('403 with a key lacking the scope', async () => {
    const k2 = createUpstreamClient({ baseUrl: sim.url, apiKey: 'k2' });
    for (const call of [
      () => k2.sla(),
      () => k2.scores(),
      () => k2.rankings(),
      () => k2.analytics(),
    ]) {
      const err = await failure(call());
      expect(err).toMatchObject({ code: 'upstream_forbidden', status: 403, retryable: false });
    }
    // public endpoints still work with that key
    expect((await k2.incidents()).httpStatus).toBe(200);
    await k2.close();
  });

  it('404 for an unknown feedId', async () => {
    for (const call of [
      () => anon.service('no-such-feed'),
      () => anon.serviceStatus('no-such-feed'),
      () => anon.serviceIncidents('no-such-feed'),
      () => premium.serviceSla('no-such-feed'),
      () => premium.serviceScores('no-such-feed'),
    ]) {
      const err = await failure(call());
      expect(err).toMatchObject({ code: 'upstream_not_found', status: 404 });
      expect(err.upstreamMessage).toContain('no-such-feed');
    }
  });

  it('400 for an invalid month', async () => {
    const err = await failure(premium.sla({ month: '2025-13' }));
    expect(err).toMatchObject({ code: 'upstream_http_error', status: 400, retryable: false });
  });

  it('405 for non-GET (the client only GETs; checked with fetch)', async () => {
    const res = await fetch(`${sim.url}/api/v1/status`, { method: 'POST' });
    expect(res.status).toBe(405);
    const body = (await res.json()) as { success: boolean; error: string };
    expect(body.success).toBe(false);
    expect(body.error).toMatch(/not allowed/);
  });

  it('500 and 503 via failNext, then recovery', async () => {
    sim.failNext({ path: '/api/v1/status', status: 500 });
    const e500 = await failure(anon.status());
    expect(e500).toMatchObject({ code: 'upstream_server_error', status: 500, retryable: true });
    expect(e500.upstreamMessage).toContain('Injected failure');
    sim.failNext({ path: '/api/v1/incidents', status: 503, retryAfter: 9 });
    const e503 = await failure(anon.incidents());
    expect(e503).toMatchObject({ code: 'upstream_unavailable', status: 503, retryable: true });
    expect(e503.retryAfterSeconds).toBe(9);
    expect((await anon.status()).httpStatus).toBe(200);
  });

  it('garbage body via failNext → bad envelope; slow answer → timeout', async () => {
    sim.failNext({ path: '/api/v1/status', status: 200, body: '{"success":true,"data":[{"fe' });
    expect((await failure(anon.status())).code).toBe('upstream_bad_envelope');
    sim.failNext({ path: '/api/v1/status', status: 200, delayMs: 2_000 });
    const fast = createUpstreamClient({ baseUrl: sim.url, timeoutMs: 200 });
    expect((await failure(fast.status())).code).toBe('upstream_timeout');
    await fast.close();
  });

  it('503 while initializing', async () => {
    sim.setInitializing(true);
    try {
      const err = await failure(anon.services());
      expect(err).toMatchObject({ code: 'upstream_unavailable', status: 503, retryable: true });
      expect(err.upstreamMessage).toMatch(/initializing/);
    } finally {
      sim.setInitializing(false);
    }
    expect((await anon.services()).httpStatus).toBe(200);
  });

  it('429 with Retry-After and rate headers over a small limit', async () => {
    let t = START;
    const small = createSimulator({
      services: 20,
      keys: KEYS,
      rateLimit: { public: 2, premium: 3 },
      now: () => t,
    });
    const url = await small.listen();
    const c = createUpstreamClient({ baseUrl: url });
    const k = createUpstreamClient({ baseUrl: url, apiKey: 'k1' });
    try {
      const first = await c.status();
      expect(first.rateLimit).toMatchObject({ limit: 2, remaining: 1 });
      await c.status();
      const err = await failure(c.status());
      expect(err).toMatchObject({ code: 'upstream_rate_limited', status: 429, retryable: true });
      expect(err.retryAfterSeconds).toBeGreaterThan(0);
      expect(err.retryAfterSeconds).toBeLessThanOrEqual(60);
      expect(err.rateLimit).toMatchObject({ limit: 2, remaining: 0 });
      expect(err.rateLimit.reset).toBeGreaterThanOrEqual(START / 1000);
      // the keyed budget is separate and larger
      const keyed = await k.sla();
      expect(keyed.rateLimit).toMatchObject({ limit: 3, remaining: 2 });
      // the next window answers again
      t += 61_000;
      expect((await c.status()).httpStatus).toBe(200);
    } finally {
      await c.close();
      await k.close();
      await small.close();
    }
  });
});
