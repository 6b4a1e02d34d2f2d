/**
 * The HTTP side every HTTP channel kind shares (webhook, Teams, PagerDuty, Opsgenie): undici on
 * an Agent the notifier owns (or an injected dispatcher), every phase bounded by the channel's
 * timeout, and the answer's body read to a bounded size or drained within that timeout too. The
 * verdict on the status is each kind's own (`classifyHttpStatus` plus what its vendor documents).
 */
import type { Dispatcher } from 'undici';
import { egressAgent } from '../egress/connect.js';
import type { EgressPolicy } from '../egress/policy.js';
import { Deadlines, type Deadline } from '../deadlines.js';

/** Where a request goes, parsed once per notifier (undici would parse a URL string on every send). */
export interface HttpTarget {
  origin: string;
  path: string;
}

export function httpTarget(url: string | URL): HttpTarget {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
}

export interface HttpAnswer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  /** The first bytes of the body, as many as `read` asked for (empty when it asked for none). */
  text: string;
}

export interface HttpRequest {
  method?: Dispatcher.HttpMethod;
  headers: Record<string, string>;
  body: string;
  /** Bytes of the answer's body worth keeping for a status (default none: drained unread). */
  read?: (status: number) => number;
}

export interface HttpClient {
  /** One request; network errors and timeouts are thrown as undici throws them. */
  request(target: HttpTarget, request: HttpRequest): Promise<HttpAnswer>;
  /** Closes the Agent when the client owns it. */
  close(): Promise<void>;
}

/**
 * A request's headers as undici's flat list (name, value, name, value…), in their order. A
 * channel's headers come as a prototype-less record (a header may be named `__proto__`), which
 * V8 keeps in dictionary mode: copied (the Agent adds its loop header to a copy) and walked by
 * undici on every send, where a list is a plain array copy.
 */
function flatHeaders(headers: Record<string, string>): string[] {
  const flat: string[] = [];
  for (const name of Object.keys(headers)) flat.push(name, headers[name] ?? '');
  return flat;
}

/** The default of `HttpRequest.read`: the body is drained unread. */
const readNothing = (): number => 0;

/** Bytes of an answer read at most: past this the connection is dropped (as undici's `dump`). */
const READ_LIMIT = 128 * 1024;

/**
 * One request through `dispatch` with a handler of our own, rather than undici's `request`: no
 * response stream, promise chain or async resource per request (the answer is a status, a
 * header and perhaps a few bytes), which is a visible share of a webhook's CPU in a storm of
 * deliveries. Reads at most `keep(status)` bytes of the body and lets the rest go by, dropping
 * the connection past READ_LIMIT. headersTimeout/bodyTimeout are idle timeouts, so a receiver
 * dribbling its body could hold a send slot for ever: the whole read gets `timeoutMs` (a
 * quarter more at most: `Deadlines`, src/deadlines.ts), then the connection is dropped. The status has answered already; the body cannot change it. Rejects
 * with undici's own error when no status arrived (network failures, timeouts), as `request` does.
 */
function dispatchRequest(
  agent: Dispatcher,
  options: Dispatcher.DispatchOptions,
  keep: (status: number) => number,
  deadlines: Deadlines,
): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    let status = 0;
    let headers: HttpAnswer['headers'] = {};
    let limit = 0;
    let size = 0;
    const kept: Buffer[] = [];
    let deadline: Deadline | null = null;
    const answer = (): void => {
      if (deadline !== null) deadlines.delete(deadline);
      const text = limit <= 0 ? '' : Buffer.concat(kept).subarray(0, limit).toString('utf8');
      resolve({ status, headers, text });
    };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {
        // nothing to set up: the Agent's timers bound connect and headers
      },
      onResponseStart(controller, statusCode, responseHeaders) {
        // An informational answer (100 Continue) is followed by the real one.
        if (statusCode < 200) return;
        status = statusCode;
        headers = responseHeaders;
        limit = keep(statusCode);
        deadline = deadlines.add(() => {
          controller.abort(new Error('answer body not read within the timeout'));
        });
      },
      onResponseData(controller, chunk) {
        if (size < limit) kept.push(chunk);
        size += chunk.length;
        if (size > Math.max(limit, READ_LIMIT))
          controller.abort(new Error('answer body longer than read'));
      },
      onResponseEnd() {
        answer();
      },
      onResponseError(_controller, err) {
        // Dropped, or the receiver closed mid-body: the status stands, keep what arrived.
        if (status !== 0) answer();
        else reject(err);
      },
    };
    agent.dispatch(options, handler);
  });
}

export function createHttpClient(
  timeoutMs: number,
  dispatcher?: Dispatcher,
  egress?: EgressPolicy,
): HttpClient {
  const owned = dispatcher === undefined;
  // undici's own timers bound each phase (connect, response headers, response body) by
  // timeoutMs: set once on an owned Agent, per request on an injected dispatcher. (A per-request
  // AbortSignal.timeout would cost a third of the webhook notifier's CPU at fan-out rates.)
  const agent: Dispatcher =
    dispatcher ??
    egressAgent(egress, {
      connect: { timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  const timeouts = owned ? {} : { headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
  const deadlines = new Deadlines(timeoutMs);
  return {
    request(target, request) {
      return dispatchRequest(
        agent,
        {
          origin: target.origin,
          path: target.path,
          method: request.method ?? 'POST',
          headers: flatHeaders(request.headers),
          body: request.body,
          ...timeouts,
        },
        request.read ?? readNothing,
        deadlines,
      );
    },
    async close() {
      if (owned) await agent.close();
    },
  };
}
