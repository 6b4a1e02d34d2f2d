/**
 * Every config key a real daemon starts with. A config that `check-config` accepts must also run:
 * one key whose section the daemon read differently from the loader (the console's section did,
 * and stopped the daemon at start) would otherwise only show in production. The config below sets
 * every key of the config schema (each channel kind with all its fields, every subscription
 * option, the console section, Redis with a password); the first test fails when the schema gains
 * a key this config does not set, so a new key is started here before it ships. The keys that
 * cannot share one config (Redis Cluster and Sentinel instead of one server) are listed with the
 * suite that starts a daemon with them.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema } from '../src/config/schema.js';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { startRedisServer, type RedisServer } from './helpers/global-setup.js';
import {
  freePort,
  killAll,
  runCli,
  startDaemon,
  tempDir,
  writeConfig,
  type Daemon,
} from './helpers/process.js';
import { deletePrefix } from './helpers/redis.js';
import { Redis } from 'ioredis';

const API_KEY = 'sk_everykey_APIKEY_0123456789';
const ADMIN_TOKEN = 'adm_everykey_ADMINTOKEN_0123456789abcdef';
const REDIS_PASSWORD = 'everykey-REDIS-pass-0123';
const PROXY = '127.0.0.40';
const SECRETS = {
  slackWebhook: 'https://hooks.slack.test/services/T000/B000/EVERYKEYslackPATH',
  botToken: 'xoxb-1234-5678-EVERYKEYbotTOKEN',
  signingSecret: 'EVERYKEYsigningSECRET0123456789',
  smtpPass: 'everykey-SMTP-pass-0123',
  webhookSecret: `whsec_${Buffer.from('everykey-webhook-signing-key!!').toString('base64')}`,
  webhookHeader: 'Bearer EVERYKEY-header-token-0123',
  teamsUrl:
    'https://prod.westeurope.logic.test/workflows/EVERYKEYwf/triggers/manual/paths/invoke?api-version=1&sig=EVERYKEYteamsSIG',
  routingKey: 'EVERYKEYroutingKEY0123456789abcd',
  genieKey: 'EVERYKEY-genie-key-0123456789',
};

/** Message templates (docs/templates.md): a kind's own and the `default` of the others. */
const TEMPLATES = {
  'incident.opened': { title: '{{ service.name }}: {{ incident.title }}', text: '{{ summary }}' },
  default: { title: '{{ event }}: {{ service.name }}', text: '{{ change }}' },
};

/** Keys no single config can set next to a Redis URL, and the suite whose daemon starts with each. */
const ELSEWHERE: Record<string, string> = {
  'redis.cluster': 'test/redis-cluster.test.ts',
  'redis.sentinels': 'test/redis-sentinel.test.ts',
  'redis.name': 'test/redis-sentinel.test.ts',
  'redis.sentinelPassword':
    'src/config/redis-config.test.ts (parsing; no sentinel with a password is started)',
  // With one server the password is in the URL (as here); these two are for cluster and sentinels.
  'redis.username':
    'src/config/redis-config.test.ts (parsing; no cluster with a password is started)',
  'redis.password':
    'src/config/redis-config.test.ts (parsing; no cluster with a password is started)',
};

function everyKeyConfig(o: { simUrl: string; redisUrl: string; prefix: string; sink: string }) {
  const kinds = ['incident.opened', 'incident.resolved', 'sla.at_risk', 'score.dropped'];
  return {
    upstream: { baseUrl: o.simUrl, apiKey: API_KEY, requestsPerMinute: 6000, timeoutMs: 5000 },
    redis: { url: o.redisUrl, prefix: o.prefix },
    poll: { status: '1s', incidents: '1s', sla: '15m', scores: '15m' },
    rules: {
      scoreDrop: 5,
      statusConfirmations: 2,
      slaForecast: '72h',
      scoreTrend: { points: 10, window: '7d' },
    },
    daemon: { threads: 2, roles: ['poll', 'route', 'deliver'] },
    server: {
      port: 0,
      host: '127.0.0.1',
      adminToken: ADMIN_TOKEN,
      publicUrl: 'https://statuswatch.example.com/',
      console: {
        enabled: true,
        sessionTtl: '2h',
        trustedProxies: [PROXY],
        proxyAuth: { header: 'X-Auth-User', teams: { alice: 'payments' }, admins: ['carol'] },
      },
      quotas: {
        channels: 40,
        subscriptions: 150,
        silences: 100,
        tokens: 10,
        bytes: 2 * 1024 * 1024,
        objectBytes: 32 * 1024,
      },
      // The config file's channels follow the policy too; their loopback sink is the exception.
      egress: { allow: ['127.0.0.0/8', 'localhost:25'], configChannels: 'checked' },
      slackInteractionsPath: '/hooks/slack-interactions',
    },
    channels: {
      'slack-hook': {
        type: 'slack',
        webhookUrl: SECRETS.slackWebhook,
        username: 'statuswatch',
        iconEmoji: ':rotating_light:',
        mention: '<!here>',
        timeoutMs: 4000,
        templates: TEMPLATES,
      },
      'slack-app': {
        type: 'slack',
        botToken: SECRETS.botToken,
        signingSecret: SECRETS.signingSecret,
        channel: 'C0123ABCD',
        apiUrl: `${o.sink}/slack/api`,
        replyBroadcast: 'all',
        username: 'statuswatch',
        iconEmoji: ':rotating_light:',
        mention: '<!here>',
        timeoutMs: 4000,
        templates: TEMPLATES,
      },
      mail: {
        type: 'email',
        smtp: {
          host: '127.0.0.1',
          port: 2525,
          secure: false,
          requireTLS: false,
          auth: { user: 'statuswatch', pass: SECRETS.smtpPass },
          tls: { rejectUnauthorized: true },
          pool: true,
        },
        from: 'statuswatch <statuswatch@example.test>',
        to: ['sre@example.test'],
        subjectPrefix: '[statuswatch]',
        templates: TEMPLATES,
      },
      hook: {
        type: 'webhook',
        url: `${o.sink}/hook`,
        secret: SECRETS.webhookSecret,
        headers: { 'X-Team': 'sre', Authorization: SECRETS.webhookHeader },
        timeoutMs: 4000,
        templates: TEMPLATES,
      },
      teams: { type: 'teams', webhookUrl: SECRETS.teamsUrl, timeoutMs: 4000, templates: TEMPLATES },
      pd: {
        type: 'pagerduty',
        routingKey: SECRETS.routingKey,
        url: `${o.sink}/v2/enqueue`,
        severity: { 'incident.opened': 'critical' },
        page: ['sla.forecast'],
        timeoutMs: 4000,
        templates: TEMPLATES,
      },
      genie: {
        type: 'opsgenie',
        apiKey: SECRETS.genieKey,
        url: `${o.sink}/genie`,
        priority: { 'incident.opened': 'P2' },
        responders: [
          { type: 'team', name: 'sre' },
          { type: 'user', username: 'oncall@example.test' },
          { type: 'schedule', id: '4513b7ea-3b91-438f-b7e4-e3e54af9147c' },
        ],
        tags: ['statuswatch'],
        timeoutMs: 4000,
        templates: TEMPLATES,
      },
    },
    subscriptions: [
      {
        name: 'payments',
        services: ['stripe', 'adyen'],
        categories: ['payments'],
        events: kinds,
        channels: ['slack-hook', 'slack-app', 'mail', 'hook', 'teams', 'pd', 'genie'],
        group: '30s',
        repeat: '4h',
        quietHours: {
          timezone: 'Europe/Berlin',
          windows: ['Mon-Fri 22:00-07:00', 'Sat-Sun'],
          except: ['incident.opened'],
        },
        digest: { schedule: '0 8 * * 1', timezone: 'Europe/Berlin' },
        templates: {
          hook: {
            'incident.opened': {
              title: '{{ summary }}',
              text: '{{ summary }} ({{ subscription }})',
            },
          },
        },
      },
    ],
  };
}

/** Every key path of the config schema's input (`a.b`, `a.*.b` for maps, `a[].b` for lists). */
function schemaPaths(): Set<string> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Node;
  const defs = schema.$defs ?? {};
  const out = new Set<string>();
  const walk = (node: Node | undefined, path: string): void => {
    if (node === undefined) return;
    if (node.$ref !== undefined) {
      walk(defs[node.$ref.split('/').pop() ?? ''], path);
      return;
    }
    for (const list of [node.anyOf, node.oneOf, node.allOf])
      for (const n of list ?? []) walk(n, path);
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const p = path === '' ? key : `${path}.${key}`;
      out.add(p);
      walk(child, p);
    }
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${path}.*`);
    if (node.items !== undefined) walk(node.items, `${path}[]`);
  };
  walk(schema, '');
  return out;
}

interface Node {
  $ref?: string;
  $defs?: Record<string, Node>;
  anyOf?: Node[];
  oneOf?: Node[];
  allOf?: Node[];
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  items?: Node;
}

/** The key paths a config sets, in `schemaPaths`' notation (map keys of a record as `*`). */
function configPaths(value: unknown, path: string, maps: Set<string>, out: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) configPaths(item, `${path}[]`, maps, out);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    const p = maps.has(path) ? `${path}.*` : path === '' ? key : `${path}.${key}`;
    out.add(p);
    configPaths(child, p, maps, out);
  }
}

let sim: Simulator;
let redis: RedisServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let file = '';
let redisUrl = '';
const prefix = `swtest-everykey-${String(process.pid)}`;

beforeAll(async () => {
  sim = createSimulator({
    services: 40,
    seed: 5,
    rateLimit: false,
    keys: { [API_KEY]: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] } },
  });
  const simUrl = await sim.listen(0, '127.0.0.1');
  const port = await freePort();
  redis = await startRedisServer({ host: '127.0.0.1', port, password: REDIS_PASSWORD });
  redisUrl = `redis://default:${REDIS_PASSWORD}@127.0.0.1:${String(port)}`;
  tmp = await tempDir();
  // Nothing is sent in this test (first sight is silent): the receivers may as well not answer.
  const sink = `http://127.0.0.1:${String(await freePort())}`;
  file = await writeConfig(tmp.dir, everyKeyConfig({ simUrl, redisUrl, prefix, sink }));
});

afterAll(async () => {
  await killAll();
  const client = new Redis(redisUrl, { lazyConnect: true });
  await client.connect().then(
    () => deletePrefix(client, prefix),
    () => undefined,
  );
  client.disconnect();
  await redis.stop();
  await sim.close();
  await tmp.cleanup();
});

describe('a config with every key', () => {
  it('sets every key of the config schema (or names the suite that does)', () => {
    const config = everyKeyConfig({ simUrl: 'x', redisUrl: 'x', prefix: 'x', sink: 'x' });
    const set = new Set<string>();
    const maps = ['channels', 'channels.*.templates', 'subscriptions[].templates'];
    configPaths(config, '', new Set([...maps, 'subscriptions[].templates.*']), set);
    const missing = [...schemaPaths()].filter((p) => !set.has(p) && ELSEWHERE[p] === undefined);
    expect(missing).toEqual([]);
    // And the list of exceptions holds only keys the schema still has.
    const paths = schemaPaths();
    expect(Object.keys(ELSEWHERE).filter((p) => !paths.has(p))).toEqual([]);
  });

  it('passes check-config, and the daemon runs with it, answers as configured and stops cleanly', async () => {
    const checked = await runCli(['check-config', '--config', file]);
    expect(checked.code, checked.stderr).toBe(0);

    const d: Daemon = await startDaemon(file);
    // The console section is in force: the trusted proxy's user header logs alice in.
    const dispatcher = new Agent({ localAddress: PROXY });
    const page = await request(`${d.url}/`, { dispatcher, headers: { 'x-auth-user': 'alice' } });
    const html = await page.body.text();
    await dispatcher.close();
    expect(page.statusCode).toBe(200);
    expect(html).toContain('payments');
    // A user the proxy names but the config does not map is nobody, whatever the name.
    for (const user of ['mallory', 'constructor', 'toString', '__proto__']) {
      const proxy = new Agent({ localAddress: PROXY });
      const res = await request(`${d.url}/`, {
        dispatcher: proxy,
        headers: { 'x-auth-user': user },
      });
      await res.body.dump();
      await proxy.close();
      expect(res.statusCode, user).toBe(303);
    }
    // Not from the proxy: the header is nobody.
    const direct = await request(`${d.url}/`, { headers: { 'x-auth-user': 'alice' } });
    await direct.body.dump();
    expect(direct.statusCode).toBe(303);

    d.proc.signal('SIGTERM');
    const exit = await d.proc.waitForExit(20_000);
    expect(exit.code, d.proc.output()).toBe(0);
    const output = d.proc.output();
    const errors = output.split('\n').filter((l) => /"level":"(error|fatal)"/.test(l));
    expect(errors).toEqual([]);
    for (const secret of [...Object.values(SECRETS), REDIS_PASSWORD, API_KEY, ADMIN_TOKEN])
      expect(output.includes(secret), 'a secret in the output').toBe(false);
  });
});
