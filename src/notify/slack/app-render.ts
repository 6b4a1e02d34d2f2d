/**
 * Notification → Slack app-mode messages (Block Kit). Pure: no I/O, no clock.
 *
 * - An `event` is one episode's living message: the `parent` shows the episode's current state
 *   (status emoji, heading, open/resolved line, then the facts, latest update and links exactly
 *   as the webhook mode renders them) and is posted once, then edited; the `reply` is the change,
 *   posted in the parent's thread.
 * - A `batch` (a burst grouped by `group:`) is one message listing its episodes, each with its
 *   latest state.
 * - Reminders, catch-ups, digests and tests are plain posts, rendered as in webhook mode.
 *
 * All upstream text is escaped with the webhook mode's escaping (`escapeSlackMrkdwn`) and bounded
 * to Slack's limits; links come only from http(s) catalog URLs; mentions only from the config.
 */
import type { Transition } from '../../diff/transition.js';
import { episodeKey, roleOf } from '../episode.js';
import { scopeRef } from './message-store.js';
import {
  changeSummary,
  describe,
  eventLabel,
  formatDuration,
  formatUtc,
  incidentTitle,
  listHeading,
  serviceLabel,
  severityRank,
} from '../text.js';
import type { Notification } from '../types.js';
import {
  BATCH_LIST_LIMIT,
  esc,
  header,
  limitMrkdwn,
  links,
  quote,
  renderSlack,
  section,
  withMention,
  SLACK_LIMITS,
  type SlackBlock,
  type SlackButton,
  type SlackPayload,
} from './render.js';

/** What the store knows about the episode when its message is rendered. */
export interface SlackEpisodeState {
  /** When the episode's first notified transition was observed (Unix ms); null when unknown. */
  openedAt: number | null;
  /**
   * The buttons (the channel has a signing secret): `ref` names the episode's reference
   * (`scopeRef`), `acked` leaves Acknowledge out. None on a closing.
   */
  actions?: { ref: string; acked: boolean } | null | undefined;
  /** What was done from the buttons, one line each (ours: user ids and times only). */
  notes?: readonly string[] | undefined;
}

/** The `action_id`s of the living message's buttons (src/notify/slack/interactions.ts). */
export const SLACK_ACTIONS = {
  ack: 'statuswatch_ack',
  silence1h: 'statuswatch_silence_1h',
  silence4h: 'statuswatch_silence_4h',
  silenceResolved: 'statuswatch_silence_resolved',
} as const;
export type SlackActionId = (typeof SLACK_ACTIONS)[keyof typeof SLACK_ACTIONS];
/** The `block_id`s of the buttons and of the notes: edits replace these blocks. */
export const SLACK_ACTIONS_BLOCK = 'statuswatch_actions';
export const SLACK_NOTES_BLOCK = 'statuswatch_notes';

function button(actionId: SlackActionId, text: string, ref: string, primary = false): SlackButton {
  return {
    type: 'button',
    action_id: actionId,
    text: { type: 'plain_text', text },
    value: ref,
    ...(primary ? { style: 'primary' } : {}),
  };
}

/** The buttons of an open episode's parent; `value` is the reference only, never a name. */
export function actionsBlock(ref: string, acked: boolean): SlackBlock {
  return {
    type: 'actions',
    block_id: SLACK_ACTIONS_BLOCK,
    elements: [
      ...(acked ? [] : [button(SLACK_ACTIONS.ack, 'Acknowledge', ref, true)]),
      button(SLACK_ACTIONS.silence1h, 'Silence 1h', ref),
      button(SLACK_ACTIONS.silence4h, 'Silence 4h', ref),
      button(SLACK_ACTIONS.silenceResolved, 'Silence until resolved', ref),
    ],
  };
}

/** The notes of the buttons' actions, as one context block. */
export function notesBlock(notes: readonly string[]): SlackBlock {
  return {
    type: 'context',
    block_id: SLACK_NOTES_BLOCK,
    elements: [
      {
        type: 'mrkdwn',
        text: limitMrkdwn(notes.slice(-5).join('\n'), SLACK_LIMITS.contextElementText),
      },
    ],
  };
}

/**
 * A parent's blocks with what was done from its buttons: the notes before the buttons, and no
 * Acknowledge button once acknowledged.
 */
export function withActionNotes(
  blocks: readonly SlackBlock[],
  notes: readonly string[],
  acked: boolean,
): SlackBlock[] {
  if (notes.length === 0 && !acked) return [...blocks];
  const actions = blocks.find(
    (b): b is Extract<SlackBlock, { type: 'actions' }> =>
      b.type === 'actions' && b.block_id === SLACK_ACTIONS_BLOCK,
  );
  const ref = actions?.elements[0]?.value;
  return withActionBlocks(blocks, notes, ref === undefined ? null : { ref, acked });
}

/** The blocks of an episode's parent after its buttons or notes change (the rest kept). */
export function withActionBlocks(
  blocks: readonly SlackBlock[],
  notes: readonly string[],
  actions: { ref: string; acked: boolean } | null,
): SlackBlock[] {
  const kept = blocks.filter(
    (b) =>
      !('block_id' in b) ||
      (b.block_id !== SLACK_ACTIONS_BLOCK && b.block_id !== SLACK_NOTES_BLOCK),
  );
  const tail: SlackBlock[] = [];
  if (notes.length > 0) tail.push(notesBlock(notes));
  if (actions !== null) tail.push(actionsBlock(actions.ref, actions.acked));
  return [...kept.slice(0, SLACK_LIMITS.blocks - tail.length), ...tail];
}

export interface SlackAppRenderOptions {
  /** Trusted mentions from the channel config (`<!here>`); carried by parents and broadcast replies. */
  mention?: string | undefined;
  /** The reply is also shown in the channel (`reply_broadcast`): it carries the mention too. */
  broadcast?: boolean | undefined;
  /** The parent of an open episode carries the buttons (the channel has a signing secret). */
  buttons?: boolean | undefined;
}

/** One episode's living message: the parent (current state) and the thread reply (the change). */
export interface SlackEpisodeMessages {
  parent: SlackPayload;
  reply: SlackPayload;
}

/** The transitions of one episode inside a batch-like notification. */
export interface SlackEpisodeGroup {
  /** `episodeKey` of the transitions. */
  key: string;
  /** The most recent transition: the episode's current state. */
  latest: Transition;
  /** How many of the notification's transitions belong to the episode. */
  changes: number;
}

export type SlackAppMessage =
  | ({ kind: 'episode'; transition: Transition } & SlackEpisodeMessages)
  | { kind: 'list'; parent: SlackPayload; episodes: SlackEpisodeGroup[] }
  | { kind: 'post'; post: SlackPayload };

const UPDATE_MAX = 1500;
const LIST_UPDATE_MAX = 200;

function context(text: string): SlackBlock {
  return {
    type: 'context',
    elements: [{ type: 'mrkdwn', text: limitMrkdwn(text, SLACK_LIMITS.contextElementText) }],
  };
}

function latestUpdate(transition: Transition): string | null {
  const update = transition.incident?.latestUpdate;
  return update === undefined || update === null || update.trim() === '' ? null : update;
}

/** True when the transition ends its episode (the living message shows "resolved"). */
export function isClosing(transition: Transition): boolean {
  return roleOf(transition) === 'closing';
}

/** ✅ for a closing, else by severity: 🔴 outage/breach/opening, 🟠 degraded/update, 🟡 warning. */
export function statusEmoji(transition: Transition): string {
  if (isClosing(transition)) return '✅';
  const rank = severityRank(transition);
  if (rank === 0) return '🔴';
  return rank <= 2 ? '🟠' : '🟡';
}

/** What the episode is about, on one line: `Stripe: Card payments failing`, else the event line. */
function subject(transition: Transition): string {
  const title = incidentTitle(transition);
  return transition.incident !== null && title !== ''
    ? `${serviceLabel(transition)}: ${title}`
    : describe(transition);
}

/** The heading of an episode's parent (raw text; escape it for the channel). */
export function episodeHeading(transition: Transition): string {
  const emoji = statusEmoji(transition);
  return isClosing(transition)
    ? `${emoji} Resolved: ${subject(transition)}`
    : `${emoji} ${subject(transition)}`;
}

function stateLine(transition: Transition, state: SlackEpisodeState): string {
  const { openedAt } = state;
  const at = transition.observedAt;
  if (isClosing(transition)) {
    const open = openedAt === null ? null : formatDuration(at - openedAt);
    return `*Resolved* ${formatUtc(at)}${open === null ? '' : ` · open for ${open}`}`;
  }
  const since = openedAt === null ? '' : ` · since ${formatUtc(openedAt)}`;
  return `*Open*${since} · last change: ${eventLabel(transition.kind)}, ${formatUtc(at)}`;
}

/**
 * The parent: the heading with the status emoji, the open/resolved line, then the webhook mode's
 * event blocks (service, change, incident, latest update, summary, links, context).
 */
export function renderEpisodeParent(
  notification: Notification,
  transition: Transition,
  state: SlackEpisodeState,
  options: SlackAppRenderOptions = {},
): SlackPayload {
  const heading = episodeHeading(transition);
  const body = renderSlack(
    { ...notification, type: 'event', transitions: [transition] },
    { mention: options.mention },
  );
  const blocks: SlackBlock[] = [
    header(heading),
    section(stateLine(transition, state)),
    ...body.blocks.slice(1),
  ];
  const text = limitMrkdwn(
    withMention(options.mention, esc(heading, SLACK_LIMITS.text)),
    SLACK_LIMITS.text,
  );
  const ref = scopeRef({
    subscription: notification.subscription,
    channel: notification.channel,
    episode: episodeKey(transition),
  });
  const actions = isClosing(transition)
    ? null
    : (state.actions ?? (options.buttons === true ? { ref, acked: false } : null));
  return { text, blocks: withActionBlocks(blocks, state.notes ?? [], actions) };
}

/** The reply in the thread: what changed, the latest update, the delivery id. */
export function renderEpisodeReply(
  notification: Notification,
  transition: Transition,
  options: SlackAppRenderOptions = {},
): SlackPayload {
  const mention = options.broadcast === true ? options.mention : undefined;
  const emoji = statusEmoji(transition);
  const lines = [`${emoji} *${esc(describe(transition), 500)}*`];
  const change = changeSummary(transition);
  if (change !== null) lines.push(`*Change:* ${esc(change, 300)}`);
  const blocks: SlackBlock[] = [section(withMention(mention, lines.join('\n')))];
  const update = latestUpdate(transition);
  if (update !== null) blocks.push(section(`*Latest update:*\n${quote(update, UPDATE_MAX)}`));
  blocks.push(context(`Delivery: ${esc(notification.id, 500)}`));
  const text = limitMrkdwn(
    withMention(mention, `${emoji} ${esc(describe(transition), SLACK_LIMITS.text)}`),
    SLACK_LIMITS.text,
  );
  return { text, blocks };
}

/**
 * The episodes of a batch-like notification: one group per `episodeKey` whose `latest` is its
 * most recent transition (ties: the later one in the list), most severe first (stable).
 */
export function groupEpisodes(transitions: readonly Transition[]): SlackEpisodeGroup[] {
  const groups = new Map<string, SlackEpisodeGroup>();
  for (const transition of transitions) {
    const key = episodeKey(transition);
    const known = groups.get(key);
    if (known === undefined) {
      groups.set(key, { key, latest: transition, changes: 1 });
    } else {
      known.changes++;
      if (transition.observedAt >= known.latest.observedAt) known.latest = transition;
    }
  }
  return [...groups.values()].sort((a, b) => severityRank(a.latest) - severityRank(b.latest));
}

function listItem(group: SlackEpisodeGroup): string {
  const { latest, changes } = group;
  const more = changes > 1 ? ` _(${changes} changes)_` : '';
  const lines = [`${statusEmoji(latest)} ${esc(describe(latest), 400)}${more}`];
  const update = latestUpdate(latest);
  if (update !== null) lines.push(quote(update, LIST_UPDATE_MAX));
  const linkLine = links(latest);
  if (linkLine !== null) lines.push(`   ${linkLine}`);
  return lines.join('\n');
}

/** A grouped batch: one message listing its episodes (≤ 20, then "…and N more"). */
export function renderEpisodeList(
  notification: Notification,
  options: SlackAppRenderOptions = {},
): { parent: SlackPayload; episodes: SlackEpisodeGroup[] } {
  const episodes = groupEpisodes(notification.transitions);
  const heading = listHeading('batch', notification);
  const shown = episodes.slice(0, BATCH_LIST_LIMIT);
  const hidden = episodes.length - shown.length;
  const changes = notification.transitions.length;
  const count = `*${episodes.length} episode${episodes.length === 1 ? '' : 's'}* · ${changes} change${changes === 1 ? '' : 's'}`;
  const blocks: SlackBlock[] = [header(heading), section(withMention(options.mention, count))];
  for (const group of shown) blocks.push(section(listItem(group)));
  if (hidden > 0) blocks.push(section(`…and ${hidden} more`));
  blocks.push(
    context(
      `Subscription: ${esc(notification.subscription, 200)} · Delivery: ${esc(notification.id, 500)}`,
    ),
  );
  const first = shown[0];
  const fallback =
    first === undefined
      ? esc(heading, 300)
      : `${esc(heading, 300)}: ${statusEmoji(first.latest)} ${esc(describe(first.latest), 2000)}`;
  return {
    parent: {
      text: limitMrkdwn(withMention(options.mention, fallback), SLACK_LIMITS.text),
      blocks,
    },
    episodes,
  };
}

/**
 * What app mode sends for `notification`: an episode's parent and reply for a single event, one
 * listing message for a batch, a plain post (webhook-mode rendering) for everything else.
 */
export function renderSlackApp(
  notification: Notification,
  state: SlackEpisodeState = { openedAt: null },
  options: SlackAppRenderOptions = {},
): SlackAppMessage {
  const [first, ...rest] = notification.transitions;
  if (notification.type === 'event' && first !== undefined && rest.length === 0) {
    return {
      kind: 'episode',
      transition: first,
      parent: renderEpisodeParent(notification, first, state, options),
      reply: renderEpisodeReply(notification, first, options),
    };
  }
  if ((notification.type === 'batch' || notification.type === 'event') && first !== undefined) {
    return { kind: 'list', ...renderEpisodeList(notification, options) };
  }
  return { kind: 'post', post: renderSlack(notification, { mention: options.mention }) };
}
