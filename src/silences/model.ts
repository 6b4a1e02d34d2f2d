/**
 * Ad-hoc silences (docs/noise-control.md): "do not notify about X until T", created through
 * `/admin/silences` or `statuswatch silence add` and kept in Redis. A silence has matchers on the
 * service (feedId), event kind, subscription and channel; an absent matcher matches anything, a
 * present one lists exact values of which one must match. Times are Unix milliseconds.
 *
 * Strict objects: an unknown key (a misspelt matcher such as `servcies`) is an error, because it
 * would otherwise silence far more than intended.
 */
import { z } from 'zod';
import { StatuswatchError } from '../errors.js';
import { EVENT_KINDS, type EventKind } from '../config/events.js';
import { durationMs } from '../config/fields.js';
import { formatPath } from '../config/path.js';
import { decode, zodShape } from '../redis/stored.js';

export const MATCHER_NAMES = [
  'services',
  'events',
  'subscriptions',
  'channels',
  'subjects',
] as const;
export type MatcherName = (typeof MATCHER_NAMES)[number];

export const MAX_COMMENT_LENGTH = 1000;
export const MAX_AUTHOR_LENGTH = 200;
export const MAX_VALUE_LENGTH = 256;
export const MAX_VALUES_PER_MATCHER = 1000;

export interface SilenceMatchers {
  /** feedIds. */
  services?: string[] | undefined;
  events?: EventKind[] | undefined;
  subscriptions?: string[] | undefined;
  channels?: string[] | undefined;
  /**
   * What in the service: `incident:<id>`, `status`, `sla`, `upstream:<endpoint>` (a transition's
   * `subject`). With `services`, one lifecycle exactly: the Slack buttons' silences use it.
   */
  subjects?: string[] | undefined;
}

export interface Silence {
  /** Random, URL-safe. */
  id: string;
  matchers: SilenceMatchers;
  /** Unix ms, inclusive. */
  startsAt: number;
  /** Unix ms, exclusive. */
  endsAt: number;
  author: string;
  comment: string;
  /** Unix ms. */
  createdAt: number;
}

/** One validation problem, at the path of the offending field (`matchers.events[1]`, `endsAt`). */
export interface SilenceIssue {
  path: string;
  message: string;
}

/** A create request that does not validate; `issues` name every offending field. */
export class SilenceValidationError extends StatuswatchError {
  constructor(readonly issues: readonly SilenceIssue[]) {
    super(
      'silence_invalid',
      `invalid silence: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
    );
  }
}

function requiredOr(what: string): (issue: { input?: unknown }) => string {
  return (issue) => (issue.input === undefined ? 'required' : `expected ${what}`);
}

function matcherValue(what: string) {
  return z
    .string({ error: requiredOr(what) })
    .min(1, { error: 'must not be empty' })
    .max(MAX_VALUE_LENGTH, { error: `must be at most ${MAX_VALUE_LENGTH} characters` })
    .refine((value) => value === value.trim(), {
      error: 'must not start or end with whitespace (values are matched exactly)',
    });
}

function valueList<T extends z.ZodType>(item: T) {
  return z
    .array(item, { error: requiredOr('a list of exact values') })
    .min(1, { error: 'must list at least one value (omit the matcher to match anything)' })
    .max(MAX_VALUES_PER_MATCHER, {
      error: `must list at most ${MAX_VALUES_PER_MATCHER} values`,
    });
}

const serviceValue = matcherValue('a feedId').refine((value) => value !== '*', {
  error: '"*" is not a wildcard here; omit services to match every service',
});

const eventValue = z.enum(EVENT_KINDS, {
  error: `unknown event kind; expected one of: ${EVENT_KINDS.join(', ')}`,
});

export const matchersSchema = z
  .strictObject(
    {
      services: valueList(serviceValue).optional(),
      events: valueList(eventValue).optional(),
      subscriptions: valueList(matcherValue('a subscription name')).optional(),
      channels: valueList(matcherValue('a channel name')).optional(),
      subjects: valueList(matcherValue('a subject such as incident:<id> or status')).optional(),
    },
    {
      error: requiredOr('a map of matchers (services, events, subscriptions, channels, subjects)'),
    },
  )
  .refine((m) => MATCHER_NAMES.some((name) => m[name] !== undefined), {
    error: `at least one matcher is required (${MATCHER_NAMES.join(', ')})`,
  });

const authorSchema = z
  .string({ error: requiredOr('a string') })
  .transform((value) => value.trim())
  .pipe(
    z
      .string()
      .min(1, { error: 'must not be empty' })
      .max(MAX_AUTHOR_LENGTH, { error: `must be at most ${MAX_AUTHOR_LENGTH} characters` }),
  );

const commentSchema = z
  .string({ error: requiredOr('a string') })
  .max(MAX_COMMENT_LENGTH, { error: `must be at most ${MAX_COMMENT_LENGTH} characters` });

const TIME_HINT = 'Unix milliseconds or an ISO 8601 time with a zone (2026-05-01T12:00:00Z)';

/** Unix ms (a non-negative integer) or an ISO 8601 date-time with `Z` or an offset. */
/**
 * The latest time a silence (or a token) may name: 9999-12-31T23:59:59.999Z. Later ones are
 * refused; every page and answer can still write this one as a date.
 */
export const LATEST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const timeSchema = z.union(
  [z.int().nonnegative(), z.iso.datetime({ offset: true }).transform((text) => Date.parse(text))],
  { error: (issue) => (issue.input === undefined ? 'required' : `expected ${TIME_HINT}`) },
);

const durationSchema = durationMs({
  error: requiredOr('a duration string such as 30m or 2h'),
}).pipe(z.number().positive({ error: 'must be longer than 0s' }));

/** The body of `POST /admin/silences`, before the clock-dependent checks. */
export const silenceRequestSchema = z.strictObject({
  matchers: matchersSchema,
  /** Default: now. */
  startsAt: timeSchema.optional(),
  /** Exactly one of `endsAt` and `duration` (counted from `startsAt`). */
  endsAt: timeSchema.optional(),
  duration: durationSchema.optional(),
  author: authorSchema,
  comment: commentSchema.default(''),
});

export type SilenceRequest = z.input<typeof silenceRequestSchema>;

/** A validated request with its times resolved: what the store turns into a `Silence`. */
export interface SilenceDraft {
  matchers: SilenceMatchers;
  startsAt: number;
  endsAt: number;
  author: string;
  comment: string;
}

/** The create-request schema at a given clock: resolves `duration`, checks the times. */
export function silenceDraftSchema(now: number) {
  return silenceRequestSchema.transform((req, ctx): SilenceDraft => {
    const startsAt = req.startsAt ?? now;
    let endsAt: number;
    if (req.endsAt !== undefined && req.duration !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['duration'],
        message: 'give either endsAt or duration, not both',
      });
      return z.NEVER;
    } else if (req.endsAt !== undefined) {
      endsAt = req.endsAt;
    } else if (req.duration !== undefined) {
      endsAt = startsAt + req.duration;
    } else {
      ctx.addIssue({
        code: 'custom',
        path: ['endsAt'],
        message: 'required (or give duration, such as 2h)',
      });
      return z.NEVER;
    }
    const field = req.endsAt === undefined ? 'duration' : 'endsAt';
    if (endsAt <= now) {
      ctx.addIssue({ code: 'custom', path: [field], message: 'must end in the future' });
    } else if (endsAt <= startsAt) {
      ctx.addIssue({ code: 'custom', path: [field], message: 'must end after startsAt' });
    }
    if (!Number.isSafeInteger(endsAt) || endsAt > LATEST_TIME_MS) {
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: 'is too far in the future (the latest is 9999-12-31)',
      });
    }
    if (startsAt > LATEST_TIME_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['startsAt'],
        message: 'is too far in the future (the latest is 9999-12-31)',
      });
    }
    return {
      matchers: req.matchers,
      startsAt,
      endsAt,
      author: req.author,
      comment: req.comment,
    };
  });
}

function toIssues(error: z.ZodError): SilenceIssue[] {
  return error.issues.flatMap((issue): SilenceIssue[] => {
    const path = issue.path.filter((s): s is string | number => typeof s !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: formatPath([...path, key]),
        message:
          path.length === 0
            ? 'unknown key (expected one of: matchers, startsAt, endsAt, duration, author, comment)'
            : `unknown key (expected one of: ${MATCHER_NAMES.join(', ')})`,
      }));
    }
    return [{ path: formatPath(path), message: issue.message }];
  });
}

/** Validates a create request at `now`; throws `SilenceValidationError` naming every bad field. */
export function parseSilenceRequest(input: unknown, now: number): SilenceDraft {
  const result = silenceDraftSchema(now).safeParse(input);
  if (!result.success) throw new SilenceValidationError(toIssues(result.error));
  return result.data;
}

/** A stored silence, as read back from Redis (expired ones may have startsAt = endsAt). */
export const silenceSchema = z.strictObject({
  id: z.string().min(1),
  matchers: matchersSchema,
  startsAt: z.int().nonnegative(),
  endsAt: z.int().nonnegative(),
  author: z.string(),
  comment: z.string(),
  createdAt: z.int().nonnegative(),
});

/** A silence as stored in Redis: versioned JSON (`src/redis/stored.ts`); never ending before it starts. */
export const STORED_SILENCE = zodShape<Silence>(
  'silence',
  silenceSchema.refine((s) => s.endsAt >= s.startsAt),
);

/**
 * Parses a stored silence, in the current envelope or the previous, unversioned format;
 * `undefined` for anything malformed or of another version.
 */
export function parseStoredSilence(text: string): Silence | undefined {
  return decode(STORED_SILENCE, text);
}
