/**
 * The `opsgenie` channel: alerts through the Opsgenie Alert API
 * (https://docs.opsgenie.com/docs/alert-api). The API key is the key of an API integration
 * (Settings → Integrations → API); it is the channel's only secret.
 */
import { z } from 'zod';
import { EVENT_KINDS } from '../../config/events.js';
import {
  expected,
  hasNoControlCharacters,
  httpUrlField,
  intField,
  nonEmptyString,
} from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

/** The Opsgenie API host of accounts in the US (default) region. */
export const DEFAULT_OPSGENIE_URL = 'https://api.opsgenie.com';
/** The Opsgenie API host of accounts in the EU region. */
export const OPSGENIE_EU_URL = 'https://api.eu.opsgenie.com';

export const OPSGENIE_PRIORITIES = ['P1', 'P2', 'P3', 'P4', 'P5'] as const;
export type OpsgeniePriority = (typeof OPSGENIE_PRIORITIES)[number];

export const OPSGENIE_RESPONDER_TYPES = ['team', 'user', 'escalation', 'schedule'] as const;
export type OpsgenieResponderType = (typeof OPSGENIE_RESPONDER_TYPES)[number];

/** Documented limits of the create-alert request. */
export const OPSGENIE_LIMITS = {
  message: 130,
  alias: 512,
  description: 15_000,
  entity: 512,
  source: 100,
  user: 100,
  note: 25_000,
  tags: 20,
  tag: 50,
  responders: 50,
  /** `details`: keys and values together. */
  details: 8_000,
} as const;

function field(what: string) {
  return nonEmptyString(what).refine(hasNoControlCharacters, {
    error: 'must not contain line breaks or control characters',
  });
}

/**
 * A responder as the Alert API takes it: `team`, `escalation` and `schedule` by `id` or `name`,
 * `user` by `id` or `username` — exactly one of them.
 */
const responderSchema = z
  .strictObject(
    {
      type: z.enum(OPSGENIE_RESPONDER_TYPES, {
        error: `expected one of: ${OPSGENIE_RESPONDER_TYPES.join(', ')}`,
      }),
      id: field('a responder id').optional(),
      name: field('a responder name').optional(),
      username: field('a user name (e-mail address)').optional(),
    },
    { error: expected('a responder ({ type, id | name | username })') },
  )
  .superRefine((responder, ctx) => {
    const byName = responder.type === 'user' ? 'username' : 'name';
    const wrong = responder.type === 'user' ? 'name' : 'username';
    if (responder[wrong] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [wrong],
        message: `a ${responder.type} responder is named by id or ${byName}, not ${wrong}`,
      });
      return;
    }
    const given = [responder.id, responder[byName]].filter((v) => v !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `a ${responder.type} responder needs exactly one of id or ${byName}`,
      });
    }
  });

export type OpsgenieResponder = z.output<typeof responderSchema>;

/** The API base: an http(s) URL without credentials, query or fragment (a path prefix is kept). */
const apiUrlField = httpUrlField().refine(
  (value) => {
    const url = new URL(value);
    return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  },
  {
    error:
      'expected the API host only, such as https://api.eu.opsgenie.com (no credentials or query)',
  },
);

export const opsgenieChannelConfigSchema = z.strictObject({
  type: z.literal('opsgenie'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  /** The API key of an Opsgenie API integration (sent as `Authorization: GenieKey <apiKey>`). */
  apiKey: field('an Opsgenie API integration key'),
  /** API host: https://api.opsgenie.com (default) or https://api.eu.opsgenie.com for EU accounts. */
  url: apiUrlField.optional(),
  /** Alert priority per event kind, overriding the defaults (P1 highest … P5 informational). */
  priority: z
    .partialRecord(
      z.enum(EVENT_KINDS, { error: `expected an event kind (${EVENT_KINDS.join(', ')})` }),
      z.enum(OPSGENIE_PRIORITIES, { error: 'expected P1, P2, P3, P4 or P5' }),
      { error: expected('a map of event kinds to P1..P5') },
    )
    .optional(),
  /** Teams, users, escalations and schedules the alerts are routed to. */
  responders: z
    .array(responderSchema, { error: expected('a list of responders') })
    .max(OPSGENIE_LIMITS.responders, {
      error: `at most ${OPSGENIE_LIMITS.responders} responders`,
    })
    .optional(),
  /** Tags set on every alert. */
  tags: z
    .array(
      field('a tag').refine((tag) => tag.length <= OPSGENIE_LIMITS.tag, {
        error: `a tag has at most ${OPSGENIE_LIMITS.tag} characters`,
      }),
      { error: expected('a list of tags') },
    )
    .max(OPSGENIE_LIMITS.tags, { error: `at most ${OPSGENIE_LIMITS.tags} tags` })
    .optional(),
  /** Per-request timeout in milliseconds. */
  timeoutMs: intField(1, 300_000).optional(),
});

export type OpsgenieChannelConfig = z.output<typeof opsgenieChannelConfigSchema>;
