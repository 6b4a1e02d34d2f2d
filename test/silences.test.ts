import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Command } from 'commander';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { pino } from 'pino';
import { TenancyApi } from '../src/api/index.js';
import { API_MAX_BODY_BYTES } from '../src/api/http.js';
import { DEFAULT_QUOTAS } from '../src/api/quota-config.js';
import { bearerMatches } from '../src/server/ops.js';
import { silences, type SilenceTarget } from '../src/silences/match.js';
import { SilenceValidationError, type Silence } from '../src/silences/model.js';
import { EXPIRED_RETENTION_MS, SilenceStore } from '../src/silences/store.js';
import {
  registerSilenceCommands,
  silenceAdd,
  silenceExpire,
  silenceList,
  type AdminTarget,
  type SilenceIo,
} from '../src/commands/silence.js';
import { testRedis, type TestRedis } from './helpers/redis.js';

const T0 = 1_800_000_000_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const TOKEN = 'sw-admin-token-3f9a7c1e';

const target: SilenceTarget = {
  feedId: 'stripe',
  kind: 'incident.opened',
  subscription: 'payments',
  channel: 'oncall',
};

function request_(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    matchers: { services: ['stripe'] },
    duration: '1h',
    author: 'alice',
    comment: 'provider maintenance',
    ...over,
  };
}

let t: TestRedis;
let clock: number;
const now = (): number => clock;

beforeEach(async () => {
  t = await testRedis('silences');
  clock = T0;
});

afterEach(async () => {
  await t.cleanup();
});

describe('SilenceStore (real Redis)', () => {
  it('adds a silence under {prefix}:silences with a random URL-safe id', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const s = await store.add(request_());
    expect(s.id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(s).toEqual({
      id: s.id,
      matchers: { services: ['stripe'] },
      startsAt: T0,
      endsAt: T0 + HOUR,
      author: 'alice',
      comment: 'provider maintenance',
      createdAt: T0,
    });
    const raw = await t.redis.hget(`{${t.prefix}}:silences`, s.id);
    expect(JSON.parse(raw ?? 'null')).toEqual({ v: 1, d: s });
    expect(await store.get(s.id)).toEqual(s);
    expect(await store.get('nope')).toBeUndefined();
    const other = await store.add(request_());
    expect(other.id).not.toBe(s.id);
  });

  it('rejects an invalid request with the issues and stores nothing', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const err = await store
      .add(request_({ matchers: { events: ['nope'] } }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SilenceValidationError);
    expect((err as SilenceValidationError).issues.map((i) => i.path)).toEqual([
      'matchers.events[0]',
    ]);
    expect(await t.redis.hlen(t.keys.key('silences'))).toBe(0);
  });

  it('lists active and pending by default, expired with includeExpired, in state order', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const short = await store.add(request_({ duration: '10m' }));
    const pending = await store.add(request_({ startsAt: T0 + HOUR, duration: '1h' }));
    const active = await store.add(request_({ duration: '2h' }));
    clock = T0 + 20 * MINUTE; // `short` has ended
    expect((await store.list()).map((s) => s.id)).toEqual([active.id, pending.id]);
    expect((await store.list({ includeExpired: true })).map((s) => s.id)).toEqual([
      active.id,
      pending.id,
      short.id,
    ]);
  });

  it('expire ends a silence now; it stops matching; unknown ids give undefined', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const s = await store.add(request_());
    clock = T0 + 5 * MINUTE;
    expect(silences(s, target, clock)).toBe(true);
    expect((await store.active()).map((a) => a.id)).toEqual([s.id]);

    const expired = await store.expire(s.id);
    expect(expired).toEqual({ ...s, endsAt: T0 + 5 * MINUTE });
    expect(await store.get(s.id)).toEqual(expired);
    expect(silences(expired!, target, clock)).toBe(false);
    // Seen at once by the instance that expired it, despite the cache.
    expect(await store.active()).toEqual([]);
    expect(await store.list()).toEqual([]);
    expect((await store.list({ includeExpired: true })).map((x) => x.id)).toEqual([s.id]);

    clock += MINUTE;
    expect(await store.expire(s.id)).toEqual(expired); // expiring again changes nothing
    expect(await store.expire('unknown')).toBeUndefined();
  });

  it('expiring a pending silence sets startsAt = endsAt = now', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const s = await store.add(request_({ startsAt: T0 + HOUR }));
    clock = T0 + MINUTE;
    const expired = await store.expire(s.id);
    expect(expired).toMatchObject({ startsAt: T0 + MINUTE, endsAt: T0 + MINUTE });
    clock = T0 + HOUR + MINUTE; // inside the original window
    expect(await store.active()).toEqual([]);
  });

  it('a silence starts and stops matching by itself as the clock passes its window', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const s = await store.add(request_({ startsAt: T0 + MINUTE, duration: '10m' }));
    expect(await store.active()).toEqual([]);
    clock = T0 + MINUTE; // within the cache lifetime: the cached entry becomes active
    expect((await store.active()).map((a) => a.id)).toEqual([s.id]);
    clock = T0 + 11 * MINUTE;
    expect(await store.active()).toEqual([]);
    expect(await store.get(s.id)).toEqual(s); // nothing was written
  });

  it('deletes expired silences lazily once they ended 7 days ago', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const s = await store.add(request_({ duration: '1h' }));
    const key = t.keys.key('silences');
    clock = T0 + HOUR + EXPIRED_RETENTION_MS - 1;
    expect((await store.list({ includeExpired: true })).map((x) => x.id)).toEqual([s.id]);
    expect(await t.redis.hexists(key, s.id)).toBe(1);
    clock = T0 + HOUR + EXPIRED_RETENTION_MS;
    expect(await store.list({ includeExpired: true })).toEqual([]);
    expect(await t.redis.hexists(key, s.id)).toBe(0);
  });

  it("serves active() from memory for 2 s: another replica's silence shows up after that", async () => {
    const replicaA = new SilenceStore(t.redis, t.keys, now);
    const replicaB = new SilenceStore(t.redis, t.keys, now);
    expect(await replicaA.active()).toEqual([]);
    const s = await replicaB.add(request_());
    clock = T0 + 1_999;
    expect(await replicaA.active()).toEqual([]); // cached
    clock = T0 + 2_000;
    expect((await replicaA.active()).map((a) => a.id)).toEqual([s.id]);
    await replicaB.expire(s.id);
    clock = T0 + 3_000;
    expect((await replicaA.active()).map((a) => a.id)).toEqual([s.id]); // still cached
    clock = T0 + 4_000;
    expect(await replicaA.active()).toEqual([]);
  });

  it('skips malformed entries without deleting them', async () => {
    const store = new SilenceStore(t.redis, t.keys, now);
    const key = t.keys.key('silences');
    await t.redis.hset(key, 'garbage', '{"not":"a silence"}');
    const s = await store.add(request_());
    expect((await store.list({ includeExpired: true })).map((x) => x.id)).toEqual([s.id]);
    expect((await store.active()).map((x) => x.id)).toEqual([s.id]);
    expect(await t.redis.hget(key, 'garbage')).toBe('{"not":"a silence"}');
  });
});

/**
 * A real HTTP server routing as OpsServer does: `/admin/silences…` to the API's alias (which
 * checks the token itself), `/api/v1/…` to the API; anything else a 404.
 */
async function startAdminServer(api: () => TenancyApi): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = async (): Promise<void> => {
      if (await api().http.handleAdminAlias(req, res, url)) return;
      if (url.pathname.startsWith('/api/v1/')) return api().http.handle(req, res, url);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not a silences route' }));
    };
    route().catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server };
}

let http: { url: string; server: Server };
let currentStore: SilenceStore;
let currentApi: TenancyApi;

beforeAll(async () => {
  http = await startAdminServer(() => currentApi);
});

afterAll(async () => {
  http.server.closeAllConnections();
  await new Promise<void>((resolve) =>
    http.server.close(() => {
      resolve();
    }),
  );
});

beforeEach(() => {
  currentStore = new SilenceStore(t.redis, t.keys, now);
  currentApi = new TenancyApi({
    redis: t.redis,
    keys: t.keys,
    log: pino({ level: 'silent' }),
    silences: currentStore,
    env: {},
    config: () => ({
      channels: {},
      subscriptions: [],
      adminToken: TOKEN,
      quotas: DEFAULT_QUOTAS,
    }),
    onChannels: () => undefined,
    now,
  });
});

afterEach(async () => {
  await currentApi.store.close();
});

async function call(
  method: 'GET' | 'POST' | 'DELETE' | 'PUT',
  path: string,
  body?: string,
): Promise<{ status: number; json: unknown; headers: Record<string, unknown> }> {
  const res = await request(`${http.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: JSON.parse(text) as unknown, headers: res.headers };
}

describe('/admin/silences, the deprecated alias of /api/v1/silences (real HTTP server)', () => {
  it('POST creates (201), GET lists, GET /{id} reads; every answer says it is deprecated', async () => {
    const created = await call('POST', '/admin/silences', JSON.stringify(request_()));
    expect(created.status).toBe(201);
    const s = created.json as Silence & { state: string };
    expect(s).toMatchObject({
      matchers: { services: ['stripe'] },
      startsAt: T0,
      endsAt: T0 + HOUR,
      author: 'alice',
      state: 'active',
    });
    expect(created.headers.location).toBe(`/api/v1/silences/${s.id}`);
    expect(created.headers.deprecation).toBe('true');
    expect(created.headers.link).toBe('</api/v1/silences>; rel="successor-version"');
    const list = await call('GET', '/admin/silences');
    expect(list.json).toEqual({ silences: [s], next: null });
    // The same answer as the API's own route, paging included.
    expect((await call('GET', '/api/v1/silences')).json).toEqual(list.json);
    const paged = await call('GET', '/admin/silences?limit=1');
    expect(paged.json).toEqual({ silences: [s], next: null });
    expect(await call('GET', `/admin/silences/${s.id}`)).toMatchObject({ status: 200, json: s });
    expect(await call('GET', '/admin/silences/unknown')).toMatchObject({
      status: 404,
      json: { error: { code: 'not_found', message: 'no silence "unknown"', field: null } },
      headers: { deprecation: 'true' },
    });
  });

  it('a team token is refused (403), a wrong one a 401, in the one error shape', async () => {
    const team = await currentApi.tokens.create(
      { tokenId: 'test', team: null, admin: true, address: '127.0.0.1' },
      { team: 'payments' },
    );
    const asTeam = await request(`${http.url}/admin/silences`, {
      headers: { authorization: `Bearer ${team.token}` },
    });
    expect(asTeam.statusCode).toBe(403);
    expect(await asTeam.body.json()).toEqual({
      error: { code: 'forbidden', message: 'team tokens cannot use the admin API', field: null },
    });
    const wrong = await request(`${http.url}/admin/silences`, {
      headers: { authorization: 'Bearer nope' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(((await wrong.body.json()) as { error: { code: string } }).error.code).toBe(
      'unauthorized',
    );
  });

  it('400 names every invalid field', async () => {
    const res = await call(
      'POST',
      '/admin/silences',
      JSON.stringify({
        matchers: { events: ['incident.opened', 'bogus'] },
        endsAt: T0 - 1,
        author: '',
        comment: 'c'.repeat(1001),
      }),
    );
    expect(res.status).toBe(400);
    const issues = (res.json as { error: { issues: { field: string }[] } }).error.issues.map(
      (i) => i.field,
    );
    expect(issues).toEqual(['matchers.events[1]', 'author', 'comment']);
    const time = await call(
      'POST',
      '/admin/silences',
      JSON.stringify(request_({ endsAt: T0, duration: undefined })),
    );
    expect(time).toMatchObject({
      status: 400,
      json: {
        error: { code: 'invalid', message: 'endsAt: must end in the future', field: 'endsAt' },
      },
    });
    expect(await currentStore.list({ includeExpired: true })).toEqual([]);
  });

  it("400 for a body that is not JSON, 413 for one over the API's 1 MB", async () => {
    expect(await call('POST', '/admin/silences', '{nope')).toMatchObject({
      status: 400,
      json: { error: { code: 'invalid_json', field: '(root)' } },
    });
    expect(await call('POST', '/admin/silences', '')).toMatchObject({ status: 400 });
    const big = JSON.stringify(request_({ comment: 'x'.repeat(API_MAX_BODY_BYTES) }));
    expect(await call('POST', '/admin/silences', big)).toMatchObject({
      status: 413,
      json: {
        error: { code: 'too_large', message: `body larger than ${API_MAX_BODY_BYTES} bytes` },
      },
    });
    expect(await currentStore.list({ includeExpired: true })).toEqual([]);
  });

  it('DELETE /{id} and POST /{id}/expire expire (200); unknown ids 404; ?all=1 shows expired', async () => {
    const a = (await call('POST', '/admin/silences', JSON.stringify(request_()))).json as Silence;
    const b = (await call('POST', '/admin/silences', JSON.stringify(request_({ duration: '2h' }))))
      .json as Silence;
    clock = T0 + MINUTE;
    expect(await call('DELETE', `/admin/silences/${a.id}`)).toMatchObject({
      status: 200,
      json: { id: a.id, endsAt: T0 + MINUTE, state: 'expired' },
    });
    expect(await call('POST', `/admin/silences/${b.id}/expire`)).toMatchObject({
      status: 200,
      json: { id: b.id, endsAt: T0 + MINUTE, state: 'expired' },
    });
    expect(await call('DELETE', '/admin/silences/unknown')).toMatchObject({ status: 404 });
    expect(await call('POST', '/admin/silences/unknown/expire')).toMatchObject({ status: 404 });
    expect((await call('GET', '/admin/silences')).json).toEqual({ silences: [], next: null });
    const all = (await call('GET', '/admin/silences?all=1')).json as { silences: Silence[] };
    expect(all.silences.map((s) => s.id).sort()).toEqual([a.id, b.id].sort());
  });

  it('405 for other methods; other paths are not handled', async () => {
    expect(await call('PUT', '/admin/silences', '{}')).toMatchObject({
      status: 405,
      headers: { allow: 'GET, POST' },
      json: { error: { code: 'method_not_allowed' } },
    });
    expect(await call('GET', '/admin/silences/x/expire')).toMatchObject({ status: 405 });
    expect(await call('GET', '/admin/silencesx')).toMatchObject({
      status: 404,
      json: { error: 'not a silences route' },
    });
  });
});

function captureIo(env: Record<string, string | undefined> = {}): SilenceIo & {
  stdout: string[];
  stderr: string[];
  codes: number[];
} {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const codes: number[] = [];
  return {
    stdout,
    stderr,
    codes,
    env,
    out: (text) => stdout.push(text),
    err: (text) => stderr.push(text),
    exit: (code) => codes.push(code),
  };
}

function configFor(url: string, adminToken = TOKEN): Config {
  const port = new URL(url).port;
  return parseConfig(
    `upstream: { baseUrl: "http://127.0.0.1:1" }\nredis: { url: "redis://127.0.0.1:6379" }\nserver: { port: ${port}, adminToken: "${adminToken}" }\nchannels: {}\nsubscriptions: []\n`,
    {},
    'test.yaml',
  );
}

async function runCli(
  args: string[],
  io: SilenceIo,
  loadConfig: (explicit?: string) => Promise<Config> = () => Promise.resolve(configFor(http.url)),
): Promise<void> {
  const program = new Command().exitOverride();
  registerSilenceCommands(program, loadConfig, io);
  await program.parseAsync(args, { from: 'user' });
}

describe('bearerMatches (the /admin/* check without the API)', () => {
  it('matches the token only, whatever the case of "Bearer"', () => {
    expect(bearerMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`bearer  ${TOKEN} `, TOKEN)).toBe(true);
    expect(bearerMatches(`Bearer ${TOKEN}x`, TOKEN)).toBe(false);
    expect(bearerMatches('Bearer ', TOKEN)).toBe(false);
    expect(bearerMatches(undefined, TOKEN)).toBe(false);
    expect(bearerMatches(TOKEN, TOKEN)).toBe(false);
  });
});

describe('statuswatch silence (command functions against /api/v1/silences)', () => {
  const adminTarget = (): AdminTarget => ({
    baseUrl: http.url,
    token: TOKEN,
    tokenSource: '--token',
  });

  it('add with every matcher, a duration, author and comment; config gives server and token', async () => {
    const io = captureIo();
    await runCli(
      [
        'silence',
        'add',
        '--service',
        'stripe',
        '--service',
        'adyen,paypal',
        '--event',
        'incident.opened',
        '--subscription',
        'payments',
        '--channel',
        'oncall',
        '--duration',
        '2h',
        '--author',
        'me',
        '--comment',
        'stripe maintenance',
      ],
      io,
    );
    expect(io.stderr).toEqual([]);
    expect(io.codes).toEqual([]);
    const [stored] = await currentStore.list();
    expect(stored).toMatchObject({
      matchers: {
        services: ['stripe', 'adyen', 'paypal'],
        events: ['incident.opened'],
        subscriptions: ['payments'],
        channels: ['oncall'],
      },
      startsAt: T0,
      endsAt: T0 + 2 * HOUR,
      author: 'me',
      comment: 'stripe maintenance',
    });
    expect(io.stdout.join('')).toBe(
      `silence ${stored!.id} created (active): 2027-01-15T08:00:00Z → 2027-01-15T10:00:00Z, service=stripe,adyen,paypal event=incident.opened subscription=payments channel=oncall\n`,
    );
    expect(silences(stored!, target, T0)).toBe(true);
  });

  it('add --until ISO; list prints a table; expire ID; list --all shows it expired', async () => {
    const io = captureIo();
    expect(
      await silenceAdd(
        adminTarget(),
        { event: ['sla.breached'], until: T0 + 3 * HOUR, author: 'bob', comment: 'known\x1b[31m' },
        io,
      ),
    ).toBe(0);
    const [s] = await currentStore.list();
    expect(s).toMatchObject({ endsAt: T0 + 3 * HOUR, matchers: { events: ['sla.breached'] } });

    const listIo = captureIo();
    expect(await silenceList(adminTarget(), {}, listIo)).toBe(0);
    const lines = listIo.stdout.join('').split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+STARTS\s+ENDS\s+MATCHERS\s+AUTHOR\s+COMMENT$/);
    expect(lines[1]?.split(/\s{2,}/)).toEqual([
      s!.id,
      'active',
      '2027-01-15T08:00:00Z',
      '2027-01-15T11:00:00Z',
      'event=sla.breached',
      'bob',
      'known [31m', // the escape character is not passed to the terminal
    ]);
    expect(lines).toHaveLength(3);

    clock = T0 + MINUTE;
    const expireIo = captureIo();
    await runCli(['silence', 'expire', s!.id, '--server', http.url, '--token', TOKEN], expireIo);
    expect(expireIo.stdout).toEqual([`silence ${s!.id} expired at 2027-01-15T08:01:00Z\n`]);
    expect((await currentStore.get(s!.id))?.endsAt).toBe(T0 + MINUTE);

    const emptyIo = captureIo();
    expect(await silenceList(adminTarget(), {}, emptyIo)).toBe(0);
    expect(emptyIo.stdout).toEqual([
      'no active or pending silences (--all includes expired ones)\n',
    ]);
    const allIo = captureIo();
    await runCli(['silence', 'list', '--all'], allIo);
    expect(allIo.stdout.join('')).toContain(`${s!.id}  expired`);
  });

  it('a silence the server rejects: exit 1 with the flag and field named', async () => {
    const io = captureIo();
    const code = await silenceAdd(
      adminTarget(),
      { service: ['stripe'], until: Date.parse('2020-01-01T00:00:00Z'), author: 'me' },
      io,
    );
    expect(code).toBe(1);
    expect(io.stderr.join('')).toBe(
      'statuswatch: the server rejected the silence:\n  --until (endsAt): must end in the future\n',
    );
    expect(await currentStore.list({ includeExpired: true })).toEqual([]);
  });

  it('refuses add without matchers or without an end, before calling the server', async () => {
    const io = captureIo();
    expect(await silenceAdd(adminTarget(), { duration: '1h', author: 'me' }, io)).toBe(1);
    expect(await silenceAdd(adminTarget(), { service: ['x'], author: 'me' }, io)).toBe(1);
    expect(io.stderr).toEqual([
      'statuswatch: give at least one of --service, --event, --subscription, --channel (a silence without matchers would silence everything)\n',
      'statuswatch: give --duration (such as 2h) or --until TIME\n',
    ]);
  });

  it('rejects an unknown event kind and a bad duration as argument errors', async () => {
    await expect(
      runCli(['silence', 'add', '--event', 'incident.exploded', '--duration', '1h'], captureIo()),
    ).rejects.toThrow(/unknown event kind "incident.exploded"/);
    await expect(
      runCli(['silence', 'add', '--service', 'x', '--duration', '2 hours'], captureIo()),
    ).rejects.toThrow(/expected a duration/);
    await expect(
      runCli(
        ['silence', 'add', '--service', 'x', '--duration', '1h', '--until', '2030-01-01T00:00:00Z'],
        captureIo(),
      ),
    ).rejects.toThrow(/'--duration <duration>' cannot be used with option '--until <time>'/);
  });

  it('expire of an unknown id: exit 1 with the server message', async () => {
    const io = captureIo();
    expect(await silenceExpire(adminTarget(), 'nope', io)).toBe(1);
    expect(io.stderr).toEqual([`statuswatch: HTTP 404 from ${http.url}: no silence "nope"\n`]);
  });

  it('$STATUSWATCH_ADMIN_TOKEN wins over the config; a refused token is named by source, never printed', async () => {
    const wrong = 'wrong-token-8d1e5b2a';
    const io = captureIo({ STATUSWATCH_ADMIN_TOKEN: wrong });
    await runCli(['silence', 'list'], io);
    expect(io.codes).toEqual([1]);
    expect(io.stderr).toEqual([
      'statuswatch: the server refused the admin token from $STATUSWATCH_ADMIN_TOKEN (HTTP 401)\n',
    ]);
    const printed = [...io.stdout, ...io.stderr].join('');
    expect(printed).not.toContain(wrong);
    expect(printed).not.toContain(TOKEN);

    const right = captureIo({ STATUSWATCH_ADMIN_TOKEN: TOKEN });
    await runCli(['silence', 'list'], right, () =>
      Promise.resolve(configFor(http.url, 'config-token-is-not-used')),
    );
    expect(right.codes).toEqual([]);
    expect(right.stdout.join('')).not.toContain(TOKEN);
  });

  it('does not load the config when --server and the token are given', async () => {
    const io = captureIo({ STATUSWATCH_ADMIN_TOKEN: TOKEN });
    let loads = 0;
    await runCli(['silence', 'list', '--server', `${http.url}/`], io, () => {
      loads += 1;
      return Promise.reject(new Error('no config here'));
    });
    expect(loads).toBe(0);
    expect(io.codes).toEqual([]);
    expect(io.stdout).toEqual(['no active or pending silences (--all includes expired ones)\n']);
  });

  it('no token anywhere: exit 1 explaining where to put one', async () => {
    const io = captureIo();
    await runCli(['silence', 'list'], io, () => Promise.resolve(configFor(http.url, '')));
    expect(io.codes).toEqual([1]);
    expect(io.stderr).toEqual([
      'statuswatch: no admin token: pass --token, set STATUSWATCH_ADMIN_TOKEN, or set server.adminToken in the config\n',
    ]);
  });

  it('an unreachable server: exit 2', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) =>
      closed.close(() => {
        resolve();
      }),
    );
    const io = captureIo();
    const code = await silenceList(
      { baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, tokenSource: '--token' },
      {},
      io,
    );
    expect(code).toBe(2);
    expect(io.stderr.join('')).toMatch(
      new RegExp(
        `^statuswatch: cannot reach statuswatch at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED`,
      ),
    );
    expect(io.stderr.join('')).not.toContain(TOKEN);
  });
});
