/**
 * The upstream client against real local HTTP servers serving canned bodies: requests sent,
 * both variants normalized, every error status, broken bodies, big bodies, timeouts, refused
 * connections, and the API key never leaking into an error.
 */
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createUpstreamClient,
  type ResponseInfo,
  type UpstreamClient,
} from '../src/upstream/client.js';
import { UpstreamError } from '../src/upstream/errors.js';
import * as fx from './upstream-fixtures.js';
import {
  RATE_HEADERS,
  freePort,
  startTestUpstream,
  type TestUpstream,
} from './upstream-helpers.js';

const KEY = 'sk_live_TOPSECRET_0123456789';

let up: TestUpstream;
let keyed: UpstreamClient;
let anon: UpstreamClient;

beforeAll(async () => {
  up = await startTestUpstream();
  keyed = createUpstreamClient({ baseUrl: up.baseUrl, apiKey: KEY, timeoutMs: 5_000 });
  anon = createUpstreamClient({ baseUrl: `${up.baseUrl}/`, timeoutMs: 5_000 });
});

afterAll(async () => {
  await keyed.close();
  await anon.close();
  await up.close();
});

afterEach(() => {
  up.routes.clear();
  up.setRaw(null);
  up.requests.length = 0;
});

/** Awaits a call that must fail and returns its UpstreamError. */
async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(UpstreamError);
    return e as UpstreamError;
  }
  throw new Error('expected the call to fail');
}

const RATE = { limit: 120, remaining: 119, reset: 1_700_000_060 };

describe('requests sent', () => {
  const cases: [
    string,
    (c: UpstreamClient) => Promise<unknown>,
    string,
    Record<string, string>,
    unknown,
  ][] = [
    ['services', (c) => c.services(), '/api/v1/services', {}, fx.servicesA],
    [
      'services?category',
      (c) => c.services({ category: 'payments & cards' }),
      '/api/v1/services',
      { category: 'payments & cards' },
      fx.servicesA,
    ],
    [
      'service',
      (c) => c.service('stripe'),
      '/api/v1/services/stripe',
      {},
      { success: true, data: fx.servicesA.data[0] },
    ],
    ['status', (c) => c.status(), '/api/v1/status', {}, fx.statusA],
    [
      'status?include',
      (c) => c.status({ include: 'incidents' }),
      '/api/v1/status',
      { include: 'incidents' },
      fx.statusA,
    ],
    [
      'serviceStatus',
      (c) => c.serviceStatus('stripe'),
      '/api/v1/status/stripe',
      {},
      { success: true, data: fx.statusA.data[0] },
    ],
    [
      'serviceStatus compact+include',
      (c) => c.serviceStatus('stripe', { compact: true, include: 'details' }),
      '/api/v1/status/stripe',
      { compact: '1', include: 'details' },
      { success: true, data: { feedId: 'stripe', displayStatus: 'operational', lastChanged: 1 } },
    ],
    ['incidents', (c) => c.incidents(), '/api/v1/incidents', {}, fx.incidentsA],
    [
      'serviceIncidents',
      (c) => c.serviceIncidents('stripe'),
      '/api/v1/incidents/stripe',
      {},
      fx.incidentsA,
    ],
    ['sla', (c) => c.sla(), '/api/v1/sla', {}, fx.sla],
    ['sla?month', (c) => c.sla({ month: '2025-10' }), '/api/v1/sla', { month: '2025-10' }, fx.sla],
    [
      'serviceSla',
      (c) => c.serviceSla('stripe', { month: '2025-09' }),
      '/api/v1/sla/stripe',
      { month: '2025-09' },
      { success: true, data: fx.sla.data.services[0] },
    ],
    [
      'scores',
      (c) => c.scores({ month: '2025-10' }),
      '/api/v1/scores',
      { month: '2025-10' },
      fx.scores,
    ],
    [
      'serviceScores',
      (c) => c.serviceScores('stripe'),
      '/api/v1/scores/stripe',
      {},
      { success: true, data: fx.scores.data.scores[0] },
    ],
    [
      'rankings',
      (c) => c.rankings({ month: '2025-10' }),
      '/api/v1/rankings',
      { month: '2025-10' },
      fx.rankings,
    ],
    ['analytics', (c) => c.analytics(), '/api/v1/analytics', {}, fx.analytics],
  ];

  it.each(cases)('%s with key: path, query, headers', async (_name, call, path, query, body) => {
    up.routes.set(path, { json: body });
    const res = (await call(keyed)) as { httpStatus: number; rateLimit: unknown };
    expect(res.httpStatus).toBe(200);
    expect(res.rateLimit).toEqual(RATE);
    expect(up.requests).toHaveLength(1);
    const r = up.requests[0]!;
    expect(r.method).toBe('GET');
    expect(r.rawPath).toBe(path);
    expect(r.query).toEqual(query);
    expect(r.headers['x-api-key']).toBe(KEY);
    expect(r.headers.accept).toBe('application/json');
    expect(r.headers['user-agent']).toBe('statuswatch');
  });

  it.each(cases)('%s without key: no X-API-Key header', async (_name, call, path, query, body) => {
    up.routes.set(path, { json: body });
    await call(anon);
    const r = up.requests[0]!;
    expect(r.rawPath).toBe(path);
    expect(r.query).toEqual(query);
    expect(r.headers).not.toHaveProperty('x-api-key');
  });

  it('hasPremium follows the key; an empty key counts as none', async () => {
    expect(keyed.hasPremium).toBe(true);
    expect(anon.hasPremium).toBe(false);
    const blank = createUpstreamClient({ baseUrl: up.baseUrl, apiKey: '  ' });
    expect(blank.hasPremium).toBe(false);
    up.routes.set('/api/v1/status', { json: fx.statusB });
    await blank.status();
    expect(up.requests[0]!.headers).not.toHaveProperty('x-api-key');
    await blank.close();
  });

  it('URL-encodes feedIds and query values', async () => {
    up.routes.set('/api/v1/sla/a%20b%2Fc%3Fd%23e', {
      json: { success: true, data: fx.sla.data.services[0] },
    });
    await keyed.serviceSla('a b/c?d#e', { month: '2025-10&admin=1' });
    expect(up.requests[0]!.rawPath).toBe('/api/v1/sla/a%20b%2Fc%3Fd%23e');
    expect(up.requests[0]!.query).toEqual({ month: '2025-10&admin=1' });
  });

  it('rejects feedIds that would change the path, without a request', async () => {
    for (const bad of ['', '.', '..']) {
      const err = await failure(keyed.service(bad));
      expect(err.code).toBe('upstream_invalid_request');
      expect(err.retryable).toBe(false);
    }
    expect(up.requests).toHaveLength(0);
  });

  it('keeps a base path of baseUrl', async () => {
    const c = createUpstreamClient({ baseUrl: `${up.baseUrl}/proxy/` });
    up.routes.set('/proxy/api/v1/incidents', { json: fx.incidentsB });
    const res = await c.incidents();
    expect(res.data.incidents).toHaveLength(2);
    expect(up.requests[0]!.rawPath).toBe('/proxy/api/v1/incidents');
    await c.close();
  });

  it('does not follow redirects, so the key cannot travel to another origin', async () => {
    const other = await startTestUpstream();
    try {
      up.routes.set('/api/v1/sla', {
        status: 302,
        headers: { location: `${other.baseUrl}/api/v1/sla` },
        json: { success: false, error: 'moved' },
      });
      const err = await failure(keyed.sla());
      expect(err.code).toBe('upstream_http_error');
      expect(err.status).toBe(302);
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('rejects a non-http baseUrl', () => {
    expect(() => createUpstreamClient({ baseUrl: 'ftp://example.com' })).toThrow(/http\(s\)/);
    expect(() => createUpstreamClient({ baseUrl: 'not a url' })).toThrow(/not a URL/);
  });
});

describe('normalized results over HTTP', () => {
  it('services, both variants', async () => {
    up.routes.set('/api/v1/services', { json: fx.servicesA });
    expect(await anon.services()).toEqual({
      data: fx.servicesAExpected,
      rateLimit: RATE,
      httpStatus: 200,
      skipped: 0,
    });
    up.routes.set('/api/v1/services', { json: fx.servicesB });
    expect((await anon.services()).data).toEqual(fx.servicesBExpected);
  });

  it('status, both variants', async () => {
    up.routes.set('/api/v1/status', { json: fx.statusA });
    expect((await anon.status()).data).toEqual(fx.statusAExpected);
    up.routes.set('/api/v1/status', { json: fx.statusB });
    expect((await anon.status()).data).toEqual(fx.statusBExpected);
  });

  it('incidents, both variants, and the unverified empty list', async () => {
    up.routes.set('/api/v1/incidents', { json: fx.incidentsA });
    expect((await anon.incidents()).data).toEqual(fx.incidentsAExpected);
    up.routes.set('/api/v1/incidents', { json: fx.incidentsB });
    expect((await anon.incidents()).data).toEqual(fx.incidentsBExpected);
    up.routes.set('/api/v1/incidents', { json: fx.incidentsAUnverified });
    const res = await anon.incidents();
    expect(res.data.variant).toBe('A');
    expect(res.data.verificationState).toBe('unverified');
    expect(res.data.incidents).toEqual([]);
  });

  it('single-service paths', async () => {
    up.routes.set('/api/v1/services/stripe', {
      json: { success: true, data: fx.servicesA.data[0] },
    });
    expect((await anon.service('stripe')).data).toEqual(fx.servicesAExpected.services[0]);
    up.routes.set('/api/v1/status/github', { json: { success: true, data: fx.statusB.data[1] } });
    expect((await anon.serviceStatus('github')).data).toEqual(fx.statusBExpected.services[1]);
    up.routes.set('/api/v1/status/github', {
      json: { success: true, data: { feedId: 'github', status: 'down', lastCheck: 5 } },
    });
    expect((await anon.serviceStatus('github', { compact: true })).data).toMatchObject({
      feedId: 'github',
      variant: 'B',
      status: 'major_outage',
      lastCheck: 5,
    });
    up.routes.set('/api/v1/scores/acme', {
      json: { success: true, data: fx.scores.data.scores[1] },
    });
    expect((await keyed.serviceScores('acme')).data).toEqual(fx.scoresExpected.scores[1]);
    up.routes.set('/api/v1/sla/zoom', { json: { success: true, data: fx.sla.data.services[2] } });
    expect((await keyed.serviceSla('zoom')).data).toEqual(fx.slaExpected.services[2]);
  });

  it('sla, scores, rankings, analytics', async () => {
    up.routes.set('/api/v1/sla', { json: fx.sla });
    expect((await keyed.sla()).data).toEqual(fx.slaExpected);
    up.routes.set('/api/v1/scores', { json: fx.scores });
    expect((await keyed.scores()).data).toEqual(fx.scoresExpected);
    up.routes.set('/api/v1/rankings', { json: fx.rankings });
    expect((await keyed.rankings()).data).toEqual(fx.rankings.data);
    up.routes.set('/api/v1/analytics', { json: fx.analytics });
    expect((await keyed.analytics()).data).toEqual(fx.analytics.data);
  });

  it('a list with broken rows among good ones: good rows kept, broken counted', async () => {
    up.routes.set('/api/v1/status', {
      json: {
        ...fx.statusB,
        data: [
          fx.statusB.data[0],
          null,
          { feedId: 12, status: 'up' },
          fx.statusB.data[1],
          'garbage',
          { status: 'down' },
          fx.statusB.data[2],
        ],
      },
    });
    const res = await anon.status();
    expect(res.skipped).toBe(4);
    expect(res.data.services.map((s) => s.feedId)).toEqual(['stripe', 'github', 'slack']);
    expect(res.data.services[1]).toEqual(fx.statusBExpected.services[1]);

    up.routes.set('/api/v1/incidents', {
      json: {
        ...fx.incidentsA,
        data: [...fx.incidentsA.data, { feedId: 'x', title: 'no id', started: 1 }, { id: 'q' }],
      },
    });
    const inc = await anon.incidents();
    expect(inc.skipped).toBe(2);
    expect(inc.data.incidents).toEqual(fx.incidentsAExpected.incidents);
  });

  it('a repeated list: rows byte-identical to the last response are taken from the row memo, same model, words and skips', async () => {
    const client = createUpstreamClient({ baseUrl: up.baseUrl, timeoutMs: 5_000 });
    try {
      const broken = [{ feedId: 'x', title: 'no id', started: 1 }, { id: 'q' }];
      up.routes.set('/api/v1/incidents', {
        json: { ...fx.incidentsA, data: [...fx.incidentsA.data, ...broken] },
      });
      const first = await client.incidents();
      const again = await client.incidents();
      expect(again.data).toEqual(first.data);
      expect(again.skipped).toBe(2);
      expect([...(again.words?.entries() ?? [])]).toEqual([...(first.words?.entries() ?? [])]);
      again.data.incidents.forEach((inc, i) => {
        expect(inc).toBe(first.data.incidents[i]);
      });

      // One incident changes: it alone is read anew.
      const [head, ...rest] = fx.incidentsA.data;
      up.routes.set('/api/v1/incidents', {
        json: { ...fx.incidentsA, data: [{ ...head, title: 'Changed title' }, ...rest] },
      });
      const changed = await client.incidents();
      expect(changed.data.incidents[0]?.title).toBe('Changed title');
      expect(changed.data.incidents[0]).not.toBe(first.data.incidents[0]);
      expect(changed.data.incidents.slice(1)).toEqual(first.data.incidents.slice(1));
      changed.data.incidents.slice(1).forEach((inc, i) => {
        expect(inc).toBe(first.data.incidents[i + 1]);
      });

      up.routes.set('/api/v1/status', { json: fx.statusA });
      const status = await client.status();
      expect((await client.status()).data).toEqual(status.data);
      expect(status.data).toEqual(fx.statusAExpected);
    } finally {
      await client.close();
    }
  });

  it('a BOM and a missing content-type are tolerated', async () => {
    up.routes.set('/api/v1/services', {
      raw: `\uFEFF${JSON.stringify(fx.servicesB)}`,
      headers: { 'content-type': 'text/plain' },
    });
    expect((await anon.services()).data).toEqual(fx.servicesBExpected);
  });

  it('parses a 20,000-service response', async () => {
    const big = JSON.stringify(fx.manyServices(20_000));
    expect(big.length).toBeGreaterThan(5_000_000);
    up.routes.set('/api/v1/services', { raw: big });
    const res = await anon.services();
    expect(res.skipped).toBe(0);
    expect(res.data.total).toBe(20_000);
    expect(res.data.services).toHaveLength(20_000);
    expect(res.data.services[19_999]).toMatchObject({
      feedId: 'svc-19999',
      sourceKind: 'official',
      officialStatusUrl: 'https://status.svc-19999.example.com',
    });
    expect(res.data.services[0]).toMatchObject({ feedId: 'svc-0', sourceKind: 'reachability' });
  });
});

describe('HTTP error statuses', () => {
  it.each([
    [400, 'upstream_http_error', false, 'Invalid month: 2025-13'],
    [401, 'upstream_unauthorized', false, 'API key required'],
    [403, 'upstream_forbidden', false, 'API key lacks scope sla:read'],
    [404, 'upstream_not_found', false, 'Unknown feedId'],
    [405, 'upstream_method_not_allowed', false, 'Method not allowed'],
    [429, 'upstream_rate_limited', true, 'Rate limit exceeded'],
    [500, 'upstream_server_error', true, 'Internal server error'],
    [502, 'upstream_server_error', true, 'Bad gateway'],
    [503, 'upstream_unavailable', true, 'Service initializing'],
  ] as const)('%d → %s', async (status, code, retryable, text) => {
    up.routes.set('/api/v1/sla', {
      status,
      json: { success: false, error: text },
      headers: status === 429 ? { 'retry-after': '17', 'x-ratelimit-remaining': '0' } : {},
    });
    const err = await failure(keyed.sla({ month: '2025-13' }));
    expect(err.code).toBe(code);
    expect(err.status).toBe(status);
    expect(err.retryable).toBe(retryable);
    expect(err.endpoint).toBe('/api/v1/sla');
    expect(err.route).toBe('/api/v1/sla');
    expect(err.upstreamMessage).toBe(text);
    expect(err.message).toContain(text);
    expect(err.message).toContain(code);
    expect(err.rateLimit).toEqual(status === 429 ? { ...RATE, remaining: 0 } : RATE);
    expect(err.retryAfterSeconds).toBe(status === 429 ? 17 : null);
  });

  it('Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    up.routes.set('/api/v1/status', {
      status: 429,
      headers: { 'retry-after': at },
      json: { success: false, error: 'slow down' },
    });
    const err = await failure(anon.status());
    expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(28);
    expect(err.retryAfterSeconds).toBeLessThanOrEqual(31);
  });

  it('429 without Retry-After → null; missing rate headers → nulls', async () => {
    up.setRaw((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end('{"success":false,"error":"too many"}');
      return true;
    });
    const err = await failure(anon.status());
    expect(err.code).toBe('upstream_rate_limited');
    expect(err.retryAfterSeconds).toBeNull();
    expect(err.rateLimit).toEqual({ limit: null, remaining: null, reset: null });
  });

  it('long upstream error text is truncated to 200 characters, control characters removed', async () => {
    up.routes.set('/api/v1/status', {
      status: 500,
      json: { success: false, error: `line1\r\nline2 ${'y'.repeat(500)}` },
    });
    const err = await failure(anon.status());
    expect(err.upstreamMessage).toHaveLength(201);
    expect(err.upstreamMessage!.startsWith('line1 line2 yyy')).toBe(true);
    expect(err.message).not.toMatch(/[\r\n]/);
  });

  it('a non-JSON error body (proxy page) is quoted, a 502 stays retryable', async () => {
    up.routes.set('/api/v1/status', { status: 502, raw: '<html>Bad Gateway</html>' });
    const err = await failure(anon.status());
    expect(err.code).toBe('upstream_server_error');
    expect(err.upstreamMessage).toBe('<html>Bad Gateway</html>');
  });
});

describe('bad envelopes', () => {
  it.each([
    ['truncated JSON', '{"success":true,"data":[{"feedId":"stripe","status":"u', 'not valid JSON'],
    ['HTML', '<!doctype html><p>hi</p>', 'not valid JSON'],
    ['empty body', '', 'empty body'],
    ['wrong type of success', '{"success":"yes","data":[]}', 'not a response envelope'],
    [
      'missing envelope (bare array)',
      '[{"feedId":"stripe","status":"up"}]',
      'not a response envelope',
    ],
    ['missing success', '{"data":[]}', 'not a response envelope'],
    ['success without data', '{"success":true}', 'envelope has no data'],
    ['data of the wrong type', '{"success":true,"data":{"feedId":"x"}}', 'data is not an array'],
    ['success:false on 200', '{"success":false,"error":"Data not ready"}', 'success:false'],
  ])('%s → upstream_bad_envelope', async (_name, raw, detail) => {
    up.routes.set('/api/v1/status', { raw });
    const err = await failure(anon.status());
    expect(err.code).toBe('upstream_bad_envelope');
    expect(err.status).toBe(200);
    expect(err.retryable).toBe(false);
    expect(err.rateLimit).toEqual(RATE);
    expect(err.message).toContain(detail);
  });

  it('success:false on 200 quotes the upstream error', async () => {
    up.routes.set('/api/v1/incidents', { json: { success: false, error: 'Data not ready' } });
    const err = await failure(anon.incidents());
    expect(err.upstreamMessage).toBe('Data not ready');
  });

  it('a malformed single record is a bad envelope', async () => {
    up.routes.set('/api/v1/scores/x', {
      json: { success: true, data: { feedId: 'x', score: 'A' } },
    });
    const err = await failure(keyed.serviceScores('x'));
    expect(err.code).toBe('upstream_bad_envelope');
    expect(err.message).toContain('score');
  });

  it('SLA data without a services list is a bad envelope', async () => {
    up.routes.set('/api/v1/sla', { json: { success: true, data: { summary: {} } } });
    expect((await failure(keyed.sla())).code).toBe('upstream_bad_envelope');
  });
});

describe('transport failures', () => {
  it('a server that never answers → upstream_timeout within timeoutMs', async () => {
    up.setRaw(() => true);
    const c = createUpstreamClient({ baseUrl: up.baseUrl, timeoutMs: 300 });
    const t0 = performance.now();
    const err = await failure(c.status());
    const elapsed = performance.now() - t0;
    expect(err.code).toBe('upstream_timeout');
    expect(err.retryable).toBe(true);
    expect(err.status).toBeNull();
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(300 + 700);
    await c.close();
  });

  it('a body that stalls → upstream_timeout with the status known', async () => {
    up.setRaw((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...RATE_HEADERS });
      res.write('{"success":true,"data":[');
      return true;
    });
    const c = createUpstreamClient({ baseUrl: up.baseUrl, timeoutMs: 300 });
    const t0 = performance.now();
    const err = await failure(c.status());
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(err.code).toBe('upstream_timeout');
    expect(err.status).toBe(200);
    expect(err.rateLimit).toEqual(RATE);
    await c.close();
  });

  it('connection refused → upstream_network', async () => {
    const port = await freePort();
    const c = createUpstreamClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY });
    const err = await failure(c.sla());
    expect(err.code).toBe('upstream_network');
    expect(err.retryable).toBe(true);
    expect(err.status).toBeNull();
    expect(err.message).toContain('ECONNREFUSED');
    await c.close();
  });

  it('connection reset mid-response → upstream_network', async () => {
    up.setRaw((req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"success":true,');
      setImmediate(() => req.socket.destroy());
      return true;
    });
    const err = await failure(anon.status());
    expect(err.code).toBe('upstream_network');
    expect(err.status).toBe(200);
  });

  it('bodies over the cap → upstream_body_too_large (declared and streamed)', async () => {
    const c = createUpstreamClient({ baseUrl: up.baseUrl, maxBodyBytes: 1024 });
    up.routes.set('/api/v1/services', { json: fx.manyServices(20) });
    const declared = await failure(c.services());
    expect(declared.code).toBe('upstream_body_too_large');
    expect(declared.status).toBe(200);

    up.setRaw((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"success":true,"data":[${'1,'.repeat(600)}`);
      res.write('1,'.repeat(600));
      return true;
    });
    const streamed = await failure(c.services());
    expect(streamed.code).toBe('upstream_body_too_large');
    await c.close();
  });

  it('the default cap is 64 MiB', async () => {
    up.setRaw((_req, res) => {
      res.writeHead(200, { 'content-length': String(64 * 1024 * 1024 + 1) });
      res.write('{');
      return true;
    });
    const err = await failure(anon.services());
    expect(err.code).toBe('upstream_body_too_large');
    expect(err.message).toContain(String(64 * 1024 * 1024));
  });
});

describe('onResponse hook', () => {
  it('reports endpoint, route, status, duration and rate limit of each response', async () => {
    const seen: ResponseInfo[] = [];
    const c = createUpstreamClient({
      baseUrl: up.baseUrl,
      onResponse: (i) => {
        seen.push(i);
        throw new Error('hook failures are ignored');
      },
    });
    up.routes.set('/api/v1/status/stripe', { json: { success: true, data: fx.statusB.data[0] } });
    up.routes.set('/api/v1/sla', { status: 401, json: { success: false, error: 'no key' } });
    await c.serviceStatus('stripe');
    await failure(c.sla());
    expect(seen.map((s) => [s.endpoint, s.route, s.status])).toEqual([
      ['/api/v1/status/stripe', '/api/v1/status/{feedId}', 200],
      ['/api/v1/sla', '/api/v1/sla', 401],
    ]);
    expect(seen[0]!.rateLimit).toEqual(RATE);
    expect(seen[0]!.durationMs).toBeGreaterThan(0);
    await c.close();
  });
});

describe('the API key never leaks', () => {
  function expectNoKey(err: UpstreamError): void {
    const views = [
      err.message,
      err.stack ?? '',
      String(err),
      JSON.stringify(err),
      inspect(err, { depth: 10 }),
      err.cause instanceof Error ? `${err.cause.message}\n${err.cause.stack ?? ''}` : '',
    ];
    for (const v of views) expect(v).not.toContain(KEY);
  }

  it('not when the upstream echoes it in errors, bodies or broken JSON', async () => {
    const echo = (r: { headers: Record<string, string | string[] | undefined> }) =>
      String(r.headers['x-api-key']);
    up.routes.set('/api/v1/sla', (r) => ({
      status: 401,
      json: { success: false, error: `Invalid API key ${echo(r)}` },
    }));
    up.routes.set('/api/v1/scores', (r) => ({ status: 500, raw: `crash for key=${echo(r)}` }));
    up.routes.set('/api/v1/rankings', (r) => ({ raw: `{"success":true,"data":${echo(r)}}` }));
    up.routes.set('/api/v1/analytics', (r) => ({
      json: { success: false, error: `key ${echo(r)} suspended` },
    }));
    up.routes.set('/api/v1/sla/x', (r) => ({
      json: { success: true, data: { feedId: echo(r), score: 'x' } },
    }));

    const errors = [
      await failure(keyed.sla()),
      await failure(keyed.scores()),
      await failure(keyed.rankings()),
      await failure(keyed.analytics()),
      await failure(keyed.serviceSla('x')),
    ];
    expect(errors.map((e) => e.code)).toEqual([
      'upstream_unauthorized',
      'upstream_server_error',
      'upstream_bad_envelope',
      'upstream_bad_envelope',
      'upstream_bad_envelope',
    ]);
    // The echo really happened: the redaction marker is where the key was.
    expect(errors[0]!.upstreamMessage).toBe('Invalid API key [REDACTED]');
    expect(errors[1]!.message).toContain('key=[REDACTED]');
    for (const e of errors) expectNoKey(e);
  });

  it('not through the JSON parser message of a body that echoes a short key', async () => {
    const shortKey = 'k9x2';
    const c = createUpstreamClient({ baseUrl: up.baseUrl, apiKey: shortKey });
    up.routes.set('/api/v1/rankings', (r) => ({
      raw: `{"d":${String(r.headers['x-api-key'])}}`,
    }));
    const err = await failure(c.rankings());
    expect(err.code).toBe('upstream_bad_envelope');
    expect(err.cause).toBeInstanceOf(Error);
    expect((err.cause as Error).message).toContain('[REDACTED]');
    for (const v of [
      err.message,
      err.stack ?? '',
      JSON.stringify(err),
      inspect(err, { depth: 10 }),
    ]) {
      expect(v).not.toContain(shortKey);
    }
    await c.close();
  });

  it('not in transport errors', async () => {
    up.setRaw(() => true);
    const slow = createUpstreamClient({ baseUrl: up.baseUrl, apiKey: KEY, timeoutMs: 200 });
    expectNoKey(await failure(slow.sla()));
    await slow.close();
    const port = await freePort();
    const refused = createUpstreamClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY });
    expectNoKey(await failure(refused.sla()));
    await refused.close();
  });
});
