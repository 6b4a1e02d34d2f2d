import type { IncomingMessage } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testRedis, type TestRedis } from '../../test/helpers/redis.js';
import { consoleConfigSchema } from './config.js';
import {
  cookiesOf,
  identify,
  overTls,
  sessionCookie,
  SessionStore,
  type ConsoleAuth,
} from './auth.js';
import { FeedStore, atomFeed } from './feeds.js';
import type { Transition } from '../diff/transition.js';

function request(o: {
  headers?: Record<string, string>;
  address?: string;
  tls?: boolean;
}): IncomingMessage {
  return {
    headers: o.headers ?? {},
    socket: { remoteAddress: o.address ?? '127.0.0.1', encrypted: o.tls ?? false },
  } as unknown as IncomingMessage;
}

const auth: ConsoleAuth = {
  authenticate: (token) =>
    Promise.resolve(
      token === 'good'
        ? { id: 'tok1', team: 'payments' }
        : token === 'admin'
          ? { id: 'adm', team: null }
          : null,
    ),
};

let tr: TestRedis;
beforeEach(async () => {
  tr = await testRedis('console');
});
afterEach(async () => {
  await tr.cleanup();
});

describe('console authentication', () => {
  const plain = consoleConfigSchema.parse({});
  const proxied = consoleConfigSchema.parse({
    trustedProxies: ['10.0.0.7'],
    proxyAuth: { teams: { alice: 'payments' }, admins: ['carol'] },
  });

  it('settings: defaults, durations, and addresses checked', () => {
    expect(plain).toEqual({ enabled: true, sessionTtl: 12 * 3_600_000, trustedProxies: [] });
    expect(consoleConfigSchema.parse({ sessionTtl: '30m' }).sessionTtl).toBe(1_800_000);
    expect(proxied.proxyAuth?.header).toBe('X-Forwarded-User');
    expect(consoleConfigSchema.safeParse({ trustedProxies: ['proxy.local'] }).success).toBe(false);
    expect(consoleConfigSchema.safeParse({ proxyAuth: { teams: { a: 'bad team' } } }).success).toBe(
      false,
    );
    expect(consoleConfigSchema.safeParse({ unknown: 1 }).success).toBe(false);
  });

  it('cookies: HttpOnly, SameSite=Strict, Secure over TLS only; parsing takes the first value', () => {
    expect(sessionCookie('abc', 3600, false)).toBe(
      'sw_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=3600',
    );
    expect(sessionCookie('abc', 3600, true)).toMatch(/; Secure$/);
    expect(
      cookiesOf(request({ headers: { cookie: 'a=1; sw_session=x; sw_session=y' } })).get(
        'sw_session',
      ),
    ).toBe('x');
  });

  it('TLS: the socket, or X-Forwarded-Proto from a trusted proxy only', () => {
    expect(overTls(request({ tls: true }), plain)).toBe(true);
    const fwd = { 'x-forwarded-proto': 'https' };
    expect(overTls(request({ headers: fwd }), plain)).toBe(false);
    expect(overTls(request({ headers: fwd, address: '10.0.0.7' }), proxied)).toBe(true);
    expect(overTls(request({ headers: fwd, address: '::ffff:10.0.0.7' }), proxied)).toBe(true);
    expect(overTls(request({ headers: fwd, address: '10.0.0.8' }), proxied)).toBe(false);
  });

  it('bearer, proxy user header (trusted address, mapped user), session', async () => {
    const sessions = new SessionStore(tr.redis, tr.keys, 60_000);
    const o = { auth, sessions, config: proxied };
    expect(
      (await identify(request({ headers: { authorization: 'Bearer good' } }), o))?.viewer,
    ).toEqual({ id: 'tok1', team: 'payments' });
    expect(await identify(request({ headers: { authorization: 'Bearer bad' } }), o)).toBeNull();
    const alice = await identify(
      request({ headers: { 'x-forwarded-user': 'alice' }, address: '10.0.0.7' }),
      o,
    );
    expect(alice?.viewer).toEqual({ id: 'proxy:alice', team: 'payments', label: 'alice' });
    expect(alice?.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(
      (
        await identify(
          request({ headers: { 'x-forwarded-user': 'carol' }, address: '10.0.0.7' }),
          o,
        )
      )?.viewer.team,
    ).toBeNull();
    // Not from the proxy, or not a mapped user: not believed.
    expect(
      await identify(request({ headers: { 'x-forwarded-user': 'alice' }, address: '10.0.0.9' }), o),
    ).toBeNull();
    expect(
      await identify(
        request({ headers: { 'x-forwarded-user': 'mallory' }, address: '10.0.0.7' }),
        o,
      ),
    ).toBeNull();
    // Sessions: stored by hash, expire, can be destroyed, and end when the token no longer holds.
    const s = await sessions.create({ id: 'tok1', team: 'payments' });
    const keys = await tr.redis.keys(`${tr.keys.tag}:console:session:*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain(s.id);
    expect(await tr.redis.pttl(keys[0]!)).toBeGreaterThan(50_000);
    const cookie = { cookie: `sw_session=${s.id}` };
    expect((await identify(request({ headers: cookie }), o))?.csrf).toBe(s.csrf);
    const revoked = { ...o, auth: { ...auth, stillValid: () => Promise.resolve(false) } };
    expect(await identify(request({ headers: cookie }), revoked)).toBeNull();
    expect(await identify(request({ headers: cookie }), o)).toBeNull();
  });
});

describe('Atom feeds', () => {
  it('a rotated secret replaces the old one; only hashes are stored', async () => {
    const feeds = new FeedStore(tr.redis, tr.keys);
    const first = await feeds.rotate('core');
    expect(await feeds.lookup(first)).toBe('core');
    const second = await feeds.rotate('core');
    expect(await feeds.lookup(first)).toBeNull();
    expect(await feeds.lookup(second)).toBe('core');
    expect(await feeds.lookup('../../etc')).toBeNull();
    const dump = JSON.stringify(await tr.redis.hgetall(tr.keys.key('console', 'feed-index')));
    expect(dump).not.toContain(second);
    await feeds.revoke('core');
    expect(await feeds.lookup(second)).toBeNull();
  });

  it('escapes every upstream string and links only to http(s)', () => {
    const t: Transition = {
      id: 't1',
      kind: 'incident.opened',
      feedId: 'x"><script>',
      subject: 'incident:1',
      service: {
        feedId: 'x',
        name: '<img src=x onerror=alert(1)>',
        canonicalUrl: null,
        officialStatusUrl: 'javascript:alert(1)',
      },
      previous: null,
      current: { status: 'investigating' },
      incident: {
        id: '1',
        title: ']]></title><script>',
        status: 'investigating',
        started: 0,
        updateCount: 1,
        latestUpdate: '&amp; <b>',
      },
      observedAt: Date.UTC(2026, 0, 1),
    };
    const xml = atomFeed({
      subscription: 'core',
      selfUrl: 'http://h/feeds/s.atom',
      consoleUrl: 'http://h/',
      transitions: [t],
      now: 0,
    });
    expect(xml).not.toMatch(/<script|<img|javascript:/);
    expect(xml).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(xml).toContain('&amp;amp; &lt;b&gt;');
    expect(xml).toContain(
      '<link rel="alternate" type="text/html" href="http://h/services/x%22%3E%3Cscript%3E"/>',
    );
  });
});
