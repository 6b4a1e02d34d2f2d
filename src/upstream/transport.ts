/**
 * The transport of the upstream client (`client.ts`): one GET of an endpoint, from request to
 * model or `UpstreamError`. The endpoints (`endpoints.ts`) say what to fetch and how its body
 * becomes the model (a `Reader`).
 *
 * undici `request` through a keep-alive `Agent` whose connect/headers/body timeouts are
 * `timeoutMs`, plus an overall `AbortSignal.timeout(timeoutMs)` per call. Bodies are capped
 * (`maxBodyBytes`). A 2xx body is parsed chunk by chunk as it arrives (`json-stream.ts`), and the
 * rows of a list are validated and normalized one at a time (`RowCollector`), so neither the body
 * nor its parse tree is ever held whole. The API key goes out as `X-API-Key` only when configured
 * and only to the configured origin; it never appears in an error.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher } from 'undici';
import { toError } from '../errors.js';
import {
  UpstreamError,
  NO_RATE_LIMIT,
  codeForStatus,
  redactSecrets,
  sanitizeText,
  type UpstreamErrorCode,
} from './errors.js';
import { headerValue, parseNonNegativeInt, parseRateLimit, parseRetryAfter } from './headers.js';
import type { RateLimitInfo, UpstreamResult } from './model.js';
import { parseEnvelope, type Normalized, type RowCollector } from './normalize.js';
import type { RowMemo } from './row-memo.js';
import { EnvelopeStreamParser, JsonStreamError, type ParsedEnvelope } from './json-stream.js';
import { errorBodySchema, type WireEnvelope } from './schemas.js';

export const API_PREFIX = '/api/v1';

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

export interface TransportOptions {
  /** The base URL's origin and path (without a trailing slash); `/api/v1/...` is appended. */
  origin: string;
  basePath: string;
  /** Sent as `X-API-Key` to `origin` only; null: none. */
  apiKey: string | null;
  timeoutMs: number;
  maxBodyBytes: number;
  userAgent: string;
  /** Use this dispatcher instead of an own keep-alive Agent (not closed by `close`). */
  dispatcher?: Dispatcher | undefined;
  /** Called once per HTTP response; a throwing hook is ignored. */
  onResponse?: ((info: ResponseInfo) => void) | undefined;
}

/** One endpoint's request. */
export interface Endpoint {
  /** Path after the API prefix, already encoded. */
  path: string;
  route: string;
  query?: Record<string, string | undefined>;
}

/**
 * How a 2xx body becomes the model: `normalize` gets the envelope as parsed; with `rows`, a `data`
 * list is not parsed into the envelope but streamed row by row into a fresh collector (see
 * `json-stream.ts`), whose `finish` then gets the envelope's `meta` (and its `data`).
 */
export interface Reader<T> {
  normalize: (env: WireEnvelope) => Normalized<T>;
  rows?: () => RowCollector<T>;
  /**
   * The rows are the list of this member of a `data` object, not `data` itself; `finish` gets
   * `data` with an empty list there.
   */
  rowsIn?: string;
  /** The rows of this endpoint's last response (its collectors take `again`). */
  memo?: RowMemo;
}

export interface Transport {
  /** GETs `ep` and reads its body with `reader`; throws one `UpstreamError` on any failure. */
  get<T>(ep: Endpoint, reader: Reader<T>): Promise<UpstreamResult<T>>;
  /** Closes the own Agent (an injected dispatcher is left to its owner). */
  close(): Promise<void>;
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

/** Keeps the API key (`secrets`) out of anything attached to an error. */
function safeCause(err: Error, secrets: readonly string[]): Error {
  if (secrets.length === 0) return err;
  const text = `${err.message}\n${err.stack ?? ''}`;
  if (!secrets.some((s) => text.includes(s))) return err;
  const clean = new Error(redactSecrets(err.message, secrets));
  clean.name = err.name;
  clean.stack = redactSecrets(err.stack ?? '', secrets);
  return clean;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Reading a body

class BodyTooLarge extends Error {}

/** Wraps what the body's consumer threw, to tell it from a transport failure. */
class ConsumerFailed extends Error {
  constructor(readonly error: unknown) {
    super('body consumer failed');
  }
}

/**
 * Hands every chunk of `body` to `consume` as it arrives (at most `maxBodyBytes` in all). An
 * error `consume` throws stops the read (the body is destroyed) and is rethrown as is.
 */
async function readBody(
  body: Dispatcher.ResponseData['body'],
  contentLength: number | null,
  maxBodyBytes: number,
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

/** A 2xx body's streaming parser, its rows going to a fresh collector of `reader`'s. */
function bodyParser<T>(reader: Reader<T>): {
  parser: EnvelopeStreamParser;
  rows: () => RowCollector<T> | null;
} {
  let collector: RowCollector<T> | null = null;
  const makeRows = reader.rows;
  const parser = new EnvelopeStreamParser(
    makeRows === undefined
      ? null
      : {
          start: () => {
            collector = makeRows();
          },
          row: (row) => collector?.add(row),
          again: (result) => collector?.again?.(result),
        },
    reader.memo ?? null,
    reader.rowsIn ?? null,
  );
  return { parser, rows: () => collector };
}

// ---------------------------------------------------------------------------------------------
// One call

interface FailExtra {
  status?: number | null;
  rateLimit?: RateLimitInfo;
  retryAfterSeconds?: number | null;
  upstreamMessage?: string | null;
  detail?: string | null;
  cause?: unknown;
}

/** One GET in flight: what its errors and `onResponse` report. */
class Call {
  readonly signal: AbortSignal;
  readonly started = performance.now();

  constructor(
    readonly endpoint: string,
    readonly route: string,
    private readonly t: TransportOptions,
    readonly secrets: readonly string[],
  ) {
    this.signal = AbortSignal.timeout(t.timeoutMs);
  }

  fail(code: UpstreamErrorCode, extra: FailExtra = {}): UpstreamError {
    return new UpstreamError({
      code,
      status: extra.status ?? null,
      endpoint: this.endpoint,
      route: this.route,
      rateLimit: extra.rateLimit ?? NO_RATE_LIMIT,
      retryAfterSeconds: extra.retryAfterSeconds ?? null,
      upstreamMessage: extra.upstreamMessage ?? null,
      detail:
        extra.detail === undefined || extra.detail === null
          ? null
          : sanitizeText(extra.detail, this.secrets),
      cause: extra.cause,
    });
  }

  /** A transport failure (`stage`: before the response, or while reading its body). */
  transportFailure(e: unknown, stage: 'response' | 'body', extra: FailExtra = {}): UpstreamError {
    const err = toError(e);
    const code = classifyTransport(err, this.signal);
    const timeout =
      stage === 'response'
        ? `no response within ${this.t.timeoutMs} ms`
        : `response body not complete within ${this.t.timeoutMs} ms`;
    return this.fail(code, {
      ...extra,
      detail:
        code === 'upstream_timeout'
          ? timeout
          : stage === 'response'
            ? describeTransport(err)
            : `reading the body failed: ${describeTransport(err)}`,
      cause: safeCause(err, this.secrets),
    });
  }

  /** The body is not JSON (or empty). */
  notJson(
    err: JsonStreamError,
    blank: boolean,
    size: number,
    status: number,
    rateLimit: RateLimitInfo,
  ): UpstreamError {
    return this.fail('upstream_bad_envelope', {
      status,
      rateLimit,
      detail: blank ? 'empty body' : `body is not valid JSON (${size} bytes read)`,
      // The parser's own message never quotes the body; JSON.parse's (the cause) may.
      cause: safeCause(toError(err.cause ?? err), this.secrets),
    });
  }

  notify(status: number, rateLimit: RateLimitInfo): void {
    const hook = this.t.onResponse;
    if (hook === undefined) return;
    const { endpoint, route } = this;
    try {
      hook({ endpoint, route, status, durationMs: performance.now() - this.started, rateLimit });
    } catch {
      // A metrics hook must never break a call.
    }
  }
}

/** The error a non-2xx answer becomes, quoting the upstream's `error` (or its text). */
function statusFailure(
  call: Call,
  res: Dispatcher.ResponseData,
  body: Buffer,
  rateLimit: RateLimitInfo,
): UpstreamError {
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let upstreamText: string | null = null;
  try {
    const eb = errorBodySchema.safeParse(JSON.parse(text));
    if (eb.success) upstreamText = eb.data.error;
  } catch {
    if (text.trim() !== '') upstreamText = text;
  }
  return call.fail(codeForStatus(res.statusCode), {
    status: res.statusCode,
    rateLimit,
    retryAfterSeconds: parseRetryAfter(headerValue(res.headers, 'retry-after'), Date.now()),
    upstreamMessage: upstreamText === null ? null : sanitizeText(upstreamText, call.secrets),
  });
}

/** `data` of a parsed envelope whose list was streamed, with an empty list in its place. */
function streamedData(data: unknown, rowsIn: string | undefined): unknown {
  if (rowsIn === undefined || !isPlainObject(data)) return [];
  const out = { ...data };
  Object.defineProperty(out, rowsIn, {
    value: [],
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return out;
}

/** The model a parsed 2xx envelope holds (its streamed rows in `rows`, when a `data` list). */
function decodeEnvelope<T>(
  call: Call,
  parsed: ParsedEnvelope,
  reader: Reader<T>,
  rows: RowCollector<T> | null,
  status: number,
  rateLimit: RateLimitInfo,
): UpstreamResult<T> {
  // The rows of a streamed `data` list are in the collector; the envelope check sees a list.
  const body =
    parsed.rowList && isPlainObject(parsed.value)
      ? { ...parsed.value, data: streamedData(parsed.value.data, reader.rowsIn) }
      : parsed.value;
  const env = parseEnvelope(body);
  if (!env.ok) {
    throw call.fail('upstream_bad_envelope', {
      status,
      rateLimit,
      detail: env.problem,
      upstreamMessage:
        env.upstreamError === null ? null : sanitizeText(env.upstreamError, call.secrets),
    });
  }
  const collector = parsed.rowList ? rows : null;
  const normalized =
    collector === null
      ? reader.normalize(env.envelope)
      : collector.finish(env.envelope.meta, env.envelope.data);
  if (!normalized.ok) {
    throw call.fail('upstream_bad_envelope', { status, rateLimit, detail: normalized.problem });
  }
  const result: UpstreamResult<T> = {
    data: normalized.value,
    rateLimit,
    httpStatus: status,
    skipped: normalized.skipped,
  };
  if (normalized.words !== undefined) result.words = normalized.words;
  return result;
}

export function createTransport(t: TransportOptions): Transport {
  const secrets = t.apiKey === null ? [] : [t.apiKey];
  let ownAgent: Agent | null = null;
  let dispatcher: Dispatcher;
  if (t.dispatcher === undefined) {
    ownAgent = new Agent({
      connectTimeout: t.timeoutMs,
      headersTimeout: t.timeoutMs,
      bodyTimeout: t.timeoutMs,
    });
    dispatcher = ownAgent;
  } else {
    dispatcher = t.dispatcher;
  }

  function urlOf(endpoint: string, query: Endpoint['query']): URL {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) search.set(k, v);
    const qs = search.toString();
    return new URL(`${t.origin}${t.basePath}${endpoint}${qs === '' ? '' : `?${qs}`}`);
  }

  async function send(call: Call, url: URL): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': t.userAgent,
    };
    if (t.apiKey !== null && url.origin === t.origin) headers['x-api-key'] = t.apiKey;
    try {
      return await request(url, {
        method: 'GET',
        headers,
        dispatcher,
        signal: call.signal,
        headersTimeout: t.timeoutMs,
        bodyTimeout: t.timeoutMs,
      });
    } catch (e) {
      throw call.transportFailure(e, 'response');
    }
  }

  async function get<T>(ep: Endpoint, reader: Reader<T>): Promise<UpstreamResult<T>> {
    const endpoint = `${API_PREFIX}${ep.path}`;
    const call = new Call(endpoint, `${API_PREFIX}${ep.route}`, t, secrets);
    const res = await send(call, urlOf(endpoint, ep.query));

    const status = res.statusCode;
    const rateLimit = parseRateLimit(res.headers);
    const contentLength = parseNonNegativeInt(headerValue(res.headers, 'content-length'));
    // A 2xx body is parsed while it arrives; an error body (small) is kept whole to quote it.
    const streaming = status >= 200 && status <= 299 ? bodyParser(reader) : null;
    const errorChunks: Buffer[] = [];
    let errorSize = 0;
    try {
      await readBody(res.body, contentLength, t.maxBodyBytes, (chunk) => {
        if (streaming !== null) {
          streaming.parser.write(chunk);
        } else {
          errorChunks.push(chunk);
          errorSize += chunk.length;
        }
      });
    } catch (e) {
      call.notify(status, rateLimit);
      if (e instanceof BodyTooLarge) {
        throw call.fail('upstream_body_too_large', {
          status,
          rateLimit,
          detail: `response body exceeds ${t.maxBodyBytes} bytes`,
        });
      }
      if (e instanceof ConsumerFailed) {
        if (!(e.error instanceof JsonStreamError)) throw e.error;
        throw call.notJson(e.error, false, streaming?.parser.size ?? 0, status, rateLimit);
      }
      throw call.transportFailure(e, 'body', { status, rateLimit });
    }
    // (For a 2xx body this includes parsing it: the two are interleaved, chunk by chunk.)
    call.notify(status, rateLimit);

    if (streaming === null) {
      throw statusFailure(call, res, Buffer.concat(errorChunks, errorSize), rateLimit);
    }
    let parsed: ParsedEnvelope;
    try {
      parsed = streaming.parser.end();
    } catch (e) {
      if (!(e instanceof JsonStreamError)) throw e;
      throw call.notJson(e, streaming.parser.blank, streaming.parser.size, status, rateLimit);
    }
    return decodeEnvelope(call, parsed, reader, streaming.rows(), status, rateLimit);
  }

  return {
    get,
    close: async () => {
      if (ownAgent !== null) await ownAgent.close();
    },
  };
}
