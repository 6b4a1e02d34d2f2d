/**
 * The HTTP side every HTTP channel kind shares (webhook, Teams, PagerDuty, Opsgenie): undici on
 * an Agent the notifier owns (or an injected dispatcher), every phase bounded by the channel's
 * timeout, and the answer's body read to a bounded size or drained within that timeout too. The
 * verdict on the status is each kind's own (`classifyHttpStatus` plus what its vendor documents).
 */
import type { Dispatcher } from 'undici';
import { egressAgent } from '../egress/connect.js';
import type { EgressPolicy } from '../egress/policy.js';

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
 * Reads at most `keep` bytes of a body and drains the rest. headersTimeout/bodyTimeout are idle
 * timeouts, so a receiver dribbling its body could hold a send slot for ever: the whole read gets
 * `timeoutMs`, then the connection is dropped. The status has answered already; the body cannot
 * change it.
 */
async function readBody(
  body: Dispatcher.ResponseData['body'],
  keep: number,
  timeoutMs: number,
): Promise<string> {
  const deadline = setTimeout(() => {
    body.destroy();
  }, timeoutMs);
  const kept: Buffer[] = [];
  let size = 0;
  try {
    if (keep <= 0) {
      await body.dump();
    } else {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (size < keep) kept.push(chunk);
        size += chunk.length;
      }
    }
  } catch {
    // dropped, or the receiver closed mid-body: keep what arrived
  } finally {
    clearTimeout(deadline);
  }
  return keep <= 0 ? '' : Buffer.concat(kept).subarray(0, keep).toString('utf8');
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
  return {
    async request(target, request) {
      const response = await agent.request({
        origin: target.origin,
        path: target.path,
        method: request.method ?? 'POST',
        headers: request.headers,
        body: request.body,
        ...timeouts,
      });
      const status = response.statusCode;
      const text = await readBody(response.body, request.read?.(status) ?? 0, timeoutMs);
      return { status, headers: response.headers, text };
    },
    async close() {
      if (owned) await agent.close();
    },
  };
}
