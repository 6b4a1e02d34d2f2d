/** The upstream's response headers the client reads: rate limits, Retry-After, Content-Length. */
import type { RateLimitInfo } from './model.js';

export type Headers = Record<string, string | string[] | undefined>;

export function headerValue(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function parseNonNegativeInt(value: string | undefined): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return null;
  const n = Math.floor(Number(trimmed));
  return Number.isSafeInteger(n) ? n : null;
}

/** X-RateLimit-Limit / -Remaining / -Reset; each null when absent or unparsable. */
export function parseRateLimit(headers: Headers): RateLimitInfo {
  return {
    limit: parseNonNegativeInt(headerValue(headers, 'x-ratelimit-limit')),
    remaining: parseNonNegativeInt(headerValue(headers, 'x-ratelimit-remaining')),
    reset: parseNonNegativeInt(headerValue(headers, 'x-ratelimit-reset')),
  };
}

/** Retry-After as seconds: a delta-seconds value or an HTTP date (relative to `nowMs`). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const seconds = parseNonNegativeInt(value);
  if (seconds !== null) return seconds;
  const at = Date.parse(value.trim());
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
