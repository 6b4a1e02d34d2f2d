/**
 * Slack app mode: the config fields of a channel that posts through the Web API with a bot token
 * (one living message per episode) instead of an incoming webhook. `slackAppConfigShape` is the
 * fragment to merge into the `slack` channel schema; `slackAppChannelConfigSchema` is the
 * standalone schema of an app-mode channel (tests, and the parsed type).
 */
import { z } from 'zod';
import { expected, httpUrlField, intField } from '../../config/fields.js';
import { slackChannelConfigSchema } from './config.js';
import { templateMapSchema } from '../template.js';

export const SLACK_APP_DEFAULT_API_URL = 'https://slack.com/api';
/** Slack's documented pace for chat.postMessage: about one message per second per channel. */
export const SLACK_APP_PACING_MS = 1000;

/** A bot token: `xoxb-` and then letters, digits and dashes. */
const BOT_TOKEN = /^xoxb-[A-Za-z0-9-]+$/;
/** A conversation id (`C…` public, `G…` private, `D…` direct) or a `#channel-name`. */
const CHANNEL_ID = /^[CGD][A-Z0-9]{4,}$/;
const CHANNEL_NAME = /^#[\p{Ll}\p{Lo}\p{Lm}\p{N}_-][\p{Ll}\p{Lo}\p{Lm}\p{N}._-]{0,79}$/u;

/** A signing secret: Slack's are 32 hex digits; any 16 to 128 letters and digits are taken. */
const SIGNING_SECRET = /^[A-Za-z0-9]{16,128}$/;

/** Which thread replies are also shown in the channel (`reply_broadcast`). */
export const SLACK_REPLY_BROADCAST = ['closing', 'all', 'none'] as const;
export type SlackReplyBroadcast = (typeof SLACK_REPLY_BROADCAST)[number];

export function isSlackChannelRef(value: string): boolean {
  return CHANNEL_ID.test(value) || CHANNEL_NAME.test(value);
}

/** The app-mode fields (merge into the `slack` channel schema; `type` is not included). */
export const slackAppConfigShape = {
  /** Bot User OAuth Token (`xoxb-…`); a secret (redacted from logs, errors and check-config). */
  botToken: z
    .string({ error: expected('a Slack bot token (xoxb-...)') })
    .refine((value) => BOT_TOKEN.test(value), {
      error: 'expected a Slack bot token: "xoxb-" followed by letters, digits and dashes',
    }),
  /** Where to post: a channel id (`C0123ABCD`) or a name (`#alerts`); the bot must be a member. */
  channel: z
    .string({ error: expected('a Slack channel id such as C0123ABCD or a name such as #alerts') })
    .refine(isSlackChannelRef, {
      error: 'expected a Slack channel id such as C0123ABCD or a name such as #alerts',
    }),
  /** The Web API base URL (tests, proxies); the method name is appended after a `/`. */
  apiUrl: httpUrlField().default(SLACK_APP_DEFAULT_API_URL),
  /** Thread replies also shown in the channel: closings only (default), all, or none. */
  replyBroadcast: z
    .enum(SLACK_REPLY_BROADCAST, { error: 'expected one of: closing, all, none' })
    .default('closing'),
  username: slackChannelConfigSchema.shape.username,
  iconEmoji: slackChannelConfigSchema.shape.iconEmoji,
  mention: slackChannelConfigSchema.shape.mention,
  /** Per-request timeout in milliseconds (default 10 s). */
  timeoutMs: intField(1, 300_000).optional(),
  /**
   * The Slack app's Signing Secret (Basic Information → App Credentials); a secret. With it the
   * living message carries the Acknowledge and Silence buttons, and the ops server accepts the
   * app's interactions signed with it (docs/acting-on-alerts.md). Without it: no buttons.
   */
  signingSecret: z
    .string({ error: expected("the Slack app's signing secret") })
    .refine((value) => SIGNING_SECRET.test(value), {
      error: 'expected a Slack signing secret: 16 to 128 letters and digits',
    })
    .optional(),
};

/** Paths of the app mode's secret fields, relative to the channel (for pino's `redact`). */
export const SLACK_APP_SECRET_PATHS: readonly string[] = ['botToken', 'signingSecret'];

/** A standalone app-mode channel: `type: slack` plus the app fields. */
export const slackAppChannelConfigSchema = z.strictObject({
  type: z.literal('slack'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  ...slackAppConfigShape,
});

export type SlackAppChannelConfig = z.output<typeof slackAppChannelConfigSchema>;

/** Every form the channel's secret may take in a text. */
export function slackAppSecrets(
  config: Pick<SlackAppChannelConfig, 'botToken'> & { signingSecret?: string | undefined },
): string[] {
  return [
    config.botToken,
    `Bearer ${config.botToken}`,
    ...(config.signingSecret === undefined ? [] : [config.signingSecret]),
  ];
}

/** What `check-config` prints: the API host and the channel, never the token. */
export function describeSlackApp(
  config: Pick<SlackAppChannelConfig, 'apiUrl' | 'channel'>,
): string {
  const host = URL.canParse(config.apiUrl) ? new URL(config.apiUrl).host : 'invalid URL';
  return `Slack app → ${config.channel} (${host})`;
}

/** Per-channel pacing (chat.postMessage allows ~1 message/s per channel). */
export function slackAppPacing(config: Pick<SlackAppChannelConfig, 'apiUrl' | 'channel'>): {
  destination: string;
  intervalMs: number;
} {
  return {
    destination: `slack-app:${config.apiUrl}:${config.channel}`,
    intervalMs: SLACK_APP_PACING_MS,
  };
}
