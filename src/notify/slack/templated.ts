/**
 * A rendered message template (`../template.ts`) laid over a Slack payload: the title becomes the
 * header and the fallback text, the text replaces the message's sections (the test note, the
 * channel's mention, the context line and the living message's notes and buttons stay). Pure.
 * Both are already escaped for mrkdwn.
 */
import type { Transition } from '../../diff/transition.js';
import { renderParentTemplate, type RenderedTemplate, type TemplateSource } from '../template.js';
import type { Notification } from '../types.js';
import { episodeHeading, isClosing } from './app-render.js';
import {
  limitMrkdwn,
  section,
  SLACK_LIMITS,
  withMention,
  type SlackBlock,
  type SlackPayload,
} from './render.js';

export interface SlackTemplateOptions {
  /** The channel's mention: kept where the default payload carried it. */
  mention?: string | undefined;
  /** Keep the first section (the test notification's note). */
  keepNote?: boolean;
}

export function applySlackTemplate(
  payload: SlackPayload,
  rendered: RenderedTemplate | null,
  options: SlackTemplateOptions = {},
): SlackPayload {
  if (rendered === null) return payload;
  const mention = options.mention?.trim();
  const mentioned = mention !== undefined && mention !== '' && payload.text.startsWith(mention);
  const first = payload.blocks[0];
  const header = first?.type === 'header' ? first : undefined;
  const body = header === undefined ? payload.blocks : payload.blocks.slice(1);
  // The tail that stays: the context line, and app mode's notes and buttons after it.
  let cut = body.length;
  while (cut > 0 && body[cut - 1]?.type !== 'section' && body[cut - 1]?.type !== 'header') cut--;
  const tail = body.slice(cut);
  const middle = body.slice(0, cut);
  let text = payload.text;
  let headerBlock: SlackBlock | undefined = header;
  if (rendered.title !== undefined && rendered.title !== '') {
    headerBlock = {
      type: 'header',
      text: {
        type: 'plain_text',
        text: limitMrkdwn(rendered.title, SLACK_LIMITS.headerText),
        emoji: false,
      },
    };
    text = limitMrkdwn(
      mentioned ? withMention(mention, rendered.title) : rendered.title,
      SLACK_LIMITS.text,
    );
  }
  let sections = middle;
  if (rendered.text !== undefined && rendered.text !== '') {
    const note = options.keepNote === true && middle[0]?.type === 'section' ? [middle[0]] : [];
    sections = [...note, section(mentioned ? withMention(mention, rendered.text) : rendered.text)];
  }
  return {
    text,
    blocks: [...(headerBlock === undefined ? [] : [headerBlock]), ...sections, ...tail],
  };
}

/**
 * The Slack app's living message of an episode (`renderEpisodeParent`'s payload) with the
 * `parent` template laid over it: the title becomes the header, the text replaces the state line
 * and the event's sections; the context line, the notes and the buttons stay.
 */
export function applySlackParentTemplate(
  payload: SlackPayload,
  notification: Notification,
  transition: Transition,
  openedAt: number | null,
  templates: TemplateSource | undefined,
  mention: string | undefined,
): SlackPayload {
  const rendered = renderParentTemplate(
    notification,
    transition,
    {
      state: isClosing(transition) ? 'resolved' : 'open',
      openedAt,
      heading: episodeHeading(transition),
    },
    templates,
  );
  return applySlackTemplate(payload, rendered, { mention });
}
