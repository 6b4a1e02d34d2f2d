import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { StatuswatchError } from '../errors.js';
import { EVENT_KINDS } from './events.js';
import {
  ConfigError,
  DEFAULT_CONFIG_PATH,
  loadConfig,
  parseConfig,
  resolveConfigPath,
} from './load.js';
import type { Config } from './schema.js';
import { DEFAULT_QUOTAS } from '../api/quota-config.js';

const SECRET_B64 = Buffer.alloc(24, 7).toString('base64');
const WEBHOOK_SECRET = `whsec_${SECRET_B64}`;

const FULL_YAML = `
upstream:
  baseUrl: https://status.example.com/
  apiKey: \${STATUS_API_KEY:-}
  requestsPerMinute: \${RPM:-auto}
  timeoutMs: 5000
redis:
  url: \${REDIS_URL:-redis://127.0.0.1:6379}
  prefix: sw-test:1
poll:
  status: 30s
  incidents: 1m30s
  sla: 1h
rules:
  scoreDrop: 2.5
server:
  adminToken: \${ADMIN_TOKEN:-}
channels:
  oncall:   { type: slack, webhookUrl: "\${SLACK_WEBHOOK_URL}", mention: "<!here> <@U0123ABC>" }
  sre-mail:
    type: email
    smtp:
      host: smtp.example.com
      port: \${SMTP_PORT}
      secure: "\${SMTP_SECURE:-false}"
      auth: { user: sw, pass: "\${SMTP_PASSWORD}" }
      tls: { rejectUnauthorized: false }
    from: "statuswatch <statuswatch@example.com>"
    to: [sre@example.com, ops@example.com]
    subjectPrefix: "$\${literal}"
  pager:
    type: webhook
    url: https://hooks.example.com/statuswatch
    secret: "\${WEBHOOK_SECRET}"
    headers: { Authorization: "Bearer \${PAGER_TOKEN}" }
    timeoutMs: 2000
subscriptions:
  - name: payments
    services: [stripe, adyen]
    categories: [payments]
    events: [incident.opened, incident.updated, incident.resolved, sla.at_risk, score.dropped]
    channels: [oncall, pager]
    group: 30s
    repeat: 4h
    quietHours: { timezone: Europe/Berlin, windows: ["Mon-Fri 22:00-07:00", "Sat-Sun"], except: [sla.breached] }
    digest: { schedule: "0 8 * * 1", timezone: Europe/Berlin }
  - name: all
    services: ["*"]
    channels: [sre-mail, sre-mail]
`;

const FULL_ENV = {
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T000/B000/slacksecret',
  SMTP_PORT: '2525',
  SMTP_PASSWORD: 'smtp-pass-123',
  WEBHOOK_SECRET,
  PAGER_TOKEN: 'pager-token-xyz',
};

describe('parseConfig: a valid config', () => {
  it('parses to exact values with defaults, env substitution and durations in ms', () => {
    const config = parseConfig(FULL_YAML, FULL_ENV, 'full.yaml');
    const expected: Config = {
      upstream: {
        baseUrl: 'https://status.example.com',
        apiKey: undefined,
        requestsPerMinute: 'auto',
        timeoutMs: 5000,
      },
      redis: { url: 'redis://127.0.0.1:6379', prefix: 'sw-test:1' },
      poll: { status: 30_000, incidents: 90_000, sla: 3_600_000, scores: 900_000 },
      rules: {
        scoreDrop: 2.5,
        statusConfirmations: 2,
        slaForecast: 72 * 3_600_000,
        scoreTrend: { points: 10, window: 7 * 24 * 3_600_000 },
      },
      daemon: { threads: 'auto', roles: ['poll', 'route', 'deliver'] },
      server: {
        port: 8080,
        adminToken: undefined,
        quotas: DEFAULT_QUOTAS,
        egress: { allow: [], configChannels: 'exempt' },
        slackInteractionsPath: '/slack/interactions',
      },
      channels: {
        oncall: {
          type: 'slack',
          webhookUrl: 'https://hooks.slack.com/services/T000/B000/slacksecret',
          mention: '<!here> <@U0123ABC>',
        },
        'sre-mail': {
          type: 'email',
          smtp: {
            host: 'smtp.example.com',
            port: 2525,
            secure: false,
            auth: { user: 'sw', pass: 'smtp-pass-123' },
            tls: { rejectUnauthorized: false },
            pool: true,
          },
          from: 'statuswatch <statuswatch@example.com>',
          to: ['sre@example.com', 'ops@example.com'],
          subjectPrefix: '${literal}',
        },
        pager: {
          type: 'webhook',
          url: 'https://hooks.example.com/statuswatch',
          secret: WEBHOOK_SECRET,
          headers: { Authorization: 'Bearer pager-token-xyz' },
          timeoutMs: 2000,
        },
      },
      subscriptions: [
        {
          name: 'payments',
          services: ['stripe', 'adyen'],
          categories: ['payments'],
          events: [
            'incident.opened',
            'incident.updated',
            'incident.resolved',
            'sla.at_risk',
            'score.dropped',
          ],
          channels: ['oncall', 'pager'],
          group: 30_000,
          repeat: 14_400_000,
          quietHours: {
            timezone: 'Europe/Berlin',
            windows: [
              {
                text: 'Mon-Fri 22:00-07:00',
                days: [1, 2, 3, 4, 5],
                startMinute: 1320,
                endMinute: 420,
                crossesMidnight: true,
              },
              {
                text: 'Sat-Sun',
                days: [0, 6],
                startMinute: 0,
                endMinute: 1440,
                crossesMidnight: false,
              },
            ],
            except: ['sla.breached'],
          },
          digest: { schedule: '0 8 * * 1', timezone: 'Europe/Berlin' },
        },
        {
          name: 'all',
          services: ['*'],
          categories: [],
          events: [...EVENT_KINDS],
          channels: ['sre-mail'],
        },
      ],
    };
    expect(config).toEqual(expected);
  });

  it('takes numbers, tokens and keys from the environment', () => {
    const config = parseConfig(FULL_YAML, {
      ...FULL_ENV,
      STATUS_API_KEY: 'key-1234',
      RPM: '90',
      ADMIN_TOKEN: 'admin-5678',
      REDIS_URL: 'rediss://user:pw@redis.internal:6380/2',
      SMTP_SECURE: 'true',
    });
    expect(config.upstream.apiKey).toBe('key-1234');
    expect(config.upstream.requestsPerMinute).toBe(90);
    expect(config.server.adminToken).toBe('admin-5678');
    expect(config.redis.url).toBe('rediss://user:pw@redis.internal:6380/2');
    const mail = config.channels['sre-mail'];
    expect(mail?.type === 'email' ? mail.smtp.secure : 'not email').toBe(true);
  });

  it('loads the shipped example given its environment', async () => {
    const file = new URL('../../config/statuswatch.example.yaml', import.meta.url).pathname;
    const config = await loadConfig(file, {
      SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T1/B2/abc',
      WEBHOOK_SECRET,
    });
    expect(Object.keys(config.channels)).toEqual(['oncall', 'sre-mail', 'pager']);
    expect(config.subscriptions.map((s) => s.name)).toEqual(['payments', 'everything-to-sre']);
    expect(config.subscriptions[0]?.repeat).toBe(4 * 3_600_000);
    expect(config.poll).toEqual({
      status: 60_000,
      incidents: 60_000,
      sla: 900_000,
      scores: 900_000,
    });
    expect(config.upstream.apiKey).toBeUndefined();
  });

  it('a blank secret (spaces, a newline) is not set, as an empty one', () => {
    for (const blank of ['', '   ', '\n']) {
      const config = parseConfig(FULL_YAML, { ...FULL_ENV, STATUS_API_KEY: blank }, 'full.yaml');
      expect(config.upstream.apiKey, JSON.stringify(blank)).toBeUndefined();
    }
    const set = parseConfig(FULL_YAML, { ...FULL_ENV, STATUS_API_KEY: 'key-1234' }, 'full.yaml');
    expect(set.upstream.apiKey).toBe('key-1234');
  });
});

type Loose = Record<string, unknown>;
type Subscription = Loose & {
  events: unknown[];
  channels: unknown[];
  quietHours: Loose & { windows: unknown[] };
  digest: Loose;
};
/** The base config's shape, loose enough for each table row to break one thing. */
interface Doc {
  [key: string]: unknown;
  upstream: Loose;
  redis: Loose;
  channels: {
    [name: string]: unknown;
    oncall: Loose;
    'sre-mail': Loose & { smtp: Loose };
    pager: Loose;
  };
  subscriptions: [Subscription, Loose & { channels: unknown[] }];
}

/** A small valid config as data; each table row breaks one thing. */
function baseConfig(): Doc {
  return {
    upstream: { baseUrl: 'http://127.0.0.1:4010' },
    redis: { url: 'redis://127.0.0.1:6379' },
    channels: {
      oncall: { type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T/B/x' },
      'sre-mail': {
        type: 'email',
        smtp: { host: 'smtp.example.com', port: 587 },
        from: 'statuswatch@example.com',
        to: ['sre@example.com'],
      },
      pager: { type: 'webhook', url: 'https://hooks.example.com/x', secret: WEBHOOK_SECRET },
    },
    subscriptions: [
      {
        name: 'payments',
        services: ['stripe'],
        events: ['incident.opened', 'incident.updated', 'incident.resolved'],
        channels: ['oncall', 'pager'],
        quietHours: { timezone: 'Europe/Berlin', windows: ['Mon-Fri 22:00-07:00', 'Sat-Sun'] },
        digest: { schedule: '0 8 * * 1', timezone: 'Europe/Berlin' },
      },
      { name: 'mail', categories: ['payments'], channels: ['sre-mail'] },
    ],
  };
}

function issuesOf(text: string, env: Record<string, string> = {}): ConfigError {
  try {
    parseConfig(text, env, 'test.yaml');
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

function issuesFor(change: (config: Doc) => void): ConfigError {
  const config = baseConfig();
  change(config);
  return issuesOf(stringify(config));
}

describe('parseConfig: every invalid field names its path', () => {
  it('accepts the base config of the table', () => {
    expect(parseConfig(stringify(baseConfig()), {}).subscriptions).toHaveLength(2);
  });

  it.each<[string, (c: Doc) => void, string, RegExp]>([
    [
      'unknown top-level key',
      (c) => (c.subscription = []),
      'subscription',
      /unknown key \(expected one of: upstream, redis, poll/,
    ],
    ['unknown upstream key', (c) => (c.upstream.timeout = 5), 'upstream.timeout', /unknown key/],
    [
      'unknown channel key',
      (c) => (c.channels.oncall.webhookURL = 'x'),
      'channels.oncall.webhookURL',
      /unknown key/,
    ],
    [
      'unknown smtp key',
      (c) => (c.channels['sre-mail'].smtp.user = 'x'),
      'channels.sre-mail.smtp.user',
      /unknown key/,
    ],
    [
      'unknown subscription key',
      (c) => (c.subscriptions[0].evnets = []),
      'subscriptions[0].evnets',
      /unknown key/,
    ],
    [
      'unknown quietHours key',
      (c) => (c.subscriptions[0].quietHours.exceptions = []),
      'subscriptions[0].quietHours.exceptions',
      /unknown key/,
    ],
    ['missing section', (c) => Reflect.deleteProperty(c, 'upstream'), 'upstream', /^required$/],
    ['missing channels', (c) => Reflect.deleteProperty(c, 'channels'), 'channels', /^required$/],
    [
      'bad duration',
      (c) => (c.poll = { status: '5 minutes' }),
      'poll.status',
      /expected a duration/,
    ],
    [
      'bare number as duration',
      (c) => (c.poll = { sla: 60 }),
      'poll.sla',
      /duration string with a unit/,
    ],
    [
      'duration below the minimum',
      (c) => (c.poll = { incidents: '500ms' }),
      'poll.incidents',
      /at least 1s/,
    ],
    [
      'bad group duration',
      (c) => (c.subscriptions[0].group = '30 s'),
      'subscriptions[0].group',
      /duration/,
    ],
    [
      'repeat below a minute',
      (c) => (c.subscriptions[0].repeat = '10s'),
      'subscriptions[0].repeat',
      /at least 1m/,
    ],
    [
      'bad base url',
      (c) => (c.upstream.baseUrl = 'not a url'),
      'upstream.baseUrl',
      /http:\/\/ or https:\/\/ URL/,
    ],
    [
      'ftp base url',
      (c) => (c.upstream.baseUrl = 'ftp://example.com'),
      'upstream.baseUrl',
      /http:\/\/ or https:\/\/ URL/,
    ],
    [
      'bad slack url',
      (c) => (c.channels.oncall.webhookUrl = 'hooks.slack.com/x'),
      'channels.oncall.webhookUrl',
      /URL/,
    ],
    [
      'bad webhook url',
      (c) => (c.channels.pager.url = 'mailto:x@example.com'),
      'channels.pager.url',
      /URL/,
    ],
    [
      'bad redis url',
      (c) => (c.redis.url = 'http://127.0.0.1:6379'),
      'redis.url',
      /redis:\/\/ or rediss:\/\//,
    ],
    ['bad redis prefix', (c) => (c.redis.prefix = 'a b'), 'redis.prefix', /letters, digits/],
    [
      'zero requests per minute',
      (c) => (c.upstream.requestsPerMinute = 0),
      'upstream.requestsPerMinute',
      /"auto" or a positive integer/,
    ],
    [
      'word requests per minute',
      (c) => (c.upstream.requestsPerMinute = 'max'),
      'upstream.requestsPerMinute',
      /"auto" or a positive integer/,
    ],
    [
      'zero confirmations',
      (c) => (c.rules = { statusConfirmations: 0 }),
      'rules.statusConfirmations',
      /integer between 1 and/,
    ],
    ['zero score drop', (c) => (c.rules = { scoreDrop: 0 }), 'rules.scoreDrop', /greater than 0/],
    [
      'port out of range',
      (c) => (c.server = { port: 70000 }),
      'server.port',
      /integer between 0 and 65535/,
    ],
    [
      'wrong channel type',
      (c) => (c.channels.oncall.type = 'carrier-pigeon'),
      'channels.oncall.type',
      /unknown channel type; expected one of: slack, email, webhook/,
    ],
    [
      'missing channel type',
      (c) => Reflect.deleteProperty(c.channels.oncall, 'type'),
      'channels.oncall.type',
      /unknown channel type/,
    ],
    [
      'channel not a map',
      (c) => ((c.channels as Loose).oncall = 'slack'),
      'channels.oncall',
      /expected a channel definition/,
    ],
    [
      'bad channel name',
      (c) => (c.channels['on call'] = c.channels.oncall),
      'channels["on call"]',
      /invalid channel name/,
    ],
    [
      'webhook secret without prefix',
      (c) => (c.channels.pager.secret = SECRET_B64),
      'channels.pager.secret',
      /"whsec_" followed by the base64/,
    ],
    [
      'webhook secret too short',
      (c) => (c.channels.pager.secret = `whsec_${Buffer.alloc(8).toString('base64')}`),
      'channels.pager.secret',
      /at least 16/,
    ],
    [
      'webhook secret not base64',
      (c) => (c.channels.pager.secret = 'whsec_not base64 at all!!'),
      'channels.pager.secret',
      /base64/,
    ],
    [
      'reserved webhook header',
      (c) => (c.channels.pager.headers = { 'Webhook-Signature': 'x' }),
      'channels.pager.headers.Webhook-Signature',
      /cannot be overridden/,
    ],
    [
      'header value with CRLF',
      (c) => (c.channels.pager.headers = { 'X-A': 'a\r\nX-B: b' }),
      'channels.pager.headers.X-A',
      /line breaks/,
    ],
    [
      'email recipient',
      (c) => (c.channels['sre-mail'].to = ['sre@example.com', 'nope']),
      'channels.sre-mail.to[1]',
      /e-mail address/,
    ],
    [
      'no email recipients',
      (c) => (c.channels['sre-mail'].to = []),
      'channels.sre-mail.to',
      /at least one recipient/,
    ],
    [
      'email sender',
      (c) => (c.channels['sre-mail'].from = 'statuswatch'),
      'channels.sre-mail.from',
      /e-mail address/,
    ],
    [
      'subject prefix with newline',
      (c) => (c.channels['sre-mail'].subjectPrefix = 'a\nBcc: x@example.com'),
      'channels.sre-mail.subjectPrefix',
      /line breaks/,
    ],
    [
      'smtp port missing',
      (c) => Reflect.deleteProperty(c.channels['sre-mail'].smtp, 'port'),
      'channels.sre-mail.smtp.port',
      /^required$/,
    ],
    [
      'smtp secure not boolean',
      (c) => (c.channels['sre-mail'].smtp.secure = 'yes'),
      'channels.sre-mail.smtp.secure',
      /true or false/,
    ],
    [
      'slack mention',
      (c) => (c.channels.oncall.mention = '@here'),
      'channels.oncall.mention',
      /Slack mentions/,
    ],
    [
      'unknown event kind',
      (c) => (c.subscriptions[0].events[2] = 'incident.closed'),
      'subscriptions[0].events[2]',
      /unknown event kind; expected one of: incident.opened/,
    ],
    [
      'empty events',
      (c) => (c.subscriptions[0].events = []),
      'subscriptions[0].events',
      /at least one event kind/,
    ],
    [
      'unknown except kind',
      (c) => (c.subscriptions[0].quietHours.except = ['sla.breach']),
      'subscriptions[0].quietHours.except[0]',
      /unknown event kind/,
    ],
    [
      'unknown channel reference',
      (c) => (c.subscriptions[0].channels[1] = 'pagr'),
      'subscriptions[0].channels[1]',
      /unknown channel \(defined: oncall, sre-mail, pager\)/,
    ],
    [
      'no channels',
      (c) => (c.subscriptions[1].channels = []),
      'subscriptions[1].channels',
      /at least one channel/,
    ],
    [
      'duplicate subscription names',
      (c) => (c.subscriptions[1].name = 'payments'),
      'subscriptions[1].name',
      /duplicate subscription name \(already used by subscriptions\[0\]\)/,
    ],
    [
      'bad subscription name',
      (c) => (c.subscriptions[1].name = 'a:b'),
      'subscriptions[1].name',
      /expected a name made of/,
    ],
    [
      'neither services nor categories',
      (c) => Reflect.deleteProperty(c.subscriptions[1], 'categories'),
      'subscriptions[1]',
      /at least one of services or categories/,
    ],
    [
      'empty services',
      (c) => (c.subscriptions[0].services = []),
      'subscriptions[0]',
      /at least one of services or categories/,
    ],
    [
      'bad category slug',
      (c) => (c.subscriptions[1].categories = ['Pay ments']),
      'subscriptions[1].categories[0]',
      /category slug/,
    ],
    [
      'bad timezone',
      (c) => (c.subscriptions[0].quietHours.timezone = 'Europe/Berln'),
      'subscriptions[0].quietHours.timezone',
      /unknown time zone/,
    ],
    [
      'bad digest timezone',
      (c) => (c.subscriptions[0].digest.timezone = 'CEST+1'),
      'subscriptions[0].digest.timezone',
      /unknown time zone/,
    ],
    [
      'bad quiet window',
      (c) => (c.subscriptions[0].quietHours.windows[1] = 'Weekend'),
      'subscriptions[0].quietHours.windows[1]',
      /unknown day name/,
    ],
    [
      'quiet window bad time',
      (c) => (c.subscriptions[0].quietHours.windows[0] = 'Mon-Fri 22:00-31:00'),
      'subscriptions[0].quietHours.windows[0]',
      /between 00:00 and 23:59/,
    ],
    [
      'no quiet windows',
      (c) => (c.subscriptions[0].quietHours.windows = []),
      'subscriptions[0].quietHours.windows',
      /at least one window/,
    ],
    [
      'bad cron',
      (c) => (c.subscriptions[0].digest.schedule = '0 8 * *'),
      'subscriptions[0].digest.schedule',
      /5 fields/,
    ],
    [
      'bad cron field',
      (c) => (c.subscriptions[0].digest.schedule = '0 25 * * 1'),
      'subscriptions[0].digest.schedule',
      /hour must be between 0 and 23/,
    ],
    [
      'subscription not a map',
      (c) => ((c.subscriptions as unknown[])[1] = 'mail'),
      'subscriptions[1]',
      /expected a map, got a string/,
    ],
  ])('%s → %s', (_name, change, path, message) => {
    const error = issuesFor(change);
    const matching = error.issues.filter((issue) => issue.path === path);
    expect(
      matching.map((issue) => issue.message),
      JSON.stringify(error.issues),
    ).toContainEqual(expect.stringMatching(message));
    expect(error.message).toContain(`  ${path} (line `);
  });

  it('reports several problems at once, in document order, one per line of the message', () => {
    const error = issuesFor((c) => {
      c.upstream.baseUrl = 'nope';
      c.poll = { status: 'soon' };
      c.channels.oncall.type = 'carrier-pigeon';
      c.subscriptions[0].events[0] = 'incident.open';
      c.subscriptions[0].channels[0] = 'missing';
      c.subscriptions[1].name = 'payments';
    });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toBeInstanceOf(StatuswatchError);
    expect(error.code).toBe('config_invalid');
    expect(error.name).toBe('ConfigError');
    expect(error.source).toBe('test.yaml');
    // `poll` is added last to the document, so it comes last: issues follow the file's lines.
    expect(error.issues.map((issue) => issue.path)).toEqual([
      'upstream.baseUrl',
      'channels.oncall.type',
      'subscriptions[0].events[0]',
      'subscriptions[0].channels[0]',
      'subscriptions[1].name',
      'poll.status',
    ]);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('invalid config test.yaml: 6 problems');
    expect(lines).toHaveLength(7);
    expect(lines[1]).toMatch(/^ {2}upstream\.baseUrl \(line 2\): expected an absolute http/);
  });

  it('reports a YAML syntax error with its line and column', () => {
    const error = issuesOf('upstream:\n  baseUrl: http://x\n  apiKey: [a, b\nredis: {}\n');
    expect(error.code).toBe('config_invalid');
    expect(error.issues.length).toBeGreaterThan(0);
    expect(error.issues[0]?.path).toMatch(/^line [34], column \d+$/);
    expect(error.issues[0]?.message).toMatch(/^YAML syntax error: /);
    expect(error.message).toMatch(/line [34], column \d+: YAML syntax error/);
  });

  it('rejects duplicate keys instead of letting the last one win', () => {
    const error = issuesOf('upstream: {baseUrl: http://a}\nupstream: {baseUrl: http://b}\n');
    expect(error.issues).toEqual([
      { path: 'line 2, column 1', message: 'YAML syntax error: Map keys must be unique' },
    ]);
  });

  it('rejects an empty file and a non-map document', () => {
    expect(issuesOf('').issues[0]?.message).toMatch(/the config is empty/);
    expect(issuesOf('- a\n- b\n').issues).toEqual([
      { path: '(root)', message: 'expected a map, got a list', line: 1 },
    ]);
  });
});

describe('parseConfig: environment substitution', () => {
  it('names the path and variable of a missing ${VAR} without piling on consequences', () => {
    const env: Record<string, string> = { ...FULL_ENV };
    delete env.SLACK_WEBHOOK_URL;
    const error = issuesOf(FULL_YAML, env);
    expect(error.issues).toEqual([
      {
        path: 'channels.oncall.webhookUrl',
        message:
          'environment variable SLACK_WEBHOOK_URL is not set (use ${SLACK_WEBHOOK_URL:-} to allow an empty value)',
        line: 19,
      },
    ]);
  });

  it('keeps $${...} literal and does not expand keys', () => {
    const config = parseConfig(FULL_YAML, FULL_ENV);
    const mail = config.channels['sre-mail'];
    expect(mail?.type === 'email' ? mail.subjectPrefix : undefined).toBe('${literal}');
  });

  it('cannot inject structure through a variable', () => {
    const error = issuesOf(FULL_YAML, {
      ...FULL_ENV,
      SMTP_PORT: '25\n      evil: true',
    });
    expect(error.issues.map((i) => i.path)).toEqual(['channels.sre-mail.smtp.port']);
  });
});

describe('errors never contain secrets', () => {
  const secrets = {
    STATUS_API_KEY: 'sk_live_apikey_0123456789',
    ADMIN_TOKEN: 'admin_token_0123456789',
    REDIS_URL: 'http://default:redis_password_0123@redis.internal:6379',
    SLACK_WEBHOOK_URL: 'hooks.slack.com/services/T000/B000/slack_token_0123456789',
    WEBHOOK_SECRET: 'whsec_tooshort_webhook_secret_0123',
    SMTP_PASSWORD: 'smtp_password_0123456789',
    PAGER_TOKEN: 'pager_token_0123456789',
  };
  const yaml = `
upstream: { baseUrl: "\${STATUS_API_KEY}", apiKey: "\${STATUS_API_KEY}", apiKye: "\${STATUS_API_KEY}" }
redis: { url: "\${REDIS_URL}" }
server: { adminToken: "\${ADMIN_TOKEN}", port: "\${ADMIN_TOKEN}" }
channels:
  oncall: { type: slack, webhookUrl: "\${SLACK_WEBHOOK_URL}", username: 5 }
  pager: { type: webhook, url: "\${PAGER_TOKEN}", secret: "\${WEBHOOK_SECRET}", headers: { "\${PAGER_TOKEN}": x } }
  mail:
    type: email
    smtp: { host: h, port: "\${SMTP_PASSWORD}", auth: { user: u, pass: "\${SMTP_PASSWORD}", extra: "\${SMTP_PASSWORD}" } }
    from: "\${SMTP_PASSWORD}"
    to: ["\${SMTP_PASSWORD}"]
subscriptions:
  - { name: "\${ADMIN_TOKEN}x:", services: ["*"], events: ["\${STATUS_API_KEY}"], channels: ["\${PAGER_TOKEN}"] }
`;

  it('validation failures on secret-bearing fields echo no secret', () => {
    const error = issuesOf(yaml, secrets);
    const rendered = [
      error.message,
      JSON.stringify(error.issues),
      String(error),
      inspect(error, { depth: 10 }),
      error.stack ?? '',
    ].join('\n');
    for (const secret of Object.values(secrets)) {
      expect(rendered).not.toContain(secret);
    }
    // Also no fragment of the secrets (the distinctive part of each).
    expect(rendered).not.toMatch(/0123/);
    // The problems are still all reported, by path.
    const paths = error.issues.map((i) => i.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'upstream.baseUrl',
        'upstream.apiKye',
        'redis.url',
        'server.port',
        'channels.oncall.webhookUrl',
        'channels.pager.url',
        'channels.pager.secret',
        'channels.mail.smtp.port',
        'channels.mail.smtp.auth.extra',
        'channels.mail.from',
        'channels.mail.to[0]',
        'subscriptions[0].name',
        'subscriptions[0].events[0]',
      ]),
    );
  });

  it('a YAML syntax error does not quote the offending source', () => {
    const error = issuesOf('upstream:\n  apiKey: "sk_literal_secret_value\n');
    expect(error.issues.length).toBeGreaterThan(0);
    expect(error.message).not.toContain('sk_literal_secret_value');
    expect(JSON.stringify(error.issues)).not.toContain('sk_literal_secret_value');
  });
});

describe('loadConfig and resolveConfigPath', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'statuswatch-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a file', async () => {
    const file = join(dir, 'ok.yaml');
    await writeFile(file, FULL_YAML);
    const config = await loadConfig(file, FULL_ENV);
    expect(config.channels.pager).toEqual({
      type: 'webhook',
      url: 'https://hooks.example.com/statuswatch',
      secret: WEBHOOK_SECRET,
      headers: { Authorization: 'Bearer pager-token-xyz' },
      timeoutMs: 2000,
    });
  });

  it('uses the file name as the source of errors', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'upstream: {}\n');
    const error: unknown = await loadConfig(file, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).source).toBe(file);
    expect((error as ConfigError).message.split('\n')[0]).toBe(
      `invalid config ${file}: 4 problems`,
    );
    expect((error as ConfigError).issues).toEqual([
      { path: 'upstream.baseUrl', message: 'required', line: 1 },
      { path: 'redis', message: 'required', line: 1 },
      { path: 'channels', message: 'required', line: 1 },
      { path: 'subscriptions', message: 'required', line: 1 },
    ]);
  });

  it('reports a missing file as config_not_found', async () => {
    const file = join(dir, 'missing.yaml');
    const error: unknown = await loadConfig(file, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config_not_found');
    expect((error as ConfigError).message).toContain(file);
    expect((error as ConfigError).issues).toEqual([
      { path: '(file)', message: 'file not found (set --config or STATUSWATCH_CONFIG)' },
    ]);
  });

  it('reports an unreadable path as config_unreadable', async () => {
    const sub = join(dir, 'a-directory');
    await mkdir(sub);
    const error: unknown = await loadConfig(sub, {}).catch((e: unknown) => e);
    expect((error as ConfigError).code).toBe('config_unreadable');
    expect((error as ConfigError).issues[0]?.message).toBe('cannot read the file (EISDIR)');
  });

  it('resolves --config, then $STATUSWATCH_CONFIG, then the default', () => {
    expect(resolveConfigPath('a.yaml', { STATUSWATCH_CONFIG: 'b.yaml' })).toBe('a.yaml');
    expect(resolveConfigPath(undefined, { STATUSWATCH_CONFIG: 'b.yaml' })).toBe('b.yaml');
    expect(resolveConfigPath('', { STATUSWATCH_CONFIG: '' })).toBe(DEFAULT_CONFIG_PATH);
    expect(resolveConfigPath(undefined, {})).toBe('config/statuswatch.yaml');
  });
});
