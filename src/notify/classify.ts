/**
 * The one failure classifier (2xx ok; 408, 429, 5xx and network codes retryable; other 4xx
 * permanent): an HTTP status, a network error or an SMTP reply becomes a `DeliveryError` that
 * says retry or dead-letter, and why. Its message is team-safe (types.ts): built from fixed words
 * and numbers only, and one wording for every network failure, so that a team cannot tell a
 * closed port from an open one, or read a receiver's greeting, through a channel test. The codes
 * and the receiver's words go to `detail` (the operator's log), never the library's message
 * (which may carry a URL).
 */
import { DeliveryError, type FailureReason } from './types.js';
import { EGRESS_DENIED } from '../egress/policy.js';

/** What a team reads of any network failure: refused, reset, DNS, TLS, connect timeout alike. */
export const NETWORK_FAILURE = 'could not reach the receiver';
/** What a team reads when the receiver took the request and did not answer in time. */
export const TIMEOUT_FAILURE = 'the receiver did not answer in time';

/**
 * Parses a `Retry-After` value: delay-seconds (`7`) or an HTTP-date. Returns milliseconds from
 * `now` (a date in the past gives 0), or null when absent or unparsable.
 */
export function parseRetryAfter(
  header: string | readonly string[] | null | undefined,
  now: number = Date.now(),
): number | null {
  const raw = typeof header === 'string' ? header : header?.[0];
  if (raw === undefined) return null;
  const text = raw.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : null;
  }
  // HTTP-date (IMF-fixdate and the obsolete forms Date.parse understands); must name a weekday or month.
  if (!/[A-Za-z]{3}/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

/**
 * The verdict on an HTTP response status: null for 2xx; retryable for 408 (timeout), 429
 * (rate_limited) and 5xx (server), with the receiver's Retry-After; permanent for 401/403 (auth)
 * and every other status (client: 4xx, and 1xx/3xx which a receiver must not answer).
 */
export function classifyHttpStatus(
  status: number,
  retryAfterHeader?: string | readonly string[] | null,
  now: number = Date.now(),
): DeliveryError | null {
  if (status >= 200 && status <= 299) return null;
  const retryAfterMs = parseRetryAfter(retryAfterHeader, now);
  const fail = (retryable: boolean, reason: FailureReason, what: string): DeliveryError =>
    new DeliveryError({
      message: `receiver answered HTTP ${status} (${what})`,
      retryable,
      reason,
      httpStatus: status,
      retryAfterMs: retryable ? retryAfterMs : null,
    });
  if (status === 408) return fail(true, 'timeout', 'request timeout');
  if (status === 429) return fail(true, 'rate_limited', 'rate limited');
  if (status >= 500 && status <= 599) return fail(true, 'server', 'server error');
  if (status === 401 || status === 403) return fail(false, 'auth', 'not authorized');
  if (status >= 400 && status <= 499) return fail(false, 'client', 'rejected');
  return fail(false, 'client', 'unexpected status');
}

interface Verdict {
  retryable: boolean;
  reason: FailureReason;
  what: string;
}

/** Node, undici and nodemailer codes for "could not talk to the receiver": retry. */
const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection aborted',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed temporarily',
  EAI_FAIL: 'DNS lookup failed',
  EHOSTUNREACH: 'host unreachable',
  EHOSTDOWN: 'host down',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network down',
  EPIPE: 'connection closed while writing',
  UND_ERR_SOCKET: 'socket error',
  UND_ERR_CLOSED: 'connection closed',
  UND_ERR_DESTROYED: 'connection destroyed',
  UND_ERR_ABORTED: 'request aborted',
  UND_ERR_CONNECT: 'could not connect',
  ECONNECT_TIMEOUT: 'connect timed out',
  // nodemailer
  ECONNECTION: 'SMTP connection closed unexpectedly',
  ESOCKET: 'SMTP socket error',
  EDNS: 'SMTP host lookup failed',
  ETLS: 'TLS handshake failed',
  EPROXY: 'proxy connection failed',
  EABORT: 'sending aborted',
  EMAXLIMIT: 'SMTP pool limit reached',
  // A connect that timed out reads as one refused: a team must not tell a filtered port from a
  // closed one.
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
};

const TIMEOUT_CODES: Record<string, string> = {
  ETIMEDOUT: 'timed out',
  ESOCKETTIMEDOUT: 'socket timed out',
  UND_ERR_HEADERS_TIMEOUT: 'response headers timeout',
  UND_ERR_BODY_TIMEOUT: 'response body timeout',
};

const PERMANENT_CODES: Record<string, Verdict> = {
  EAUTH: { retryable: false, reason: 'auth', what: 'SMTP authentication failed' },
  ENOAUTH: { retryable: false, reason: 'auth', what: 'SMTP credentials missing' },
  EOAUTH2: { retryable: false, reason: 'auth', what: 'OAuth2 token error' },
  EENVELOPE: { retryable: false, reason: 'client', what: 'invalid mail envelope' },
  EREQUIRETLS: { retryable: false, reason: 'config', what: 'REQUIRETLS not supported by server' },
  ECONFIG: { retryable: false, reason: 'config', what: 'invalid transport configuration' },
  UND_ERR_INVALID_ARG: { retryable: false, reason: 'config', what: 'invalid request' },
  ERR_INVALID_URL: { retryable: false, reason: 'config', what: 'invalid URL' },
  UND_ERR_NOT_SUPPORTED: { retryable: false, reason: 'config', what: 'not supported' },
};

interface Facts {
  codes: string[];
  names: string[];
  responseCode: number | null;
  response: string | null;
}

function field(value: object, key: string): unknown {
  return (value as Record<string, unknown>)[key];
}

/** Codes, names and SMTP replies found along the error, its `cause`/`original` chain and AggregateErrors. */
function collectFacts(error: unknown): Facts {
  const facts: Facts = { codes: [], names: [], responseCode: null, response: null };
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 6 || value === null || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    // nodemailer replaces the socket's code (ECONNREFUSED) with its own (ESOCKET): the original is more precise.
    const originalCode = field(value, 'originalCode');
    if (typeof originalCode === 'string') facts.codes.push(originalCode);
    const code = field(value, 'code');
    if (typeof code === 'string') facts.codes.push(code);
    const name = field(value, 'name');
    if (typeof name === 'string') facts.names.push(name);
    const responseCode = field(value, 'responseCode');
    // Only a real reply code (a greeting that is not SMTP has none): a non-SMTP server must read
    // as any unreachable one.
    if (
      facts.responseCode === null &&
      typeof responseCode === 'number' &&
      Number.isInteger(responseCode) &&
      responseCode >= 200 &&
      responseCode <= 599
    ) {
      facts.responseCode = responseCode;
      const response = field(value, 'response');
      if (typeof response === 'string') facts.response = response;
    }
    visit(field(value, 'cause'), depth + 1);
    visit(field(value, 'original'), depth + 1);
    const errors = field(value, 'errors');
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
  };
  visit(error, 0);
  return facts;
}

/**
 * Printable, single-line, bounded text of an SMTP reply (it comes from the server): for the
 * operator's `detail` only.
 */
function smtpReplyText(response: string | null): string {
  if (response === null) return '';
  // eslint-disable-next-line no-control-regex
  const line = response.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line === '' ? '' : `: ${line.length > 200 ? `${line.slice(0, 199)}…` : line}`;
}

/** RFC 5321: 4yz transient, 5yz permanent — except 503 (bad sequence: a new session may work). */
function smtpVerdict(code: number): Verdict {
  if (code === 530 || code === 534 || code === 535 || code === 538) {
    return { retryable: false, reason: 'auth', what: 'SMTP authentication rejected' };
  }
  if (code === 421) return { retryable: true, reason: 'server', what: 'SMTP service unavailable' };
  if (code === 503) return { retryable: true, reason: 'server', what: 'SMTP bad sequence' };
  if (code >= 400 && code <= 499)
    return { retryable: true, reason: 'server', what: 'SMTP transient rejection' };
  if (code >= 500 && code <= 599)
    return { retryable: false, reason: 'client', what: 'SMTP rejected the message' };
  return { retryable: true, reason: 'server', what: 'unexpected SMTP reply' };
}

/** A verdict: the team-safe `message` and the operator's `detail`. */
interface Classified extends Verdict {
  message: string;
  detail: string;
}

function verdictOf(facts: Facts): Classified {
  // The egress policy refused the destination (`src/egress`): nothing was sent, and a retry
  // would be refused again.
  if (facts.codes.includes(EGRESS_DENIED)) {
    const what = 'destination refused by the egress policy (server.egress)';
    return { retryable: false, reason: 'policy', what, message: what, detail: EGRESS_DENIED };
  }
  // Authentication first: nodemailer's EAUTH carries the 535 reply too. A 4xx reply to AUTH
  // (454 4.7.0 "temporary authentication failure", RFC 4954 §6; 421) is transient: the reply
  // code below decides it, and the mail is retried.
  const transient =
    facts.responseCode !== null && facts.responseCode >= 400 && facts.responseCode <= 499;
  const reply =
    facts.responseCode === null ? '' : ` (${facts.responseCode}${smtpReplyText(facts.response)})`;
  for (const code of facts.codes) {
    const permanent = PERMANENT_CODES[code];
    if (permanent?.reason === 'auth' && !transient)
      return { ...permanent, message: permanent.what, detail: `${code}${reply}` };
  }
  if (facts.responseCode !== null) {
    const verdict = smtpVerdict(facts.responseCode);
    return {
      ...verdict,
      message: `${verdict.what} (SMTP ${facts.responseCode})`,
      detail: `${facts.responseCode}${smtpReplyText(facts.response)}`,
    };
  }
  for (const code of facts.codes) {
    const timeout = TIMEOUT_CODES[code];
    if (timeout !== undefined)
      return {
        retryable: true,
        reason: 'timeout',
        what: timeout,
        message: TIMEOUT_FAILURE,
        detail: `${timeout} (${code})`,
      };
  }
  if (facts.names.includes('TimeoutError')) {
    return {
      retryable: true,
      reason: 'timeout',
      what: 'timed out',
      message: TIMEOUT_FAILURE,
      detail: 'timed out (TimeoutError)',
    };
  }
  for (const code of facts.codes) {
    const permanent = PERMANENT_CODES[code];
    if (permanent !== undefined) return { ...permanent, message: permanent.what, detail: code };
    const network = NETWORK_CODES[code];
    if (network !== undefined)
      return {
        retryable: true,
        reason: 'network',
        what: network,
        message: NETWORK_FAILURE,
        detail: `${network} (${code})`,
      };
  }
  // Unknown: at-least-once delivery prefers a retry (bounded by the queue's attempts) to a drop.
  // It reads as any network failure (an open port answering garbage must not read otherwise).
  const code = facts.codes[0] ?? facts.names[0] ?? 'unknown error';
  return {
    retryable: true,
    reason: 'network',
    what: 'delivery failed',
    message: NETWORK_FAILURE,
    detail: `delivery failed (${code})`,
  };
}

/**
 * The verdict on a thrown error: network codes (ECONNREFUSED, ECONNRESET, ENOTFOUND, EAI_AGAIN,
 * UND_ERR_SOCKET, UND_ERR_CONNECT_TIMEOUT…) and unknown errors retryable `network`, all with
 * the one message `NETWORK_FAILURE`; timeouts of a receiver that took the request
 * (UND_ERR_HEADERS_TIMEOUT, an aborted `AbortSignal.timeout`) retryable `timeout`; SMTP replies
 * 4xx retryable, 5xx permanent; EAUTH (unless its reply is 4xx) and 530/535 permanent `auth`.
 * The code and any SMTP reply text go to `detail`. A DeliveryError passes through unchanged.
 * The original error is kept as `cause` (notifiers scrub it of secrets before throwing).
 */
export function classifyError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const verdict = verdictOf(collectFacts(error));
  return new DeliveryError({
    message: verdict.message,
    retryable: verdict.retryable,
    reason: verdict.reason,
    detail: verdict.detail,
    cause: error,
  });
}
