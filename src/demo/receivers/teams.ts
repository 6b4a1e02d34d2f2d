/**
 * A local stand-in for a Teams Workflows webhook ("Post to a channel when a webhook request is
 * received"), written from the vendor's contract, for the demo and the tests:
 *
 * - the URL looks like a real trigger URL: a workflow path and a query carrying the signature
 *   (`?api-version=…&sp=…&sv=1.0&sig=…`); a wrong or missing `sig` is answered 401;
 * - a body over 28 KB (28 × 1024 bytes, learn.microsoft.com/microsoftteams/limits-specifications-
 *   teams) is answered 413 "Request Entity too large", as the Teams connector documents its
 *   413 Payload Too Large (learn.microsoft.com/connectors/teams, response codes; the same words
 *   Teams uses for an oversized message). A real Workflows trigger accepts first and fails the
 *   flow run later (MicrosoftDocs/msteams-docs#11274); answering synchronously makes the
 *   mistake visible;
 * - the envelope must be `{"type":"message","attachments":[one attachment of contentType
 *   application/vnd.microsoft.card.adaptive whose content is an AdaptiveCard of version 1.0–1.5
 *   with a body array]}`; `Action.OpenUrl` URLs must be http(s); otherwise 400;
 * - a valid card is recorded and answered 202 Accepted with an empty body, as Workflows do;
 * - `failNext(status, count, headers)` scripts the next answers (429 with Retry-After, 500, 400…).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { startReceiverServer, type ReceiverAnswer } from './http.js';

/** The documented Teams message limit. */
export const TEAMS_RECEIVER_MAX_BYTES = 28 * 1024;
/** The signature in the receiver's URL (a secret: it must never show up in an error). */
export const TEAMS_RECEIVER_SIG = 'SECRETSIG';
const WORKFLOW_PATH = '/workflows/4f6c0e3a9b2d4c5e8f7a1b2c3d4e5f60/triggers/manual/paths/invoke';

export interface ReceivedTeamsCard {
  /** The parsed request body (the envelope). */
  message: Record<string, unknown>;
  /** `attachments[0].content`: the Adaptive Card. */
  card: Record<string, unknown>;
  /** The raw body and its size in bytes. */
  body: string;
  bytes: number;
  headers: IncomingHttpHeaders;
}

/** A request the receiver refused on its merits (not a scripted failure). */
export interface TeamsRejection {
  status: number;
  reason: string;
  bytes: number;
}

export interface TeamsReceiverOptions {
  /** The `sig` the URL carries and the receiver demands; default `SECRETSIG`. */
  signature?: string;
  /** Largest accepted body in bytes; default 28 KB. */
  maxBytes?: number;
  /** Called for every accepted card (the demo prints them). */
  onCard?: (card: ReceivedTeamsCard) => void;
}

export interface TeamsReceiver {
  /** The fake workflow URL, signature included. */
  url: string;
  /** Accepted cards, in arrival order (recorded before the 202 is sent). */
  cards: ReceivedTeamsCard[];
  /** Requests refused on their merits (401, 400, 413…). */
  rejected: TeamsRejection[];
  /** Statuses of the scripted failures answered so far. */
  failed: number[];
  /** Answer the next `count` requests with `status` (and `headers`) instead of judging them. */
  failNext(status: number, count?: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

interface Scripted {
  status: number;
  remaining: number;
  headers: Record<string, string>;
}

type Verdict =
  | { ok: true; message: Record<string, unknown>; card: Record<string, unknown> }
  | {
      ok: false;
      status: number;
      reason: string;
    };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol, hostname } = new URL(value);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '';
}

/** The first problem with the elements and actions of a card, or null. */
function elementProblem(value: unknown, depth: number): string | null {
  if (depth > 20) return 'card nested too deeply';
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = elementProblem(item, depth + 1);
      if (problem !== null) return problem;
    }
    return null;
  }
  if (!isObject(value)) return null;
  if (value.type === 'Action.OpenUrl' && !isHttpUrl(value.url)) {
    return 'Action.OpenUrl needs an http(s) url';
  }
  for (const key of ['body', 'items', 'actions', 'columns']) {
    if (key in value) {
      const problem = elementProblem(value[key], depth + 1);
      if (problem !== null) return problem;
    }
  }
  return null;
}

/** Judges one request body as the Workflows trigger and Teams would. */
export function judgeTeamsRequest(body: string, contentType: string | undefined): Verdict {
  const bad = (reason: string): Verdict => ({ ok: false, status: 400, reason });
  if (contentType === undefined || !contentType.toLowerCase().startsWith('application/json')) {
    return bad('content-type must be application/json');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return bad('body is not JSON');
  }
  if (!isObject(parsed)) return bad('body is not an object');
  if (parsed.type !== 'message') return bad('type must be "message"');
  const attachments = parsed.attachments;
  if (!Array.isArray(attachments) || attachments.length !== 1) {
    return bad('attachments must hold exactly one card');
  }
  const [attachment] = attachments as unknown[];
  if (!isObject(attachment)) return bad('attachment is not an object');
  if (attachment.contentType !== 'application/vnd.microsoft.card.adaptive') {
    return bad('contentType must be application/vnd.microsoft.card.adaptive');
  }
  if (attachment.contentUrl !== undefined && attachment.contentUrl !== null) {
    return bad('contentUrl must be null');
  }
  const card = attachment.content;
  if (!isObject(card)) return bad('content must be an Adaptive Card');
  if (card.type !== 'AdaptiveCard') return bad('content.type must be AdaptiveCard');
  if (typeof card.version !== 'string' || !/^1\.[0-5]$/.test(card.version)) {
    return bad('content.version must be 1.0 to 1.5');
  }
  if (!Array.isArray(card.body)) return bad('content.body must be an array');
  if (card.actions !== undefined && !Array.isArray(card.actions)) {
    return bad('content.actions must be an array');
  }
  for (const element of card.body as unknown[]) {
    if (!isObject(element) || typeof element.type !== 'string') {
      return bad('every body element needs a type');
    }
  }
  const problem = elementProblem(card, 0);
  if (problem !== null) return bad(problem);
  return { ok: true, message: parsed, card };
}

function errorBody(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

/** Starts the receiver on a free port of 127.0.0.1. */
export async function startTeamsReceiver(
  options: TeamsReceiverOptions = {},
): Promise<TeamsReceiver> {
  const signature = options.signature ?? TEAMS_RECEIVER_SIG;
  const maxBytes = options.maxBytes ?? TEAMS_RECEIVER_MAX_BYTES;
  const cards: ReceivedTeamsCard[] = [];
  const rejected: TeamsRejection[] = [];
  const failed: number[] = [];
  const script: Scripted[] = [];

  const answer = (
    status: number,
    body = '',
    headers: Record<string, string> = {},
  ): ReceiverAnswer => ({
    status,
    headers: {
      ...(body === '' ? {} : { 'content-type': 'application/json; charset=utf-8' }),
      ...headers,
    },
    body,
  });

  const server = await startReceiverServer(
    ({ method, url, headers, body: raw, bytes, overLimit }) => {
      const reject = (status: number, code: string, reason: string): ReceiverAnswer => {
        rejected.push({ status, reason, bytes });
        return answer(status, errorBody(code, reason));
      };
      const next = script[0];
      if (next !== undefined) {
        next.remaining--;
        if (next.remaining <= 0) script.shift();
        failed.push(next.status);
        return answer(
          next.status,
          errorBody('ScriptedFailure', `scripted HTTP ${next.status}`),
          next.headers,
        );
      }
      if (method !== 'POST') return reject(405, 'MethodNotAllowed', 'only POST');
      if (url.pathname !== WORKFLOW_PATH) return reject(404, 'NotFound', 'no such workflow');
      if (url.searchParams.get('sig') !== signature)
        return reject(401, 'Unauthorized', 'the signature is invalid');
      if (overLimit) return reject(413, 'RequestEntityTooLarge', 'Request Entity too large');
      const body = raw.toString('utf8');
      const verdict = judgeTeamsRequest(body, headers['content-type']);
      if (!verdict.ok) return reject(verdict.status, 'BadRequest', verdict.reason);
      const card: ReceivedTeamsCard = {
        message: verdict.message,
        card: verdict.card,
        body,
        bytes,
        headers,
      };
      cards.push(card);
      options.onCard?.(card);
      return answer(202);
    },
    { maxBytes },
  );

  const query = `api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${encodeURIComponent(signature)}`;
  return {
    url: `${server.origin}${WORKFLOW_PATH}?${query}`,
    cards,
    rejected,
    failed,
    failNext(status, count = 1, headers = {}) {
      if (count <= 0) return;
      const withRetryAfter =
        status === 429 && !Object.keys(headers).some((h) => h.toLowerCase() === 'retry-after')
          ? { 'retry-after': '1', ...headers }
          : headers;
      script.push({ status, remaining: count, headers: withRetryAfter });
    },
    close: () => server.close(),
  };
}
