/**
 * Notification → the ordered Opsgenie Alert API requests that carry it. Pure and deterministic:
 * the same notification always gives the same requests, byte for byte, so a retry (or another
 * replica) sends exactly what the first attempt sent.
 *
 * The alert model: one Opsgenie alert per episode (service + subject, `episodeKey`), addressed by
 * its `alias`. An opening creates it, news on it becomes a note, its closing closes it — all by
 * alias, so no alert id ever has to be stored. Opsgenie deduplicates a create whose alias has an
 * open alert (its `count` goes up, nobody is notified again) and processes every request
 * asynchronously (202 Accepted).
 *
 * Upstream text (service names, incident titles and updates) is plain text in every field:
 * control characters and line breaks become spaces, and each field is cut to its documented limit.
 */
import type { EventKind } from '../../config/events.js';
import type { Transition } from '../../diff/transition.js';
import { episodeKey, roleOf } from '../episode.js';
import { chronological } from '../order.js';
import {
  changeSummary,
  describe,
  eventLabel,
  formatUtc,
  headerSafe,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  serviceLabel,
  summaryLines,
  truncate,
} from '../text.js';
import type { NotificationLinks } from '../links.js';
import type { Notification } from '../types.js';
import { OPSGENIE_LIMITS, type OpsgeniePriority, type OpsgenieResponder } from './config.js';

/** `source` of every alert and action: what Opsgenie shows as the alert's origin. */
export const OPSGENIE_SOURCE = 'statuswatch';
/** `user` of every alert and action: the display name of the request owner. */
export const OPSGENIE_USER = 'statuswatch';

/** Longest value kept in `details` (their total is limited to 8000 characters). */
const DETAIL_VALUE_MAX = 500;

/** The create-alert body (https://docs.opsgenie.com/docs/alert-api#create-alert). */
export interface OpsgenieCreateBody {
  message: string;
  alias: string;
  description: string;
  responders?: OpsgenieResponder[];
  tags?: string[];
  details: Record<string, string>;
  entity: string;
  source: string;
  priority: OpsgeniePriority;
  user: string;
}

/** The body of close and add-note (`note` is mandatory for add-note). */
export interface OpsgenieNoteBody {
  user: string;
  source: string;
  note: string;
}

/** The body of update-priority. */
export interface OpsgeniePriorityBody {
  priority: OpsgeniePriority;
}

export type OpsgenieRequest =
  | { action: 'create'; method: 'POST'; path: string; alias: string; body: OpsgenieCreateBody }
  | { action: 'note'; method: 'POST'; path: string; alias: string; body: OpsgenieNoteBody }
  | { action: 'close'; method: 'POST'; path: string; alias: string; body: OpsgenieNoteBody }
  | {
      action: 'priority';
      method: 'PUT';
      path: string;
      alias: string;
      body: OpsgeniePriorityBody;
    };

export type OpsgenieAction = OpsgenieRequest['action'];

/** What the channel config adds to every alert (the config object itself fits). */
export interface OpsgenieRenderOptions {
  priority?: Partial<Record<EventKind, OpsgeniePriority>> | undefined;
  responders?: readonly OpsgenieResponder[] | undefined;
  tags?: readonly string[] | undefined;
}

/**
 * The priority of the alert a transition creates when the config does not say: a breached SLA
 * P1; an incident (opened or reopened) and a major outage P2; other non-operational statuses, an
 * SLA at risk and a degraded upstream P3; the informational kinds P5. Closings create nothing.
 */
export function defaultPriority(t: Pick<Transition, 'kind' | 'current'>): OpsgeniePriority {
  switch (t.kind) {
    case 'sla.breached':
      return 'P1';
    case 'incident.opened':
    case 'incident.updated':
      return 'P2';
    case 'status.changed':
      return t.current['status'] === 'major_outage' ? 'P2' : 'P3';
    case 'sla.at_risk':
    case 'upstream.degraded':
      return 'P3';
    case 'score.dropped':
    case 'sla.forecast':
    case 'score.trend':
    case 'incident.resolved':
    case 'sla.recovered':
    case 'upstream.recovered':
      return 'P5';
  }
}

export function priorityOf(t: Transition, options: OpsgenieRenderOptions): OpsgeniePriority {
  return options.priority?.[t.kind] ?? defaultPriority(t);
}

/** Kinds that inform without opening anything: each is its own P5 alert, never closed by us. */
function isInformational(kind: EventKind): boolean {
  return kind === 'score.dropped' || kind === 'sla.forecast' || kind === 'score.trend';
}

/**
 * An opening that moves an episode which is already open (degraded → major outage, SLA at risk →
 * breached): Opsgenie folds its create into the open alert, so the news also goes in as a note
 * and the priority is set to the new state's.
 */
function continuesOpenEpisode(t: Transition): boolean {
  const before = t.previous;
  switch (t.kind) {
    case 'status.changed': {
      const status = before?.['status'];
      return typeof status === 'string' && status !== 'operational';
    }
    case 'sla.at_risk':
    case 'sla.breached': {
      const status = before?.['status'];
      return status === 'at_risk' || status === 'breached';
    }
    case 'upstream.degraded':
      return before?.['health'] === 'degraded';
    case 'incident.opened':
    case 'incident.updated':
    case 'incident.resolved':
    case 'sla.recovered':
    case 'upstream.recovered':
    case 'score.dropped':
    case 'sla.forecast':
    case 'score.trend':
      return false;
  }
}

/** The alias of a transition's episode: `statuswatch:<feedId>:<subject>`, at most 512 characters. */
export function opsgenieAlias(t: Pick<Transition, 'feedId' | 'subject'>): string {
  return episodeKey(t, OPSGENIE_LIMITS.alias);
}

/** The alias of an informational transition: its own alert, from its (deterministic) id. */
export function informationalAlias(t: Pick<Transition, 'feedId' | 'subject' | 'id'>): string {
  return episodeKey({ feedId: t.feedId, subject: `${t.subject}:${t.id}` }, OPSGENIE_LIMITS.alias);
}

/** The alias of a digest or a notify-test alert: `statuswatch:<digest|test>:<notification id>`. */
export function notificationAlias(kind: 'digest' | 'test', notification: Notification): string {
  return episodeKey({ feedId: kind, subject: notification.id }, OPSGENIE_LIMITS.alias);
}

/** Upstream text on one line (no control characters), bounded. */
function plain(text: string, max: number): string {
  return truncate(headerSafe(text), max);
}

/** The one-line summary of a transition, uncut (`Stripe: incident opened — Card payments failing`). */
function headline(t: Transition): string {
  return headerSafe(describe(t));
}

function stringValue(t: Transition, key: string): string | null {
  const raw = t.current[key];
  return typeof raw === 'string' && raw !== '' ? raw : null;
}

/** The lines about the incident: its status and latest update. */
function incidentLines(t: Transition): string[] {
  const incident = t.incident;
  if (incident === null) return [];
  const lines = [`Incident status: ${plain(incident.status, 200)}`];
  const update = headerSafe(incident.latestUpdate ?? '');
  if (update !== '') lines.push(`Latest update: ${update}`);
  return lines;
}

/** The full text of an alert about one transition (cut to the description limit). */
function transitionDescription(t: Transition, subscription: string): string {
  const service = serviceLabel(t);
  const feed = headerSafe(t.service.feedId);
  const lines = [headline(t), ''];
  lines.push(`Service: ${service === feed ? service : `${service} (${feed})`}`);
  lines.push(`Event: ${eventLabel(t.kind)} (${t.kind})`);
  const change = changeSummary(t);
  // An incident's bare status (no arrow) is its `Incident status` line already.
  if (change !== null && (t.incident === null || change.includes('→'))) {
    lines.push(`Change: ${headerSafe(change)}`);
  }
  // The title is in the first line already, uncut.
  if (t.incident !== null) lines.push(`Incident id: ${plain(t.incident.id, 200)}`);
  lines.push(...incidentLines(t));
  const summary = stringValue(t, 'summary');
  if (summary !== null) lines.push(`Summary: ${headerSafe(summary)}`);
  lines.push(`Observed: ${formatUtc(t.observedAt)}`);
  lines.push(`Subscription: ${headerSafe(subscription)}`);
  if (isHttpUrl(t.service.officialStatusUrl)) {
    lines.push(`Official status page: ${t.service.officialStatusUrl}`);
  }
  if (isHttpUrl(t.service.canonicalUrl)) lines.push(`Service page: ${t.service.canonicalUrl}`);
  return truncate(lines.join('\n'), OPSGENIE_LIMITS.description);
}

/** A note about one transition: what happened, the incident's news, when. */
function transitionNote(t: Transition): string {
  const lines = [headline(t), ...incidentLines(t), `Observed: ${formatUtc(t.observedAt)}`];
  return truncate(lines.join('\n'), OPSGENIE_LIMITS.note);
}

function detail(text: string): string {
  return plain(text, DETAIL_VALUE_MAX);
}

/** `details` (custom properties, strings only): what alert policies and integrations can match on. */
function transitionDetails(t: Transition, subscription: string): Record<string, string> {
  const details: Record<string, string> = {
    feedId: detail(t.feedId),
    service: detail(serviceLabel(t)),
    kind: t.kind,
    subscription: detail(subscription),
    transitionId: detail(t.id),
  };
  const status = stringValue(t, 'status') ?? stringValue(t, 'health');
  if (status !== null) details.status = detail(status);
  if (t.incident !== null) {
    details.incidentId = detail(t.incident.id);
    details.incidentStatus = detail(t.incident.status);
  }
  return details;
}

/** A console link longer than this is left out of `details` (it would not fit their total). */
const DETAIL_LINK_MAX = 2000;

/** `consoleUrl` and `silenceUrl` (`Notification.links`, our URLs; never cut); none without. */
function linkDetails(links: NotificationLinks | undefined): Record<string, string> {
  if (links === undefined) return {};
  const out: Record<string, string> = {};
  if (links.console.length <= DETAIL_LINK_MAX) out.consoleUrl = links.console;
  if (links.silence.length <= DETAIL_LINK_MAX) out.silenceUrl = links.silence;
  return out;
}

function configured(
  options: OpsgenieRenderOptions,
): Pick<OpsgenieCreateBody, 'responders' | 'tags'> {
  return {
    ...(options.responders === undefined || options.responders.length === 0
      ? {}
      : { responders: options.responders.map((r) => ({ ...r })) }),
    ...(options.tags === undefined || options.tags.length === 0 ? {} : { tags: [...options.tags] }),
  };
}

function createRequest(
  alias: string,
  fields: Omit<OpsgenieCreateBody, 'alias' | 'source' | 'user' | 'responders' | 'tags'>,
  options: OpsgenieRenderOptions,
): OpsgenieRequest {
  return {
    action: 'create',
    method: 'POST',
    path: '/v2/alerts',
    alias,
    body: {
      message: truncate(fields.message, OPSGENIE_LIMITS.message),
      alias,
      description: truncate(fields.description, OPSGENIE_LIMITS.description),
      ...configured(options),
      details: fields.details,
      entity: truncate(fields.entity, OPSGENIE_LIMITS.entity),
      source: OPSGENIE_SOURCE,
      priority: fields.priority,
      user: OPSGENIE_USER,
    },
  };
}

function aliasPath(alias: string, action: string): string {
  return `/v2/alerts/${encodeURIComponent(alias)}/${action}?identifierType=alias`;
}

function noteBody(note: string): OpsgenieNoteBody {
  return {
    user: OPSGENIE_USER,
    source: OPSGENIE_SOURCE,
    note: truncate(note, OPSGENIE_LIMITS.note),
  };
}

function closeRequest(alias: string, note: string): OpsgenieRequest {
  return {
    action: 'close',
    method: 'POST',
    path: aliasPath(alias, 'close'),
    alias,
    body: noteBody(note),
  };
}

function noteRequest(alias: string, note: string): OpsgenieRequest {
  return {
    action: 'note',
    method: 'POST',
    path: aliasPath(alias, 'notes'),
    alias,
    body: noteBody(note),
  };
}

function priorityRequest(alias: string, priority: OpsgeniePriority): OpsgenieRequest {
  return {
    action: 'priority',
    method: 'PUT',
    path: aliasPath(alias, 'priority'),
    alias,
    body: { priority },
  };
}

function createForTransition(
  t: Transition,
  alias: string,
  subscription: string,
  options: OpsgenieRenderOptions,
  links: NotificationLinks | undefined,
): OpsgenieRequest {
  return createRequest(
    alias,
    {
      message: headline(t),
      description: transitionDescription(t, subscription),
      details: { ...transitionDetails(t, subscription), ...linkDetails(links) },
      entity: serviceLabel(t),
      priority: priorityOf(t, options),
    },
    options,
  );
}

/**
 * The requests for one transition:
 * - an opening creates the episode's alert (alias = episode key); when it moves an episode that is
 *   already open, a note says what changed and the priority follows the new state;
 * - a closing closes the alert by alias, with a note;
 * - an update on an episode (`incident.updated`) is a note on its alert: notes do not notify
 *   again, and a second create would only raise the dedup count without showing the news;
 * - an informational kind (score drop, trend, SLA forecast) is its own alert (P5 by default),
 *   aliased by the transition id; nothing closes it (Opsgenie's auto-close policies can).
 */
export function transitionRequests(
  t: Transition,
  subscription: string,
  options: OpsgenieRenderOptions = {},
  links?: NotificationLinks,
): OpsgenieRequest[] {
  if (isInformational(t.kind)) {
    return [createForTransition(t, informationalAlias(t), subscription, options, links)];
  }
  const alias = opsgenieAlias(t);
  switch (roleOf(t)) {
    case 'opening': {
      const create = createForTransition(t, alias, subscription, options, links);
      if (!continuesOpenEpisode(t)) return [create];
      return [
        create,
        noteRequest(alias, transitionNote(t)),
        priorityRequest(alias, priorityOf(t, options)),
      ];
    }
    case 'closing':
      return [closeRequest(alias, transitionNote(t))];
    case 'update':
      return [noteRequest(alias, transitionNote(t))];
  }
}

function digestRequest(
  notification: Notification,
  options: OpsgenieRenderOptions,
): OpsgenieRequest {
  const heading = headerSafe(listHeading('digest', notification));
  const items = listOrder('digest', notification.transitions).map((t) =>
    headerSafe(listItem('digest', t, notification.createdAt)),
  );
  const summary = summaryLines(notification);
  const description = [
    heading,
    ...(summary.length > 0 ? ['', ...summary] : []),
    ...(items.length > 0 ? ['', ...items] : []),
  ];
  return createRequest(
    notificationAlias('digest', notification),
    {
      message: heading,
      description: description.join('\n'),
      details: {
        subscription: detail(notification.subscription),
        notificationId: detail(notification.id),
        count: String(notification.transitions.length),
        ...linkDetails(notification.links),
      },
      entity: headerSafe(notification.subscription),
      priority: 'P5',
    },
    options,
  );
}

/** notify-test: a P5 alert that is closed right away, under its own alias. */
function testRequests(
  notification: Notification,
  options: OpsgenieRenderOptions,
): OpsgenieRequest[] {
  const alias = notificationAlias('test', notification);
  const sample = notification.transitions[0];
  const intro = `Test notification from statuswatch notify-test for channel ${headerSafe(notification.channel)}; it is closed right away.`;
  const create = createRequest(
    alias,
    sample === undefined
      ? {
          message: 'statuswatch test notification',
          description: intro,
          details: { test: 'true', notificationId: detail(notification.id) },
          entity: 'statuswatch',
          priority: 'P5',
        }
      : {
          message: `[test] ${headline(sample)}`,
          description: `${intro}\n\n${transitionDescription(sample, notification.subscription)}`,
          details: {
            ...transitionDetails(sample, notification.subscription),
            test: 'true',
            notificationId: detail(notification.id),
          },
          entity: serviceLabel(sample),
          priority: 'P5',
        },
    options,
  );
  return [create, closeRequest(alias, 'statuswatch notify-test: test alert closed automatically.')];
}

/**
 * The requests for a notification, in the order they must be sent:
 * - `event`, `batch`, `catchup`: per transition (oldest first), see `transitionRequests`;
 * - `reminder`: none — the alert is still open, and re-notifying about it is Opsgenie's job
 *   (escalation policies, notification rules);
 * - `digest`: one P5 alert aliased by the notification id;
 * - `test`: a P5 alert created and closed again, aliased `statuswatch:test:<notification id>`.
 */
export function renderOpsgenieRequests(
  notification: Notification,
  options: OpsgenieRenderOptions = {},
): OpsgenieRequest[] {
  switch (notification.type) {
    case 'event':
    case 'batch':
    case 'catchup':
      return chronological(notification.transitions).flatMap((t) =>
        transitionRequests(t, notification.subscription, options, notification.links),
      );
    case 'reminder':
      return [];
    case 'digest':
      return [digestRequest(notification, options)];
    case 'test':
      return testRequests(notification, options);
  }
}
