/**
 * Notification → Slack incoming-webhook payload (Block Kit). Pure: no I/O, no clock.
 * Every piece of upstream text is escaped (`escapeSlackMrkdwn`) and bounded; links are built only
 * from http(s) catalog URLs with a fixed label; mentions come only from the channel config.
 */
import type { Transition } from '../../diff/transition.js';
import type { Notification } from '../types.js';
import {
  changeSummary,
  countLine,
  describe,
  escapeSlackMrkdwn,
  escapeTruncated,
  eventLabel,
  incidentTitle,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  openFor,
  serviceLabel,
  summaryLines,
  type ListType,
} from '../text.js';

/** Slack's documented limits. */
export const SLACK_LIMITS = {
  text: 3000,
  sectionText: 3000,
  headerText: 150,
  contextElementText: 2000,
  blocks: 50,
} as const;

/** How many transitions a batch message lists before "…and N more". */
export const BATCH_LIST_LIMIT = 20;

/** Longest upstream update text quoted in a single-event message (a batch quotes less). */
const UPDATE_MAX = 1500;
const BATCH_UPDATE_MAX = 200;
const TITLE_MAX = 300;
/** A digest's summary: each line bounded, at most this many sections of lines. */
const SUMMARY_LINE_SLACK_MAX = 500;
const SUMMARY_SECTIONS = 4;

interface PlainText {
  type: 'plain_text';
  text: string;
  emoji?: boolean;
}

interface MrkdwnText {
  type: 'mrkdwn';
  text: string;
}

/** A Block Kit button (app mode's living message: src/notify/slack/app-render.ts). */
export interface SlackButton {
  type: 'button';
  action_id: string;
  text: PlainText;
  value: string;
  style?: 'primary' | 'danger';
}

export type SlackBlock =
  | { type: 'header'; text: PlainText }
  | { type: 'section'; text: MrkdwnText }
  | { type: 'context'; elements: MrkdwnText[]; block_id?: string }
  | { type: 'divider' }
  | { type: 'actions'; block_id: string; elements: SlackButton[] };

export interface SlackPayload {
  /** Fallback text (notifications, screen readers); mrkdwn, escaped. */
  text: string;
  blocks: SlackBlock[];
}

export interface SlackRenderOptions {
  /** Trusted mentions from the channel config (`<!here>`), prepended as-is. */
  mention?: string | undefined;
}

export const esc = (text: string, max: number): string =>
  escapeTruncated(text, max, escapeSlackMrkdwn);

export function header(text: string): SlackBlock {
  return {
    type: 'header',
    text: { type: 'plain_text', text: esc(text, SLACK_LIMITS.headerText), emoji: false },
  };
}

/** `text` must already be escaped mrkdwn; it is cut (at a line end when possible) to the limit. */
export function section(text: string): SlackBlock {
  return {
    type: 'section',
    text: { type: 'mrkdwn', text: limitMrkdwn(text, SLACK_LIMITS.sectionText) },
  };
}

/**
 * Cuts already-escaped mrkdwn to `max` characters without splitting an entity (`&amp;`) or a
 * link (`<url|label>`): the cut falls before any unfinished `&…;` or `<…>`.
 */
export function limitMrkdwn(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  const openLink = cut.lastIndexOf('<');
  if (openLink > cut.lastIndexOf('>')) cut = cut.slice(0, openLink);
  const amp = cut.lastIndexOf('&');
  if (amp !== -1 && !cut.slice(amp).includes(';')) cut = cut.slice(0, amp);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/**
 * `<url|label>` for an http(s) URL, else null. Characters that would end the link early or
 * change its meaning (`|`, `<`, `>`, whitespace) are percent-encoded, `&` becomes `&amp;`.
 */
export function slackLink(url: string | null, label: string): string | null {
  if (!isHttpUrl(url)) return null;
  const href = new URL(url).href
    .replace(/\|/g, '%7C')
    .replace(/</g, '%3C')
    .replace(/>/g, '%3E')
    .replace(/\s/g, '%20')
    .replace(/&/g, '&amp;');
  return `<${href}|${escapeSlackMrkdwn(label)}>`;
}

export function links(transition: Transition): string | null {
  const found = [
    slackLink(transition.service.canonicalUrl, 'Service page'),
    slackLink(transition.service.officialStatusUrl, 'Official status page'),
  ].filter((link): link is string => link !== null);
  return found.length === 0 ? null : found.join('  ·  ');
}

export function quote(text: string, max: number): string {
  return esc(text, max)
    .split(/\r?\n/)
    .map((line) => `>${line}`)
    .join('\n');
}

/**
 * The sections of a single-event message: service, event, before → after and incident title;
 * the latest update and the summary (each quoted and bounded on its own); the links. Separate
 * sections so a long upstream text can never push the links out of the message.
 */
function eventSections(transition: Transition): string[] {
  const main: string[] = [];
  main.push(`*${esc(serviceLabel(transition), 200)}* · ${eventLabel(transition.kind)}`);
  const change = changeSummary(transition);
  if (change !== null) main.push(`*Change:* ${esc(change, 300)}`);
  const incident = transition.incident;
  if (incident !== null) main.push(`*Incident:* ${esc(incidentTitle(transition), TITLE_MAX)}`);
  const sections = [main.join('\n')];
  const update = incident?.latestUpdate;
  if (update !== undefined && update !== null && update.trim() !== '') {
    sections.push(`*Latest update:*\n${quote(update, UPDATE_MAX)}`);
  }
  const summary = transition.current.summary;
  if (typeof summary === 'string' && summary.trim() !== '') {
    sections.push(`*Summary:*\n${quote(summary, UPDATE_MAX)}`);
  }
  const linkLine = links(transition);
  if (linkLine !== null) sections.push(linkLine);
  return sections;
}

/** One line (plus a short quote and the links) per transition in a batch-like message. */
function listItemText(type: ListType, transition: Transition, createdAt: number): string {
  const lines = [`• ${esc(listItem(type, transition, createdAt), 400)}`];
  const update = transition.incident?.latestUpdate;
  if (update !== undefined && update !== null && update.trim() !== '') {
    lines.push(quote(update, BATCH_UPDATE_MAX));
  }
  const linkLine = links(transition);
  if (linkLine !== null) lines.push(`   ${linkLine}`);
  return lines.join('\n');
}

/**
 * Escaped summary lines packed into at most `SUMMARY_SECTIONS` sections within the section
 * limit; lines that do not fit are counted in a last "…and N more lines".
 */
function summarySections(lines: readonly string[]): string[] {
  const sections: string[] = [];
  let current: string[] = [];
  let length = 0;
  let used = 0;
  const budget = SLACK_LIMITS.sectionText - 40;
  for (const line of lines) {
    const text = esc(line, SUMMARY_LINE_SLACK_MAX);
    if (current.length > 0 && length + 1 + text.length > budget) {
      if (sections.length === SUMMARY_SECTIONS - 1) break;
      sections.push(current.join('\n'));
      current = [];
      length = 0;
    }
    current.push(text);
    length += (current.length > 1 ? 1 : 0) + text.length;
    used++;
  }
  const dropped = lines.length - used;
  if (dropped > 0) current.push(`…and ${dropped} more line${dropped === 1 ? '' : 's'}`);
  if (current.length > 0) sections.push(current.join('\n'));
  return sections;
}

function context(notification: Notification): SlackBlock {
  const text = `Subscription: ${esc(notification.subscription, 200)} · Delivery: ${esc(notification.id, 500)}`;
  const elements: MrkdwnText[] = [
    { type: 'mrkdwn', text: limitMrkdwn(text, SLACK_LIMITS.contextElementText) },
  ];
  const line = consoleLinks(notification);
  if (line !== null) elements.push({ type: 'mrkdwn', text: line });
  return { type: 'context', elements };
}

/** "Open in console · Silence…" (`Notification.links`: our URLs, never upstream text), else null. */
export function consoleLinks(notification: Notification): string | null {
  const links = notification.links;
  if (links === undefined) return null;
  const found = [
    slackLink(links.console, 'Open in console'),
    slackLink(links.silence, 'Silence…'),
  ].filter((link): link is string => link !== null);
  return found.length === 0 ? null : found.join('  ·  ');
}

export function withMention(mention: string | undefined, text: string): string {
  const trimmed = mention?.trim();
  return trimmed === undefined || trimmed === '' ? text : `${trimmed} ${text}`;
}

function renderEvent(
  notification: Notification,
  transition: Transition,
  options: SlackRenderOptions,
  heading: string,
  note: string | null,
): SlackPayload {
  const blocks: SlackBlock[] = [header(heading)];
  if (note !== null) blocks.push(section(note));
  const [main = '', ...rest] = eventSections(transition);
  blocks.push(section(withMention(options.mention, main)));
  for (const text of rest) blocks.push(section(text));
  blocks.push(context(notification));
  return {
    text: limitMrkdwn(
      withMention(options.mention, esc(heading, SLACK_LIMITS.text)),
      SLACK_LIMITS.text,
    ),
    blocks,
  };
}

/**
 * Heading, the count (when the heading is a custom title), the digest's summary, at most
 * `BATCH_LIST_LIMIT` transitions (in `listOrder`) and "…and N more", the context.
 */
function renderList(
  type: ListType,
  notification: Notification,
  options: SlackRenderOptions,
): SlackPayload {
  const heading = listHeading(type, notification);
  const count = countLine(type, notification);
  const ordered = listOrder(type, notification.transitions);
  const shown = ordered.slice(0, BATCH_LIST_LIMIT);
  const hidden = ordered.length - shown.length;
  const blocks: SlackBlock[] = [header(heading)];
  const intro = heading === count ? '' : `*${esc(count, 300)}*`;
  const introWithMention = withMention(options.mention, intro).trim();
  if (introWithMention !== '') blocks.push(section(introWithMention));
  if (type === 'digest') {
    for (const text of summarySections(summaryLines(notification))) blocks.push(section(text));
  }
  for (const transition of shown) {
    blocks.push(section(listItemText(type, transition, notification.createdAt)));
  }
  if (hidden > 0) blocks.push(section(`…and ${hidden} more`));
  blocks.push(context(notification));
  const first = shown[0];
  const fallback =
    first === undefined || type === 'digest'
      ? esc(heading, 300)
      : `${esc(heading, 300)}: ${esc(listItem(type, first, notification.createdAt), 2000)}`;
  return { text: limitMrkdwn(withMention(options.mention, fallback), SLACK_LIMITS.text), blocks };
}

/**
 * The Slack message for one delivery: a single event or test; a reminder about one transition
 * (the event's detail under a reminder heading); or a batch, a reminder about several, a
 * quiet-hours catch-up or a digest as one list (≤ 20 transitions listed).
 */
export function renderSlack(
  notification: Notification,
  options: SlackRenderOptions = {},
): SlackPayload {
  const [first, ...rest] = notification.transitions;
  switch (notification.type) {
    case 'event':
      return first === undefined
        ? renderList('batch', notification, options)
        : renderEvent(notification, first, options, describe(first), null);
    case 'test':
      return first === undefined
        ? renderList('batch', notification, options)
        : renderEvent(
            notification,
            first,
            options,
            `[test] ${describe(first)}`,
            '_This is a test notification from statuswatch (sample event)._',
          );
    case 'reminder': {
      if (first === undefined || rest.length > 0) {
        return renderList('reminder', notification, options);
      }
      const open = openFor(first, notification.createdAt);
      return renderEvent(
        notification,
        first,
        options,
        listHeading('reminder', notification),
        `_Reminder: still open${open === null ? '' : ` (open for ${esc(open, 100)})`}._`,
      );
    }
    case 'batch':
    case 'catchup':
    case 'digest':
      return renderList(notification.type, notification, options);
  }
}
