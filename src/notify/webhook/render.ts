/**
 * Notification → Standard Webhooks request (https://www.standardwebhooks.com). Pure: the attempt
 * time is a parameter. JSON needs no escaping of upstream text (receivers must treat it as data).
 */
import { createHmac, type KeyObject } from 'node:crypto';
import type { EventKind } from '../../config/events.js';
import type {
  IncidentRef,
  ServiceRef,
  Transition,
  TransitionValues,
} from '../../diff/transition.js';
import { listHeading, summaryLines, type ListType } from '../text.js';
import type { NotificationLinks } from '../links.js';
import type { Notification } from '../types.js';

export interface WebhookEventData {
  /** The transition id (deterministic). */
  eventId: string;
  kind: EventKind;
  subscription: string;
  service: ServiceRef;
  previous: TransitionValues | null;
  current: TransitionValues;
  incident: IncidentRef | null;
  /** ISO 8601. */
  observedAt: string;
  /** "Open in console" and "silence…" URLs; only with `server.publicUrl`. */
  links?: NotificationLinks;
}

/** `data` of a `batch`, `reminder` or `catchup` delivery: every transition, none left out. */
export interface WebhookBatchData {
  subscription: string;
  count: number;
  /** The heading the chat and e-mail channels show (the notification's `title`, else a default). */
  title: string;
  events: WebhookEventData[];
  /** "Open in console" and "silence…" URLs of the whole delivery; only with `server.publicUrl`. */
  links?: NotificationLinks;
}

/** `data` of a `digest` delivery: the batch fields plus the summary lines. */
export interface WebhookDigestData extends WebhookBatchData {
  summary: string[];
}

/**
 * The body. `type` is the event kind for a single event, `test` for notify-test, and the
 * notification type for the batch-like ones (`data.events` in the order the notification gives).
 */
export type WebhookPayload =
  | { type: EventKind | 'test'; timestamp: string; data: WebhookEventData }
  | { type: 'batch' | 'reminder' | 'catchup'; timestamp: string; data: WebhookBatchData }
  | { type: 'digest'; timestamp: string; data: WebhookDigestData };

function isoFormat(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : new Date(0).toISOString();
}

/**
 * ISO 8601 of `ms`, remembering the last one: a fan-out renders many notifications that share
 * their creation and observation times, and formatting a Date is a visible part of a render.
 */
function lastIso(): (ms: number) => string {
  let lastMs = Number.NaN;
  let last = '';
  return (ms) => {
    if (ms !== lastMs) {
      last = isoFormat(ms);
      lastMs = ms;
    }
    return last;
  };
}

const createdIso = lastIso();
const observedIso = lastIso();

export function webhookEventData(transition: Transition, subscription: string): WebhookEventData {
  return {
    eventId: transition.id,
    kind: transition.kind,
    subscription,
    service: {
      feedId: transition.service.feedId,
      name: transition.service.name,
      canonicalUrl: transition.service.canonicalUrl,
      officialStatusUrl: transition.service.officialStatusUrl,
    },
    previous: transition.previous,
    current: transition.current,
    incident: transition.incident,
    observedAt: observedIso(transition.observedAt),
  };
}

/** `{links}` when the notification has them (a copy: the payload owns its objects), else nothing. */
function linksOf(notification: Notification): { links?: NotificationLinks } {
  const links = notification.links;
  return links === undefined ? {} : { links: { console: links.console, silence: links.silence } };
}

function batchData(type: ListType, notification: Notification): WebhookBatchData {
  const events = notification.transitions.map((t) =>
    webhookEventData(t, notification.subscription),
  );
  return {
    subscription: notification.subscription,
    count: events.length,
    title: listHeading(type, notification),
    events,
    ...linksOf(notification),
  };
}

/**
 * The body object: one event (`data` = the event), a test (a sample event), or ONE delivery for
 * a batch, reminder, catch-up or digest (`data.events`, plus `data.summary` for a digest).
 */
export function webhookPayload(notification: Notification): WebhookPayload {
  const timestamp = createdIso(notification.createdAt);
  const first = notification.transitions[0];
  switch (notification.type) {
    case 'event':
    case 'test':
      if (first === undefined) {
        return { type: 'batch', timestamp, data: batchData('batch', notification) };
      }
      return {
        type: notification.type === 'test' ? 'test' : first.kind,
        timestamp,
        data: { ...webhookEventData(first, notification.subscription), ...linksOf(notification) },
      };
    case 'batch':
    case 'reminder':
    case 'catchup':
      return {
        type: notification.type,
        timestamp,
        data: batchData(notification.type, notification),
      };
    case 'digest':
      return {
        type: 'digest',
        timestamp,
        data: { ...batchData('digest', notification), summary: summaryLines(notification) },
      };
  }
}

/** The exact bytes that are signed and sent. */
export function renderWebhookBody(notification: Notification): string {
  return JSON.stringify(webhookPayload(notification));
}

/**
 * The signing key: the decoded secret, or a `KeyObject` made of it once (`createSecretKey`), which
 * spares each signature a copy of the key into a new one.
 */
export type WebhookKey = Uint8Array | KeyObject;

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` with the decoded secret as key. */
export function signWebhook(
  id: string,
  timestampSeconds: number,
  body: string,
  key: WebhookKey,
): string {
  const mac = createHmac('sha256', key)
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

/**
 * Body and headers of one attempt. `webhook-id` is the notification id (the same on every retry);
 * `webhook-timestamp` is this attempt's time in Unix seconds. Custom headers come first and can
 * never replace the signature headers.
 */
export function renderWebhookRequest(
  notification: Notification,
  key: WebhookKey,
  attemptAtMs: number,
  customHeaders: Readonly<Record<string, string>> = {},
): WebhookRequest {
  const body = renderWebhookBody(notification);
  const timestamp = Math.floor(attemptAtMs / 1000);
  // No prototype: a configured header named `__proto__` (a valid HTTP token) is a header too.
  const headers = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(customHeaders)) headers[name.toLowerCase()] = value;
  headers['user-agent'] ??= 'statuswatch';
  headers['content-type'] = 'application/json';
  headers['webhook-id'] = notification.id;
  headers['webhook-timestamp'] = String(timestamp);
  headers['webhook-signature'] = signWebhook(notification.id, timestamp, body, key);
  return { body, headers };
}
