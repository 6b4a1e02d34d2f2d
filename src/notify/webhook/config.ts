import { z } from 'zod';
import { expected, hasNoControlCharacters, httpUrlField, intField } from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MIN_SECRET_BYTES = 16;

/**
 * The HMAC key of a Standard Webhooks secret (`whsec_` + base64), or undefined when the secret
 * is malformed or shorter than 16 bytes.
 */
export function decodeWebhookSecret(secret: string): Buffer | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return undefined;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (encoded === '' || !BASE64.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= MIN_SECRET_BYTES ? key : undefined;
}

/** Headers statuswatch sets itself; a channel may not override them. */
export const RESERVED_WEBHOOK_HEADERS: readonly string[] = [
  'content-type',
  'content-length',
  'host',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'statuswatch-loop',
];

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const webhookChannelConfigSchema = z.strictObject({
  type: z.literal('webhook'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  /** Receiver URL; treated as a secret (it often embeds a token). */
  url: httpUrlField(),
  /** Standard Webhooks signing secret: `whsec_` + base64 of at least 16 random bytes. */
  secret: z
    .string({ error: expected('a Standard Webhooks secret (whsec_...)') })
    .refine((value) => decodeWebhookSecret(value) !== undefined, {
      error: `expected "${SECRET_PREFIX}" followed by the base64 encoding of at least ${MIN_SECRET_BYTES} random bytes`,
    }),
  /** Extra request headers (e.g. a receiver's Authorization). */
  headers: z
    .record(
      z
        .string()
        .regex(HEADER_NAME, { error: 'expected an HTTP header name' })
        .refine((name) => !RESERVED_WEBHOOK_HEADERS.includes(name.toLowerCase()), {
          error: `is set by statuswatch and cannot be overridden (${RESERVED_WEBHOOK_HEADERS.join(', ')})`,
        }),
      z.string({ error: expected('a string header value') }).refine(hasNoControlCharacters, {
        error: 'must not contain line breaks or control characters',
      }),
      { error: expected('a map of header names to values') },
    )
    .optional(),
  /** Per-request timeout in milliseconds. */
  timeoutMs: intField(1, 300_000).optional(),
});

export type WebhookChannelConfig = z.output<typeof webhookChannelConfigSchema>;
