/**
 * The typed client of the upstream Read API: one method per endpoint, each returning the
 * normalized model (`model.ts`) plus rate-limit facts, or throwing one `UpstreamError`.
 *
 * Two parts: the transport (`transport.ts`: the request, the bounded body read and its
 * streaming parse, errors, rate-limit headers via `headers.ts`) and the endpoints
 * (`endpoints.ts`: what each method GETs and how its body becomes the model). This module
 * checks the options and puts them together.
 */
import type { Dispatcher } from 'undici';
import { StatuswatchError, toError } from '../errors.js';
import { createEndpoints, type UpstreamEndpoints } from './endpoints.js';
import { createTransport, type ResponseInfo } from './transport.js';

export { parseRateLimit, parseRetryAfter } from './headers.js';
export { API_PREFIX, type ResponseInfo } from './transport.js';
export { ROW_MEMO_BYTES, type StatusInclude } from './endpoints.js';

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_USER_AGENT = 'statuswatch';

export interface UpstreamClientOptions {
  /** The API's `{base_url}`; `/api/v1/...` is appended. */
  baseUrl: string;
  /** Premium key; empty or absent = public endpoints only. */
  apiKey?: string | undefined;
  /** Connect, headers, body and overall timeout of one call. Default 10 000. */
  timeoutMs?: number;
  /** Use this dispatcher instead of the client's own keep-alive Agent (not closed by `close`). */
  dispatcher?: Dispatcher;
  userAgent?: string;
  /** Largest accepted response body in bytes. Default 64 MiB. */
  maxBodyBytes?: number;
  /** Called once per HTTP response; a throwing hook is ignored. */
  onResponse?: (info: ResponseInfo) => void;
}

export interface UpstreamClient extends UpstreamEndpoints {
  /** True when an API key is configured (premium endpoints may answer). */
  readonly hasPremium: boolean;
  /** Closes the client's own Agent (an injected dispatcher is left to its owner). */
  close(): Promise<void>;
}

/** The base URL, which must be http(s). */
function parseBaseUrl(baseUrl: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch (e) {
    throw new StatuswatchError('upstream_invalid_base_url', 'upstream baseUrl is not a URL', {
      cause: toError(e),
    });
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new StatuswatchError(
      'upstream_invalid_base_url',
      `upstream baseUrl must be http(s), got ${base.protocol}`,
    );
  }
  return base;
}

export function createUpstreamClient(o: UpstreamClientOptions): UpstreamClient {
  const base = parseBaseUrl(o.baseUrl);
  const apiKey = o.apiKey !== undefined && o.apiKey.trim() !== '' ? o.apiKey : null;
  const transport = createTransport({
    origin: base.origin,
    basePath: base.pathname.replace(/\/+$/, ''),
    apiKey,
    timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBodyBytes: o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    userAgent: o.userAgent ?? DEFAULT_USER_AGENT,
    dispatcher: o.dispatcher,
    onResponse: o.onResponse,
  });
  return {
    hasPremium: apiKey !== null,
    ...createEndpoints(transport),
    close: () => transport.close(),
  };
}
