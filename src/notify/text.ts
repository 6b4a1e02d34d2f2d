/**
 * Pure text helpers shared by the renderers. Everything that reaches a channel from upstream
 * (service names, incident titles, updates, summaries) goes through one of the escapers here:
 * hostile text stays text.
 */
import type { EventKind } from '../config/events.js';
import type { Transition, TransitionValues } from '../diff/transition.js';
import type { Notification } from './types.js';

const ELLIPSIS = '…';

/**
 * Escapes the three characters Slack treats as control characters in mrkdwn and plain text, so
 * `<!channel>`, `<@U123>` and `<http://x|y>` from upstream show as text and never become a
 * mention or a link. (Bare `@channel` is inert too: statuswatch never sets `link_names`.)
 */
export function escapeSlackMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * Makes text safe for one e-mail header line (a subject): CR, LF, every other C0/C1 control
 * character and the Unicode line/paragraph separators become spaces, runs of whitespace collapse
 * to one space, and the ends are trimmed. No header can be injected from the result.
 */
export function headerSafe(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  );
}

/** Drops a dangling high surrogate so a cut never splits a character made of two code units. */
function cutAt(text: string, end: number): string {
  let cut = text.slice(0, Math.max(0, end));
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}

/** `text` if it has at most `max` characters, else its first `max - 1` followed by `…`. */
export function truncate(text: string, max: number): string {
  if (max <= 0) return '';
  if (text.length <= max) return text;
  return cutAt(text, max - ELLIPSIS.length) + ELLIPSIS;
}

/**
 * Escapes `text` with `escape` and keeps the escaped result within `max` characters, cutting the
 * raw text (never an entity in half) and ending with `…` when it had to cut.
 */
export function escapeTruncated(text: string, max: number, escape: (s: string) => string): string {
  const whole = escape(text);
  if (whole.length <= max) return whole;
  const budget = max - ELLIPSIS.length;
  let out = '';
  for (const char of text) {
    const piece = escape(char);
    if (out.length + piece.length > budget) break;
    out += piece;
  }
  return out + ELLIPSIS;
}

/** The human name of the service a transition is about. */
export function serviceLabel(transition: Transition): string {
  const name = headerSafe(transition.service.name ?? '');
  return name !== '' ? name : headerSafe(transition.service.feedId);
}

/** The incident title on one line (upstream titles may carry line breaks), or '' when none. */
export function incidentTitle(transition: Transition): string {
  return headerSafe(transition.incident?.title ?? '');
}

function value(values: TransitionValues | null, key: string): string | number | boolean | null {
  return values?.[key] ?? null;
}

/** `partial_outage` → `partial outage`; null → `unknown`. */
function words(raw: string | number | boolean | null): string {
  if (raw === null) return 'unknown';
  return String(raw).replace(/_/g, ' ');
}

/** 92 → `92`, 87.456 → `87.46`. */
export function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Math.round(n * 100) / 100);
}

/** An SLA margin in percentage points with a real minus sign: `−0.40 pp`, `+0.05 pp`. */
export function formatMargin(margin: number): string {
  const fixed = Math.abs(margin).toFixed(2);
  if (margin < 0 && fixed !== '0.00') return `\u2212${fixed} pp`;
  return `${margin > 0 ? '+' : ''}${fixed} pp`;
}

function scoreText(raw: string | number | boolean | null): string {
  return typeof raw === 'number' ? formatNumber(raw) : words(raw);
}

const EVENT_LABELS: Record<EventKind, string> = {
  'incident.opened': 'Incident opened',
  'incident.updated': 'Incident updated',
  'incident.resolved': 'Incident resolved',
  'status.changed': 'Status changed',
  'sla.at_risk': 'SLA at risk',
  'sla.breached': 'SLA breached',
  'sla.recovered': 'SLA recovered',
  'score.dropped': 'Score dropped',
  'sla.forecast': 'SLA breach forecast',
  'score.trend': 'Score falling',
  'upstream.degraded': 'Upstream degraded',
  'upstream.recovered': 'Upstream recovered',
};

/** `45s`, `20m`, `36h`, `3d 4h`: a span of seconds for people (the two largest units from 2 days). */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${String(s)}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${String(m)}m`;
  const h = Math.round(s / 3600);
  if (h < 48) return `${String(h)}h`;
  const d = Math.floor(h / 24);
  const rest = h % 24;
  return rest === 0 ? `${String(d)}d` : `${String(d)}d ${String(rest)}h`;
}

/** A short label for an event kind: `Incident opened`, `SLA breached`. */
export function eventLabel(kind: EventKind): string {
  return EVENT_LABELS[kind];
}

/** `before → after` for the transition's main value, or null when it has none. */
export function changeSummary(transition: Transition): string | null {
  const { previous, current } = transition;
  switch (transition.kind) {
    case 'incident.opened':
    case 'incident.updated':
    case 'incident.resolved': {
      const before = value(previous, 'status');
      const after = transition.incident?.status ?? value(current, 'status');
      return before === null || before === after
        ? words(after)
        : `${words(before)} → ${words(after)}`;
    }
    case 'status.changed':
    case 'sla.at_risk':
    case 'sla.breached':
    case 'sla.recovered':
      return `${words(value(previous, 'status'))} → ${words(value(current, 'status'))}`;
    case 'score.dropped':
    case 'score.trend':
      return `${scoreText(value(previous, 'score'))} → ${scoreText(value(current, 'score'))}`;
    case 'sla.forecast': {
      const margin = value(current, 'margin');
      return typeof margin === 'number' ? `margin ${formatMargin(margin)} → 0` : 'margin → 0';
    }
    case 'upstream.degraded':
    case 'upstream.recovered':
      return `${words(value(previous, 'health'))} → ${words(value(current, 'health'))}`;
  }
}

/**
 * One line a human understands, per event kind (raw text: escape it for the channel; line breaks
 * from upstream are already flattened):
 * `Stripe: incident opened — Card payments failing`, `GitHub: status operational → degraded`,
 * `Adyen: SLA breached (margin −0.40 pp)`, `Slack: score dropped 92 → 87`,
 * `Status API: upstream degraded (upstream_server_error)`.
 */
export function describe(transition: Transition): string {
  const service = serviceLabel(transition);
  const { previous, current } = transition;
  const title = incidentTitle(transition);
  const withTitle = (what: string): string =>
    title === '' ? `${service}: ${what}` : `${service}: ${what} — ${title}`;
  switch (transition.kind) {
    case 'incident.opened':
      return withTitle('incident opened');
    case 'incident.updated': {
      const status = transition.incident?.status ?? value(current, 'status');
      const what = value(current, 'reopened') === true ? 'incident reopened' : 'incident updated';
      return withTitle(status === null ? what : `${what} (${words(status)})`);
    }
    case 'incident.resolved':
      return withTitle('incident resolved');
    case 'status.changed':
      return `${service}: status ${words(value(previous, 'status'))} → ${words(value(current, 'status'))}`;
    case 'sla.at_risk':
    case 'sla.breached':
    case 'sla.recovered': {
      const what = transition.kind === 'sla.at_risk' ? 'at risk' : transition.kind.slice(4);
      const margin = value(current, 'margin');
      return typeof margin === 'number'
        ? `${service}: SLA ${what} (margin ${formatMargin(margin)})`
        : `${service}: SLA ${what}`;
    }
    case 'score.dropped':
      return `${service}: score dropped ${scoreText(value(previous, 'score'))} → ${scoreText(value(current, 'score'))}`;
    case 'sla.forecast': {
      const at = value(current, 'projectedBreachAt');
      const ms = typeof at === 'string' ? Date.parse(at) - transition.observedAt : NaN;
      const margin = value(current, 'margin');
      const when = Number.isFinite(ms) ? ` in about ${formatSeconds(ms / 1000)}` : '';
      const left = typeof margin === 'number' ? ` (margin ${formatMargin(margin)})` : '';
      return `${service}: SLA breach projected${when} at the current burn rate${left}`;
    }
    case 'score.trend': {
      const span = value(current, 'windowSeconds');
      const over = typeof span === 'number' ? ` over ${formatSeconds(span)}` : '';
      return `${service}: score falling ${scoreText(value(previous, 'score'))} → ${scoreText(value(current, 'score'))}${over}`;
    }
    case 'upstream.degraded': {
      const reason = value(current, 'reason');
      return reason === null
        ? `${service}: upstream degraded`
        : `${service}: upstream degraded (${String(reason)})`;
    }
    case 'upstream.recovered':
      return `${service}: upstream recovered`;
  }
}

const BAD_STATUS = new Set(['major_outage', 'partial_outage']);

/** 0 = most severe. Problems before warnings before recoveries. */
export function severityRank(transition: Transition): number {
  switch (transition.kind) {
    case 'incident.opened':
    case 'sla.breached':
      return 0;
    case 'status.changed': {
      const status = value(transition.current, 'status');
      if (typeof status === 'string' && BAD_STATUS.has(status)) return 0;
      return status === 'operational' ? 4 : 1;
    }
    case 'upstream.degraded':
      return 1;
    case 'incident.updated':
      return value(transition.current, 'reopened') === true ? 0 : 2;
    case 'sla.at_risk':
      return 2;
    case 'score.dropped':
    case 'sla.forecast':
    case 'score.trend':
      return 3;
    case 'incident.resolved':
    case 'sla.recovered':
    case 'upstream.recovered':
      return 4;
  }
}

/** A copy sorted most severe first; stable, so equal ranks keep their given order. */
export function bySeverity(transitions: readonly Transition[]): Transition[] {
  return [...transitions].sort((a, b) => severityRank(a) - severityRank(b));
}

/** True for an absolute http:// or https:// URL (the only links a renderer ever emits). */
export function isHttpUrl(url: string | null | undefined): url is string {
  if (url === null || url === undefined || !URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '';
}

// ---------------------------------------------------------------- batch-like notifications

/** The notification types rendered as a heading plus a list of transitions. */
export type ListType = 'batch' | 'reminder' | 'catchup' | 'digest';

/** Longest `title` / summary line kept from a notification (before channel escaping). */
export const TITLE_TEXT_MAX = 1000;
export const SUMMARY_LINE_MAX = 2000;

function plural(count: number, one: string, many: string = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * A duration in words an on-call engineer reads at a glance: `45m`, `4h`, `4h 30m`, `2d 3h`,
 * `less than a minute`; null when it cannot be known (negative or not finite).
 */
export function formatDuration(ms: number): string | null {
  if (!Number.isFinite(ms) || ms < 0) return null;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) {
    const rest = minutes % 60;
    return rest === 0 ? `${hours}h` : `${hours}h ${rest}m`;
  }
  const days = Math.floor(hours / 24);
  const rest = hours % 24;
  return rest === 0 ? `${days}d` : `${days}d ${rest}h`;
}

/** `2026-01-01 12:00 UTC`, or `unknown time` for a value that is not a time. */
export function formatUtc(ms: number): string {
  if (!Number.isFinite(ms)) return 'unknown time';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** How long what `transition` opened has been open when the notification was created. */
export function openFor(transition: Transition, createdAt: number): string | null {
  return formatDuration(createdAt - transition.observedAt);
}

/** One line for a transition still open in a reminder: `Stripe: incident opened — X (open for 4h)`. */
export function reminderItem(transition: Transition, createdAt: number): string {
  const open = openFor(transition, createdAt);
  return open === null ? describe(transition) : `${describe(transition)} (open for ${open})`;
}

/** The notification's own `title` on one line and bounded, or null when it has none. */
export function notificationTitle(notification: Notification): string | null {
  const title = headerSafe(notification.title ?? '');
  return title === '' ? null : truncate(title, TITLE_TEXT_MAX);
}

/** The `summary` lines, each on one line and bounded; empty lines dropped. */
export function summaryLines(notification: Notification): string[] {
  return (notification.summary ?? [])
    .map((line) => truncate(headerSafe(line), SUMMARY_LINE_MAX))
    .filter((line) => line !== '');
}

/**
 * What a batch-like notification is, in one sentence that always carries the count:
 * `12 changes for payments`, `Reminder: 3 still open for payments`,
 * `Quiet hours ended: 5 notifications held`, `Digest for payments: 7 changes`.
 */
export function countLine(type: ListType, notification: Notification): string {
  const count = notification.transitions.length;
  const subscription = headerSafe(notification.subscription);
  switch (type) {
    case 'batch':
      return `${plural(count, 'change')} for ${subscription}`;
    case 'reminder':
      return `Reminder: ${count} still open for ${subscription}`;
    case 'catchup':
      return `Quiet hours ended: ${plural(count, 'notification')} held`;
    case 'digest':
      return count === 0
        ? `Digest for ${subscription}: no changes`
        : `Digest for ${subscription}: ${plural(count, 'change')}`;
  }
}

/**
 * The heading of a batch-like notification (raw text on one line; escape it for the channel):
 * the `title` when given, else the count line, except that a reminder about one transition
 * says what is still open: `Reminder: still open — Stripe: incident opened — X (open for 4h)`.
 */
export function listHeading(type: ListType, notification: Notification): string {
  const title = notificationTitle(notification);
  if (title !== null) return title;
  const [only, ...rest] = notification.transitions;
  if (type === 'reminder' && only !== undefined && rest.length === 0) {
    return `Reminder: still open — ${reminderItem(only, notification.createdAt)}`;
  }
  return countLine(type, notification);
}

/**
 * The order a batch-like notification lists its transitions in: a catch-up keeps the given
 * (chronological) order so a resolution follows its opening; the others put the most severe first.
 */
export function listOrder(type: ListType, transitions: readonly Transition[]): Transition[] {
  switch (type) {
    case 'catchup':
      return [...transitions];
    case 'batch':
    case 'reminder':
    case 'digest':
      return bySeverity(transitions);
  }
}

/** One line per listed transition: reminders say for how long, catch-ups and digests when. */
export function listItem(type: ListType, transition: Transition, createdAt: number): string {
  switch (type) {
    case 'batch':
      return describe(transition);
    case 'reminder':
      return reminderItem(transition, createdAt);
    case 'catchup':
    case 'digest':
      return `${describe(transition)} (${formatUtc(transition.observedAt)})`;
  }
}
