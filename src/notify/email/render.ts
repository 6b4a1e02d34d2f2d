/**
 * Notification → e-mail (subject, plain text, HTML, threading headers). Pure.
 * The subject goes through `headerSafe` (no CR/LF: no header injection), the HTML through
 * `escapeHtml`; links only for http(s) catalog URLs. All mails about one incident thread
 * together: the opened mail is the thread root, later ones reply to it.
 */
import { createHash } from 'node:crypto';
import type { Transition } from '../../diff/transition.js';
import type { Notification } from '../types.js';
import {
  changeSummary,
  countLine,
  describe,
  escapeHtml,
  eventLabel,
  headerSafe,
  incidentTitle,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  serviceLabel,
  summaryLines,
  truncate,
  type ListType,
} from '../text.js';

export interface EmailMessage {
  subject: string;
  text: string;
  html: string;
  /** `<…@statuswatch>`, deterministic. */
  messageId: string;
  inReplyTo: string | null;
  references: string | null;
}

export interface EmailRenderOptions {
  subjectPrefix?: string | undefined;
}

export const SUBJECT_MAX = 200;
/** Longest upstream text (update, summary) quoted in a mail. */
const LONG_TEXT_MAX = 4000;
const TITLE_MAX = 500;
export const BATCH_LIST_LIMIT = 50;
/** A digest's summary: at most this many lines, each at most `SUMMARY_LINE_MAX` characters. */
const SUMMARY_LINES_MAX = 100;
const SUMMARY_LINE_MAX = 1000;

const MESSAGE_ID_DOMAIN = 'statuswatch';

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/** The Message-ID of the root of an incident's thread: the same for every mail about it. */
export function incidentThreadId(feedId: string, incidentId: string): string {
  return `<incident.${digest(JSON.stringify([feedId, incidentId]))}@${MESSAGE_ID_DOMAIN}>`;
}

/** A deterministic Message-ID for one delivery (retries re-send the same Message-ID). */
export function deliveryMessageId(notificationId: string): string {
  return `<n.${digest(notificationId)}@${MESSAGE_ID_DOMAIN}>`;
}

function isIncidentKind(transition: Transition): boolean {
  return transition.kind.startsWith('incident.') && transition.incident !== null;
}

/**
 * Events about an incident thread under the incident's root (the opened mail is the root).
 * Everything else — tests, batches, reminders, catch-ups, digests — is its own thread root:
 * a Message-ID from the delivery id and no In-Reply-To.
 */
function threading(
  notification: Notification,
): Pick<EmailMessage, 'messageId' | 'inReplyTo' | 'references'> {
  const own = { messageId: deliveryMessageId(notification.id), inReplyTo: null, references: null };
  switch (notification.type) {
    case 'event': {
      const first = notification.transitions[0];
      if (first === undefined || !isIncidentKind(first) || first.incident === null) return own;
      const root = incidentThreadId(first.feedId, first.incident.id);
      if (first.kind === 'incident.opened') {
        return { messageId: root, inReplyTo: null, references: null };
      }
      return { messageId: own.messageId, inReplyTo: root, references: root };
    }
    case 'test':
    case 'batch':
    case 'reminder':
    case 'catchup':
    case 'digest':
      return own;
  }
}

/** How a notification is laid out: one event (or test) in detail, or a list of type `ListType`. */
type Layout = { kind: 'event'; transition: Transition; test: boolean } | { kind: ListType };

function layoutOf(notification: Notification): Layout {
  const first = notification.transitions[0];
  switch (notification.type) {
    case 'event':
    case 'test':
      return first === undefined
        ? { kind: 'batch' }
        : { kind: 'event', transition: first, test: notification.type === 'test' };
    case 'batch':
    case 'reminder':
    case 'catchup':
    case 'digest':
      return { kind: notification.type };
  }
}

/**
 * The raw subject (before prefix and header safety). Batch-like mails carry the count: a batch
 * says how many and the most severe one, a custom title gets the count appended.
 */
function subjectCore(notification: Notification, layout: Layout): string {
  switch (layout.kind) {
    case 'event':
      return (layout.test ? '[test] ' : '') + describe(layout.transition);
    case 'batch': {
      const heading = listHeading('batch', notification);
      const count = countLine('batch', notification);
      if (heading !== count) return `${heading} (${count})`;
      const top = listOrder('batch', notification.transitions)[0];
      return top === undefined ? heading : `${heading}: ${describe(top)}`;
    }
    case 'reminder':
    case 'catchup':
    case 'digest':
      return listHeading(layout.kind, notification);
  }
}

function subjectOf(
  notification: Notification,
  layout: Layout,
  options: EmailRenderOptions,
): string {
  const core = subjectCore(notification, layout);
  const prefix = headerSafe(options.subjectPrefix ?? '');
  return truncate(headerSafe(prefix === '' ? core : `${prefix} ${core}`), SUBJECT_MAX);
}

interface Row {
  label: string;
  value: string;
  /** An http(s) URL shown as a link. */
  href?: string;
}

function rowsOf(transition: Transition): Row[] {
  const rows: Row[] = [
    { label: 'Service', value: `${serviceLabel(transition)} (${transition.service.feedId})` },
    { label: 'Event', value: `${eventLabel(transition.kind)} (${transition.kind})` },
  ];
  const change = changeSummary(transition);
  if (change !== null) rows.push({ label: 'Change', value: change });
  const { incident } = transition;
  if (incident !== null) {
    rows.push({ label: 'Incident', value: truncate(incidentTitle(transition), TITLE_MAX) });
    if (incident.latestUpdate !== null && incident.latestUpdate.trim() !== '') {
      rows.push({ label: 'Latest update', value: truncate(incident.latestUpdate, LONG_TEXT_MAX) });
    }
  }
  const summary = transition.current.summary;
  if (typeof summary === 'string' && summary.trim() !== '') {
    rows.push({ label: 'Summary', value: truncate(summary, LONG_TEXT_MAX) });
  }
  const { canonicalUrl, officialStatusUrl } = transition.service;
  if (isHttpUrl(canonicalUrl))
    rows.push({ label: 'Service page', value: canonicalUrl, href: canonicalUrl });
  if (isHttpUrl(officialStatusUrl)) {
    rows.push({ label: 'Official status page', value: officialStatusUrl, href: officialStatusUrl });
  }
  const observed = Number.isFinite(transition.observedAt)
    ? new Date(transition.observedAt).toISOString()
    : 'unknown';
  rows.push({ label: 'Observed', value: observed });
  return rows;
}

function textBlock(transition: Transition, headline: string): string {
  const lines = [headline, ''];
  for (const row of rowsOf(transition)) {
    const value = row.value.includes('\n')
      ? `\n  ${row.value.split(/\r?\n/).join('\n  ')}`
      : ` ${row.value}`;
    lines.push(`${row.label}:${value}`);
  }
  return lines.join('\n');
}

function htmlBlock(transition: Transition, headline: string): string {
  const rows = rowsOf(transition)
    .map((row) => {
      const shown = escapeHtml(row.value).replace(/\r?\n/g, '<br>');
      const cell =
        row.href === undefined
          ? shown
          : `<a href="${escapeHtml(new URL(row.href).href)}">${shown}</a>`;
      return `<tr><th align="left" valign="top" style="padding:2px 12px 2px 0">${escapeHtml(row.label)}</th><td style="padding:2px 0">${cell}</td></tr>`;
    })
    .join('\n');
  return `<h2 style="font-size:16px;margin:16px 0 8px">${escapeHtml(headline)}</h2>\n<table cellspacing="0" cellpadding="0">\n${rows}\n</table>`;
}

function footer(notification: Notification): { text: string; html: string } {
  const line = `Subscription: ${notification.subscription} · Delivery: ${notification.id}`;
  return {
    text: `--\n${line}\nSent by statuswatch.`,
    html: `<p style="color:#666;font-size:12px;margin-top:24px">${escapeHtml(line)}<br>Sent by statuswatch.</p>`,
  };
}

/** "Open in console" and "Silence…" (`Notification.links`, our URLs), or nulls without links. */
function consoleLinks(notification: Notification): { text: string | null; html: string | null } {
  const links = notification.links;
  if (links === undefined) return { text: null, html: null };
  const a = (href: string, label: string): string =>
    `<a href="${escapeHtml(new URL(href).href)}">${escapeHtml(label)}</a>`;
  return {
    text: `Open in console: ${links.console}\nSilence…: ${links.silence}`,
    html: `<p>${a(links.console, 'Open in console')} · ${a(links.silence, 'Silence…')}</p>`,
  };
}

interface Body {
  /** A heading above everything (batch-like mails). */
  heading: string | null;
  intro: string | null;
  summary: string[];
  /** Transitions shown in full, each with its headline. */
  shown: { transition: Transition; headline: string }[];
  more: string | null;
}

function bodyOf(notification: Notification, layout: Layout): Body {
  if (layout.kind === 'event') {
    return {
      heading: null,
      intro: layout.test ? 'This is a test notification from statuswatch (sample event).' : null,
      summary: [],
      shown: [{ transition: layout.transition, headline: describe(layout.transition) }],
      more: null,
    };
  }
  const type = layout.kind;
  const ordered = listOrder(type, notification.transitions);
  const shown = ordered.slice(0, BATCH_LIST_LIMIT);
  const hidden = ordered.length - shown.length;
  const subscription = headerSafe(notification.subscription);
  const order = (words: string): string => (ordered.length > 1 ? `, ${words}` : '');
  let intro: string;
  switch (type) {
    case 'batch':
      intro = `${countLine(type, notification)}${order('most severe first')}.`;
      break;
    case 'reminder':
      intro =
        ordered.length === 1
          ? `Reminder: still open for subscription ${subscription}.`
          : `${countLine(type, notification)}${order('most severe first')}.`;
      break;
    case 'catchup':
      intro = `${countLine(type, notification)} for subscription ${subscription}${order('oldest first')}.`;
      break;
    case 'digest':
      intro =
        ordered.length === 0
          ? `Digest for subscription ${subscription}: no changes in this period.`
          : `${countLine(type, notification)} in this period${order('most severe first')}.`;
      break;
  }
  const lines = type === 'digest' ? summaryLines(notification) : [];
  const summary = lines.slice(0, SUMMARY_LINES_MAX).map((l) => truncate(l, SUMMARY_LINE_MAX));
  const droppedLines = lines.length - summary.length;
  if (droppedLines > 0) summary.push(`…and ${droppedLines} more lines`);
  return {
    heading: listHeading(type, notification),
    intro,
    summary,
    shown: shown.map((transition) => ({
      transition,
      headline: listItem(type, transition, notification.createdAt),
    })),
    more: hidden > 0 ? `…and ${hidden} more.` : null,
  };
}

/**
 * The mail for one delivery: one event or a test in detail; a batch (most severe first), a
 * reminder, a quiet-hours catch-up (oldest first) or a digest (summary lines, then the period's
 * transitions) as a list of at most 50 transitions in detail.
 */
export function renderEmail(
  notification: Notification,
  options: EmailRenderOptions = {},
): EmailMessage {
  const layout = layoutOf(notification);
  const subject = subjectOf(notification, layout, options);
  const body = bodyOf(notification, layout);
  const end = footer(notification);
  const links = consoleLinks(notification);

  const textParts = [
    body.heading,
    body.intro,
    body.summary.length === 0 ? null : body.summary.map((line) => `- ${line}`).join('\n'),
    ...body.shown.map(({ transition, headline }) => textBlock(transition, headline)),
    body.more,
    links.text,
    end.text,
  ].filter((p): p is string => p !== null);
  const htmlParts = [
    body.heading === null
      ? null
      : `<h1 style="font-size:18px;margin:0 0 12px">${escapeHtml(body.heading)}</h1>`,
    body.intro === null ? null : `<p>${escapeHtml(body.intro)}</p>`,
    body.summary.length === 0
      ? null
      : `<ul>\n${body.summary.map((line) => `<li>${escapeHtml(line)}</li>`).join('\n')}\n</ul>`,
    ...body.shown.map(({ transition, headline }) => htmlBlock(transition, headline)),
    body.more === null ? null : `<p>${escapeHtml(body.more)}</p>`,
    links.html,
    end.html,
  ].filter((p): p is string => p !== null);

  return {
    subject,
    text: `${textParts.join('\n\n')}\n`,
    html: `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>\n<body style="font-family:sans-serif;font-size:14px">\n${htmlParts.join('\n')}\n</body></html>\n`,
    ...threading(notification),
  };
}
