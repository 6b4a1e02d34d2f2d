/**
 * Contract (secrets never leave: README.md, "What it does"): whatever way a send fails, the
 * DeliveryError a notifier throws — message, stack, JSON and the whole inspected cause chain —
 * holds none of the channel's secrets. Runs on every channel type through the registry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { channelConfigSchema, type ChannelConfig } from '../src/config/schema.js';
import { CHANNEL_TYPES } from '../src/notify/kinds.js';
import { createNotifier } from '../src/notify/registry.js';
import { DeliveryError } from '../src/notify/types.js';
import {
  exposedText,
  notification,
  refusedUrl,
  startReceiver,
  startSmtp,
  transition,
  type Reply,
} from './notify-helpers.js';

const SLACK_TOKEN_PATH = '/services/T0SECRET/B0SECRET/xoxbSlackWebhookToken42';
const WEBHOOK_PATH = '/hook/rcv-secret-path?token=query-Token-777';
const WEBHOOK_SECRET = `whsec_${Buffer.from('webhook-signing-secret-bytes!!').toString('base64')}`;
const WEBHOOK_AUTH = 'Bearer receiver-auth-TOKEN-55';
const SMTP_PASSWORD = 'smtp-Sup3r-Secret-pw';
const TEAMS_PATH =
  '/workflows/wf0secret/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers&sv=1.0&sig=TeamsSig-Secret_42';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Case {
  name: string;
  config: () => Promise<{ config: ChannelConfig; secrets: string[] }>;
}

async function httpUrl(reply: Reply | 'refused', path: string): Promise<string> {
  if (reply === 'refused') return refusedUrl(path);
  const receiver = await startReceiver(() => reply, path);
  cleanups.push(() => receiver.close());
  return receiver.url;
}

function slackCase(label: string, reply: Reply | 'refused'): Case {
  return {
    name: `slack: ${label}`,
    async config() {
      const url = await httpUrl(reply, SLACK_TOKEN_PATH);
      return {
        config: channelConfigSchema.parse({ type: 'slack', webhookUrl: url }),
        secrets: [url, SLACK_TOKEN_PATH, 'xoxbSlackWebhookToken42'],
      };
    },
  };
}

function webhookCase(label: string, reply: Reply | 'refused', timeoutMs?: number): Case {
  return {
    name: `webhook: ${label}`,
    async config() {
      const url = await httpUrl(reply, WEBHOOK_PATH);
      return {
        config: channelConfigSchema.parse({
          type: 'webhook',
          url,
          secret: WEBHOOK_SECRET,
          headers: { Authorization: WEBHOOK_AUTH },
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
        }),
        secrets: [
          url,
          'rcv-secret-path',
          'query-Token-777',
          WEBHOOK_SECRET,
          WEBHOOK_SECRET.slice(6),
          WEBHOOK_AUTH,
        ],
      };
    },
  };
}

function emailCase(label: string, mode: 'auth' | 'refused' | 'reject'): Case {
  return {
    name: `email: ${label}`,
    async config() {
      let port: number;
      if (mode === 'refused') {
        port = Number(new URL(await refusedUrl()).port);
      } else {
        const sink = await startSmtp(
          mode === 'auth'
            ? { auth: { user: 'sw', pass: 'the-right-one' } }
            : { auth: { user: 'sw', pass: SMTP_PASSWORD }, rcptCode: 550 },
        );
        cleanups.push(() => sink.close());
        port = sink.port;
      }
      return {
        config: channelConfigSchema.parse({
          type: 'email',
          smtp: { host: '127.0.0.1', port, pool: false, auth: { user: 'sw', pass: SMTP_PASSWORD } },
          from: 'statuswatch@example.com',
          to: ['sre@example.com'],
        }),
        secrets: [
          SMTP_PASSWORD,
          Buffer.from(SMTP_PASSWORD).toString('base64'),
          Buffer.from(`\u0000sw\u0000${SMTP_PASSWORD}`).toString('base64'),
        ],
      };
    },
  };
}

function teamsCase(label: string, reply: Reply | 'refused'): Case {
  return {
    name: `teams: ${label}`,
    async config() {
      const url = await httpUrl(reply, TEAMS_PATH);
      return {
        config: channelConfigSchema.parse({ type: 'teams', webhookUrl: url }),
        secrets: [url, 'wf0secret', 'TeamsSig-Secret_42'],
      };
    },
  };
}

const OPSGENIE_KEY = 'eb243592-faa2-4ba2-a551-1afdf565c889';

function opsgenieCase(label: string, reply: Reply | 'refused'): Case {
  return {
    name: `opsgenie: ${label}`,
    async config() {
      const url = new URL(await httpUrl(reply, '/')).origin;
      return {
        config: channelConfigSchema.parse({ type: 'opsgenie', apiKey: OPSGENIE_KEY, url }),
        secrets: [OPSGENIE_KEY, `GenieKey ${OPSGENIE_KEY}`],
      };
    },
  };
}

const PD_ROUTING_KEY = 'R0UT1NGKEYs3cr3t0123456789abcdef';

function pagerdutyCase(label: string, reply: Reply | 'refused'): Case {
  return {
    name: `pagerduty: ${label}`,
    async config() {
      const url = await httpUrl(reply, '/v2/enqueue');
      return {
        config: channelConfigSchema.parse({ type: 'pagerduty', routingKey: PD_ROUTING_KEY, url }),
        secrets: [PD_ROUTING_KEY],
      };
    },
  };
}

const SLACK_BOT_TOKEN = 'xoxb-1234567890-0987654321-SlackBotSecretToken';

function slackAppCase(label: string, reply: Reply | 'refused'): Case {
  return {
    name: `slack: app mode, ${label}`,
    async config() {
      const apiUrl = (await httpUrl(reply, '/api/chat.postMessage')).replace(
        /\/chat\.postMessage$/,
        '',
      );
      return {
        config: channelConfigSchema.parse({
          type: 'slack',
          botToken: SLACK_BOT_TOKEN,
          channel: 'C0123ABCD',
          apiUrl,
        }),
        secrets: [SLACK_BOT_TOKEN, '0987654321-SlackBotSecretToken'],
      };
    },
  };
}

const cases: Case[] = [
  slackCase('500', { status: 500, body: 'internal_error' }),
  slackCase('404', { status: 404, body: 'no_service' }),
  slackCase('429', { status: 429, headers: { 'retry-after': '3' } }),
  slackCase('connection refused', 'refused'),
  slackAppCase('invalid_auth (HTTP 200, ok: false)', {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: `{"ok":false,"error":"invalid_auth","token":"${SLACK_BOT_TOKEN}"}`,
  }),
  slackAppCase('ratelimited (429)', {
    status: 429,
    headers: { 'content-type': 'application/json', 'retry-after': '3' },
    body: '{"ok":false,"error":"ratelimited"}',
  }),
  slackAppCase('500', { status: 500 }),
  slackAppCase('connection refused', 'refused'),
  webhookCase('500', { status: 500 }),
  webhookCase('403', { status: 403 }),
  webhookCase('connection refused', 'refused'),
  webhookCase('timeout', { status: 200, hang: true }, 200),
  emailCase('login rejected (535)', 'auth'),
  emailCase('recipient rejected (550)', 'reject'),
  emailCase('connection refused', 'refused'),
  teamsCase('500', { status: 500, body: '{"error":{"code":"InternalServerError"}}' }),
  teamsCase('400', { status: 400, body: '{"error":{"code":"InvalidRequestContent"}}' }),
  teamsCase('429', { status: 429, headers: { 'retry-after': '2' } }),
  teamsCase('connection refused', 'refused'),
  opsgenieCase('401', {
    status: 401,
    body: `{"message":"Key format is not valid: ${OPSGENIE_KEY}","took":0.001,"requestId":"r1"}`,
  }),
  opsgenieCase('422', { status: 422, body: '{"message":"Request body is not processable"}' }),
  opsgenieCase('500', { status: 500 }),
  opsgenieCase('connection refused', 'refused'),
  pagerdutyCase('400', {
    status: 400,
    body: `{"status":"invalid event","message":"Event object is invalid","errors":["Invalid routing key ${PD_ROUTING_KEY}"]}`,
  }),
  pagerdutyCase('429', { status: 429, headers: { 'retry-after': '5' } }),
  pagerdutyCase('503', { status: 503 }),
  pagerdutyCase('connection refused', 'refused'),
];

describe('no notifier error leaks a channel secret', () => {
  it('covers every channel type', () => {
    const covered = new Set(cases.map((c) => c.name.split(':')[0]));
    expect([...covered].sort()).toEqual([...CHANNEL_TYPES].sort());
  });

  it.each(cases)('$name', async ({ config: make }) => {
    const { config, secrets } = await make();
    const notifier = createNotifier(config);
    cleanups.push(() => notifier.close());
    const caught: unknown = await notifier.send(notification([transition()])).then(
      () => null,
      (error: unknown) => error,
    );
    expect(caught).toBeInstanceOf(DeliveryError);
    const text = await exposedText(caught);
    expect(text.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
