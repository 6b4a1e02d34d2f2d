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
  bySeverity,
  changeSummary,
  describe,
  escapeHtml,
  eventLabel,
  headerSafe,
  incidentTitle,
  isHttpUrl,
  serviceLabel,
  truncate,
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
const BATCH_LIST_LIMIT = 50;

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

function threading(
  notification: Notification,
): Pick<EmailMessage, 'messageId' | 'inReplyTo' | 'references'> {
  const own = deliveryMessageId(notification.id);
  const first = notification.transitions[0];
  if (
    notification.type !== 'event' ||
    first === undefined ||
    !isIncidentKind(first) ||
    first.incident === null
  ) {
    return { messageId: own, inReplyTo: null, references: null };
  }
  const root = incidentThreadId(first.feedId, first.incident.id);
  if (first.kind === 'incident.opened')
    return { messageId: root, inReplyTo: null, references: null };
  return { messageId: own, inReplyTo: root, references: root };
}

function subjectOf(notification: Notification, options: EmailRenderOptions): string {
  const first = notification.transitions[0];
  let core: string;
  if (notification.type === 'batch' || first === undefined) {
    const count = notification.transitions.length;
    const top = bySeverity(notification.transitions)[0];
    core = `${count} event${count === 1 ? '' : 's'} for ${notification.subscription}`;
    if (top !== undefined) core += `: ${describe(top)}`;
  } else {
    core = (notification.type === 'test' ? '[test] ' : '') + describe(first);
  }
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

function textBlock(transition: Transition): string {
  const lines = [describe(transition), ''];
  for (const row of rowsOf(transition)) {
    const value = row.value.includes('\n')
      ? `\n  ${row.value.split(/\r?\n/).join('\n  ')}`
      : ` ${row.value}`;
    lines.push(`${row.label}:${value}`);
  }
  return lines.join('\n');
}

function htmlBlock(transition: Transition): string {
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
  return `<h2 style="font-size:16px;margin:16px 0 8px">${escapeHtml(describe(transition))}</h2>\n<table cellspacing="0" cellpadding="0">\n${rows}\n</table>`;
}

function footer(notification: Notification): { text: string; html: string } {
  const line = `Subscription: ${notification.subscription} · Delivery: ${notification.id}`;
  return {
    text: `--\n${line}\nSent by statuswatch.`,
    html: `<p style="color:#666;font-size:12px;margin-top:24px">${escapeHtml(line)}<br>Sent by statuswatch.</p>`,
  };
}

/** The mail for one delivery: one event, a test, or a batch (most severe first, ≤ 50 listed). */
export function renderEmail(
  notification: Notification,
  options: EmailRenderOptions = {},
): EmailMessage {
  const subject = subjectOf(notification, options);
  const batch = notification.type === 'batch' || notification.transitions.length === 0;
  const ordered = batch
    ? bySeverity(notification.transitions)
    : notification.transitions.slice(0, 1);
  const shown = ordered.slice(0, BATCH_LIST_LIMIT);
  const hidden = ordered.length - shown.length;
  const intro =
    notification.type === 'test'
      ? 'This is a test notification from statuswatch (sample event).'
      : batch
        ? `${ordered.length} event${ordered.length === 1 ? '' : 's'} for subscription ${notification.subscription}.`
        : null;
  const more = hidden > 0 ? `…and ${hidden} more.` : null;
  const end = footer(notification);

  const textParts = [intro, ...shown.map(textBlock), more, end.text].filter(
    (p): p is string => p !== null,
  );
  const htmlParts = [
    intro === null ? null : `<p>${escapeHtml(intro)}</p>`,
    ...shown.map(htmlBlock),
    more === null ? null : `<p>${escapeHtml(more)}</p>`,
    end.html,
  ].filter((p): p is string => p !== null);

  return {
    subject,
    text: `${textParts.join('\n\n')}\n`,
    html: `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>\n<body style="font-family:sans-serif;font-size:14px">\n${htmlParts.join('\n')}\n</body></html>\n`,
    ...threading(notification),
  };
}
