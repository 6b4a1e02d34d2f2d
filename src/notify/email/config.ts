import { z } from 'zod';
import {
  booleanField,
  expected,
  hasNoControlCharacters,
  intField,
  isEmailAddress,
  nonEmptyString,
} from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

/** `addr@example.com` or `Display Name <addr@example.com>`, without CR/LF (header-safe). */
export function isMailbox(value: string): boolean {
  if (!hasNoControlCharacters(value)) return false;
  const named = /^([^<>"]*)<([^<>\s]+)>$/.exec(value.trim());
  return named?.[2] !== undefined ? isEmailAddress(named[2]) : isEmailAddress(value.trim());
}

const smtpSchema = z.strictObject({
  host: nonEmptyString('a host name'),
  port: intField(1, 65535),
  /** TLS from the first byte (usually port 465). */
  secure: booleanField().optional(),
  /** Refuse to send unless STARTTLS succeeds. */
  requireTLS: booleanField().optional(),
  auth: z
    .strictObject({
      user: nonEmptyString('a user name'),
      /** A secret. */
      pass: z.string({ error: expected('a string') }),
    })
    .optional(),
  tls: z.strictObject({ rejectUnauthorized: booleanField().optional() }).optional(),
  pool: booleanField().default(true),
});

export const emailChannelConfigSchema = z.strictObject({
  type: z.literal('email'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  smtp: smtpSchema,
  from: z
    .string({ error: expected('a sender address') })
    .refine(isMailbox, { error: 'expected an e-mail address or "Name <address>"' }),
  to: z
    .array(
      z
        .string({ error: expected('an e-mail address') })
        .refine(isEmailAddress, { error: 'expected an e-mail address' }),
      { error: expected('a list of e-mail addresses') },
    )
    .min(1, { error: 'at least one recipient is required' }),
  subjectPrefix: z
    .string({ error: expected('a string') })
    .max(100, { error: 'must be at most 100 characters' })
    .refine(hasNoControlCharacters, { error: 'must not contain line breaks or control characters' })
    .optional(),
});

export type EmailChannelConfig = z.output<typeof emailChannelConfigSchema>;
