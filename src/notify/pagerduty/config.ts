/**
 * The PagerDuty channel: Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/overview).
 * One routing key (the Integration Key of an "Events API v2" integration on a PagerDuty service)
 * receives alert events (`/v2/enqueue`) and change events (`/v2/change/enqueue`).
 */
import { z } from 'zod';
import { EVENT_KINDS, type EventKind } from '../../config/events.js';
import { expected, httpUrlField, intField } from '../../config/fields.js';
import { templateMapSchema } from '../template.js';

/** PagerDuty's alert severities (PD-CEF), most severe first. */
export const PAGERDUTY_SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;
export type PagerdutySeverity = (typeof PAGERDUTY_SEVERITIES)[number];

/** The US service region's alert endpoint (EU accounts: https://events.eu.pagerduty.com/v2/enqueue). */
export const DEFAULT_PAGERDUTY_URL = 'https://events.pagerduty.com/v2/enqueue';

/**
 * The event kinds that inform rather than open something statuswatch later closes (`roleOf` gives
 * them the role `update` and nothing resolves them): sent as change events unless listed in `page`.
 */
export const INFORMATIONAL_KINDS = ['score.dropped', 'sla.forecast', 'score.trend'] as const;
export type InformationalKind = (typeof INFORMATIONAL_KINDS)[number];

export function isInformationalKind(kind: EventKind): kind is InformationalKind {
  return (INFORMATIONAL_KINDS as readonly string[]).includes(kind);
}

/**
 * PagerDuty documents `routing_key` as "the 32 character Integration Key"; the keys it issues are
 * letters and digits (service integration keys are hex, ruleset keys start with `R`).
 */
const ROUTING_KEY = /^[A-Za-z0-9]{32}$/;

const ROUTING_KEY_HINT =
  'the 32-character Integration Key of an "Events API v2" integration (letters and digits)';

const severitySchema = z.enum(PAGERDUTY_SEVERITIES, {
  error: (issue) =>
    issue.input === undefined
      ? 'required'
      : `expected a PagerDuty severity: ${PAGERDUTY_SEVERITIES.join(', ')}`,
});

export const pagerdutyChannelConfigSchema = z.strictObject({
  type: z.literal('pagerduty'),
  /** Message templates per event kind (docs/templates.md). */
  templates: templateMapSchema.optional(),
  /** The Integration Key (a secret: whoever holds it can open incidents on the service). */
  routingKey: z
    .string({ error: expected(`a PagerDuty routing key (${ROUTING_KEY_HINT})`) })
    .refine((value) => value.trim() !== '', { error: 'must not be empty', abort: true })
    // A pattern (not a refinement), so the Helm values schema checks it too.
    .regex(ROUTING_KEY, {
      error: `expected ${ROUTING_KEY_HINT}; PagerDuty rejects keys of any other length`,
    }),
  /**
   * The alert endpoint (default: the US region). Change events go to the same origin, path
   * `…/v2/change/enqueue`.
   */
  url: httpUrlField().optional(),
  /** Severity per event kind, replacing the defaults (see `defaultSeverity`). */
  severity: z
    .partialRecord(z.enum(EVENT_KINDS), severitySchema, {
      error: (issue) => {
        // zod reports keys outside the enum as `unrecognized_keys` (not in the issue's static type).
        const { code, keys } = issue as { code: string; keys?: unknown };
        if (code === 'unrecognized_keys' && Array.isArray(keys)) {
          const named = keys.map((key) => JSON.stringify(String(key))).join(', ');
          return `unknown event kind ${named}; expected event kinds: ${EVENT_KINDS.join(', ')}`;
        }
        return issue.input === undefined
          ? 'required'
          : 'expected a map of event kinds to PagerDuty severities';
      },
    })
    .optional(),
  /** Informational kinds that trigger an alert (page) instead of recording a change event. */
  page: z
    .array(
      z.enum(INFORMATIONAL_KINDS, {
        error: `only informational event kinds can be listed (${INFORMATIONAL_KINDS.join(', ')}); the others trigger alerts already`,
      }),
      { error: expected('a list of event kinds') },
    )
    .optional(),
  /** Per-request timeout in milliseconds. */
  timeoutMs: intField(1, 300_000).optional(),
});

export type PagerdutyChannelConfig = z.output<typeof pagerdutyChannelConfigSchema>;

/** The change-events endpoint next to an alert endpoint: `…/v2/enqueue` → `…/v2/change/enqueue`. */
export function changeEventsUrl(alertUrl: string): string {
  const url = new URL(alertUrl);
  url.pathname = url.pathname.endsWith('/v2/enqueue')
    ? `${url.pathname.slice(0, -'/v2/enqueue'.length)}/v2/change/enqueue`
    : '/v2/change/enqueue';
  return url.href;
}
