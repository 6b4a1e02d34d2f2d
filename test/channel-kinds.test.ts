/**
 * Every channel kind, through the paths every kind shares: `notify-test` delivers to a local
 * stand-in written from the vendor's documentation, `render` previews every event kind, and
 * neither they nor `check-config` print a secret. A kind added to `src/notify/kinds.ts` without a
 * case here fails "covers every channel kind".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { EVENT_KINDS } from '../src/config/events.js';
import type { ChannelConfig } from '../src/config/schema.js';
import { checkConfigReport } from '../src/commands/check-config.js';
import { notifyTest } from '../src/commands/notify-test.js';
import { renderForChannel } from '../src/commands/render.js';
import { startOpsgenieReceiver } from '../src/demo/receivers/opsgenie.js';
import { startPagerdutyReceiver } from '../src/demo/receivers/pagerduty.js';
import { startSlackApiReceiver } from '../src/demo/receivers/slack-api.js';
import { startTeamsReceiver, TEAMS_RECEIVER_SIG } from '../src/demo/receivers/teams.js';
import { CHANNEL_TYPES } from '../src/notify/kinds.js';
import { startReceiver, startSmtp } from './notify-helpers.js';

const SECRETS = {
  slackPath: '/services/T0KINDS/B0KINDS/kindsWebhookTokenPart',
  botToken: 'xoxb-42-43-KindsBotTokenSecret',
  smtpPass: 'kinds-smtp-Secret-pass',
  webhookSecret: `whsec_${Buffer.from('kinds-webhook-signing-key!!').toString('base64')}`,
  webhookPath: '/hook/kinds-secret-path',
  routingKey: 'KINDSr0utingKey00000000000000000',
  genieKey: '6f0c1c7e-0000-4000-8000-kindsgeniekey',
  teamsSig: TEAMS_RECEIVER_SIG,
};

interface KindCase {
  name: string;
  type: ChannelConfig['type'];
  config: ChannelConfig;
  /** How many requests/messages the stand-in has accepted so far. */
  received: () => number;
}

const closers: (() => Promise<void>)[] = [];
const cases: KindCase[] = [];

beforeAll(async () => {
  const slack = await startReceiver(undefined, SECRETS.slackPath);
  const slackApp = await startSlackApiReceiver({
    token: SECRETS.botToken,
    channels: ['C0KINDS01'],
  });
  const smtp = await startSmtp({ auth: { user: 'sw', pass: SECRETS.smtpPass } });
  const webhook = await startReceiver(undefined, SECRETS.webhookPath);
  const pagerduty = await startPagerdutyReceiver();
  const opsgenie = await startOpsgenieReceiver({ apiKey: SECRETS.genieKey });
  const teams = await startTeamsReceiver();
  closers.push(
    () => slack.close(),
    () => slackApp.close(),
    () => smtp.close(),
    () => webhook.close(),
    () => pagerduty.close(),
    () => opsgenie.close(),
    () => teams.close(),
  );
  const raw: Record<
    string,
    { type: ChannelConfig['type']; fields: object; received: () => number }
  > = {
    'kind-slack': {
      type: 'slack',
      fields: { webhookUrl: slack.url },
      received: () => slack.received.length,
    },
    'kind-slack-app': {
      type: 'slack',
      fields: { botToken: SECRETS.botToken, channel: 'C0KINDS01', apiUrl: slackApp.url },
      received: () => slackApp.calls.length,
    },
    'kind-email': {
      type: 'email',
      fields: {
        smtp: {
          host: '127.0.0.1',
          port: smtp.port,
          pool: false,
          auth: { user: 'sw', pass: SECRETS.smtpPass },
        },
        from: 'statuswatch@example.com',
        to: ['sre@example.com'],
      },
      received: () => smtp.mails.length,
    },
    'kind-webhook': {
      type: 'webhook',
      fields: { url: webhook.url, secret: SECRETS.webhookSecret },
      received: () => webhook.received.length,
    },
    'kind-pagerduty': {
      type: 'pagerduty',
      fields: { routingKey: SECRETS.routingKey, url: pagerduty.url },
      received: () => pagerduty.events.length,
    },
    'kind-opsgenie': {
      type: 'opsgenie',
      fields: { apiKey: SECRETS.genieKey, url: opsgenie.url },
      received: () => opsgenie.requests.filter((r) => r.status === 202).length,
    },
    'kind-teams': {
      type: 'teams',
      fields: { webhookUrl: teams.url },
      received: () => teams.cards.length,
    },
  };
  const yaml = JSON.stringify({
    upstream: { baseUrl: 'http://127.0.0.1:9' },
    redis: { url: 'redis://127.0.0.1:6379' },
    channels: Object.fromEntries(
      Object.entries(raw).map(([name, c]) => [name, { type: c.type, ...c.fields }]),
    ),
    subscriptions: [{ name: 'all', services: ['*'], channels: Object.keys(raw) }],
  });
  const config = parseConfig(yaml, {}, 'kinds');
  for (const [name, c] of Object.entries(raw)) {
    const parsed = config.channels[name];
    if (parsed === undefined) throw new Error(`channel ${name} did not parse`);
    cases.push({ name, type: c.type, config: parsed, received: c.received });
  }
});

afterAll(async () => {
  await Promise.allSettled(closers.map((close) => close()));
});

function secretsIn(text: string): string[] {
  const leaks = [
    SECRETS.slackPath,
    'kindsWebhookTokenPart',
    SECRETS.botToken,
    SECRETS.smtpPass,
    SECRETS.webhookSecret,
    SECRETS.webhookSecret.slice(6),
    SECRETS.webhookPath,
    SECRETS.routingKey,
    SECRETS.genieKey,
    SECRETS.teamsSig,
  ];
  return leaks.filter((secret) => text.includes(secret));
}

describe('every channel kind', () => {
  it('covers every channel kind', () => {
    expect([...new Set(cases.map((c) => c.type))].sort()).toEqual([...CHANNEL_TYPES].sort());
  });

  it('notify-test delivers through each kind to its stand-in', async () => {
    for (const c of cases) {
      const before = c.received();
      const result = await notifyTest(c.name, c.config);
      expect(result.text, c.name).toContain(`sent a test notification to ${c.name}`);
      expect(result.ok, c.name).toBe(true);
      expect(c.received(), c.name).toBeGreaterThan(before);
      expect(secretsIn(result.text), c.name).toEqual([]);
    }
  });

  it('render previews every event kind for each kind, with no secret in it', () => {
    for (const c of cases) {
      for (const kind of EVENT_KINDS) {
        const text = renderForChannel(kind, c.name, c.config, Date.UTC(2026, 0, 1));
        expect(text.length, `${c.name} ${kind}`).toBeGreaterThan(50);
        expect(secretsIn(text), `${c.name} ${kind}`).toEqual([]);
      }
    }
  });

  it('check-config lists each kind without a secret', async () => {
    const config = parseConfig(
      JSON.stringify({
        upstream: { baseUrl: 'http://127.0.0.1:9' },
        redis: { url: 'redis://127.0.0.1:6379' },
        channels: Object.fromEntries(cases.map((c) => [c.name, c.config])),
        subscriptions: [],
      }),
      {},
      'kinds',
    );
    const report = await checkConfigReport('kinds.yaml', config, { offline: true });
    for (const c of cases) expect(report.text).toContain(`  ${c.name}: ${c.type}`);
    expect(secretsIn(report.text)).toEqual([]);
  });
});
