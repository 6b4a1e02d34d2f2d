/**
 * Secrets never leave (docs/guarantees.md): every DeliveryError a notifier throws goes
 * through `scrubDeliveryError`, which removes the channel's secrets from its message, its
 * operator-only `detail`, stack and the whole `cause` chain (rebuilt as plain errors, so a library error holding a URL or a request
 * object does not travel on into logs).
 */
import { isSensitiveHeader, redactText } from '../config/secret-text.js';
import { toError } from '../errors.js';
import { DeliveryError } from './types.js';

/** The forms a URL secret can take in an error text: as written, normalized, path+query, password. */
export function urlSecrets(url: string): string[] {
  const found = [url];
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    found.push(parsed.href);
    const pathAndQuery = parsed.pathname + parsed.search;
    if (pathAndQuery.length > 1) found.push(pathAndQuery);
    if (parsed.search.length > 1) found.push(parsed.search.slice(1));
    if (parsed.password !== '')
      found.push(parsed.password, decodeURIComponentSafe(parsed.password));
    if (parsed.username !== '') found.push(`${parsed.username}:${parsed.password}`);
  }
  return found;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Values of headers whose names say they hold credentials (Authorization, X-Api-Key, …). */
export function headerSecrets(headers: Readonly<Record<string, string>> | undefined): string[] {
  return Object.entries(headers ?? {})
    .filter(([name]) => isSensitiveHeader(name))
    .map(([, value]) => value);
}

/** Secrets worth scrubbing: non-empty, unique, longest first. */
export function normalizeSecrets(secrets: readonly string[]): string[] {
  return [...new Set(secrets.filter((s) => s !== ''))].sort((a, b) => b.length - a.length);
}

const COPIED_FIELDS = [
  'code',
  'errno',
  'syscall',
  'responseCode',
  'command',
  'statusCode',
] as const;

function scrubbedCopy(value: unknown, secrets: readonly string[], depth: number): Error {
  const source = toError(value);
  const copy = new Error(redactText(source.message, secrets));
  copy.name = redactText(source.name, secrets);
  copy.stack = redactText(source.stack ?? `${copy.name}: ${copy.message}`, secrets);
  const fields = source as unknown as Record<string, unknown>;
  const target = copy as unknown as Record<string, unknown>;
  for (const key of COPIED_FIELDS) {
    const field = fields[key];
    if (typeof field === 'number') target[key] = field;
    if (typeof field === 'string') target[key] = redactText(field, secrets);
  }
  const inner = source.cause ?? fields.original;
  if (inner !== undefined && inner !== null && depth < 5) {
    Object.defineProperty(copy, 'cause', {
      value: scrubbedCopy(inner, secrets, depth + 1),
      enumerable: false,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** A copy of `error` with every secret removed from its message, detail, stack and cause chain. */
export function scrubDeliveryError(
  error: DeliveryError,
  secrets: readonly string[],
): DeliveryError {
  const ordered = normalizeSecrets(secrets);
  const scrubbed = new DeliveryError({
    message: redactText(error.message, ordered),
    retryable: error.retryable,
    reason: error.reason,
    httpStatus: error.httpStatus,
    retryAfterMs: error.retryAfterMs,
    detail: error.detail === null ? null : redactText(error.detail, ordered),
    cause: error.cause === undefined ? undefined : scrubbedCopy(error.cause, ordered, 0),
  });
  scrubbed.stack = redactText(scrubbed.stack ?? '', ordered);
  return scrubbed;
}
