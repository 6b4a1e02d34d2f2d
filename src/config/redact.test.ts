import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from './load.js';
import { PINO_REDACT_PATHS, REDACTED, redactedConfig, redactText, secretValues } from './redact.js';

const WEBHOOK_KEY = Buffer.alloc(32, 9).toString('base64');
const SECRETS = {
  apiKey: 'sk_live_api_key_value',
  adminToken: 'admin-token-value',
  redisPassword: 'redis p@ss/word',
  slackUrl: 'https://hooks.slack.com/services/T0001/B0001/slacktokenvalue',
  webhookUrl: 'https://hooks.example.com/in/receiver-token-value?sig=abc',
  webhookSecret: `whsec_${WEBHOOK_KEY}`,
  smtpPass: 'smtp-password-value',
  bearer: 'Bearer header-token-value',
};

const YAML = `
upstream: { baseUrl: http://127.0.0.1:4010, apiKey: "\${API_KEY}" }
redis: { url: "redis://default:\${REDIS_PASSWORD}@redis.internal:6379/0" }
server: { adminToken: "\${ADMIN_TOKEN}" }
channels:
  oncall: { type: slack, webhookUrl: "\${SLACK_URL}", username: statuswatch }
  pager:
    type: webhook
    url: "\${WEBHOOK_URL}"
    secret: "\${WEBHOOK_SECRET}"
    headers: { Authorization: "\${BEARER}", X-Team: sre }
  mail:
    type: email
    smtp: { host: smtp.example.com, port: 587, auth: { user: sw, pass: "\${SMTP_PASS}" } }
    from: statuswatch@example.com
    to: [sre@example.com]
subscriptions:
  - { name: all, services: ["*"], channels: [oncall, pager, mail] }
`;

function load() {
  return parseConfig(YAML, {
    API_KEY: SECRETS.apiKey,
    REDIS_PASSWORD: encodeURIComponent(SECRETS.redisPassword),
    ADMIN_TOKEN: SECRETS.adminToken,
    SLACK_URL: SECRETS.slackUrl,
    WEBHOOK_URL: SECRETS.webhookUrl,
    WEBHOOK_SECRET: SECRETS.webhookSecret,
    BEARER: SECRETS.bearer,
    SMTP_PASS: SECRETS.smtpPass,
  });
}

describe('secretValues', () => {
  it('finds every secret of a loaded config, longest first', () => {
    const values = secretValues(load());
    for (const secret of Object.values(SECRETS)) expect(values).toContain(secret);
    expect(values).toContain(encodeURIComponent(SECRETS.redisPassword));
    expect(values).toContain('/services/T0001/B0001/slacktokenvalue');
    expect(values).toContain(WEBHOOK_KEY);
    expect(values).not.toContain('sre');
    expect(values).not.toContain('');
    const lengths = values.map((v) => v.length);
    expect(lengths).toEqual([...lengths].sort((a, b) => b - a));
    expect(new Set(values).size).toBe(values.length);
  });

  it('is empty for a config without secrets', () => {
    const config = parseConfig(
      'upstream: {baseUrl: "http://x"}\nredis: {url: "redis://h:6379"}\nchannels: {}\nsubscriptions: []\n',
      {},
    );
    expect(secretValues(config)).toEqual([]);
  });
});

describe('redactText', () => {
  it('replaces every occurrence of every secret', () => {
    const text = `POST ${SECRETS.slackUrl} failed; key=${SECRETS.apiKey}, again ${SECRETS.apiKey}`;
    expect(redactText(text, secretValues(load()))).toBe(
      `POST ${REDACTED} failed; key=${REDACTED}, again ${REDACTED}`,
    );
  });

  it('redacts a Slack webhook path logged without its origin', () => {
    const text = 'request to /services/T0001/B0001/slacktokenvalue timed out';
    expect(redactText(text, secretValues(load()))).toBe(`request to ${REDACTED} timed out`);
  });

  it('replaces longer secrets first and ignores empty ones', () => {
    expect(redactText('abc abcdef', ['', 'abc', 'abcdef'])).toBe(`${REDACTED} ${REDACTED}`);
    expect(redactText('nothing here', [''])).toBe('nothing here');
  });
});

describe('redactedConfig', () => {
  it('returns a printable deep copy without any secret', () => {
    const config = load();
    const before = JSON.stringify(config);
    const safe = redactedConfig(config);
    const printed = JSON.stringify(safe);
    for (const secret of secretValues(config)) expect(printed).not.toContain(secret);
    expect(printed).not.toContain('slacktokenvalue');
    expect(JSON.stringify(config)).toBe(before);

    expect(safe.upstream.apiKey).toBe(REDACTED);
    expect(safe.server.adminToken).toBe(REDACTED);
    expect(safe.redis.url).toBe(`redis://default:${REDACTED}@redis.internal:6379/0`);
    expect(safe.channels.oncall).toEqual({
      type: 'slack',
      webhookUrl: `https://hooks.slack.com/${REDACTED}`,
      username: 'statuswatch',
    });
    expect(safe.channels.pager).toEqual({
      type: 'webhook',
      url: `https://hooks.example.com/${REDACTED}`,
      secret: REDACTED,
      headers: { Authorization: REDACTED, 'X-Team': 'sre' },
    });
    const mail = safe.channels.mail;
    expect(mail?.type === 'email' ? mail.smtp.auth : undefined).toEqual({
      user: 'sw',
      pass: REDACTED,
    });
    expect(safe.subscriptions).toEqual(config.subscriptions);
  });

  it('leaves absent secrets absent and a password-less redis URL as it is', () => {
    const config = parseConfig(
      'upstream: {baseUrl: "http://x"}\nredis: {url: "redis://h:6379"}\nchannels: {}\nsubscriptions: []\n',
      {},
    );
    const safe = redactedConfig(config);
    expect(safe.upstream.apiKey).toBeUndefined();
    expect(safe.server.adminToken).toBeUndefined();
    expect(safe.redis.url).toBe('redis://h:6379');
  });
});

describe('PINO_REDACT_PATHS', () => {
  function capture() {
    const lines: string[] = [];
    const logger = pino(
      { redact: { paths: PINO_REDACT_PATHS, censor: REDACTED } },
      { write: (line: string) => lines.push(line) },
    );
    return { logger, lines };
  }

  it('keeps config-shaped objects and auth headers out of log lines', () => {
    const config = load();
    const { logger, lines } = capture();
    logger.info({ config }, 'loaded');
    logger.info(config, 'config at the root');
    logger.info({ channel: config.channels.pager }, 'channel');
    logger.info({ channel: config.channels.oncall }, 'channel');
    logger.info({ channel: config.channels.mail }, 'channel');
    logger.info({ headers: { authorization: SECRETS.bearer, 'x-api-key': SECRETS.apiKey } }, 'h');
    logger.info(
      { req: { headers: { authorization: SECRETS.bearer, 'x-api-key': SECRETS.apiKey } } },
      'r',
    );
    logger.info({ upstream: { apiKey: SECRETS.apiKey }, apiKey: SECRETS.apiKey }, 'loose');
    expect(lines).toHaveLength(8);
    const output = lines.join('');
    for (const secret of Object.values(SECRETS)) expect(output).not.toContain(secret);
    expect(output).not.toContain('slacktokenvalue');
    expect(output).toContain(REDACTED);
    // Non-secret fields still appear.
    expect(output).toContain('smtp.example.com');
    expect(output).toContain('"username":"statuswatch"');
  });
});
