/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * The egress policy on real sockets, as an attacker holding one team token would try it, against
 * a daemon (`node dist/cli.js run`) with the default policy: no spelling of a loopback address
 * (nor an /etc/hosts name resolving to loopback) is accepted for any channel kind; a channel that
 * got past the write check (a name that resolved elsewhere then), in every one of those spellings
 * and of every kind, reaches nothing when tested or sent to (listeners on 127.0.0.1 and ::1, on
 * one port, count every connection); the daemon's own port cannot be driven to lock its admin
 * out; an operator's exceptions (`host:port`, an SMTP relay, a CIDR) let through what they name
 * and nothing else, and `configChannels: checked` holds the config file's channels to the policy.
 * Everything listens, and is sent to, on loopback only; the private and link-local addresses
 * below are inputs that must be refused, never connected to.
 */
import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { countingListener, type CountingListener } from './helpers/egress.js';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, SecretBox } from '../src/api/crypto.js';
import { ApiStore } from '../src/api/store.js';
import { createKeys } from '../src/redis.js';
import { killAll, startDaemon, writeConfig, type Daemon } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';
import {
  ADMIN_TOKEN,
  baseConfig,
  client,
  webhookSecret,
  world,
  type World,
} from './api-helpers.js';

const SECRET_KEY = newKey();

type Listener = CountingListener;

/** A listener on `host:port` that counts connections and answers HTTP 200 to what reaches it. */
function listener(host: string, port = 0): Promise<Listener> {
  return countingListener(host, port, { answerHttp: true });
}

/**
 * Listeners on `first` and `second` on one port (so every spelling of either address reaches a
 * counted listener); `second` undefined when it cannot be bound (no IPv6 loopback on the host).
 */
async function listenerPair(
  first: string,
  second: string,
): Promise<{ a: Listener; b: Listener | undefined }> {
  for (let tries = 0; ; tries += 1) {
    const a = await listener(first);
    try {
      return { a, b: await listener(second, a.port) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') return { a, b: undefined };
      await a.close();
      if (code !== 'EADDRINUSE' || tries >= 20) throw err;
    }
  }
}

/**
 * A name of /etc/hosts (other than `localhost`, which the write check knows by name) that
 * resolves to loopback addresses only, checked here with the resolver the daemon uses; undefined
 * when there is none (the cases that need one are skipped).
 */
async function loopbackHostsName(): Promise<string | undefined> {
  const text = await readFile('/etc/hosts', 'utf8').catch(() => '');
  const names = text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim().split(/\s+/).slice(1))
    .flat()
    .filter((n) => /^[a-z][a-z0-9-]*$/i.test(n) && !/^localhost$|\.localhost$/i.test(n));
  for (const name of names) {
    const found = await lookup(name, { all: true }).catch(() => []);
    if (found.length > 0 && found.every((a) => /^127\./.test(a.address) || a.address === '::1'))
      return name;
  }
  return undefined;
}

const HOSTS_NAME = await loopbackHostsName();
const HOSTS_NAMES = HOSTS_NAME === undefined ? [] : [HOSTS_NAME];

/** A channel body of each kind sending to `host` (as written in a URL) and `port`. */
function channelOf(kind: string, host: string, port: number): Record<string, unknown> {
  const base = `http://${host}:${String(port)}`;
  const smtpHost = host.startsWith('[') ? host.slice(1, -1) : host;
  switch (kind) {
    case 'webhook':
      return { type: 'webhook', url: `${base}/hook`, secret: webhookSecret('egress') };
    case 'slack':
      return { type: 'slack', webhookUrl: `${base}/services/T0/B0/x` };
    case 'slack-app':
      return { type: 'slack', botToken: 'xoxb-1-egress', channel: 'C0123', apiUrl: `${base}/api` };
    case 'pagerduty':
      return {
        type: 'pagerduty',
        routingKey: 'R123456789abcdef0123456789abcdef',
        url: `${base}/v2/enqueue`,
      };
    case 'opsgenie':
      return { type: 'opsgenie', apiKey: 'egress-genie-key', url: base };
    case 'teams':
      return { type: 'teams', webhookUrl: `${base}/workflows/x` };
    case 'email':
      return {
        type: 'email',
        smtp: { host: smtpHost, port },
        from: 'statuswatch@example.com',
        to: ['sre@example.com'],
      };
    default:
      throw new Error(kind);
  }
}

const FIELD: Record<string, string> = {
  webhook: 'url',
  slack: 'webhookUrl',
  'slack-app': 'apiUrl',
  pagerduty: 'url',
  opsgenie: 'url',
  teams: 'webhookUrl',
  email: 'smtp.host',
};
const KINDS = Object.keys(FIELD);

/** Every spelling of a loopback address an attacker tried. */
const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  'localhost',
  '[::1]',
  '2130706433',
  '0x7f000001',
  '0177.0.0.1',
  '127.1',
  '0.0.0.0',
  '[::ffff:127.0.0.1]',
];
/** Internal ranges refused as written (never connected to: refused before any socket). */
const INTERNAL_LITERALS = ['169.254.169.254', '10.0.0.1', '192.168.1.1', '100.64.0.1', '[fd00::1]'];

let w: World | undefined;
let d: Daemon | undefined;
/** Listeners on 127.0.0.1 and, on the same port, ::1 (undefined without IPv6 loopback). */
let v4: Listener | undefined;
let v6: Listener | undefined;
let team: ReturnType<typeof client> | undefined;

/** Connections either loopback listener counted. */
const reached = (): number => (v4?.connections ?? 0) + (v6?.connections ?? 0);

beforeAll(async () => {
  w = await world('egress');
  ({ a: v4, b: v6 } = await listenerPair('127.0.0.1', '::1'));
  w.cleanups.push(() => v4?.close() ?? Promise.resolve());
  w.cleanups.push(() => v6?.close() ?? Promise.resolve());
  // The default policy: the base config without the loopback exception the other suites use.
  const config = baseConfig(w);
  const file = await writeConfig(w.dir, {
    ...config,
    server: { port: 0, adminToken: ADMIN_TOKEN },
  });
  d = await startDaemon(file, { STATUSWATCH_SECRET_KEY: SECRET_KEY });
  const created = await client(d.url, ADMIN_TOKEN)('POST', '/api/v1/tokens', { team: 'red' });
  expect(created.status).toBe(201);
  team = client(d.url, created.body.token as string);
}, 60_000);

afterAll(async () => {
  await killAll();
  for (const c of (w?.cleanups ?? []).splice(0).reverse()) await c().catch(() => undefined);
});

/**
 * Channels of team red of every kind at each of `hosts` (the listeners' port), stored without the
 * write check (an ApiStore with no policy), as if their names had resolved to a public address
 * then. Their names.
 */
async function storeLate(prefix: string, hosts: readonly string[]): Promise<string[]> {
  if (w === undefined || v4 === undefined) throw new Error('not started');
  const store = new ApiStore({
    redis: w.tr.redis,
    keys: createKeys(w.tr.prefix),
    config: () => ({ channels: {}, subscriptions: [] }),
    box: SecretBox.fromEnv({ STATUSWATCH_SECRET_KEY: SECRET_KEY }),
  });
  const admin = { tokenId: 'test', team: null, admin: true, address: '127.0.0.1' };
  const names: string[] = [];
  try {
    for (const kind of KINDS) {
      for (const host of hosts) {
        const name = `${prefix}-${kind}-${String(names.length)}`;
        names.push(name);
        await store.putChannel(
          admin,
          { name, team: 'red', ...channelOf(kind, host, v4.port) },
          'create',
        );
      }
    }
  } finally {
    await store.close();
  }
  return names;
}

/** The team's test of each channel fails as a policy refusal, and no listener saw a connection. */
async function expectRefusedAtConnect(names: readonly string[]): Promise<void> {
  if (team === undefined) throw new Error('not started');
  for (const name of names) {
    const res = await team('POST', `/api/v1/channels/${name}/test`);
    expect(res.status, `${name}: ${res.text}`).toBe(200);
    expect(res.body.ok, name).toBe(false);
    expect(res.body.message, name).toMatch(/policy/);
    expect(reached(), name).toBe(0);
  }
}

describe('egress policy (default): a team cannot reach internal addresses', () => {
  it('refuses every loopback spelling and internal range for every channel kind at creation, naming the field', async () => {
    if (team === undefined || v4 === undefined) throw new Error('not started');
    let n = 0;
    for (const kind of KINDS) {
      // With an /etc/hosts name resolving to loopback: judged by what it resolves to now.
      for (const host of [...LOOPBACK_SPELLINGS, ...HOSTS_NAMES, ...INTERNAL_LITERALS]) {
        n += 1;
        const res = await team('POST', '/api/v1/channels', {
          name: `bad-${String(n)}`,
          ...channelOf(kind, host, v4.port),
        });
        expect(res.status, `${kind} ${host}: ${res.text}`).toBe(400);
        expect(res.body.error.field, `${kind} ${host}`).toBe(FIELD[kind]);
        expect(res.body.error.message).toMatch(/egress policy \(server\.egress\)/);
      }
    }
    const list = await team('GET', '/api/v1/channels');
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toMatch(/bad-\d/);
    expect(reached()).toBe(0);
  });

  it('refuses at connect time, in every spelling and for every kind, a channel that got past the write check: tests and deliveries reach nothing', async () => {
    if (w === undefined || d === undefined || team === undefined || v4 === undefined)
      throw new Error('not started');
    // As if each destination had resolved to a public address when written: the channels are
    // stored without the write check. Every test is then refused by the daemon's connector.
    const names = await storeLate('late', LOOPBACK_SPELLINGS);
    expect(names).toHaveLength(LOOPBACK_SPELLINGS.length * KINDS.length);
    await expectRefusedAtConnect(names);
    // A subscription on one of them: the delivery is dead-lettered as a policy failure.
    const sub = await team('POST', '/api/v1/subscriptions', {
      name: 'red-sub',
      services: ['stripe'],
      events: ['incident.opened'],
      channels: [names[0]],
    });
    expect(sub.status, sub.text).toBe(201);
    await waitFor(
      async () => {
        const res = await fetch(`${d?.url ?? ''}/metrics`);
        return /statuswatch_polls_total\{[^}]*kind="incidents"[^}]*\} [1-9]/.test(await res.text());
      },
      { timeoutMs: 20_000, what: 'an incidents poll' },
    );
    w.clock.tick();
    w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Looking' });
    await waitFor(
      async () => {
        const res = await fetch(`${d?.url ?? ''}/metrics`);
        return /statuswatch_deliveries_total\{[^}]*reason="policy"[^}]*\} [1-9]/.test(
          await res.text(),
        );
      },
      { timeoutMs: 30_000, what: 'a delivery refused by the egress policy' },
    );
    expect(reached()).toBe(0);
  }, 90_000);

  it.skipIf(HOSTS_NAME === undefined)(
    `refuses at connect time an /etc/hosts name resolving to loopback (${HOSTS_NAME ?? 'none'}), for every kind`,
    async () => {
      if (HOSTS_NAME === undefined) throw new Error('not started');
      // Stored past the write check (as if it had resolved elsewhere then): refused when the
      // connection is made, on the address the name resolves to at that moment.
      await expectRefusedAtConnect(await storeLate('late-hosts', [HOSTS_NAME]));
      expect(reached()).toBe(0);
    },
  );

  it('a request carrying the loop header (a notifier reaching this installation through its ingress) is refused unchecked and uncounted', async () => {
    if (d === undefined) throw new Error('not started');
    const looped = client(d.url, 'stw_wrong_token_from_a_loop');
    for (let i = 0; i < 12; i += 1) {
      const res = await looped.raw('GET', '/api/v1/channels', undefined, {
        'statuswatch-loop': '1',
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('own_request');
    }
    // Not one of them counted: a wrong token without the header is a 401, not a 429.
    const wrong = await client(d.url, 'stw_wrong_token_plain')('GET', '/api/v1/channels');
    expect(wrong.status).toBe(401);
  });

  it("cannot be pointed at the daemon's own port to lock the admin out", async () => {
    if (d === undefined || team === undefined) throw new Error('not started');
    const port = new URL(d.url).port;
    for (let i = 0; i < 12; i += 1) {
      const res = await team('POST', '/api/v1/channels', {
        name: `self-${String(i)}`,
        type: 'webhook',
        url: `http://127.0.0.1:${port}/admin/silences`,
        headers: { authorization: 'Bearer wrong' },
      });
      expect(res.status).toBe(400);
    }
    const admin = await client(d.url, ADMIN_TOKEN)('GET', '/api/v1/channels');
    expect(admin.status).toBe(200);
  });
});

/** A real SMTP server on 127.0.0.1 that accepts every message and counts them. */
async function acceptingSmtp(): Promise<{
  port: number;
  messages(): number;
  close(): Promise<void>;
}> {
  let messages = 0;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => {
        messages += 1;
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    messages: () => messages,
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

describe("egress policy: operator exceptions and the config file's channels", () => {
  it('host:port, an SMTP relay, a CIDR each let their destination through and nothing else; `configChannels: checked` refuses a config-file channel', async () => {
    if (w === undefined || v4 === undefined) throw new Error('not started');
    const other = await listener('127.0.0.1');
    w.cleanups.push(() => other.close());
    const smtp = await acceptingSmtp();
    w.cleanups.push(() => smtp.close());
    // 127.0.0.2 (allowed by a CIDR) and 127.0.0.1 (not) on one port: the address decides.
    const { a: cidr, b: sameOn1 } = await listenerPair('127.0.0.2', '127.0.0.1');
    if (sameOn1 === undefined) throw new Error('cannot bind 127.0.0.1 next to 127.0.0.2');
    w.cleanups.push(() => cidr.close());
    w.cleanups.push(() => sameOn1.close());
    const file = await writeConfig(w.dir, {
      ...baseConfig(w),
      server: {
        port: 0,
        adminToken: ADMIN_TOKEN,
        egress: {
          allow: [`127.0.0.1:${String(v4.port)}`, `127.0.0.1:${String(smtp.port)}`, '127.0.0.2/32'],
          configChannels: 'checked',
        },
      },
      channels: {
        // The operator's own channel at a loopback address no exception covers.
        'cfg-loop': {
          type: 'webhook',
          url: `http://127.0.0.1:${String(other.port)}/hook`,
          secret: webhookSecret('cfg'),
        },
      },
    });
    const d2 = await startDaemon(file, { STATUSWATCH_SECRET_KEY: SECRET_KEY });
    try {
      const made = await client(d2.url, ADMIN_TOKEN)('POST', '/api/v1/tokens', { team: 'blue' });
      const blue = client(d2.url, made.body.token as string);

      // host:port: that port of 127.0.0.1, no other.
      const ok = await blue('POST', '/api/v1/channels', {
        name: 'relay',
        ...channelOf('webhook', '127.0.0.1', v4.port),
      });
      expect(ok.status, ok.text).toBe(201);
      const before = v4.connections;
      const tested = await blue('POST', '/api/v1/channels/relay/test');
      expect(tested.body.ok, tested.text).toBe(true);
      expect(v4.connections).toBeGreaterThan(before);
      // Every request a notifier sends carries the loop header.
      expect(v4.received.join('')).toMatch(/\r\nstatuswatch-loop: 1\r\n/i);
      const refused = await blue('POST', '/api/v1/channels', {
        name: 'other-port',
        ...channelOf('webhook', '127.0.0.1', other.port),
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.field).toBe('url');

      // An internal SMTP relay allowed as host:port: the e-mail goes through it.
      const mail = await blue('POST', '/api/v1/channels', {
        name: 'mail-relay',
        ...channelOf('email', '127.0.0.1', smtp.port),
      });
      expect(mail.status, mail.text).toBe(201);
      const mailed = await blue('POST', '/api/v1/channels/mail-relay/test');
      expect(mailed.body.ok, mailed.text).toBe(true);
      expect(smtp.messages()).toBe(1);
      const mailOther = await blue('POST', '/api/v1/channels', {
        name: 'mail-other',
        ...channelOf('email', '127.0.0.1', other.port),
      });
      expect(mailOther.status).toBe(400);
      expect(mailOther.body.error.field).toBe('smtp.host');

      // A CIDR: 127.0.0.2 passes, 127.0.0.1 on the same port stays refused.
      const inCidr = await blue('POST', '/api/v1/channels', {
        name: 'in-cidr',
        ...channelOf('webhook', '127.0.0.2', cidr.port),
      });
      expect(inCidr.status, inCidr.text).toBe(201);
      const cidrTested = await blue('POST', '/api/v1/channels/in-cidr/test');
      expect(cidrTested.body.ok, cidrTested.text).toBe(true);
      expect(cidr.connections).toBeGreaterThan(0);
      const outCidr = await blue('POST', '/api/v1/channels', {
        name: 'out-cidr',
        ...channelOf('webhook', '127.0.0.1', sameOn1.port),
      });
      expect(outCidr.status).toBe(400);
      expect(outCidr.body.error.message).toMatch(/loopback address, refused by the egress policy/);

      // `configChannels: checked`: the config file's channel follows the policy when sent.
      const cfg = await client(d2.url, ADMIN_TOKEN)('POST', '/api/v1/channels/cfg-loop/test');
      expect(cfg.status, cfg.text).toBe(200);
      expect(cfg.body.ok, cfg.text).toBe(false);
      expect(cfg.body.message).toMatch(/policy/);

      expect(other.connections).toBe(0);
      expect(sameOn1.connections).toBe(0);
    } finally {
      d2.proc.signal('SIGTERM');
      await d2.proc.waitForExit(15_000);
    }
  }, 60_000);
});
