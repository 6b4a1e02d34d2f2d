/**
 * A rendered message template (`../template.ts`, escaped for Teams Markdown) laid over a card: the
 * title becomes the heading, the text replaces the facts and texts between the heading (and the
 * test note) and the footer; the link buttons stay. The card is kept within the renderer's budget
 * by shortening the text. Pure.
 */
import type { RenderedTemplate } from '../template.js';
import {
  TEAMS_MAX_BODY_BYTES,
  TEAMS_RENDER_BUDGET_BYTES,
  teamsBodySize,
  teamsMeasuredSize,
  type RenderedTeams,
  type TeamsElement,
  type TeamsMessage,
} from './render.js';

const HEADING_MAX = 500;

/** `text` cut to `max` characters, never ending in half a backslash escape. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let out = text.slice(0, Math.max(0, max - 1));
  const slashes = /\\*$/.exec(out)?.[0].length ?? 0;
  if (slashes % 2 === 1) out = out.slice(0, -1);
  const last = out.charCodeAt(out.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) out = out.slice(0, -1);
  return `${out}…`;
}

function fits(body: string): boolean {
  return (
    teamsMeasuredSize(body) <= TEAMS_RENDER_BUDGET_BYTES &&
    teamsBodySize(body) <= TEAMS_MAX_BODY_BYTES
  );
}

export function applyTeamsTemplate(
  rendered: RenderedTeams,
  template: RenderedTemplate | null,
  options: { keepNote?: boolean } = {},
): RenderedTeams {
  if (template === null) return rendered;
  const [attachment] = rendered.message.attachments;
  const card = attachment.content;
  const [first, ...others] = card.body;
  if (first?.type !== 'TextBlock') return rendered;
  const heading =
    template.title !== undefined && template.title !== ''
      ? { ...first, text: cut(template.title, HEADING_MAX) }
      : first;
  const last = others[others.length - 1];
  const footer = last?.type === 'TextBlock' ? [last] : [];
  const middle = footer.length === 0 ? others : others.slice(0, -1);
  const note =
    options.keepNote === true && middle[0]?.type === 'TextBlock' && middle[0].isSubtle === true
      ? [middle[0]]
      : [];
  const build = (text: string | null): RenderedTeams => {
    const body: TeamsElement[] =
      text === null
        ? [heading, ...middle, ...footer]
        : [heading, ...note, { type: 'TextBlock', text, wrap: true }, ...footer];
    const message: TeamsMessage = {
      ...rendered.message,
      attachments: [{ ...attachment, content: { ...card, body } }],
    };
    return { message, body: JSON.stringify(message) };
  };
  const text = template.text !== undefined && template.text !== '' ? template.text : null;
  if (text === null) return build(null);
  let max = text.length;
  for (;;) {
    const out = build(cut(text, max));
    if (fits(out.body) || max <= 100) return out;
    max = Math.floor(max * 0.7);
  }
}
