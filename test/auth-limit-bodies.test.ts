/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * The failed-attempt limit under parallel requests, and bounded request bodies, against a real
 * daemon process (`node dist/cli.js run`, real Redis under a prefix of its own, the simulator):
 * - 200 wrong tokens sent at once, each on its own connection, to `/api/v1`, `/admin/*`, the
 *   console's bearer header and the console login: at most the limit (10) are checked (401), the
 *   rest refused unchecked (429 with Retry-After);
 * - a right token is never counted, and a burst of right tokens from one address all pass;
 * - the daemon's own outbound requests (a channel pointed at its ops server) never count;
 * - a body nested 10,000 levels deep is a 400 on every surface (never a 500, nothing in the log
 *   about the stack), an oversized one a 413.
 * Each block sends from its own loopback address (127.0.0.x), so their counts stay apart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { freePort } from '../src/net.js';
import { AUTH_FAILURE_LIMIT } from '../src/api/tokens.js';
import { killAll, startDaemon, writeConfig, type Daemon } from './helpers/process.js';
import {
  ADMIN_TOKEN,
  baseConfig,
  client,
  webhookSecret,
  world,
  type World,
} from './api-helpers.js';

const WRONG = 'swt_0123456789abcdef_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const DEEP = 10_000;

let w: World;
let d: Daemon;
let port = 0;

beforeAll(async () => {
  w = await world('auth-lim');
  port = await freePort();
  const file = await writeConfig(
    w.dir,
    baseConfig(w, {
      server: { port, host: '127.0.0.1', adminToken: ADMIN_TOKEN },
      channels: {
        // Pointed at the daemon's own admin API with a wrong token.
        'self-admin': {
          type: 'webhook',
          url: `http://127.0.0.1:${String(port)}/admin/silences`,
          secret: webhookSecret('self'),
          headers: { Authorization: `Bearer ${WRONG}` },
        },
      },
    }),
  );
  d = await startDaemon(file);
}, 60_000);

afterAll(async () => {
  await killAll();
  for (const c of w.cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Sent {
  status: number;
  retryAfter: string | undefined;
  text: string;
}

/** `count` requests at once from `localAddress`, each on a connection of its own. */
async function burst(
  localAddress: string,
  count: number,
  make: (i: number) => {
    path: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  },
): Promise<Sent[]> {
  const agent = new Agent({ connections: count, pipelining: 0, localAddress });
  try {
    return await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const r = make(i);
        const res = await request(`${d.url}${r.path}`, {
          dispatcher: agent,
          method: (r.method ?? 'GET') as 'GET',
          headers: { ...r.headers, connection: 'close' },
          ...(r.body === undefined ? {} : { body: r.body }),
        });
        const text = await res.body.text();
        const retry = res.headers['retry-after'];
        return {
          status: res.statusCode,
          retryAfter: Array.isArray(retry) ? retry[0] : retry,
          text,
        };
      }),
    );
  } finally {
    await agent.close();
  }
}

function tally(sent: Sent[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of sent) out[s.status] = (out[s.status] ?? 0) + 1;
  return out;
}

/** At most the limit checked (401), every other one refused unchecked (429, Retry-After). */
function expectLimited(sent: Sent[]): void {
  const counts = tally(sent);
  expect(Object.keys(counts).sort(), JSON.stringify(counts)).toEqual(['401', '429']);
  expect(counts[401]).toBeLessThanOrEqual(AUTH_FAILURE_LIMIT);
  expect(counts[401]).toBeGreaterThan(0);
  expect(counts[429]).toBe(sent.length - (counts[401] ?? 0));
  for (const s of sent.filter((x) => x.status === 429))
    expect(Number(s.retryAfter)).toBeGreaterThan(0);
}

/** A 10,000-deep JSON value as text. */
const deepJson = (inner = '1'): string => '['.repeat(DEEP) + inner + ']'.repeat(DEEP);

describe('failed-attempt limit under parallel requests', () => {
  it('200 wrong bearer tokens at once to /api/v1: at most 10 checked, the rest 429', async () => {
    const sent = await burst('127.0.0.41', 200, () => ({
      path: '/api/v1/subscriptions',
      headers: { authorization: `Bearer ${WRONG}` },
    }));
    expectLimited(sent);
    // Past the limit even the right token is refused.
    expect((await client(d.url, ADMIN_TOKEN, '127.0.0.41')('GET', '/api/v1/channels')).status).toBe(
      429,
    );
  });

  it('200 wrong bearer tokens at once to /admin/silences: at most 10 checked, the rest 429', async () => {
    const sent = await burst('127.0.0.42', 200, () => ({
      path: '/admin/silences',
      headers: { authorization: `Bearer ${WRONG}` },
    }));
    expectLimited(sent);
    expect((await client(d.url, ADMIN_TOKEN, '127.0.0.42')('GET', '/admin/silences')).status).toBe(
      429,
    );
  });

  it('200 wrong tokens at once to the console login: at most 10 checked, the rest 429', async () => {
    const page = await request(`${d.url}/login`, {
      dispatcher: new Agent({ localAddress: '127.0.0.43' }),
    });
    const html = await page.body.text();
    const setCookie = page.headers['set-cookie'];
    const cookie = (Array.isArray(setCookie) ? (setCookie[0] ?? '') : (setCookie ?? '')).split(
      ';',
    )[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    expect(csrf).not.toBe('');
    const form = (token: string): string =>
      new URLSearchParams({ csrf, token, next: '/' }).toString();
    const sent = await burst('127.0.0.43', 200, () => ({
      path: '/login',
      method: 'POST',
      headers: {
        cookie: cookie ?? '',
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form(WRONG),
    }));
    expectLimited(sent);
    const right = await burst('127.0.0.43', 1, () => ({
      path: '/login',
      method: 'POST',
      headers: {
        cookie: cookie ?? '',
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form(ADMIN_TOKEN),
    }));
    expect(right[0]?.status).toBe(429);
  });

  it('200 wrong bearer tokens at once to the console: at most 10 checked, the rest 429 with Retry-After', async () => {
    const sent = await burst('127.0.0.47', 200, () => ({
      path: '/channels',
      headers: { authorization: `Bearer ${WRONG}`, accept: 'application/json' },
    }));
    expectLimited(sent);
    for (const s of sent.filter((x) => x.status === 429))
      expect(JSON.parse(s.text)).toMatchObject({ error: { code: 'rate_limited' } });
    // Past the limit the right token is refused unchecked too, on a page as in JSON.
    const [page] = await burst('127.0.0.47', 1, () => ({
      path: '/channels',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, accept: 'text/html' },
    }));
    expect(page?.status).toBe(429);
    expect(Number(page?.retryAfter)).toBeGreaterThan(0);
  });

  it('a right token after failures still works and is never counted', async () => {
    const from = '127.0.0.44';
    const wrong = client(d.url, WRONG, from);
    const right = client(d.url, ADMIN_TOKEN, from);
    for (let i = 0; i < AUTH_FAILURE_LIMIT - 1; i += 1)
      expect((await wrong('GET', '/api/v1/subscriptions')).status).toBe(401);
    // Nine failures: the right token passes, on both surfaces, and takes no slot.
    expect((await right('GET', '/api/v1/subscriptions')).status).toBe(200);
    expect((await right('GET', '/admin/silences')).status).toBe(200);
    expect((await wrong('GET', '/admin/silences')).status).toBe(401);
    const refused = await wrong('GET', '/api/v1/subscriptions');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect((await right('GET', '/api/v1/subscriptions')).status).toBe(429);
  });

  it('100 right tokens at once from one address all pass (they wait for a slot, never counted)', async () => {
    const sent = await burst('127.0.0.45', 100, () => ({
      path: '/api/v1/subscriptions',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }));
    expect(tally(sent)).toEqual({ 200: 100 });
    // Nothing was counted: ten wrong tokens are still checked.
    const wrong = client(d.url, WRONG, '127.0.0.45');
    for (let i = 0; i < AUTH_FAILURE_LIMIT; i += 1)
      expect((await wrong('GET', '/api/v1/subscriptions')).status).toBe(401);
    expect((await wrong('GET', '/api/v1/subscriptions')).status).toBe(429);
  });

  it("the daemon's own requests to its ops server (a channel pointed there) never count", async () => {
    const admin = client(d.url, ADMIN_TOKEN);
    for (let i = 0; i < AUTH_FAILURE_LIMIT + 2; i += 1) {
      const tested = await admin('POST', '/api/v1/channels/self-admin/test');
      expect(tested.status, tested.text).toBe(200);
      expect(tested.body.ok).toBe(false);
      // Refused as the daemon's own request (403), not checked as a token (401).
      expect(tested.body.message).toMatch(/\b403\b/);
    }
    // The real admin on loopback is not locked out, and no failure was counted there: ten
    // wrong tokens from 127.0.0.1 are still checked.
    expect((await admin('GET', '/admin/silences')).status).toBe(200);
    const wrong = client(d.url, WRONG);
    for (let i = 0; i < AUTH_FAILURE_LIMIT; i += 1)
      expect((await wrong('GET', '/admin/silences')).status).toBe(401);
    expect((await wrong('GET', '/admin/silences')).status).toBe(429);
  });
});

describe('request bodies are bounded before anything walks them', () => {
  const from = '127.0.0.46';

  it('a body nested 10,000 levels deep is a 400 on the API, the admin API and the console', async () => {
    const api = client(d.url, ADMIN_TOKEN, from);
    const channel = await api.raw('PUT', '/api/v1/channels/deep', deepJson());
    expect(channel.status, channel.text).toBe(400);
    expect(channel.body.error.code).toBe('invalid_json');
    expect(channel.body.error.message).toContain('JSON nested deeper than 64 levels');
    const wrapped = await api.raw(
      'POST',
      '/api/v1/channels',
      `{"name":"deep","type":"webhook","url":"http://127.0.0.1:9/","x":${deepJson()}}`,
    );
    expect(wrapped.status, wrapped.text).toBe(400);

    const silence = await api.raw('POST', '/admin/silences', deepJson());
    expect(silence.status, silence.text).toBe(400);
    expect(silence.body).toEqual({
      error: {
        code: 'invalid_json',
        message: '(root): JSON nested deeper than 64 levels',
        field: '(root)',
      },
    });
    const apiSilence = await api.raw('POST', '/api/v1/silences', deepJson());
    expect(apiSilence.status, apiSilence.text).toBe(400);
    expect(apiSilence.body).toEqual(silence.body);

    // The console: a JSON body, and a form whose channel fields are such JSON.
    const consoleJson = await api.raw('POST', '/channels', `{"fields":${deepJson()}}`, {
      accept: 'application/json',
    });
    expect(consoleJson.status, consoleJson.text).toBe(400);
    expect(consoleJson.body.error.code).toBe('invalid_json');
    expect(consoleJson.body.error.message).toContain('JSON nested deeper than 64 levels');
    const consoleForm = await api.raw(
      'POST',
      '/channels',
      new URLSearchParams({
        mode: 'create',
        name: 'deep',
        type: 'webhook',
        fields: `{"url":${deepJson('"http://127.0.0.1:9/"')}}`,
      }).toString(),
      { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
    );
    expect(consoleForm.status, consoleForm.text).toBe(400);
    expect(consoleForm.body.error.message).toContain('nested deeper than 64 levels');

    // Nothing was stored, nothing failed inside.
    expect((await api('GET', '/api/v1/channels/deep')).status).toBe(404);
    expect(d.proc.output()).not.toContain('Maximum call stack');
    expect(d.proc.output()).not.toMatch(/"event":"(api|console|ops):error"/);
  });

  it('an oversized body is a 413 on each surface', async () => {
    const api = client(d.url, ADMIN_TOKEN, from);
    const big = (bytes: number): string => JSON.stringify({ pad: 'x'.repeat(bytes) });
    const channel = await api.raw('PUT', '/api/v1/channels/big', big(2 * 1024 * 1024));
    expect(channel.status).toBe(413);
    expect(channel.body.error.code).toBe('too_large');
    // `/admin/silences` is the API's route under another name: the API's 1 MB.
    const silence = await api.raw('POST', '/admin/silences', big(2 * 1024 * 1024));
    expect(silence.status).toBe(413);
    expect(silence.body.error).toMatchObject({
      code: 'too_large',
      message: 'body larger than 1048576 bytes',
    });
    const form = await api.raw('POST', '/channels', big(100 * 1024), {
      accept: 'application/json',
    });
    expect(form.status).toBe(413);
    expect(form.body.error).toMatchObject({
      code: 'too_large',
      message: 'body larger than 65536 bytes',
    });
  });
});
