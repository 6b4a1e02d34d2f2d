/**
 * A local stand-in for PagerDuty's Events API v2, written from PagerDuty's documentation (not from
 * what statuswatch sends), for tests and the demo:
 * - `POST /v2/enqueue` (alert events: "Send an Alert Event") and `POST /v2/change/enqueue`
 *   ("Send a Change Event"), on 127.0.0.1 and a free port;
 * - validation as documented: `routing_key` required, 32 characters; `event_action` one of
 *   trigger, acknowledge, resolve; `dedup_key` at most 255 characters and required unless the
 *   action is trigger; a trigger's `payload` with `summary` (at most 1024 characters), `source`
 *   and `severity` (critical, error, warning, info); a change event's `payload.summary`; `links`
 *   with an `href`, `images` with a `src`; at most 512 KB;
 * - answers as documented: 202 `{"status":"success","message":"Event processed","dedup_key":…}`;
 *   400 `{"status":"invalid event","message":"Event object is invalid","errors":[…]}`; a body
 *   that is not JSON 400 `{"status":"Unrecognized object",…,"errors":["JSON parse error"]}`;
 * - alert de-duplication as documented: events for a dedup_key apply to its open alert; a
 *   trigger after its resolution opens a new alert; acknowledge and resolve for no open alert are
 *   dropped (still answered 202).
 * `failNext(status, count)` scripts the next answers (429, 500, 400…) before any validation;
 * `acceptNext(count)` lets requests through first.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { parseJson, startReceiverServer, type ReceiverAnswer } from './http.js';

const SEVERITIES = ['critical', 'error', 'warning', 'info'];
const ACTIONS = ['trigger', 'acknowledge', 'resolve'];
const ROUTING_KEY_LENGTH = 32;
const SUMMARY_MAX = 1024;
const DEDUP_KEY_MAX = 255;
const MAX_BODY_BYTES = 512 * 1024;

export type PagerdutyEndpoint = 'enqueue' | 'change';

/** An event the receiver accepted (202), as parsed JSON. */
export interface PagerdutyReceivedEvent {
  endpoint: PagerdutyEndpoint;
  body: Record<string, unknown>;
  /** The dedup_key the answer carried (alert events only; generated when the event had none). */
  dedupKey: string | null;
  headers: IncomingMessage['headers'];
}

/** Every request, accepted or not, with the status it was answered. */
export interface PagerdutyRequestLog {
  method: string;
  path: string;
  status: number;
  body: string;
}

/** An alert as PagerDuty keeps it per dedup_key. */
export interface PagerdutyAlert {
  dedupKey: string;
  status: 'triggered' | 'acknowledged' | 'resolved';
  summary: string;
  severity: string;
  /** Events applied to it (the opening trigger included). */
  events: number;
}

export interface PagerdutyReceiver {
  /** The alert endpoint (`…/v2/enqueue`). */
  url: string;
  /** The change-event endpoint (`…/v2/change/enqueue`). */
  changeUrl: string;
  /** Accepted events, in arrival order. */
  events: PagerdutyReceivedEvent[];
  /** Every request with its answer. */
  requests: PagerdutyRequestLog[];
  /** Alerts in the order they were opened (a key re-triggered after resolution appears again). */
  alerts: PagerdutyAlert[];
  /** The next `count` requests are answered `status` (with `headers` and `body`), unvalidated. */
  failNext(status: number, count?: number, headers?: Record<string, string>, body?: string): void;
  /** The next `count` requests are processed normally (to script a failure after them). */
  acceptNext(count?: number): void;
  /** Resolves once `count` events were accepted (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<PagerdutyReceivedEvent[]>;
  close(): Promise<void>;
}

export interface PagerdutyReceiverOptions {
  /** Called for every accepted event (the demo prints them). */
  onEvent?: (event: PagerdutyReceivedEvent) => void;
}

interface Scripted {
  status: number;
  headers: Record<string, string>;
  body: string;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function blank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}

const INVALID = { status: 'invalid event', message: 'Event object is invalid' };

/** Default bodies of scripted answers (PagerDuty documents none for 429; 5xx carry status+message). */
function scriptedBody(status: number): string {
  if (status === 400) return JSON.stringify({ ...INVALID, errors: ['scripted failure'] });
  if (status === 429) return '';
  if (status >= 500) return JSON.stringify({ status: 'error', message: 'Internal server error' });
  return '';
}

function validateLinks(event: Json, errors: string[]): void {
  if (event['links'] !== undefined) {
    if (!Array.isArray(event['links'])) errors.push("'links' must be an array");
    else
      event['links'].forEach((link, i) => {
        if (!isObject(link) || blank(link['href']))
          errors.push(`'links[${i}].href' is missing or blank`);
        else if (link['text'] !== undefined && typeof link['text'] !== 'string')
          errors.push(`'links[${i}].text' must be a string`);
      });
  }
}

function validateImages(event: Json, errors: string[]): void {
  if (event['images'] === undefined) return;
  if (!Array.isArray(event['images'])) {
    errors.push("'images' must be an array");
    return;
  }
  event['images'].forEach((image, i) => {
    if (!isObject(image) || blank(image['src']))
      errors.push(`'images[${i}].src' is missing or blank`);
  });
}

function validateRoutingKey(event: Json, errors: string[]): void {
  const key = event['routing_key'];
  if (blank(key)) errors.push("'routing_key' is missing or blank");
  else if ((key as string).length !== ROUTING_KEY_LENGTH)
    errors.push("Length of 'routing_key' is incorrect (should be 32 characters)");
}

function validateCommonPayload(payload: Json, errors: string[]): void {
  if (blank(payload['summary'])) errors.push("'payload.summary' is missing or blank");
  else if ((payload['summary'] as string).length > SUMMARY_MAX)
    errors.push(`'payload.summary' is too long (maximum is ${SUMMARY_MAX} characters)`);
  const timestamp = payload['timestamp'];
  if (
    timestamp !== undefined &&
    (typeof timestamp !== 'string' || Number.isNaN(Date.parse(timestamp)))
  )
    errors.push("'payload.timestamp' is not a valid ISO 8601 timestamp");
  if (payload['custom_details'] !== undefined && !isObject(payload['custom_details']))
    errors.push("'payload.custom_details' must be an object");
}

/** The errors PagerDuty would list for an alert event (`/v2/enqueue`); empty when valid. */
export function validateAlertEvent(event: Json): string[] {
  const errors: string[] = [];
  validateRoutingKey(event, errors);
  const action = event['event_action'];
  if (blank(action)) errors.push("'event_action' is missing or blank");
  else if (!ACTIONS.includes(action as string))
    errors.push("'event_action' is invalid (must be trigger, acknowledge or resolve)");
  const dedupKey = event['dedup_key'];
  if (dedupKey !== undefined && typeof dedupKey !== 'string')
    errors.push("'dedup_key' must be a string");
  else if (typeof dedupKey === 'string' && dedupKey.length > DEDUP_KEY_MAX)
    errors.push(`'dedup_key' is too long (maximum is ${DEDUP_KEY_MAX} characters)`);
  else if (action !== 'trigger' && ACTIONS.includes(action as string) && blank(dedupKey))
    errors.push("'dedup_key' is missing or blank");
  if (action === 'trigger') {
    const payload = event['payload'];
    if (!isObject(payload)) errors.push("'payload' is missing or blank");
    else {
      validateCommonPayload(payload, errors);
      if (blank(payload['source'])) errors.push("'payload.source' is missing or blank");
      if (blank(payload['severity'])) errors.push("'payload.severity' is missing or blank");
      else if (!SEVERITIES.includes(payload['severity'] as string))
        errors.push("'payload.severity' is invalid (must be critical, error, warning or info)");
      for (const field of ['component', 'group', 'class'])
        if (payload[field] !== undefined && typeof payload[field] !== 'string')
          errors.push(`'payload.${field}' must be a string`);
    }
  } else if (event['payload'] !== undefined && !isObject(event['payload'])) {
    errors.push("'payload' must be an object");
  }
  validateLinks(event, errors);
  validateImages(event, errors);
  return errors;
}

/** The errors PagerDuty would list for a change event (`/v2/change/enqueue`); empty when valid. */
export function validateChangeEvent(event: Json): string[] {
  const errors: string[] = [];
  validateRoutingKey(event, errors);
  const payload = event['payload'];
  if (!isObject(payload)) errors.push("'payload' is missing or blank");
  else {
    validateCommonPayload(payload, errors);
    if (payload['source'] !== undefined && typeof payload['source'] !== 'string')
      errors.push("'payload.source' must be a string");
  }
  validateLinks(event, errors);
  return errors;
}

export async function startPagerdutyReceiver(
  options: PagerdutyReceiverOptions = {},
): Promise<PagerdutyReceiver> {
  const events: PagerdutyReceivedEvent[] = [];
  const requests: PagerdutyRequestLog[] = [];
  const alerts: PagerdutyAlert[] = [];
  const open = new Map<string, PagerdutyAlert>();
  /** Scripted answers, in order; null: process the request normally. */
  const scripted: (Scripted | null)[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];

  const answer = (
    log: Omit<PagerdutyRequestLog, 'status'>,
    status: number,
    body: string,
    headers: Record<string, string> = {},
  ): ReceiverAnswer => {
    requests.push({ ...log, status });
    return {
      status,
      headers: { ...(body === '' ? {} : { 'content-type': 'application/json' }), ...headers },
      body,
    };
  };

  const applyAlert = (event: Json): string => {
    const action = event['event_action'] as string;
    const given = typeof event['dedup_key'] === 'string' ? event['dedup_key'] : '';
    const dedupKey = given !== '' ? given : randomUUID().replace(/-/g, '');
    const current = open.get(dedupKey);
    const payload = isObject(event['payload']) ? event['payload'] : {};
    if (action === 'trigger') {
      if (current === undefined) {
        const alert: PagerdutyAlert = {
          dedupKey,
          status: 'triggered',
          summary: String(payload['summary']),
          severity: String(payload['severity']),
          events: 1,
        };
        alerts.push(alert);
        open.set(dedupKey, alert);
      } else {
        current.events += 1;
        current.summary = String(payload['summary']);
        current.severity = String(payload['severity']);
      }
    } else if (current !== undefined) {
      // acknowledge / resolve apply to the open alert only; otherwise they are dropped.
      current.events += 1;
      current.status = action === 'resolve' ? 'resolved' : 'acknowledged';
      if (action === 'resolve') open.delete(dedupKey);
    }
    return dedupKey;
  };

  const server = await startReceiverServer(
    ({ req, method, headers, body: raw, overLimit }) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const text = raw.toString('utf8');
      const log = { method, path, body: text };
      const endpoint: PagerdutyEndpoint | null =
        path === '/v2/enqueue' ? 'enqueue' : path === '/v2/change/enqueue' ? 'change' : null;
      if (endpoint === null)
        return answer(log, 404, JSON.stringify({ status: 'error', message: 'Not found' }));
      if (method !== 'POST') return answer(log, 405, '', { allow: 'POST' });
      const failure = scripted.shift();
      if (failure !== undefined && failure !== null)
        return answer(log, failure.status, failure.body, failure.headers);
      if (overLimit) {
        // PagerDuty documents the 512 KB limit, not its answer: an invalid event is a 400.
        return answer(
          log,
          400,
          JSON.stringify({ ...INVALID, errors: ['Event is larger than 512 KB'] }),
        );
      }
      const parsed = parseJson(text);
      if (!isObject(parsed)) {
        return answer(
          log,
          400,
          JSON.stringify({
            status: 'Unrecognized object',
            message: 'Event object format is unrecognized',
            errors: ['JSON parse error'],
          }),
        );
      }
      const errors =
        endpoint === 'enqueue' ? validateAlertEvent(parsed) : validateChangeEvent(parsed);
      if (errors.length > 0) return answer(log, 400, JSON.stringify({ ...INVALID, errors }));
      const dedupKey = endpoint === 'enqueue' ? applyAlert(parsed) : null;
      const event: PagerdutyReceivedEvent = { endpoint, body: parsed, dedupKey, headers };
      events.push(event);
      options.onEvent?.(event);
      const accepted = answer(
        log,
        202,
        JSON.stringify({
          status: 'success',
          message: 'Event processed',
          ...(dedupKey === null ? {} : { dedup_key: dedupKey }),
        }),
      );
      for (const waiter of [...waiters]) {
        if (events.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      return accepted;
    },
    { maxBytes: MAX_BODY_BYTES },
  );
  const origin = server.origin;

  return {
    url: `${origin}/v2/enqueue`,
    changeUrl: `${origin}/v2/change/enqueue`,
    events,
    requests,
    alerts,
    failNext(status, count = 1, headers = {}, body = scriptedBody(status)) {
      for (let i = 0; i < count; i++) scripted.push({ status, headers, body });
    },
    acceptNext(count = 1) {
      for (let i = 0; i < count; i++) scripted.push(null);
    },
    async waitFor(count, timeoutMs = 5_000) {
      if (events.length < count) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(new Error(`timed out waiting for ${count} events (got ${events.length})`));
          }, timeoutMs);
          waiters.push({
            count,
            resolve: () => {
              clearTimeout(timer);
              resolve();
            },
          });
        });
      }
      return events;
    },
    close: () => server.close(),
  };
}
