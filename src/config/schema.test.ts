import { describe, expect, expectTypeOf, it } from 'vitest';
import { decodeWebhookSecret } from '../notify/webhook/config.js';
import { isSlackMention } from '../notify/slack/config.js';
import type { SlackKindConfig } from '../notify/slack/index.js';
import { isMailbox } from '../notify/email/config.js';
import type { EventKind } from './events.js';
import type { QuietWindow } from './quiet-hours.js';
import {
  CHANNEL_TYPES,
  channelConfigSchema,
  type ChannelConfig,
  type Config,
  type EmailChannelConfig,
  type WebhookChannelConfig,
} from './schema.js';

describe('Config types', () => {
  it('exposes durations as numbers and channels as a discriminated union', () => {
    expectTypeOf<Config['poll']['status']>().toEqualTypeOf<number>();
    expectTypeOf<Config['upstream']['requestsPerMinute']>().toEqualTypeOf<number | 'auto'>();
    expectTypeOf<Config['subscriptions'][number]['events']>().toEqualTypeOf<EventKind[]>();
    expectTypeOf<Config['subscriptions'][number]['group']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<
      NonNullable<Config['subscriptions'][number]['quietHours']>['windows']
    >().toEqualTypeOf<QuietWindow[]>();
    // One member per kind, each the kind's own parsed config type.
    expectTypeOf<Extract<ChannelConfig, { type: 'slack' }>>().toEqualTypeOf<SlackKindConfig>();
    expectTypeOf<Extract<ChannelConfig, { type: 'email' }>>().toEqualTypeOf<EmailChannelConfig>();
    expectTypeOf<
      Extract<ChannelConfig, { type: 'webhook' }>
    >().toEqualTypeOf<WebhookChannelConfig>();
    expectTypeOf<ChannelConfig['type']>().toEqualTypeOf<(typeof CHANNEL_TYPES)[number]>();
  });
});

describe('channel schemas', () => {
  it('parse each channel type on its own', () => {
    const slack = channelConfigSchema.parse({
      type: 'slack',
      webhookUrl: 'http://127.0.0.1:9/hook',
    });
    expect(slack).toEqual({ type: 'slack', webhookUrl: 'http://127.0.0.1:9/hook' });
    const email = channelConfigSchema.parse({
      type: 'email',
      smtp: { host: '127.0.0.1', port: '2525', secure: 'false' },
      from: 'a@example.com',
      to: ['b@example.com'],
    });
    expect(email).toEqual({
      type: 'email',
      smtp: { host: '127.0.0.1', port: 2525, secure: false, pool: true },
      from: 'a@example.com',
      to: ['b@example.com'],
    });
  });

  it.each([
    ['<!here>', true],
    ['<!channel> <@U0123ABC>', true],
    ['<!subteam^S0123ABC|@oncall>', true],
    ['<#C0123ABC>', true],
    ['@here', false],
    ['<!here', false],
    ['<https://evil.example.com|click>', false],
    ['', false],
  ])('slack mention %j → %s', (mention, ok) => {
    expect(isSlackMention(mention)).toBe(ok);
  });

  it.each([
    ['a@example.com', true],
    ['Statuswatch <a@example.com>', true],
    ['a@example.com\r\nBcc: x@example.com', false],
    ['Name <not-an-address>', false],
    ['plain', false],
  ])('mailbox %j → %s', (from, ok) => {
    expect(isMailbox(from)).toBe(ok);
  });

  it('decodes a Standard Webhooks secret to its HMAC key', () => {
    const key = Buffer.alloc(16, 1);
    expect(decodeWebhookSecret(`whsec_${key.toString('base64')}`)).toEqual(key);
    expect(decodeWebhookSecret(key.toString('base64'))).toBeUndefined();
    expect(decodeWebhookSecret(`whsec_${Buffer.alloc(15).toString('base64')}`)).toBeUndefined();
    expect(decodeWebhookSecret('whsec_AAAA*AAA')).toBeUndefined();
    expect(decodeWebhookSecret('whsec_')).toBeUndefined();
  });
});
