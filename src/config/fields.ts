/**
 * Zod building blocks shared by the config schema and the per-channel schemas in
 * `src/notify/<kind>/config.ts`. Every message describes the expectation and never echoes the
 * received value (config values may be secrets).
 */
import { z } from 'zod';
import { toError } from '../errors.js';
import { DURATION_HINT, formatDuration, parseDuration } from './duration.js';
import { isValidTimeZone } from './quiet-hours.js';

/** A type-error message: `required` when the key is missing, else `expected <what>`. */
export function expected(what: string): (issue: { input?: unknown }) => string {
  return (issue) => (issue.input === undefined ? 'required' : `expected ${what}`);
}

/** Environment substitution yields strings; numeric fields accept digit strings too. */
function numericString(value: unknown): unknown {
  return typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value;
}

function booleanString(value: unknown): unknown {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value;
}

/** A non-empty string (after trimming). */
export function nonEmptyString(what = 'a string') {
  return z
    .string({ error: expected(what) })
    .refine((value) => value.trim() !== '', { error: 'must not be empty' });
}

/** An integer in [min, max]; `"587"` from an environment variable is accepted. */
export function intField(min: number, max: number) {
  const what = `an integer between ${min} and ${max}`;
  return z.preprocess(
    numericString,
    z
      .number({ error: expected(what) })
      .refine((n) => Number.isInteger(n) && n >= min && n <= max, { error: `expected ${what}` }),
  );
}

/** A finite number greater than `exclusiveMin`. */
export function numberAbove(exclusiveMin: number) {
  const what = `a number greater than ${exclusiveMin}`;
  return z.preprocess(
    numericString,
    z
      .number({ error: expected(what) })
      .refine((n) => Number.isFinite(n) && n > exclusiveMin, { error: `expected ${what}` }),
  );
}

/** `true` / `false` (also as strings, for values from environment variables). */
export function booleanField() {
  return z.preprocess(booleanString, z.boolean({ error: expected('true or false') }));
}

/** A duration string (`30s`, `5m`, `1h30m`) converted to milliseconds (no bound). */
export function durationMs(error: Parameters<typeof z.string>[0]) {
  return z.string(error).transform((text, ctx) => {
    try {
      return parseDuration(text);
    } catch (caught) {
      const message = toError(caught).message;
      ctx.addIssue({ code: 'custom', message: message === '' ? DURATION_HINT : message });
      return z.NEVER;
    }
  });
}

/** A duration string (`30s`, `5m`, `1h30m`) converted to milliseconds, at least `minMs`. */
export function durationField(minMs: number) {
  return durationMs({ error: expected(`a duration string with a unit, such as 30s or 5m`) }).pipe(
    z.number().min(minMs, { error: `must be at least ${formatDuration(minMs)}` }),
  );
}

export function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

/** An absolute http:// or https:// URL (kept as written). */
export function httpUrlField() {
  return z
    .string({ error: expected('an http:// or https:// URL') })
    .refine(isHttpUrl, { error: 'expected an absolute http:// or https:// URL' });
}

/**
 * An optional secret string; an empty or blank one (e.g. `${VAR:-}`, or a variable holding only
 * a newline) means "not set", for every part of the daemon alike.
 */
export function optionalSecretField() {
  return z
    .string({ error: expected('a string') })
    .transform((value) => (value.trim() === '' ? undefined : value))
    .optional();
}

/** An IANA time zone that `Intl.DateTimeFormat` accepts. */
export function timeZoneField() {
  return z
    .string({ error: expected('an IANA time zone such as Europe/Berlin') })
    .refine(isValidTimeZone, {
      error: 'unknown time zone; expected an IANA name such as Europe/Berlin or UTC',
    });
}

/** True when the string contains no CR, LF or other control characters (header-safe). */
export function hasNoControlCharacters(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u001f\u007f]/.test(value);
}

/** Validates an e-mail address with zod's own (conservative) rule. */
const emailCheck = z.email();
export function isEmailAddress(value: string): boolean {
  return emailCheck.safeParse(value).success;
}

/**
 * The value a map from the config (channels by name, users to teams) holds for `key` itself:
 * never an inherited member (`constructor`, `toString`), which a plain `record[key]` would return
 * for a name a user typed.
 */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
