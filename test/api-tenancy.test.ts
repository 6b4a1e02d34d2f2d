/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * The tenancy API of a real daemon process (`node dist/cli.js run`, real Redis, the simulator):
 * tokens and tenancy, secrets at rest and in answers and logs, bad input (each a 4xx naming the
 * field, nothing stored), and the OpenAPI document (validated by a real OpenAPI validator,
 * walked route by route).
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey } from '../src/api/crypto.js';
import { killAll, startDaemon, writeConfig, type Daemon } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';
import {
  ADMIN_TOKEN,
  baseConfig,
  client,
  dumpPrefix,
  receiver,
  responses,
  secretForms,
  webhookSecret,
  world,
  type Client,
  type Receiver,
  type World,
} from './api-helpers.js';
import { LOOPBACK_RECEIVERS } from './helpers/egress.js';

const SECRET_KEY = newKey();
const SECRET_A = webhookSecret('teamA');
const SECRET_B = webhookSecret('teamB');
const SECRET_SHARED = webhookSecret('shared');
const PATH_A = '/hooks/A-PATHTOKEN-3f8e1a';
const PATH_B = '/hooks/B-PATHTOKEN-77c2d9';
const PATH_SHARED = '/hooks/SHARED-PATHTOKEN-0a1b2c';
const HEADER_A = 'Bearer A-HEADERSECRET-9d8c7b6a';
const PROXY = '127.0.0.20';
const WRONG_TOKEN = 'swt_0123456789abcdef_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';

let w: World;
let hook: Receiver;
let d: Daemon;
let admin: Client;
let teamA: Client;
let teamB: Client;
let tokenA = '';
let tokenB = '';

function allSecrets(): string[] {
  return [
    ...secretForms(SECRET_A),
    ...secretForms(SECRET_B),
    ...secretForms(SECRET_SHARED),
    PATH_A,
    PATH_B,
    PATH_SHARED,
    'A-PATHTOKEN-3f8e1a',
    'A-HEADERSECRET-9d8c7b6a',
    SECRET_KEY,
    tokenA,
    tokenB,
  ].filter((s) => s !== '');
}

function expectNoSecret(text: string, where: string): void {
  for (const s of allSecrets()) expect(text.includes(s), `${where} contains a secret`).toBe(false);
}

async function createToken(
  team: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await admin('POST', '/api/v1/tokens', { team, ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; token: string };
}

const channelA = () => ({
  name: 'a-hook',
  type: 'webhook',
  url: `${hook.base}${PATH_A}`,
  secret: SECRET_A,
  headers: { Authorization: HEADER_A },
});

beforeAll(async () => {
  w = await world('api-t');
  hook = await receiver({ [PATH_A]: SECRET_A, [PATH_B]: SECRET_B, [PATH_SHARED]: SECRET_SHARED });
  w.cleanups.push(() => hook.close());
  const file = await writeConfig(
    w.dir,
    baseConfig(w, {
      channels: {
        shared: { type: 'webhook', url: `${hook.base}${PATH_SHARED}`, secret: SECRET_SHARED },
      },
      subscriptions: [{ name: 'platform', services: ['github'], channels: ['shared'] }],
      // An ingress at PROXY: its X-Forwarded-For names the client.
      server: {
        port: 0,
        adminToken: ADMIN_TOKEN,
        console: { trustedProxies: [PROXY] },
        egress: LOOPBACK_RECEIVERS,
      },
    }),
  );
  d = await startDaemon(file, { STATUSWATCH_SECRET_KEY: SECRET_KEY });
  admin = client(d.url, ADMIN_TOKEN);
  tokenA = (await createToken('team-a')).token;
  tokenB = (await createToken('team-b')).token;
  teamA = client(d.url, tokenA);
  teamB = client(d.url, tokenB);
  expect((await teamA('POST', '/api/v1/channels', channelA())).status).toBe(201);
  const b = await teamB('POST', '/api/v1/channels', {
    name: 'b-hook',
    type: 'webhook',
    url: `${hook.base}${PATH_B}`,
    secret: SECRET_B,
  });
  expect(b.status, b.text).toBe(201);
  expect(
    (
      await teamA('POST', '/api/v1/subscriptions', {
        name: 'a-sub',
        services: ['stripe'],
        channels: ['a-hook', 'shared'],
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await teamB('POST', '/api/v1/subscriptions', {
        name: 'b-sub',
        services: ['stripe'],
        channels: ['b-hook'],
      })
    ).status,
  ).toBe(201);
}, 40_000);

afterAll(async () => {
  await killAll();
  for (const c of w.cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('tenancy', () => {
  it("team A lists only its own and the config file's objects", async () => {
    const channels = await teamA('GET', '/api/v1/channels');
    expect(channels.status).toBe(200);
    expect(
      (channels.body.channels as { name: string; source: string; team: string | null }[]).map(
        (c) => [c.name, c.source, c.team],
      ),
    ).toEqual([
      ['shared', 'config', null],
      ['a-hook', 'api', 'team-a'],
    ]);
    const subs = await teamA('GET', '/api/v1/subscriptions');
    expect((subs.body.subscriptions as { name: string }[]).map((s) => s.name)).toEqual(['a-sub']);
    const all = await admin('GET', '/api/v1/subscriptions');
    expect(
      (all.body.subscriptions as { name: string; source: string }[]).map(
        (s) => `${s.name}:${s.source}`,
      ),
    ).toEqual(['platform:config', 'a-sub:api', 'b-sub:api']);
  });

  it("team A cannot read, change, delete, test or preview team B's objects: 404", async () => {
    const attempts: [string, string, unknown?][] = [
      ['GET', '/api/v1/channels/b-hook'],
      [
        'PUT',
        '/api/v1/channels/b-hook',
        { type: 'webhook', url: `${hook.base}/x`, secret: SECRET_A },
      ],
      ['DELETE', '/api/v1/channels/b-hook'],
      ['POST', '/api/v1/channels/b-hook/test'],
      ['GET', '/api/v1/channels/b-hook/preview?event=incident.opened'],
      ['GET', '/api/v1/subscriptions/b-sub'],
      ['PUT', '/api/v1/subscriptions/b-sub', { services: ['*'], channels: ['a-hook'] }],
      ['DELETE', '/api/v1/subscriptions/b-sub'],
      // Config-file subscriptions are not a team's either.
      ['GET', '/api/v1/subscriptions/platform'],
      ['DELETE', '/api/v1/subscriptions/platform'],
    ];
    for (const [method, path, body] of attempts) {
      const res = await teamA(method, path, body);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // Nothing of B's changed, and B still has them.
    expect((await teamB('GET', '/api/v1/channels/b-hook')).body.url).toBe('<set>');
    expect((await teamB('GET', '/api/v1/subscriptions/b-sub')).body.channels).toEqual(['b-hook']);
    expect(hook.of(PATH_B)).toEqual([]);
  });

  it("a subscription of team A may not use team B's channel; team A cannot write as team B (403)", async () => {
    const res = await teamA('POST', '/api/v1/subscriptions', {
      name: 'a-steal',
      services: ['*'],
      channels: ['shared', 'b-hook'],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.field).toBe('channels[1]');
    const asB = await teamA('POST', '/api/v1/channels', {
      ...channelA(),
      name: 'a-as-b',
      team: 'team-b',
    });
    expect(asB.status).toBe(403);
    expect(asB.body.error.field).toBe('team');
    expect((await admin('GET', '/api/v1/subscriptions/a-steal')).status).toBe(404);
    expect((await admin('GET', '/api/v1/channels/a-as-b')).status).toBe(404);
    // A name every object inherits is no config channel either.
    for (const name of ['constructor', 'toString']) {
      expect((await admin('GET', `/api/v1/channels/${name}`)).status, name).toBe(404);
      expect((await admin('POST', `/api/v1/channels/${name}/test`)).status, name).toBe(404);
      expect((await admin('DELETE', `/api/v1/channels/${name}`)).status, name).toBe(404);
      const sub = await teamA('POST', '/api/v1/subscriptions', {
        name: `uses-${name.toLowerCase()}`,
        services: ['stripe'],
        channels: [name],
      });
      expect(sub.status, sub.text).toBe(400);
      expect(sub.body.error.field).toBe('channels[0]');
    }
  });

  it('team A reads its own audit only; team tokens never reach /admin/* or the token routes', async () => {
    const audit = await teamA('GET', '/api/v1/audit');
    expect(audit.status).toBe(200);
    const entries = audit.body.entries as {
      team: string;
      name: string;
      tokenId: string;
      address: string;
      diff: unknown[];
    }[];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => e.team === 'team-a')).toBe(true);
    expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['a-hook', 'a-sub']));
    const all = await admin('GET', '/api/v1/audit');
    expect((all.body.entries as { team: string }[]).some((e) => e.team === 'team-b')).toBe(true);
    for (const path of ['/admin/silences', '/admin/dead-letters']) {
      const res = await teamA('GET', path);
      expect(res.status, path).toBe(403);
    }
    expect((await teamA('GET', '/api/v1/tokens')).status).toBe(403);
    expect((await teamA('POST', '/api/v1/tokens', { team: 'team-a', admin: true })).status).toBe(
      403,
    );
    expect((await admin('GET', '/admin/silences')).status).toBe(200);
  });

  it('expired, revoked and one-character-off tokens are refused (401)', async () => {
    const other = '127.0.0.7'; // its own failure budget
    const expiring = await createToken('team-a', {
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    const revoked = await createToken('team-a');
    expect((await client(d.url, expiring.token, other)('GET', '/api/v1/channels')).status).toBe(
      200,
    );
    expect((await admin('DELETE', `/api/v1/tokens/${revoked.id}`)).status).toBe(200);
    const last = tokenA.at(-1) === 'A' ? 'B' : 'A';
    const offByOne = `${tokenA.slice(0, -1)}${last}`;
    const firstOff = `${tokenA.slice(0, 10)}${tokenA[10] === '0' ? '1' : '0'}${tokenA.slice(11)}`;
    await new Promise((r) => setTimeout(r, 1600));
    for (const [label, token] of [
      ['expired', expiring.token],
      ['revoked', revoked.token],
      ['last character off', offByOne],
      ['id character off', firstOff],
      ['admin token one off', `${ADMIN_TOKEN.slice(0, -1)}x`],
    ] as const) {
      const res = await client(d.url, token, other)('GET', '/api/v1/channels');
      expect(res.status, label).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
    expect((await client(d.url, undefined, other)('GET', '/api/v1/channels')).status).toBe(401);
    const listed = await admin('GET', '/api/v1/tokens');
    const states = Object.fromEntries(
      (listed.body.tokens as { id: string; state: string }[]).map((t) => [t.id, t.state]),
    );
    expect(states[expiring.id]).toBe('expired');
    expect(states[revoked.id]).toBe('revoked');
    expect(listed.text).not.toContain('hash');
  });

  it('failed attempts are rate-limited per client address (429), other addresses unaffected', async () => {
    const address = '127.0.0.9';
    const wrong = client(
      d.url,
      'swt_0123456789abcdef_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      address,
    );
    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1)
      statuses.push((await wrong('GET', '/api/v1/subscriptions')).status);
    expect(statuses.slice(0, 10)).toEqual(Array<number>(10).fill(401));
    expect(statuses.slice(10)).toEqual([429, 429]);
    // Even the right token, from that address, until the window ends; /admin too.
    const limited = await client(d.url, ADMIN_TOKEN, address)('GET', '/api/v1/subscriptions');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await client(d.url, ADMIN_TOKEN, address)('GET', '/admin/silences')).status).toBe(429);
    expect((await admin('GET', '/api/v1/subscriptions')).status).toBe(200);
  });
});

describe('behind an ingress', () => {
  /** A GET of the subscriptions with `token`, from `local`, naming `forwarded` as the client. */
  const get = async (local: string, token: string, forwarded?: string) =>
    (
      await client(d.url, token, local).raw(
        'GET',
        '/api/v1/subscriptions',
        undefined,
        forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
      )
    ).status;

  it('counts failed attempts per client a trusted proxy names, never per proxy, never by a forged hop', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i += 1) statuses.push(await get(PROXY, WRONG_TOKEN, '198.51.100.7'));
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
    // Another client behind the same proxy is not locked out with the first.
    expect(await get(PROXY, ADMIN_TOKEN, '198.51.100.8')).toBe(200);
    // A hop the limited client wrote itself (left of what the proxy appended) changes nothing.
    expect(await get(PROXY, ADMIN_TOKEN, '198.51.100.8, 198.51.100.7')).toBe(429);
    // Through a second trusted hop (the proxy reached from the proxy), still that client.
    expect(await get(PROXY, ADMIN_TOKEN, `198.51.100.7, ${PROXY}`)).toBe(429);
    // Garbage from the proxy is never a client: the proxy's own address is counted then.
    expect(await get(PROXY, ADMIN_TOKEN, 'not-an-address')).toBe(200);
  });

  it('ignores X-Forwarded-For from an address that is not a trusted proxy', async () => {
    const direct = '127.0.0.21';
    for (let i = 0; i < 10; i += 1)
      expect(await get(direct, WRONG_TOKEN, `198.51.100.${String(20 + i)}`)).toBe(401);
    expect(await get(direct, ADMIN_TOKEN, '198.51.100.99')).toBe(429);
  });
});

describe('secrets', () => {
  it('read back as "<set>"; a PUT sending "<set>" keeps them (the test notification is still signed right)', async () => {
    const got = await teamA('GET', '/api/v1/channels/a-hook');
    expect(got.body).toEqual({
      name: 'a-hook',
      type: 'webhook',
      url: '<set>',
      secret: '<set>',
      headers: '<set>',
      team: 'team-a',
      source: 'api',
    });
    const put = await teamA('PUT', '/api/v1/channels/a-hook', { ...got.body, timeoutMs: 4000 });
    expect(put.status, put.text).toBe(200);
    expect(put.body.timeoutMs).toBe(4000);
    const test = await teamA('POST', '/api/v1/channels/a-hook/test');
    expect(test.status).toBe(200);
    expect(test.body.ok, test.text).toBe(true);
    const hit = await waitFor(() => hook.of(PATH_A)[0], { what: 'the test notification' });
    expect(hit.verified).toBe(true);
    // "<set>" where nothing is stored is an error naming the field.
    const bad = await teamA('POST', '/api/v1/channels', {
      name: 'a-new',
      type: 'webhook',
      url: '<set>',
      secret: SECRET_A,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('url');
    const preview = await teamA('GET', '/api/v1/channels/a-hook/preview?event=incident.opened');
    expect(preview.status).toBe(200);
    expect(preview.body.preview).toContain('"type": "incident.opened"');
    // A team may neither preview nor test a config-file channel (its preview shows the
    // operator's headers and endpoints); an admin may.
    expect(
      (await teamA('GET', '/api/v1/channels/shared/preview?event=incident.resolved')).status,
    ).toBe(403);
    expect(
      (await admin('GET', '/api/v1/channels/shared/preview?event=incident.resolved')).status,
    ).toBe(200);
    expect((await teamA('POST', '/api/v1/channels/shared/test')).status).toBe(403);
  });

  it('"<set>" keeps a stored secret only while the channel sends to the same place: not with another URL or type', async () => {
    const base = { name: 'a-hook', type: 'webhook', secret: '<set>', headers: '<set>' };
    // The stored signing secret and headers sent to an address of the caller's choosing: no.
    const moved = await teamA('PUT', '/api/v1/channels/a-hook', {
      ...base,
      url: 'http://127.0.0.1:9/collect',
    });
    expect(moved.status).toBe(400);
    expect(moved.body.error.field).toBe('secret');
    expect(moved.text).toContain('same place');
    // The same address given again (not "<set>"), or kept: yes.
    const same = await teamA('PUT', '/api/v1/channels/a-hook', {
      ...base,
      url: `${hook.base}${PATH_A}`,
      timeoutMs: 4500,
    });
    expect(same.status, same.text).toBe(200);
    const before = hook.of(PATH_A).length;
    const test = await teamA('POST', '/api/v1/channels/a-hook/test');
    expect(test.body.ok, test.text).toBe(true);
    const hits = await waitFor(() => hook.of(PATH_A).length > before && hook.of(PATH_A), {
      what: 'the test notification',
    });
    expect(hits.at(-1)?.verified).toBe(true);
  });

  it('no secret in clear in any Redis key, in any API answer, or in the logs', async () => {
    const dump = await dumpPrefix(w.tr.redis, w.tr.prefix);
    expect(dump).toContain('swenc1.');
    expect(dump).toContain('a-hook');
    expectNoSecret(dump, 'Redis');
    for (const [i, text] of responses.entries()) {
      // Token creation answers carry the new token: the one place it is shown.
      if (text.includes('"token":"swt_')) continue;
      expectNoSecret(text, `response ${i}`);
    }
    expectNoSecret(d.proc.output(), 'the daemon log');
  });
});

describe('bad input: a 4xx naming the field, nothing stored', () => {
  it('each case', async () => {
    const before = await dumpPrefix(w.tr.redis, w.tr.prefix);
    const apiKeys = (dump: string) =>
      dump
        .split('\n')
        .filter((l) => /:api:(channels|subscriptions|version) /.test(l))
        .join('\n');
    const cases: [string, string, unknown, number, string][] = [
      [
        'unknown key',
        '/api/v1/subscriptions',
        { name: 'x1', services: ['*'], channels: ['a-hook'], servcies: ['a'] },
        400,
        'servcies',
      ],
      [
        'wrong type',
        '/api/v1/subscriptions',
        { name: 'x2', services: 'stripe', channels: ['a-hook'] },
        400,
        'services',
      ],
      [
        'wrong event',
        '/api/v1/subscriptions',
        { name: 'x3', services: ['*'], events: ['incident.opened', 'nope'], channels: ['a-hook'] },
        400,
        'events[1]',
      ],
      [
        'bad duration',
        '/api/v1/subscriptions',
        { name: 'x4', services: ['*'], channels: ['a-hook'], group: 'soon' },
        400,
        'group',
      ],
      [
        'odd name',
        '/api/v1/subscriptions',
        { name: 'bad name!', services: ['*'], channels: ['a-hook'] },
        400,
        'name',
      ],
      [
        'missing name',
        '/api/v1/subscriptions',
        { services: ['*'], channels: ['a-hook'] },
        400,
        'name',
      ],
      [
        "another team's channel",
        '/api/v1/subscriptions',
        { name: 'x5', services: ['*'], channels: ['b-hook'] },
        400,
        'channels[0]',
      ],
      [
        'unknown channel type',
        '/api/v1/channels',
        { name: 'c1', type: 'carrier-pigeon' },
        400,
        'type',
      ],
      [
        'channel unknown key',
        '/api/v1/channels',
        { ...channelA(), name: 'c2', retries: 3 },
        400,
        'retries',
      ],
      [
        'channel wrong type',
        '/api/v1/channels',
        { ...channelA(), name: 'c3', timeoutMs: 'fast' },
        400,
        'timeoutMs',
      ],
      [
        'channel bad secret',
        '/api/v1/channels',
        { ...channelA(), name: 'c4', secret: 'hunter2' },
        400,
        'secret',
      ],
      ['channel odd name', '/api/v1/channels', { ...channelA(), name: '../etc' }, 400, 'name'],
      [
        'source config',
        '/api/v1/channels',
        { ...channelA(), name: 'c5', source: 'config' },
        400,
        'source',
      ],
      ['not an object', '/api/v1/channels', [channelA()], 400, '(root)'],
      ['config name taken', '/api/v1/channels', { ...channelA(), name: 'shared' }, 409, 'name'],
      [
        'name taken by another team',
        '/api/v1/channels',
        { ...channelA(), name: 'b-hook' },
        409,
        'name',
      ],
    ];
    for (const [label, path, body, status, field] of cases) {
      const res = await teamA('POST', path, body);
      expect(res.status, `${label}: ${res.text}`).toBe(status);
      expect(res.body.error.field, label).toBe(field);
      expect(typeof res.body.error.message).toBe('string');
      expect(typeof res.body.error.code).toBe('string');
    }
    const notJson = await teamA.raw('POST', '/api/v1/channels', '{"name": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.field).toBe('(root)');
    const oddPath = await teamA('PUT', '/api/v1/subscriptions/bad%20name', {
      services: ['*'],
      channels: ['a-hook'],
    });
    expect(oddPath.status).toBe(400);
    expect(oddPath.body.error.field).toBe('name');
    const mismatch = await teamA('PUT', '/api/v1/subscriptions/x6', {
      name: 'x7',
      services: ['*'],
      channels: ['a-hook'],
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error.field).toBe('name');
    const big = await teamA.raw(
      'POST',
      '/api/v1/channels',
      JSON.stringify({ ...channelA(), name: 'big', pad: 'x'.repeat(1024 * 1024 + 10) }),
    );
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('too_large');
    expect(big.body.error.field).toBe('(root)');
    const badEvent = await teamA('GET', '/api/v1/channels/a-hook/preview?event=nope');
    expect(badEvent.status).toBe(400);
    expect(badEvent.body.error.field).toBe('event');
    // Nothing stored: the API's hashes and version are as they were.
    expect(apiKeys(await dumpPrefix(w.tr.redis, w.tr.prefix))).toBe(apiKeys(before));
  });
});

describe('OpenAPI', () => {
  it('the document validates as OpenAPI 3.1 and every route it lists answers (no 404 route miss, no 405)', async () => {
    const doc = await client(d.url)('GET', '/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    const validator = new Validator();
    const result = await validator.validate(doc.body as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    const paths = doc.body.paths as Record<string, Record<string, unknown>>;
    const walked: string[] = [];
    for (const [template, operations] of Object.entries(paths)) {
      for (const method of Object.keys(operations)) {
        const path = template.replace('{name}', 'walk-nothing').replace('{id}', '0000000000000000');
        const query = template.endsWith('/preview') ? '?event=incident.opened' : '';
        const body =
          ['post', 'put'].includes(method) &&
          !template.endsWith('/test') &&
          !template.endsWith('/rotate')
            ? {}
            : undefined;
        const res = await admin(method.toUpperCase(), `${path}${query}`, body);
        expect(res.status, `${method} ${template}: ${res.text}`).not.toBe(405);
        if (res.status === 404)
          expect(res.body.error.code, `${method} ${template}`).toBe('not_found');
        expect(res.status, `${method} ${template}`).toBeLessThan(500);
        walked.push(`${method.toUpperCase()} ${template}`);
      }
    }
    expect(walked).toEqual(
      expect.arrayContaining([
        'GET /api/v1/subscriptions',
        'POST /api/v1/subscriptions',
        'GET /api/v1/subscriptions/{name}',
        'PUT /api/v1/subscriptions/{name}',
        'DELETE /api/v1/subscriptions/{name}',
        'GET /api/v1/channels',
        'POST /api/v1/channels',
        'GET /api/v1/channels/{name}',
        'PUT /api/v1/channels/{name}',
        'DELETE /api/v1/channels/{name}',
        'POST /api/v1/channels/{name}/test',
        'GET /api/v1/channels/{name}/preview',
        'GET /api/v1/services',
        'GET /api/v1/audit',
        'GET /api/v1/tokens',
        'POST /api/v1/tokens',
        'DELETE /api/v1/tokens/{id}',
      ]),
    );
    // And a path it does not list is a route miss.
    const miss = await admin('GET', '/api/v1/nothing-here');
    expect(miss.status).toBe(404);
    expect(miss.body.error.code).toBe('no_route');
    const wrongMethod = await admin('PATCH', '/api/v1/channels');
    expect(wrongMethod.status).toBe(405);
  });

  it('GET /api/v1/services searches the cached catalog', async () => {
    const found = await waitFor(
      async () => {
        const res = await teamA('GET', '/api/v1/services?query=stri&limit=5');
        if (res.status !== 200) throw new Error(res.text);
        return res.body.total > 0 ? res : false;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'the catalog' },
    );
    expect(found.body.services[0].feedId).toBe('stripe');
    expect((await teamA('GET', '/api/v1/services?limit=0')).body.error.field).toBe('limit');
  });
});
