/**
 * Typed failures of the upstream client. Every failure of a call becomes one `UpstreamError`
 * whose `code` says what happened (a metric label and a log field), whether a retry can help,
 * and what the rate-limit headers said. Messages carry the upstream's own `error` text (cut to
 * 200 characters, control characters removed) and never the API key.
 */
import { StatuswatchError } from '../errors.js';
import type { RateLimitInfo } from './model.js';

export type UpstreamErrorCode =
  | 'upstream_unauthorized'
  | 'upstream_forbidden'
  | 'upstream_not_found'
  | 'upstream_method_not_allowed'
  | 'upstream_rate_limited'
  | 'upstream_server_error'
  | 'upstream_unavailable'
  | 'upstream_http_error'
  | 'upstream_bad_envelope'
  | 'upstream_body_too_large'
  | 'upstream_timeout'
  | 'upstream_network'
  | 'upstream_invalid_request';

/** Longest piece of upstream text quoted in a message. */
export const MAX_UPSTREAM_TEXT = 200;

const REDACTED = '[REDACTED]';

export const NO_RATE_LIMIT: RateLimitInfo = Object.freeze({
  limit: null,
  remaining: null,
  reset: null,
});

/** 429, 5xx (503 included), timeouts and network failures may succeed on a later attempt. */
export function isRetryableCode(code: UpstreamErrorCode): boolean {
  switch (code) {
    case 'upstream_rate_limited':
    case 'upstream_server_error':
    case 'upstream_unavailable':
    case 'upstream_timeout':
    case 'upstream_network':
      return true;
    case 'upstream_unauthorized':
    case 'upstream_forbidden':
    case 'upstream_not_found':
    case 'upstream_method_not_allowed':
    case 'upstream_http_error':
    case 'upstream_bad_envelope':
    case 'upstream_body_too_large':
    case 'upstream_invalid_request':
      return false;
  }
}

/** The error code for a non-2xx HTTP status. */
export function codeForStatus(status: number): UpstreamErrorCode {
  switch (status) {
    case 401:
      return 'upstream_unauthorized';
    case 403:
      return 'upstream_forbidden';
    case 404:
      return 'upstream_not_found';
    case 405:
      return 'upstream_method_not_allowed';
    case 429:
      return 'upstream_rate_limited';
    case 503:
      return 'upstream_unavailable';
    default:
      return status >= 500 && status <= 599 ? 'upstream_server_error' : 'upstream_http_error';
  }
}

/**
 * Makes upstream-provided text safe to quote: secrets replaced, control characters (CR/LF
 * included) turned into spaces, cut to `max` characters.
 */
export function sanitizeText(
  text: string,
  secrets: readonly string[],
  max: number = MAX_UPSTREAM_TEXT,
): string {
  let out = redactSecrets(text, secrets);
  // eslint-disable-next-line no-control-regex -- stripping control characters is the point
  out = out.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  if (out.length > max) out = `${out.slice(0, max)}…`;
  return out;
}

/** Replaces every occurrence of each (non-empty) secret with `[REDACTED]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length > 0) out = out.split(secret).join(REDACTED);
  }
  return out;
}

export interface UpstreamErrorInit {
  code: UpstreamErrorCode;
  /** HTTP status when a response arrived, else null. */
  status: number | null;
  /** The request path without query, e.g. `/api/v1/status/stripe`. */
  endpoint: string;
  /** The route template, e.g. `/api/v1/status/{feedId}` (bounded cardinality, for metrics). */
  route: string;
  rateLimit?: RateLimitInfo;
  retryAfterSeconds?: number | null;
  /** The upstream's `error` text, already sanitized. */
  upstreamMessage?: string | null;
  /** What went wrong, already sanitized (e.g. a validation problem or a transport failure). */
  detail?: string | null;
  cause?: unknown;
}

export class UpstreamError extends StatuswatchError {
  declare readonly code: UpstreamErrorCode;
  readonly status: number | null;
  readonly endpoint: string;
  readonly route: string;
  readonly rateLimit: RateLimitInfo;
  readonly retryable: boolean;
  /** Parsed `Retry-After` (seconds) when the response carried one (429, sometimes 503). */
  readonly retryAfterSeconds: number | null;
  /** The upstream's `error` text (sanitized, at most 200 characters), when there was one. */
  readonly upstreamMessage: string | null;

  constructor(init: UpstreamErrorInit) {
    super(init.code, buildMessage(init), { cause: init.cause });
    this.status = init.status;
    this.endpoint = init.endpoint;
    this.route = init.route;
    this.rateLimit = init.rateLimit ?? NO_RATE_LIMIT;
    this.retryable = isRetryableCode(init.code);
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.upstreamMessage = init.upstreamMessage ?? null;
  }
}

function buildMessage(init: UpstreamErrorInit): string {
  const parts = [`upstream GET ${init.endpoint} failed (${init.code}`];
  if (init.status !== null) parts.push(`, HTTP ${init.status}`);
  parts.push(')');
  if (init.detail !== undefined && init.detail !== null && init.detail !== '') {
    parts.push(`: ${init.detail}`);
  }
  if (init.upstreamMessage !== undefined && init.upstreamMessage !== null) {
    parts.push(`; upstream said: "${init.upstreamMessage}"`);
  }
  if (init.retryAfterSeconds !== undefined && init.retryAfterSeconds !== null) {
    parts.push(`; retry after ${init.retryAfterSeconds}s`);
  }
  return parts.join('');
}
