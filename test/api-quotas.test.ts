/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * Per-team quotas and paged lists of `/api/v1`, in-process on real Redis and real HTTP on
 * 127.0.0.1: each quota reached is a 409 `quota_exceeded` naming its config key and nothing more
 * is stored (counted in Redis); creates racing at the edge (two replicas) store exactly what is
 * left; the size quotas; another team and admins are not held back; every page of a list
 * returns each item exactly once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newKey } from '../src/api/crypto.js';
import { DEFAULT_QUOTAS, type QuotasConfig } from '../src/api/quota-config.js';
import { countedObjects, readQuotaState, readSnapshot } from '../src/api/store.js';
import { usageOf } from '../src/api/quotas.js';
import { startApi, type ApiDaemon } from './helpers/api-daemon.js';
import { testRedis, type TestRedis } from './helpers/redis.js';
import { client, type Client } from './api-helpers.js';

const ADMIN = 'adm_quota_ADMINTOKEN_0123456789abcdef';
const env = { STATUSWATCH_SECRET_KEY: newKey() };

let tr: TestRedis | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await tr?.cleanup();
  tr = undefined;
});

async function replica(quotas: Partial<QuotasConfig>): Promise<ApiDaemon> {
  tr ??= await testRedis('quota');
  const r = await startApi(tr, {
    env,
    config: () => ({
      channels: {},
      subscriptions: [],
      adminToken: ADMIN,
      quotas: { ...DEFAULT_QUOTAS, ...quotas },
    }),
  });
  cleanups.push(() => r.close());
  return r;
}

async function tokenFor(admin: Client, team: string): Promise<string> {
  const res = await admin('POST', '/api/v1/tokens', { team });
  expect(res.status, res.text).toBe(201);
  return res.body.token as string;
}

/** The team's usage as stored in Redis (read through the store's own readers). */
async function usage(team: string) {
  if (tr === undefined) throw new Error('no redis');
  const r = await replica({});
  const now = Date.now();
  const snap = await readSnapshot(tr.redis, r.api.store.k);
  const q = await readQuotaState(tr.redis, r.api.store.k, now);
  return usageOf(countedObjects(snap, q, now), team).usage;
}

const hook = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'webhook',
  url: `https://hooks.example/${name}`,
  secret: `whsec_${Buffer.from('0123456789abcdef0123').toString('base64')}`,
  ...extra,
});

const sub = (name: string, channels: string[] = ['pc']) => ({
  name,
  services: ['stripe'],
  channels,
});

describe('team quotas', () => {
  it('channels: the limit reached is a 409 naming it, nothing more is stored; another team and an admin are not held back', async () => {
    const r = await replica({ channels: 3 });
    const admin = client(r.url, ADMIN);
    const a = client(r.url, await tokenFor(admin, 'payments'));
    const b = client(r.url, await tokenFor(admin, 'search'));
    for (let i = 0; i < 3; i += 1) {
      const res = await a('POST', '/api/v1/channels', hook(`p-${i}`));
      expect(res.status, res.text).toBe(201);
    }
    const over = await a('POST', '/api/v1/channels', hook('p-3'));
    expect(over.status).toBe(409);
    expect(over.body.error.code).toBe('quota_exceeded');
    expect(over.body.error.message).toBe(
      'team payments has 3 channels, the limit (server.quotas.channels) is 3',
    );
    // PUT of a new name is a create too; PUT of an existing one is not.
    expect((await a('PUT', '/api/v1/channels/p-4', hook('p-4'))).status).toBe(409);
    expect((await a('PUT', '/api/v1/channels/p-0', hook('p-0', { timeoutMs: 3000 }))).status).toBe(
      200,
    );
    expect((await usage('payments')).channel).toBe(3);
    // Another team has its own count.
    expect((await b('POST', '/api/v1/channels', hook('s-0'))).status).toBe(201);
    // An admin is not refused; what it stores for the team counts toward it.
    expect(
      (await admin('POST', '/api/v1/channels', { ...hook('p-admin'), team: 'payments' })).status,
    ).toBe(201);
    expect((await usage('payments')).channel).toBe(4);
    expect((await usage('search')).channel).toBe(1);
    // After a delete, room again.
    expect((await a('DELETE', '/api/v1/channels/p-1')).status).toBe(200);
    expect((await a('DELETE', '/api/v1/channels/p-2')).status).toBe(200);
    expect((await a('POST', '/api/v1/channels', hook('p-5'))).status).toBe(201);
  });

  it('20 parallel creates on two replicas with room for 3 store exactly 3', async () => {
    const r1 = await replica({ subscriptions: 5 });
    const r2 = await replica({ subscriptions: 5 });
    const admin = client(r1.url, ADMIN);
    const token = await tokenFor(admin, 'payments');
    const a1 = client(r1.url, token);
    const a2 = client(r2.url, token);
    expect((await a1('POST', '/api/v1/channels', hook('pc'))).status).toBe(201);
    for (let i = 0; i < 2; i += 1)
      expect((await a1('POST', '/api/v1/subscriptions', sub(`pre-${i}`))).status).toBe(201);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a1 : a2)('POST', '/api/v1/subscriptions', sub(`race-${i}`)),
      ),
    );
    const statuses = results.map((res) => res.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(17);
    for (const res of results.filter((x) => x.status === 409))
      expect(res.body.error.code).toBe('quota_exceeded');
    expect((await usage('payments')).subscription).toBe(5);
    const listed = await admin('GET', '/api/v1/subscriptions');
    expect(listed.body.subscriptions).toHaveLength(5);
  });

  it('silences: active and pending count, expired ones do not; 20 parallel with room for 3', async () => {
    const r = await replica({ silences: 4 });
    const admin = client(r.url, ADMIN);
    const a = client(r.url, await tokenFor(admin, 'payments'));
    expect((await a('POST', '/api/v1/channels', hook('pc'))).status).toBe(201);
    expect((await a('POST', '/api/v1/subscriptions', sub('pay'))).status).toBe(201);
    const silence = (comment = '') => ({
      matchers: { subscriptions: ['pay'] },
      duration: '1h',
      author: 'alice',
      comment,
    });
    const first = await a('POST', '/api/v1/silences', silence());
    expect(first.status, first.text).toBe(201);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => a('POST', '/api/v1/silences', silence())),
    );
    expect(results.filter((res) => res.status === 201)).toHaveLength(3);
    const refused = results.filter((res) => res.status === 409);
    expect(refused).toHaveLength(17);
    expect(refused[0]?.body.error.message).toBe(
      'team payments has 4 active or pending silences, the limit (server.quotas.silences) is 4',
    );
    expect((await usage('payments')).silence).toBe(4);
    expect((await admin('GET', '/api/v1/silences')).body.silences).toHaveLength(4);
    // An expired silence no longer counts.
    expect((await a('DELETE', `/api/v1/silences/${first.body.id as string}`)).status).toBe(200);
    expect((await a('POST', '/api/v1/silences', silence())).status).toBe(201);
    expect((await a('POST', '/api/v1/silences', silence())).status).toBe(409);
  });

  it('size: one object over objectBytes and a team over bytes are refused, nothing stored', async () => {
    const r = await replica({ bytes: 4096, objectBytes: 2048 });
    const admin = client(r.url, ADMIN);
    const a = client(r.url, await tokenFor(admin, 'payments'));
    const b = client(r.url, await tokenFor(admin, 'search'));
    const services = Array.from({ length: 200 }, (_, i) => `service-number-${String(i)}`);
    expect((await a('POST', '/api/v1/channels', hook('pc'))).status).toBe(201);
    const big = await a('POST', '/api/v1/subscriptions', { ...sub('big'), services });
    expect(big.status).toBe(409);
    expect(big.body.error.code).toBe('quota_exceeded');
    expect(big.body.error.message).toMatch(
      /^subscription "big" would take \d+ bytes, the limit per object \(server\.quotas\.objectBytes\) is 2048$/,
    );
    expect((await usage('payments')).subscription).toBe(0);
    // Objects of ~900 bytes: four fit in 4096, the fifth does not.
    const comment = 'x'.repeat(700);
    const made: number[] = [];
    let refusal: { status: number; body: { error: { message: string } } } | undefined;
    for (let i = 0; i < 6 && refusal === undefined; i += 1) {
      const res = await a(
        'POST',
        '/api/v1/channels',
        hook(`c-${i}`, { headers: { note: comment } }),
      );
      if (res.status === 201) made.push(i);
      else refusal = res;
    }
    expect(refusal?.status).toBe(409);
    expect(refusal?.body.error.message).toMatch(
      /^team payments stores \d+ bytes, channel "c-\d" would make it \d+; the limit \(server\.quotas\.bytes\) is 4096/,
    );
    const used = await usage('payments');
    expect(used.channel).toBe(made.length + 1); // and pc
    expect(used.bytes).toBeLessThanOrEqual(4096);
    expect(used.bytes + 900).toBeGreaterThan(4096);
    // A deleted channel is kept 7 days (owed closings): its bytes still count.
    expect((await a('DELETE', `/api/v1/channels/c-0`)).status).toBe(200);
    expect((await usage('payments')).bytes).toBeGreaterThanOrEqual(used.bytes);
    expect(
      (await a('POST', '/api/v1/channels', hook('c-9', { headers: { note: comment } }))).status,
    ).toBe(409);
    // Another team has its own bytes.
    expect(
      (await b('POST', '/api/v1/channels', hook('s-0', { headers: { note: comment } }))).status,
    ).toBe(201);
  });

  it('tokens: an admin creating a team token past the limit gets the 409; a revoked one frees room', async () => {
    const r = await replica({ tokens: 2 });
    const admin = client(r.url, ADMIN);
    const ids: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const res = await admin('POST', '/api/v1/tokens', { team: 'payments' });
      expect(res.status).toBe(201);
      ids.push(res.body.id as string);
    }
    const over = await admin('POST', '/api/v1/tokens', { team: 'payments' });
    expect(over.status).toBe(409);
    expect(over.body.error.message).toBe(
      'team payments has 2 active tokens, the limit (server.quotas.tokens) is 2',
    );
    expect((await admin('POST', '/api/v1/tokens', { team: 'search' })).status).toBe(201);
    expect((await usage('payments')).token).toBe(2);
    expect((await admin('DELETE', `/api/v1/tokens/${ids[0] ?? ''}`)).status).toBe(200);
    expect((await admin('POST', '/api/v1/tokens', { team: 'payments' })).status).toBe(201);
  });
});

/** Every item of a list, page by page (`limit`), with the number of pages. */
async function allPages(
  c: Client,
  path: string,
  key: string,
  limit: number,
): Promise<{ items: Record<string, unknown>[]; pages: number }> {
  const items: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await c(
      'GET',
      `${path}${sep}limit=${String(limit)}${cursor === null ? '' : `&cursor=${cursor}`}`,
    );
    expect(res.status, res.text).toBe(200);
    expect((res.body[key] as unknown[]).length).toBeLessThanOrEqual(limit);
    items.push(...(res.body[key] as Record<string, unknown>[]));
    cursor = res.body.next as string | null;
    pages += 1;
  } while (cursor !== null);
  return { items, pages };
}

describe('paged lists', () => {
  it('channels, subscriptions, silences and tokens: every item exactly once across pages', async () => {
    const r = await replica({});
    const admin = client(r.url, ADMIN);
    const a = client(r.url, await tokenFor(admin, 'payments'));
    for (let i = 0; i < 7; i += 1) {
      expect((await a('POST', '/api/v1/channels', hook(`ch-${i}`))).status).toBe(201);
      expect((await a('POST', '/api/v1/subscriptions', sub(`sub-${i}`, ['ch-0']))).status).toBe(
        201,
      );
      expect(
        (
          await a('POST', '/api/v1/silences', {
            matchers: { subscriptions: [`sub-${i}`] },
            // Some pending, some active: the order mixes states and end times.
            ...(i % 2 === 0 ? { startsAt: Date.now() + 3_600_000 } : {}),
            duration: `${String(10 - i)}h`,
            author: 'alice',
          })
        ).status,
      ).toBe(201);
      expect((await admin('POST', '/api/v1/tokens', { team: `t${String(i)}` })).status).toBe(201);
    }
    for (const [path, key, total] of [
      ['/api/v1/channels', 'channels', 7],
      ['/api/v1/subscriptions', 'subscriptions', 7],
      ['/api/v1/silences', 'silences', 7],
      ['/api/v1/tokens', 'tokens', 8], // and payments' token, created above
    ] as const) {
      const whole = await admin('GET', path);
      expect(whole.body.next).toBeNull();
      const want = (whole.body[key] as { name?: string; id?: string }[]).map((x) => x.name ?? x.id);
      const got = await allPages(admin, path, key, 3);
      const ids = got.items.map((x) => (x.name ?? x.id) as string);
      expect(ids.length, path).toBe(total);
      expect(new Set(ids).size, path).toBe(ids.length);
      expect(ids, path).toEqual(want);
      expect(got.pages, path).toBe(Math.ceil(ids.length / 3));
    }
    // The team's view pages the same way.
    expect((await allPages(a, '/api/v1/silences', 'silences', 2)).items).toHaveLength(7);
    // A cursor this API did not write, and a limit out of range, are 400s naming the field.
    const bad = await admin('GET', '/api/v1/channels?cursor=nope');
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('cursor');
    expect((await admin('GET', '/api/v1/channels?limit=501')).body.error.field).toBe('limit');
  });
});
