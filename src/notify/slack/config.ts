import { z } from 'zod';
import {
  expected,
  hasNoControlCharacters,
  httpUrlField,
  intField,
  nonEmptyString,
} from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

/**
 * One Slack mention: `<!here>`, `<!channel>`, `<!everyone>`, a user `<@U123ABC>`, a channel
 * `<#C123ABC>` or a user group `<!subteam^S123ABC>` (optionally `|handle`). Mentions come only
 * from the config; text from upstream is escaped so it can never produce one.
 */
const MENTION =
  /^<(?:!here|!channel|!everyone|@[A-Z0-9]+|#[A-Z0-9]+|!subteam\^[A-Z0-9]+(?:\|[^<>|\s]+)?)>$/;

/** True for one or more space-separated Slack mentions. */
export function isSlackMention(value: string): boolean {
  const parts = value.trim().split(/\s+/);
  return value.trim() !== '' && parts.every((part) => MENTION.test(part));
}

export const slackChannelConfigSchema = z.strictObject({
  type: z.literal('slack'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  /** Incoming-webhook URL; a secret (redacted from logs, errors and check-config). */
  webhookUrl: httpUrlField(),
  username: nonEmptyString('a display name')
    .refine(hasNoControlCharacters, {
      error: 'must not contain control characters',
    })
    .optional(),
  iconEmoji: z
    .string({ error: expected('an emoji code such as :rotating_light:') })
    .regex(/^:[a-z0-9_+'-]+:$/, { error: 'expected an emoji code such as :rotating_light:' })
    .optional(),
  /** Prepended to every message, e.g. `<!here>` or `<!subteam^S0123ABC>`. */
  mention: z
    .string({ error: expected('Slack mentions such as <!here> or <@U0123ABC>') })
    .refine(isSlackMention, {
      error:
        'expected space-separated Slack mentions: <!here>, <!channel>, <!everyone>, <@USERID>, <#CHANNELID> or <!subteam^GROUPID>',
    })
    .optional(),
  /** Per-request timeout (default DEFAULT_SLACK_TIMEOUT_MS). */
  timeoutMs: intField(1, 300_000).optional(),
});

export type SlackChannelConfig = z.output<typeof slackChannelConfigSchema>;
