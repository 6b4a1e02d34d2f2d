/**
 * A rendered message template (`../template.ts`) laid over a Slack payload: the title becomes the
 * header and the fallback text, the text replaces the message's sections (the test note, the
 * channel's mention and the context line stay). Pure. Both are already escaped for mrkdwn.
 */
import type { RenderedTemplate } from '../template.js';
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
  const lastBlock = body[body.length - 1];
  const context = lastBlock?.type === 'context' ? lastBlock : undefined;
  const middle = context === undefined ? body : body.slice(0, -1);
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
    blocks: [
      ...(headerBlock === undefined ? [] : [headerBlock]),
      ...sections,
      ...(context === undefined ? [] : [context]),
    ],
  };
}
