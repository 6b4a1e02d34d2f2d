/**
 * The typed client of the upstream Read API: one method per endpoint, each returning the
 * normalized model (`model.ts`) plus rate-limit facts, or throwing one `UpstreamError`.
 *
 * Transport: undici `request` through a keep-alive `Agent` whose connect/headers/body timeouts
 * are `timeoutMs`, plus an overall `AbortSignal.timeout(timeoutMs)` per call. Bodies are capped
 * (64 MiB by default). A 2xx body is parsed chunk by chunk as it arrives (`json-stream.ts`), and
 * the rows of a list (services, status, incidents) are validated and normalized one at a time
 * (`RowCollector`), so neither the body nor its parse tree is ever held whole. The API key goes
 * out as `X-API-Key` only when configured and only to the configured origin; it never appears
 * in an error.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher } from 'undici';
import { StatuswatchError, toError } from '../errors.js';
import {
  UpstreamError,
  NO_RATE_LIMIT,
  codeForStatus,
  redactSecrets,
  sanitizeText,
  type UpstreamErrorCode,
} from './errors.js';
import type {
  IncidentList,
  RateLimitInfo,
  ScoreRecord,
  ScoreReport,
  ServiceInfo,
  ServiceList,
  ServiceState,
  SlaRecord,
  SlaReport,
  StatusSnapshot,
  UpstreamResult,
} from './model.js';
import {
  normalizeIncidentList,
  normalizeOpaque,
  normalizeScoreRecord,
  normalizeScoreReport,
  normalizeService,
  normalizeServiceList,
  normalizeServiceState,
  normalizeSlaRecord,
  normalizeSlaReport,
  normalizeStatusSnapshot,
  parseEnvelope,
  incidentListCollector,
  serviceListCollector,
  statusSnapshotCollector,
  type JsonValue,
  type Normalized,
  type RowCollector,
} from './normalize.js';
import { ServiceStateMemo } from './memo.js';
import { RowMemo } from './row-memo.js';
import { EnvelopeStreamParser, JsonStreamError, type ParsedEnvelope } from './json-stream.js';
import { errorBodySchema, type WireEnvelope } from './schemas.js';

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_USER_AGENT = 'statuswatch';
export const API_PREFIX = '/api/v1';

export type StatusInclude = 'incidents' | 'maintenances' | 'details';

/** What `onResponse` sees for every HTTP response (errors included), e.g. for metrics. */
export interface ResponseInfo {
  /** Request path without query, e.g. `/api/v1/status/stripe`. */
  endpoint: string;
  /** Route template, e.g. `/api/v1/status/{feedId}`: bounded cardinality for metric labels. */
  route: string;
  status: number;
  durationMs: number;
  rateLimit: RateLimitInfo;
}

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

export interface UpstreamClient {
  /** True when an API key is configured (premium endpoints may answer). */
  readonly hasPremium: boolean;
  services(o?: { category?: string | undefined }): Promise<UpstreamResult<ServiceList>>;
  service(feedId: string): Promise<UpstreamResult<ServiceInfo>>;
  status(o?: { include?: StatusInclude | undefined }): Promise<UpstreamResult<StatusSnapshot>>;
  serviceStatus(
    feedId: string,
    o?: { compact?: boolean | undefined; include?: StatusInclude | undefined },
  ): Promise<UpstreamResult<ServiceState>>;
  incidents(): Promise<UpstreamResult<IncidentList>>;
  serviceIncidents(feedId: string): Promise<UpstreamResult<IncidentList>>;
  sla(o?: { month?: string | undefined }): Promise<UpstreamResult<SlaReport>>;
  serviceSla(
    feedId: string,
    o?: { month?: string | undefined },
  ): Promise<UpstreamResult<SlaRecord>>;
  scores(o?: { month?: string | undefined }): Promise<UpstreamResult<ScoreReport>>;
  serviceScores(
    feedId: string,
    o?: { month?: string | undefined },
  ): Promise<UpstreamResult<ScoreRecord>>;
  rankings(o?: { month?: string | undefined }): Promise<UpstreamResult<JsonValue>>;
  analytics(o?: { month?: string | undefined }): Promise<UpstreamResult<JsonValue>>;
  /** Closes the client's own Agent (an injected dispatcher is left to its owner). */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Header parsing

function headerValue(headers: Record<string, string | string[] | undefined>, name: string) {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseNonNegativeInt(value: string | undefined): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return null;
  const n = Math.floor(Number(trimmed));
  return Number.isSafeInteger(n) ? n : null;
}

/** X-RateLimit-Limit / -Remaining / -Reset; each null when absent or unparsable. */
export function parseRateLimit(
  headers: Record<string, string | string[] | undefined>,
): RateLimitInfo {
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Transport failure classification

function errorCodeOf(err: unknown): string | undefined {
  if (err !== null && typeof err === 'object' && 'code' in err) {
    return typeof err.code === 'string' ? err.code : undefined;
  }
  return undefined;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

function classifyTransport(err: unknown, signal: AbortSignal): UpstreamErrorCode {
  if (signal.aborted) return 'upstream_timeout';
  const code = errorCodeOf(err);
  if (code !== undefined && TIMEOUT_CODES.has(code)) return 'upstream_timeout';
  if (err instanceof Error && err.name === 'TimeoutError') return 'upstream_timeout';
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return 'upstream_body_too_large';
  return 'upstream_network';
}

function describeTransport(err: Error): string {
  const code = errorCodeOf(err);
  return code === undefined ? err.message : `${code}: ${err.message}`;
}

// ---------------------------------------------------------------------------------------------
// The client

interface Endpoint {
  /** Path after the API prefix, already encoded. */
  path: string;
  route: string;
  query?: Record<string, string | undefined>;
}

class BodyTooLarge extends Error {}

/** Wraps what the body's consumer threw, to tell it from a transport failure. */
class ConsumerFailed extends Error {
  constructor(readonly error: unknown) {
    super('body consumer failed');
  }
}

/**
 * How a 2xx body becomes the model: `normalize` gets the envelope as parsed; with `rows`, a `data`
 * list is not parsed into the envelope but streamed row by row into a fresh collector (see
 * `json-stream.ts`), whose `finish` then gets the envelope's `meta`.
 */
interface Reader<T> {
  normalize: (env: WireEnvelope) => Normalized<T>;
  rows?: () => RowCollector<T>;
  /** The rows of this endpoint's last response (its collectors take `again`). */
  memo?: RowMemo;
}

/** Bytes of incident rows remembered (row-memo.ts): about 10,000 open incidents. */
export const ROW_MEMO_BYTES = 8 * 1024 * 1024;

export function createUpstreamClient(o: UpstreamClientOptions): UpstreamClient {
  let base: URL;
  try {
    base = new URL(o.baseUrl);
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
  const origin = base.origin;
  const basePath = base.pathname.replace(/\/+$/, '');
  const apiKey = o.apiKey !== undefined && o.apiKey.trim() !== '' ? o.apiKey : null;
  const secrets = apiKey === null ? [] : [apiKey];
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBodyBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const userAgent = o.userAgent ?? DEFAULT_USER_AGENT;
  let ownAgent: Agent | null = null;
  let dispatcher: Dispatcher;
  if (o.dispatcher === undefined) {
    ownAgent = new Agent({
      connectTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    dispatcher = ownAgent;
  } else {
    dispatcher = o.dispatcher;
  }

  /** Keeps the API key out of anything we attach to an error. */
  function safeCause(err: Error): Error {
    if (secrets.length === 0) return err;
    const text = `${err.message}\n${err.stack ?? ''}`;
    if (!secrets.some((s) => text.includes(s))) return err;
    const clean = new Error(redactSecrets(err.message, secrets));
    clean.name = err.name;
    clean.stack = redactSecrets(err.stack ?? '', secrets);
    return clean;
  }

  function notify(info: ResponseInfo): void {
    if (o.onResponse === undefined) return;
    try {
      o.onResponse(info);
    } catch {
      // A metrics hook must never break a call.
    }
  }

  /**
   * Hands every chunk of `body` to `consume` as it arrives (at most `maxBodyBytes` in all). An
   * error `consume` throws stops the read (the body is destroyed) and is rethrown as is.
   */
  async function readBody(
    body: Dispatcher.ResponseData['body'],
    contentLength: number | null,
    consume: (chunk: Buffer) => void,
  ): Promise<void> {
    if (contentLength !== null && contentLength > maxBodyBytes) {
      body.destroy();
      throw new BodyTooLarge();
    }
    let size = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes) {
        body.destroy();
        throw new BodyTooLarge();
      }
      try {
        consume(chunk);
      } catch (e) {
        body.destroy();
        throw new ConsumerFailed(e);
      }
    }
  }

  async function get<T>(ep: Endpoint, reader: Reader<T>): Promise<UpstreamResult<T>> {
    const endpoint = `${API_PREFIX}${ep.path}`;
    const route = `${API_PREFIX}${ep.route}`;
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(ep.query ?? {})) if (v !== undefined) search.set(k, v);
    const qs = search.toString();
    const url = new URL(`${origin}${basePath}${endpoint}${qs === '' ? '' : `?${qs}`}`);

    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': userAgent,
    };
    if (apiKey !== null && url.origin === origin) headers['x-api-key'] = apiKey;

    const fail = (
      code: UpstreamErrorCode,
      extra: {
        status?: number | null;
        rateLimit?: RateLimitInfo;
        retryAfterSeconds?: number | null;
        upstreamMessage?: string | null;
        detail?: string | null;
        cause?: unknown;
      } = {},
    ) =>
      new UpstreamError({
        code,
        status: extra.status ?? null,
        endpoint,
        route,
        rateLimit: extra.rateLimit ?? NO_RATE_LIMIT,
        retryAfterSeconds: extra.retryAfterSeconds ?? null,
        upstreamMessage: extra.upstreamMessage ?? null,
        detail:
          extra.detail === undefined || extra.detail === null
            ? null
            : sanitizeText(extra.detail, secrets),
        cause: extra.cause,
      });

    const signal = AbortSignal.timeout(timeoutMs);
    const started = performance.now();

    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: 'GET',
        headers,
        dispatcher,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (e) {
      const err = toError(e);
      const code = classifyTransport(err, signal);
      throw fail(code, {
        detail:
          code === 'upstream_timeout'
            ? `no response within ${timeoutMs} ms`
            : describeTransport(err),
        cause: safeCause(err),
      });
    }

    const status = res.statusCode;
    const rateLimit = parseRateLimit(res.headers);
    const contentLength = parseNonNegativeInt(headerValue(res.headers, 'content-length'));
    const ok = status >= 200 && status <= 299;
    // A 2xx body is parsed while it arrives; an error body (small) is kept whole to quote it.
    const rowsTo: { collector: RowCollector<T> | null } = { collector: null };
    const makeRows = reader.rows;
    const parser = ok
      ? new EnvelopeStreamParser(
          makeRows === undefined
            ? null
            : {
                start: () => {
                  rowsTo.collector = makeRows();
                },
                row: (row) => rowsTo.collector?.add(row),
                again: (result) => rowsTo.collector?.again?.(result),
              },
          reader.memo ?? null,
        )
      : null;
    const errorChunks: Buffer[] = [];
    let errorSize = 0;
    try {
      await readBody(res.body, contentLength, (chunk) => {
        if (parser !== null) {
          parser.write(chunk);
        } else {
          errorChunks.push(chunk);
          errorSize += chunk.length;
        }
      });
    } catch (e) {
      notify({ endpoint, route, status, durationMs: performance.now() - started, rateLimit });
      if (e instanceof BodyTooLarge) {
        throw fail('upstream_body_too_large', {
          status,
          rateLimit,
          detail: `response body exceeds ${maxBodyBytes} bytes`,
        });
      }
      if (e instanceof ConsumerFailed) {
        if (!(e.error instanceof JsonStreamError)) throw e.error;
        throw notJson(e.error, false);
      }
      const err = toError(e);
      const code = classifyTransport(err, signal);
      throw fail(code, {
        status,
        rateLimit,
        detail:
          code === 'upstream_timeout'
            ? `response body not complete within ${timeoutMs} ms`
            : `reading the body failed: ${describeTransport(err)}`,
        cause: safeCause(err),
      });
    }
    // (For a 2xx body this includes parsing it: the two are interleaved, chunk by chunk.)
    notify({ endpoint, route, status, durationMs: performance.now() - started, rateLimit });

    if (parser === null) {
      let text = Buffer.concat(errorChunks, errorSize).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      const code = codeForStatus(status);
      let upstreamText: string | null = null;
      try {
        const eb = errorBodySchema.safeParse(JSON.parse(text));
        if (eb.success) upstreamText = eb.data.error;
      } catch {
        if (text.trim() !== '') upstreamText = text;
      }
      throw fail(code, {
        status,
        rateLimit,
        retryAfterSeconds: parseRetryAfter(headerValue(res.headers, 'retry-after'), Date.now()),
        upstreamMessage: upstreamText === null ? null : sanitizeText(upstreamText, secrets),
      });
    }

    let parsed: ParsedEnvelope;
    try {
      parsed = parser.end();
    } catch (e) {
      if (!(e instanceof JsonStreamError)) throw e;
      throw notJson(e, parser.blank);
    }
    // The rows of a streamed `data` list are in the collector; the envelope check sees a list.
    const body =
      parsed.rowList && isPlainObject(parsed.value) ? { ...parsed.value, data: [] } : parsed.value;
    const env = parseEnvelope(body);
    if (!env.ok) {
      throw fail('upstream_bad_envelope', {
        status,
        rateLimit,
        detail: env.problem,
        upstreamMessage:
          env.upstreamError === null ? null : sanitizeText(env.upstreamError, secrets),
      });
    }
    const rows = parsed.rowList ? rowsTo.collector : null;
    const normalized =
      rows === null ? reader.normalize(env.envelope) : rows.finish(env.envelope.meta);
    if (!normalized.ok) {
      throw fail('upstream_bad_envelope', { status, rateLimit, detail: normalized.problem });
    }
    const result: UpstreamResult<T> = {
      data: normalized.value,
      rateLimit,
      httpStatus: status,
      skipped: normalized.skipped,
    };
    if (normalized.words !== undefined) result.words = normalized.words;
    return result;

    function notJson(err: JsonStreamError, blank: boolean): UpstreamError {
      return fail('upstream_bad_envelope', {
        status,
        rateLimit,
        detail: blank ? 'empty body' : `body is not valid JSON (${parser?.size ?? 0} bytes read)`,
        // The parser's own message never quotes the body; JSON.parse's (the cause) may.
        cause: safeCause(toError(err.cause ?? err)),
      });
    }
  }

  function seg(feedId: string): string {
    if (feedId === '' || feedId === '.' || feedId === '..') {
      throw new UpstreamError({
        code: 'upstream_invalid_request',
        status: null,
        endpoint: `${API_PREFIX}/…`,
        route: `${API_PREFIX}/…`,
        detail: `invalid feedId ${JSON.stringify(feedId)}`,
      });
    }
    return encodeURIComponent(feedId);
  }

  /** Runs `make` so that a synchronous argument error becomes a rejected promise. */
  async function call<T>(make: () => Promise<UpstreamResult<T>>): Promise<UpstreamResult<T>> {
    return make();
  }

  const list = <T>(
    n: (data: unknown, meta: unknown) => Normalized<T>,
    rows: () => RowCollector<T>,
    memo?: RowMemo,
  ): Reader<T> => ({
    normalize: (env) => n(env.data, env.meta),
    rows,
    ...(memo === undefined ? {} : { memo }),
  });
  const one = <T>(n: (data: unknown) => Normalized<T>): Reader<T> => ({
    normalize: (env) => n(env.data),
  });

  // The rows of the last plain GET /status, reused by the next one (memo.ts).
  const statusMemo = new ServiceStateMemo();
  // The bytes of the last GET /incidents rows (row-memo.ts). Not status rows: each carries
  // check times that move with every upstream check, so they would seldom repeat.
  const incidentRows = new RowMemo(ROW_MEMO_BYTES);

  return {
    hasPremium: apiKey !== null,
    services: (q = {}) =>
      call(() =>
        get(
          { path: '/services', route: '/services', query: { category: q.category } },
          list(normalizeServiceList, () => serviceListCollector(statusMemo)),
        ),
      ),
    service: (feedId) =>
      call(() =>
        get(
          { path: `/services/${seg(feedId)}`, route: '/services/{feedId}' },
          one(normalizeService),
        ),
      ),
    status: (q = {}) =>
      call(() =>
        get(
          { path: '/status', route: '/status', query: { include: q.include } },
          list(normalizeStatusSnapshot, () =>
            statusSnapshotCollector(q.include === undefined ? statusMemo : undefined),
          ),
        ),
      ),
    serviceStatus: (feedId, q = {}) =>
      call(() =>
        get(
          {
            path: `/status/${seg(feedId)}`,
            route: '/status/{feedId}',
            query: { compact: q.compact === true ? '1' : undefined, include: q.include },
          },
          one(normalizeServiceState),
        ),
      ),
    incidents: () =>
      call(() =>
        get(
          { path: '/incidents', route: '/incidents' },
          list(normalizeIncidentList, incidentListCollector, incidentRows),
        ),
      ),
    serviceIncidents: (feedId) =>
      call(() =>
        get(
          { path: `/incidents/${seg(feedId)}`, route: '/incidents/{feedId}' },
          list(normalizeIncidentList, incidentListCollector),
        ),
      ),
    sla: (q = {}) =>
      call(() =>
        get({ path: '/sla', route: '/sla', query: { month: q.month } }, one(normalizeSlaReport)),
      ),
    serviceSla: (feedId, q = {}) =>
      call(() =>
        get(
          { path: `/sla/${seg(feedId)}`, route: '/sla/{feedId}', query: { month: q.month } },
          one(normalizeSlaRecord),
        ),
      ),
    scores: (q = {}) =>
      call(() =>
        get(
          { path: '/scores', route: '/scores', query: { month: q.month } },
          one(normalizeScoreReport),
        ),
      ),
    serviceScores: (feedId, q = {}) =>
      call(() =>
        get(
          { path: `/scores/${seg(feedId)}`, route: '/scores/{feedId}', query: { month: q.month } },
          one(normalizeScoreRecord),
        ),
      ),
    rankings: (q = {}) =>
      call(() =>
        get(
          { path: '/rankings', route: '/rankings', query: { month: q.month } },
          one(normalizeOpaque),
        ),
      ),
    analytics: (q = {}) =>
      call(() =>
        get(
          { path: '/analytics', route: '/analytics', query: { month: q.month } },
          one(normalizeOpaque),
        ),
      ),
    close: async () => {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
}
