/**
 * Notification → the body a Teams Workflows webhook takes: `{"type":"message","attachments":[…]}`
 * with one Adaptive Card 1.4. Pure: no I/O, no clock.
 *
 * Teams renders a Markdown subset in `TextBlock.text` and in `Fact.title`/`Fact.value` (bold,
 * italic, lists, `[text](url)` links — learn.microsoft.com/microsoftteams/platform/task-modules-
 * and-cards/cards/cards-format). Every piece of upstream text therefore goes through
 * `escapeTeamsMarkdown` (CommonMark backslash escapes), so a hostile title can neither format nor
 * hide a link; links are only `Action.OpenUrl` buttons built from http(s) catalog URLs with a
 * fixed label.
 *
 * Size: Teams rejects messages over 28 KB (learn.microsoft.com/microsoftteams/limits-specifications-
 * teams). A Workflows trigger answers 202 *before* its "post card" step runs, so an oversized card
 * is not refused to us: the flow run fails later ("MessageSizeExceeded … max allowed size is 28672
 * bytes") and the alert is lost. Worse, Teams measures the card after re-serializing it, and a
 * 24,453-byte request was measured at 28,897 bytes (MicrosoftDocs/msteams-docs#11274). So the
 * renderer keeps a pessimistic measure (`teamsMeasuredSize`: every non-ASCII UTF-16 unit and every
 * HTML-sensitive character counted as a 6-byte `\uXXXX` escape) within `TEAMS_RENDER_BUDGET_BYTES`,
 * shortening texts and dropping list items ("…and N more") until it fits; the request body is then
 * well under `TEAMS_MAX_BODY_BYTES` for any input.
 */
import type { Transition } from '../../diff/transition.js';
import { roleOf } from '../episode.js';
import {
  changeSummary,
  countLine,
  describe,
  eventLabel,
  formatUtc,
  incidentTitle,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  openFor,
  serviceLabel,
  summaryLines,
  truncate,
  type ListType,
} from '../text.js';
import type { Notification } from '../types.js';

/** The documented Teams message limit, 28 KB, as UTF-8 bytes of the request body. */
export const TEAMS_MAX_BODY_BYTES = 28 * 1024;
/** What the renderer keeps `teamsMeasuredSize` within (headroom for Teams' own re-encoding). */
export const TEAMS_RENDER_BUDGET_BYTES = 24 * 1024;
/** How many transitions a batch-like card lists at most before "…and N more". */
export const TEAMS_LIST_LIMIT = 20;

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';
export const ADAPTIVE_CARD_SCHEMA = 'http://adaptivecards.io/schemas/adaptive-card.json';
export const ADAPTIVE_CARD_VERSION = '1.4';

export type TeamsColor = 'Default' | 'Good' | 'Warning' | 'Attention' | 'Accent';

export interface TeamsTextBlock {
  type: 'TextBlock';
  /** Markdown (escaped: upstream text is inert). */
  text: string;
  wrap: true;
  size?: 'Small' | 'Medium' | 'Large';
  weight?: 'Bolder';
  color?: TeamsColor;
  isSubtle?: true;
  spacing?: 'None' | 'Small' | 'Medium';
}

export interface TeamsFact {
  title: string;
  value: string;
}

export interface TeamsFactSet {
  type: 'FactSet';
  facts: TeamsFact[];
}

export interface TeamsOpenUrlAction {
  type: 'Action.OpenUrl';
  title: string;
  /** Always an absolute http(s) URL. */
  url: string;
}

export interface TeamsActionSet {
  type: 'ActionSet';
  actions: TeamsOpenUrlAction[];
}

export interface TeamsContainer {
  type: 'Container';
  separator: true;
  spacing: 'Medium';
  items: TeamsElement[];
}

export type TeamsElement = TeamsTextBlock | TeamsFactSet | TeamsActionSet | TeamsContainer;

export interface AdaptiveCard {
  $schema: typeof ADAPTIVE_CARD_SCHEMA;
  type: 'AdaptiveCard';
  version: typeof ADAPTIVE_CARD_VERSION;
  /** Teams-specific: use the full width of the channel. */
  msteams: { width: 'Full' };
  body: TeamsElement[];
  actions?: TeamsOpenUrlAction[];
}

/** The request body of a Workflows "Post to a channel when a webhook request is received" trigger. */
export interface TeamsMessage {
  type: 'message';
  attachments: [
    {
      contentType: typeof ADAPTIVE_CARD_CONTENT_TYPE;
      contentUrl: null;
      content: AdaptiveCard;
    },
  ];
}

// ---------------------------------------------------------------- text

/**
 * Text as Teams should show it: line breaks normalised to `\n` (at most one empty line in a row),
 * tabs to spaces, and every other control character, line/paragraph separator and bidirectional
 * override removed (they could reorder what a reader sees).
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function cleanText(text: string): string {
  return text
    .replace(/\r\n?|[\u2028\u2029]/g, '\n')
    .replace(/\t/g, ' ')
    .replace(INVISIBLE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Makes text inert in a Teams TextBlock or Fact: every character Markdown (or Teams' HTML-ish and
 * `{{DATE()}}` handling) could give meaning — `\` `` ` `` `*` `_` `{` `}` `[` `]` `(` `)` `<` `>`
 * `#` `|` `~` `&` — gets a CommonMark backslash escape, and so do list markers at the start of a
 * line (`-`, `+`, `=`, `1.`, `1)`). `[click](https://evil)` shows as that text, never as a link.
 */
export function escapeTeamsMarkdown(text: string): string {
  return cleanText(text)
    .replace(/[\\`*_{}[\]()<>#|~&]/g, '\\$&')
    .replace(/^([ ]*)([-+=])/gm, '$1\\$2')
    .replace(/^([ ]*\d+)([.)])/gm, '$1\\$2');
}

/** Upstream text cut to `max` characters (before escaping), then escaped. */
function md(text: string, max: number): string {
  return escapeTeamsMarkdown(truncate(cleanText(text), max));
}

/** UTF-8 bytes of the serialized body: what the 28 KB limit is about. */
export function teamsBodySize(body: string): number {
  return Buffer.byteLength(body, 'utf8');
}

/**
 * A pessimistic size of the serialized body as Teams may count it after re-serializing: every
 * non-ASCII UTF-16 unit and each of `<` `>` `&` `'` `+` as a 6-byte `\uXXXX` escape. Never less
 * than `teamsBodySize`.
 */
export function teamsMeasuredSize(body: string): number {
  let size = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    size += c >= 0x80 || c === 0x3c || c === 0x3e || c === 0x26 || c === 0x27 || c === 0x2b ? 6 : 1;
  }
  return size;
}

function fits(body: string): boolean {
  return (
    teamsMeasuredSize(body) <= TEAMS_RENDER_BUDGET_BYTES &&
    teamsBodySize(body) <= TEAMS_MAX_BODY_BYTES
  );
}

// ---------------------------------------------------------------- elements

/** Text limits (raw characters, before escaping) at one step of shrinking. */
interface Limits {
  heading: number;
  fact: number;
  update: number;
  summary: number;
  item: number;
  itemUpdate: number;
  summaryLine: number;
  summaryLines: number;
  footer: number;
}

const FULL: Limits = {
  heading: 300,
  fact: 300,
  update: 1500,
  summary: 1500,
  item: 400,
  itemUpdate: 200,
  summaryLine: 500,
  summaryLines: 30,
  footer: 300,
};

/** Each step cuts every text further; the last one still says what happened. */
const SCALES = [1, 0.5, 0.25, 0.12, 0.05] as const;

function scaled(scale: number): Limits {
  const at = (full: number, min: number): number => Math.max(min, Math.floor(full * scale));
  return {
    heading: at(FULL.heading, 60),
    fact: at(FULL.fact, 40),
    update: at(FULL.update, 60),
    summary: at(FULL.summary, 60),
    item: at(FULL.item, 80),
    itemUpdate: at(FULL.itemUpdate, 40),
    summaryLine: at(FULL.summaryLine, 60),
    summaryLines: at(FULL.summaryLines, 3),
    footer: at(FULL.footer, 60),
  };
}

function textBlock(text: string, extra: Omit<TeamsTextBlock, 'type' | 'text' | 'wrap'> = {}) {
  const block: TeamsTextBlock = { type: 'TextBlock', text, wrap: true, ...extra };
  return block;
}

function heading(text: string, color: TeamsColor, max: number): TeamsTextBlock {
  return textBlock(md(text, max), { size: 'Large', weight: 'Bolder', color });
}

/** Our own fixed wording (still escaped: it may quote a subscription name or a duration). */
function note(text: string, max: number): TeamsTextBlock {
  return textBlock(md(text, max), { isSubtle: true, spacing: 'Small' });
}

function footer(notification: Notification, limits: Limits): TeamsTextBlock {
  const text = `Subscription: ${notification.subscription} · Delivery: ${notification.id}`;
  return textBlock(md(text, limits.footer), { size: 'Small', isSubtle: true });
}

function colorOf(transition: Transition): TeamsColor {
  switch (roleOf(transition)) {
    case 'opening':
      return 'Attention';
    case 'closing':
      return 'Good';
    case 'update':
      return 'Warning';
  }
}

/** Any opening → attention; all closings → good; otherwise warning; nothing → default. */
function listColor(transitions: readonly Transition[]): TeamsColor {
  if (transitions.length === 0) return 'Default';
  const colors = transitions.map(colorOf);
  if (colors.includes('Attention')) return 'Attention';
  if (colors.every((c) => c === 'Good')) return 'Good';
  return 'Warning';
}

/** `Action.OpenUrl` buttons for the official status page and the service page (http(s) only). */
export function teamsLinks(transition: Transition): TeamsOpenUrlAction[] {
  const actions: TeamsOpenUrlAction[] = [];
  const add = (url: string | null, title: string): void => {
    if (!isHttpUrl(url)) return;
    const href = new URL(url).href;
    if (actions.some((a) => a.url === href)) return;
    actions.push({ type: 'Action.OpenUrl', title, url: href });
  };
  add(transition.service.officialStatusUrl, 'Official status page');
  add(transition.service.canonicalUrl, 'Service page');
  return actions;
}

/** "Open in console" and "Silence…" buttons (`Notification.links`, our URLs); none without. */
export function consoleActions(notification: Notification): TeamsOpenUrlAction[] {
  const links = notification.links;
  if (links === undefined) return [];
  return [
    { type: 'Action.OpenUrl', title: 'Open in console', url: new URL(links.console).href },
    { type: 'Action.OpenUrl', title: 'Silence…', url: new URL(links.silence).href },
  ];
}

/** Service, event, status before → after, incident, started, subscription. */
function facts(notification: Notification, transition: Transition, limits: Limits): TeamsFactSet {
  const list: TeamsFact[] = [
    { title: 'Service', value: md(serviceLabel(transition), limits.fact) },
    { title: 'Event', value: eventLabel(transition.kind) },
  ];
  const change = changeSummary(transition);
  if (change !== null) list.push({ title: 'Status', value: md(change, limits.fact) });
  const incident = transition.incident;
  if (incident !== null) {
    const title = incidentTitle(transition);
    if (title !== '') list.push({ title: 'Incident', value: md(title, limits.fact) });
    list.push({ title: 'Started', value: formatUtc(incident.started * 1000) });
  }
  list.push({ title: 'Subscription', value: md(notification.subscription, limits.fact) });
  return { type: 'FactSet', facts: list };
}

function hasText(text: string | null | undefined): text is string {
  return typeof text === 'string' && cleanText(text) !== '';
}

function labelled(label: string, text: string, max: number): TeamsElement[] {
  return [
    textBlock(label, { weight: 'Bolder', spacing: 'Medium' }),
    textBlock(md(text, max), { spacing: 'Small' }),
  ];
}

function message(body: TeamsElement[], actions: TeamsOpenUrlAction[] = []): TeamsMessage {
  const content: AdaptiveCard = {
    $schema: ADAPTIVE_CARD_SCHEMA,
    type: 'AdaptiveCard',
    version: ADAPTIVE_CARD_VERSION,
    msteams: { width: 'Full' },
    body,
    ...(actions.length === 0 ? {} : { actions }),
  };
  return {
    type: 'message',
    attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content }],
  };
}

// ---------------------------------------------------------------- cards

export interface RenderedTeams {
  message: TeamsMessage;
  /** `message` serialized: the request body. */
  body: string;
}

function serialize(msg: TeamsMessage): RenderedTeams {
  return { message: msg, body: JSON.stringify(msg) };
}

/**
 * One event: heading (colored by role), an optional note (test, reminder), the facts, the latest
 * update and the summary, the footer; the links as card actions.
 */
function renderEvent(
  notification: Notification,
  transition: Transition,
  headingText: string,
  noteText: string | null,
): RenderedTeams {
  const color = colorOf(transition);
  const actions = [...teamsLinks(transition), ...consoleActions(notification)];
  for (const scale of SCALES) {
    const limits = scaled(scale);
    const body: TeamsElement[] = [heading(headingText, color, limits.heading)];
    if (noteText !== null) body.push(note(noteText, limits.heading));
    body.push(facts(notification, transition, limits));
    const update = transition.incident?.latestUpdate;
    if (hasText(update)) body.push(...labelled('Latest update', update, limits.update));
    const summary = transition.current.summary;
    if (typeof summary === 'string' && hasText(summary)) {
      body.push(...labelled('Summary', summary, limits.summary));
    }
    body.push(footer(notification, limits));
    const rendered = serialize(message(body, actions));
    if (fits(rendered.body)) return rendered;
  }
  return minimal(headingText, color, actions);
}

/** The last resort: the heading alone (short), and the links. Always fits. */
function minimal(
  headingText: string,
  color: TeamsColor,
  actions: TeamsOpenUrlAction[],
): RenderedTeams {
  return serialize(
    message(
      [heading(headingText, color, 100), note('The details were too long for a Teams card.', 100)],
      actions,
    ),
  );
}

/** One transition of a list: its line, a short update, its links. */
function listContainer(
  type: ListType,
  transition: Transition,
  createdAt: number,
  limits: Limits,
): TeamsContainer {
  const items: TeamsElement[] = [
    textBlock(md(listItem(type, transition, createdAt), limits.item), {
      color: colorOf(transition),
    }),
  ];
  const update = transition.incident?.latestUpdate;
  if (hasText(update)) {
    items.push(textBlock(md(update, limits.itemUpdate), { isSubtle: true, spacing: 'Small' }));
  }
  const actions = teamsLinks(transition);
  if (actions.length > 0) items.push({ type: 'ActionSet', actions });
  return { type: 'Container', separator: true, spacing: 'Medium', items };
}

/** A digest's summary as one bulleted TextBlock: at most `summaryLines` lines, then "…and N more lines". */
function summaryBlock(lines: readonly string[], limits: Limits): TeamsTextBlock | null {
  if (lines.length === 0) return null;
  const shown = lines
    .slice(0, limits.summaryLines)
    .map((line) => `- ${md(line, limits.summaryLine)}`);
  const dropped = lines.length - Math.min(lines.length, limits.summaryLines);
  if (dropped > 0) shown.push(`- …and ${dropped} more line${dropped === 1 ? '' : 's'}`);
  return textBlock(shown.join('\n'), { spacing: 'Medium' });
}

/**
 * Heading, the count (when the heading is a custom title), a digest's summary, one Container per
 * transition (at most `TEAMS_LIST_LIMIT`, fewer when the card would not fit) and "…and N more",
 * the footer.
 */
function renderList(type: ListType, notification: Notification): RenderedTeams {
  const headingText = listHeading(type, notification);
  const count = countLine(type, notification);
  const ordered = listOrder(type, notification.transitions);
  const color = listColor(ordered);
  const lines = type === 'digest' ? summaryLines(notification) : [];
  const build = (limits: Limits, shownCount: number): RenderedTeams => {
    const body: TeamsElement[] = [heading(headingText, color, limits.heading)];
    if (headingText !== count)
      body.push(textBlock(md(count, limits.heading), { weight: 'Bolder' }));
    const summary = summaryBlock(lines, limits);
    if (summary !== null) body.push(summary);
    for (const transition of ordered.slice(0, shownCount)) {
      body.push(listContainer(type, transition, notification.createdAt, limits));
    }
    const hidden = ordered.length - shownCount;
    if (hidden > 0) body.push(textBlock(`…and ${hidden} more`, { spacing: 'Medium' }));
    body.push(footer(notification, limits));
    return serialize(message(body, consoleActions(notification)));
  };
  const most = Math.min(ordered.length, TEAMS_LIST_LIMIT);
  for (const [step, scale] of SCALES.entries()) {
    const limits = scaled(scale);
    // Keep a few items while texts can still shrink; the last step may drop them all.
    const least = step === SCALES.length - 1 ? 0 : Math.min(most, 3);
    const all = build(limits, most);
    if (fits(all.body)) return all;
    // Fewer items never make the card larger: binary-search the most that fit.
    let best: RenderedTeams | null = null;
    let low = least;
    let high = most - 1;
    while (low <= high) {
      const middle = Math.floor((low + high) / 2);
      const rendered = build(limits, middle);
      if (fits(rendered.body)) {
        best = rendered;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    if (best !== null) return best;
  }
  return minimal(headingText, color, consoleActions(notification));
}

/**
 * The Teams message for one delivery, serialized: a single event or test; a reminder about one
 * transition (the event's card under a reminder heading); or a batch, a reminder about several, a
 * quiet-hours catch-up or a digest as one list card.
 */
export function renderTeamsRequest(notification: Notification): RenderedTeams {
  const [first, ...rest] = notification.transitions;
  switch (notification.type) {
    case 'event':
      return first === undefined
        ? renderList('batch', notification)
        : renderEvent(notification, first, describe(first), null);
    case 'test':
      return first === undefined
        ? renderList('batch', notification)
        : renderEvent(
            notification,
            first,
            `[test] ${describe(first)}`,
            'This is a test notification from statuswatch (sample event).',
          );
    case 'reminder': {
      if (first === undefined || rest.length > 0) return renderList('reminder', notification);
      const open = openFor(first, notification.createdAt);
      return renderEvent(
        notification,
        first,
        listHeading('reminder', notification),
        `Reminder: still open${open === null ? '' : ` (open for ${open})`}.`,
      );
    }
    case 'batch':
    case 'catchup':
    case 'digest':
      return renderList(notification.type, notification);
  }
}

/** The Teams message object for one delivery (see `renderTeamsRequest`). */
export function renderTeams(notification: Notification): TeamsMessage {
  return renderTeamsRequest(notification).message;
}
