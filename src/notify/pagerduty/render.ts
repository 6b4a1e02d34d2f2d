/**
 * Notification → PagerDuty Events API v2 requests. Pure: no I/O, the clock is a parameter.
 *
 * Every transition is one event, in the order things happened:
 * - an opening (`roleOf` = opening: incident opened or reopened, status not operational, SLA at
 *   risk or breached, upstream degraded) → `trigger` under the episode's `dedup_key`;
 * - news about an open episode (incident.updated) → `trigger` under the same `dedup_key`: PagerDuty
 *   adds it to the open alert instead of opening another;
 * - a closing → `resolve` under the same `dedup_key`;
 * - an informational kind (score.dropped, sla.forecast, score.trend) → a change event (context on
 *   the service, never a page), unless the channel lists it in `page` (then a `trigger`; nothing
 *   ever resolves it — PagerDuty's auto-resolve or a person does).
 * `reminder` sends nothing (PagerDuty escalates open incidents itself); `digest` is one change
 * event; `test` triggers an alert under `statuswatch:test:<notification id>` and resolves it.
 *
 * PagerDuty shows summary, custom details and link texts as plain text: upstream text is sent as
 * text (no escaping), on one line where it is a title, without control characters, bounded.
 */
import type { EventKind } from '../../config/events.js';
import type { Transition, TransitionValues } from '../../diff/transition.js';
import { episodeKey, roleOf } from '../episode.js';
import { chronological } from '../order.js';
import {
  changeSummary,
  describe,
  headerSafe,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  serviceLabel,
  summaryLines,
  truncate,
} from '../text.js';
import type { Notification } from '../types.js';
import { isInformationalKind, type InformationalKind, type PagerdutySeverity } from './config.js';

/** Documented limits: summary ≤ 1024 characters, dedup_key ≤ 255, a whole event ≤ 512 KB. */
export const SUMMARY_MAX = 1024;
export const DEDUP_KEY_MAX = 255;
export const EVENT_MAX_BYTES = 512 * 1024;
/** statuswatch's own bounds for text inside custom_details and link texts. */
const DETAIL_TEXT_MAX = 2000;
/** A digest lists at most this many changes (the count is always given). */
const DIGEST_ITEMS_MAX = 200;

const SUMMARY_PREFIX = '[statuswatch] ';

export interface PagerdutyLink {
  href: string;
  text: string;
}

export type CustomDetails = Record<string, unknown>;

export interface PagerdutyAlertPayload {
  summary: string;
  source: string;
  severity: PagerdutySeverity;
  timestamp: string;
  component: string;
  group: string;
  class: string;
  custom_details: CustomDetails;
}

/** An alert event (`POST /v2/enqueue`). */
export interface PagerdutyAlertEvent {
  routing_key: string;
  event_action: 'trigger' | 'resolve';
  dedup_key: string;
  client: string;
  payload: PagerdutyAlertPayload;
  links: PagerdutyLink[];
}

/** A change event (`POST /v2/change/enqueue`): context on the service, never a page. */
export interface PagerdutyChangeEvent {
  routing_key: string;
  payload: {
    summary: string;
    source: string;
    timestamp: string;
    custom_details: CustomDetails;
  };
  links: PagerdutyLink[];
}

export type PagerdutyRequest =
  | { endpoint: 'enqueue'; body: PagerdutyAlertEvent }
  | { endpoint: 'change'; body: PagerdutyChangeEvent };

export interface PagerdutyRenderOptions {
  /** Put in every body (`[REDACTED]` for previews). */
  routingKey: string;
  /** Severity per event kind, replacing `defaultSeverity`. */
  severity?: Partial<Record<EventKind, PagerdutySeverity>> | undefined;
  /** Informational kinds that trigger instead of recording a change event. */
  page?: readonly InformationalKind[] | undefined;
}

// ---------------------------------------------------------------- text

/** Text on one line: control characters and line breaks become spaces, whitespace collapsed. */
function line(text: string, max: number): string {
  return truncate(headerSafe(text), max);
}

/**
 * Multi-line text (incident updates): line breaks kept as `\n`, every other control character
 * dropped, bounded.
 */
function block(text: string, max: number): string {
  const cleaned = text
    .replace(/\r\n?|[\u2028\u2029\u0085]/g, '\n')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '')
    .trim();
  return truncate(cleaned, max);
}

function iso(ms: number, fallback: number): string {
  return new Date(Number.isFinite(ms) ? ms : fallback).toISOString();
}

// ---------------------------------------------------------------- fields

/** The alert severity a transition gets unless the channel's `severity:` names its kind. */
export function defaultSeverity(t: Pick<Transition, 'kind' | 'current'>): PagerdutySeverity {
  switch (t.kind) {
    case 'sla.breached':
      return 'critical';
    case 'incident.opened':
    case 'incident.updated':
      return 'error';
    case 'status.changed': {
      const status = t.current['status'];
      if (status === 'major_outage' || status === 'partial_outage') return 'error';
      // degraded, maintenance, unknown (and operational, which resolves)
      return roleOf(t) === 'closing' ? 'info' : 'warning';
    }
    case 'sla.at_risk':
    case 'upstream.degraded':
    case 'score.dropped':
    case 'sla.forecast':
    case 'score.trend':
      return 'warning';
    case 'incident.resolved':
    case 'sla.recovered':
    case 'upstream.recovered':
      return 'info';
  }
}

/** `dedup_key` of a transition: its episode, the same from every replica and after restarts. */
export function pagerdutyDedupKey(t: Pick<Transition, 'feedId' | 'subject'>): string {
  return episodeKey(t, DEDUP_KEY_MAX);
}

/** `dedup_key` of notify-test's alert: `statuswatch:test:<notification id>`. */
export function testDedupKey(notificationId: string): string {
  return episodeKey({ feedId: 'test', subject: notificationId }, DEDUP_KEY_MAX);
}

/**
 * The affected system: the host of the service's official status page (`status.stripe.com`),
 * else its feed id. (Not the host of `canonicalUrl`: that is the status directory's page about
 * the service, the same host for every service.)
 */
function sourceOf(t: Transition): string {
  const url = t.service.officialStatusUrl;
  const host = isHttpUrl(url) ? new URL(url).hostname : '';
  return line(host !== '' ? host : t.feedId, 255) || 'statuswatch';
}

/** The same two links the chat and e-mail channels show. */
function linksOf(t: Transition): PagerdutyLink[] {
  const links: PagerdutyLink[] = [];
  const { officialStatusUrl, canonicalUrl } = t.service;
  if (isHttpUrl(officialStatusUrl)) {
    links.push({ href: officialStatusUrl, text: 'Official status page' });
  }
  if (isHttpUrl(canonicalUrl) && canonicalUrl !== officialStatusUrl) {
    links.push({ href: canonicalUrl, text: 'Service page' });
  }
  return links;
}

/** "Open in console" and "Silence…" (`Notification.links`, our URLs); none without. */
function consoleLinks(n: Notification): PagerdutyLink[] {
  if (n.links === undefined) return [];
  return [
    { href: n.links.console, text: 'Open in console' },
    { href: n.links.silence, text: 'Silence…' },
  ];
}

function valuesOf(values: TransitionValues | null): Record<string, unknown> | null {
  if (values === null) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    out[line(key, 100)] = typeof value === 'string' ? block(value, DETAIL_TEXT_MAX) : value;
  }
  return out;
}

function detailsOf(t: Transition, n: Notification, now: number): CustomDetails {
  const details: CustomDetails = {
    event: t.kind,
    service: serviceLabel(t),
    feed_id: line(t.feedId, 255),
    subscription: line(n.subscription, 255),
    change: line(changeSummary(t) ?? '', DETAIL_TEXT_MAX),
    previous: valuesOf(t.previous),
    current: valuesOf(t.current),
  };
  if (t.incident !== null) {
    details['incident'] = {
      id: line(t.incident.id, 255),
      title: line(t.incident.title, DETAIL_TEXT_MAX),
      status: line(t.incident.status, 255),
      started: iso(t.incident.started * 1000, now),
      update_count: t.incident.updateCount,
      latest_update:
        t.incident.latestUpdate === null ? null : block(t.incident.latestUpdate, DETAIL_TEXT_MAX),
    };
  }
  details['observed_at'] = iso(t.observedAt, now);
  details['transition_id'] = t.id;
  details['delivery_id'] = n.id;
  return details;
}

function summaryOf(text: string): string {
  return line(`${SUMMARY_PREFIX}${text}`, SUMMARY_MAX);
}

/** Drops custom_details when an event would exceed PagerDuty's 512 KB (it would be refused). */
function withinSize<B extends { payload: { custom_details: CustomDetails } }>(body: B): B {
  if (Buffer.byteLength(JSON.stringify(body)) <= EVENT_MAX_BYTES) return body;
  return {
    ...body,
    payload: {
      ...body.payload,
      custom_details: {
        note: 'custom details removed: the event exceeded the Events API limit of 512 KB',
      },
    },
  };
}

// ---------------------------------------------------------------- events

function alertEvent(
  t: Transition,
  n: Notification,
  action: 'trigger' | 'resolve',
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest {
  return {
    endpoint: 'enqueue',
    body: withinSize({
      routing_key: options.routingKey,
      event_action: action,
      dedup_key: pagerdutyDedupKey(t),
      client: 'statuswatch',
      payload: {
        summary: summaryOf(describe(t)),
        source: sourceOf(t),
        severity: options.severity?.[t.kind] ?? defaultSeverity(t),
        timestamp: iso(t.observedAt, now),
        component: line(t.feedId, 255),
        group: line(n.subscription, 255),
        class: t.kind,
        custom_details: detailsOf(t, n, now),
      },
      links: [...linksOf(t), ...consoleLinks(n)],
    }),
  };
}

function changeEvent(
  t: Transition,
  n: Notification,
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest {
  return {
    endpoint: 'change',
    body: withinSize({
      routing_key: options.routingKey,
      payload: {
        summary: summaryOf(describe(t)),
        source: sourceOf(t),
        timestamp: iso(t.observedAt, now),
        custom_details: detailsOf(t, n, now),
      },
      links: [...linksOf(t), ...consoleLinks(n)],
    }),
  };
}

/** What one transition becomes: trigger, resolve or a change event. */
export function pagerdutyAction(
  t: Pick<Transition, 'kind' | 'current'>,
  page: readonly InformationalKind[] = [],
): 'trigger' | 'resolve' | 'change' {
  switch (roleOf(t)) {
    case 'opening':
      return 'trigger';
    case 'closing':
      return 'resolve';
    case 'update':
      if (isInformationalKind(t.kind)) return page.includes(t.kind) ? 'trigger' : 'change';
      // incident.updated of an open incident: a trigger under the same dedup_key updates the
      // open alert (a new log entry), it does not open a second one.
      return 'trigger';
  }
}

function transitionEvent(
  t: Transition,
  n: Notification,
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest {
  const action = pagerdutyAction(t, options.page);
  return action === 'change'
    ? changeEvent(t, n, options, now)
    : alertEvent(t, n, action, options, now);
}

function digestEvent(
  n: Notification,
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest {
  const listed = listOrder('digest', n.transitions);
  return {
    endpoint: 'change',
    body: withinSize({
      routing_key: options.routingKey,
      payload: {
        summary: summaryOf(listHeading('digest', n)),
        source: 'statuswatch',
        timestamp: iso(n.createdAt, now),
        custom_details: {
          subscription: line(n.subscription, 255),
          summary: summaryLines(n),
          changes: listed
            .slice(0, DIGEST_ITEMS_MAX)
            .map((t) => line(listItem('digest', t, n.createdAt), DETAIL_TEXT_MAX)),
          changes_total: listed.length,
          delivery_id: n.id,
        },
      },
      links: consoleLinks(n),
    }),
  };
}

function testEvents(
  n: Notification,
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest[] {
  const sample = n.transitions[0];
  const what = `Test notification for channel ${headerSafe(n.channel)} (subscription ${headerSafe(n.subscription)})`;
  const payload = (summary: string): PagerdutyAlertPayload => ({
    summary: summaryOf(summary),
    source: 'statuswatch',
    severity: 'info',
    timestamp: iso(now, now),
    component: 'notify-test',
    group: line(n.subscription, 255),
    class: 'test',
    custom_details: {
      test: true,
      note: 'Sent by statuswatch notify-test: this alert is resolved right away.',
      delivery_id: n.id,
      ...(sample === undefined ? {} : { sample: detailsOf(sample, n, now) }),
    },
  });
  const dedupKey = testDedupKey(n.id);
  const base = {
    routing_key: options.routingKey,
    dedup_key: dedupKey,
    client: 'statuswatch',
  };
  const sampleText = sample === undefined ? '' : ` — sample: ${describe(sample)}`;
  return [
    {
      endpoint: 'enqueue',
      body: withinSize({
        ...base,
        event_action: 'trigger',
        payload: payload(`${what}${sampleText}`),
        links: sample === undefined ? [] : linksOf(sample),
      }),
    },
    {
      endpoint: 'enqueue',
      body: withinSize({
        ...base,
        event_action: 'resolve',
        payload: payload(`${what}: resolved`),
        links: [],
      }),
    },
  ];
}

/** The requests for one notification, in the order they must be sent. */
export function renderPagerduty(
  notification: Notification,
  options: PagerdutyRenderOptions,
  now: number,
): PagerdutyRequest[] {
  switch (notification.type) {
    case 'event':
    case 'batch':
    case 'catchup':
      return chronological(notification.transitions).map((t) =>
        transitionEvent(t, notification, options, now),
      );
    case 'reminder':
      // PagerDuty re-notifies and escalates an open incident by its own escalation policy.
      return [];
    case 'digest':
      return [digestEvent(notification, options, now)];
    case 'test':
      return testEvents(notification, options, now);
  }
}
