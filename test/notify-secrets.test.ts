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

const cases: Case[] = [
  slackCase('500', { status: 500, body: 'internal_error' }),
  slackCase('404', { status: 404, body: 'no_service' }),
  slackCase('429', { status: 429, headers: { 'retry-after': '3' } }),
  slackCase('connection refused', 'refused'),
  webhookCase('500', { status: 500 }),
  webhookCase('403', { status: 403 }),
  webhookCase('connection refused', 'refused'),
  webhookCase('timeout', { status: 200, hang: true }, 200),
  emailCase('login rejected (535)', 'auth'),
  emailCase('recipient rejected (550)', 'reject'),
  emailCase('connection refused', 'refused'),
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
