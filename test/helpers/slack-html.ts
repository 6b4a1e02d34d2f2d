/**
 * Block Kit → a static HTML page that looks like a Slack message, for the docs' screenshots of
 * the living message (test/slack-screenshot.test.ts). An approximation of Slack's client, not a
 * copy: only what our renderers emit (header, section and context mrkdwn, divider, buttons).
 *
 * mrkdwn is read as Slack reads it: `<…>` is a control sequence (link, mention), `&amp;` `&lt;`
 * `&gt;` are entities, everything else is text. Our renderers escape upstream text, so upstream
 * `<!channel>` arrives as `&lt;!channel&gt;` and must come out as visible, inert text. Every piece
 * of text is HTML-escaped here; links are kept only for http(s) URLs.
 */
import { escapeHtml } from '../../src/notify/text.js';
import type { SlackBlock, SlackPayload } from '../../src/notify/slack/render.js';

/** How the page names the people and the app (Slack shows names, not ids). */
export interface SlackHtmlOptions {
  /** User id → display name for `<@U…>` mentions; unknown ids show as `@U…`. */
  users?: Readonly<Record<string, string>>;
  /** The sender shown above the message. */
  app?: string;
  /** The time shown next to the sender (already formatted). */
  time?: string;
}

/**
 * The emoji our renderers and notes use, drawn with CSS: the machines that make the screenshots
 * have no colour emoji font, and a missing glyph would show as an empty box.
 */
const EMOJI: Readonly<Record<string, string>> = {
  '🔴': 'red',
  '🟠': 'orange',
  '🟡': 'yellow',
  '✅': 'check',
  ':white_check_mark:': 'check',
  ':no_bell:': 'muted',
};

function decodeEntities(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Escaped text with the known emoji (characters and `:shortcodes:`) drawn as spans. */
function textHtml(text: string): string {
  return escapeHtml(text).replace(/🔴|🟠|🟡|✅|:[a-z0-9_+-]+:/gu, (found) => {
    const kind = EMOJI[found];
    return kind === undefined
      ? found
      : `<span class="emoji ${kind}" role="img" aria-label="${kind}"></span>`;
  });
}

/** One control sequence `<…>` (without the brackets) as HTML. */
function controlHtml(inner: string, options: SlackHtmlOptions): string {
  const user = /^@([UW][A-Z0-9]+)(?:\|.*)?$/.exec(inner);
  if (user !== null) {
    const id = user[1] ?? '';
    return `<span class="mention">@${textHtml(options.users?.[id] ?? id)}</span>`;
  }
  const special = /^!(here|channel|everyone)(?:\|.*)?$/.exec(inner);
  if (special !== null) return `<span class="mention broadcast">@${special[1] ?? ''}</span>`;
  const link = /^(https?:\/\/[^|\s]+)(?:\|(.*))?$/s.exec(inner);
  if (link !== null) {
    const url = decodeEntities(link[1] ?? '');
    const label = decodeEntities(link[2] ?? link[1] ?? '');
    return `<a href="${escapeHtml(url)}">${textHtml(label)}</a>`;
  }
  // Anything else Slack does not turn into a link or mention: shown as written.
  return textHtml(`<${decodeEntities(inner)}>`);
}

/** Slack's inline formatting on already-escaped HTML text (markers are not HTML-special). */
function formatInline(html: string): string {
  const edge = '(^|[\\s(>])';
  const end = '(?=$|[\\s).,:;!?<])';
  return html
    .replace(new RegExp(`${edge}\\*([^*\\n]+?)\\*${end}`, 'g'), '$1<b>$2</b>')
    .replace(new RegExp(`${edge}_([^_\\n]+?)_${end}`, 'g'), '$1<i>$2</i>')
    .replace(new RegExp(`${edge}~([^~\\n]+?)~${end}`, 'g'), '$1<s>$2</s>');
}

/** One mrkdwn line: code spans and control sequences kept whole, the rest escaped and formatted. */
function lineHtml(line: string, options: SlackHtmlOptions): string {
  const kept: string[] = [];
  const hold = (html: string): string => `\u0000${String(kept.push(html) - 1)}\u0000`;
  // eslint-disable-next-line no-control-regex
  const clean = line.replace(/\u0000/g, '');
  const marked = clean
    .split(/(`[^`\n]+`|<[^<>]*>)/)
    .map((part, i) => {
      if (i % 2 === 0) return textHtml(decodeEntities(part));
      if (part.startsWith('`'))
        return hold(`<code>${textHtml(decodeEntities(part.slice(1, -1)))}</code>`);
      return hold(controlHtml(part.slice(1, -1), options));
    })
    .join('');
  // eslint-disable-next-line no-control-regex
  const placeholder = /\u0000(\d+)\u0000/g;
  return formatInline(marked).replace(placeholder, (_, n: string) => kept[Number(n)] ?? '');
}

/** mrkdwn text as HTML: lines starting with a raw `>` are a quote (upstream `>` is `&gt;`). */
export function mrkdwnToHtml(text: string, options: SlackHtmlOptions = {}): string {
  const out: string[] = [];
  let quote: string[] = [];
  const flush = (): void => {
    if (quote.length > 0) out.push(`<blockquote>${quote.join('<br>')}</blockquote>`);
    quote = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('>')) {
      quote.push(lineHtml(line.slice(1), options));
      continue;
    }
    flush();
    out.push(`${lineHtml(line, options)}<br>`);
  }
  flush();
  return out.join('').replace(/<br>$/, '');
}

function blockHtml(block: SlackBlock, options: SlackHtmlOptions): string {
  switch (block.type) {
    case 'header':
      return `<div class="header">${textHtml(decodeEntities(block.text.text))}</div>`;
    case 'section':
      return `<div class="section">${mrkdwnToHtml(block.text.text, options)}</div>`;
    case 'context':
      return `<div class="context">${block.elements.map((e) => `<span>${mrkdwnToHtml(e.text, options)}</span>`).join('')}</div>`;
    case 'divider':
      return '<hr>';
    case 'actions':
      return `<div class="actions">${block.elements
        .map(
          (b) =>
            `<button type="button"${b.style === undefined ? '' : ` class="${b.style}"`}>${textHtml(decodeEntities(b.text.text))}</button>`,
        )
        .join('')}</div>`;
  }
}

const CSS = `
body { margin: 0; background: #fff; color: #1d1c1d; font: 15px/1.46668 Lato, "Helvetica Neue", "Liberation Sans", Arial, sans-serif; }
.message { display: flex; gap: 8px; padding: 16px 20px; }
.avatar { flex: none; width: 36px; height: 36px; border-radius: 6px; background: #4a154b; color: #fff; font-weight: 700; font-size: 13px; display: flex; align-items: center; justify-content: center; }
.body { min-width: 0; flex: 1; }
.who b { font-weight: 900; }
.who .badge { font-size: 10px; font-weight: 700; color: #616061; background: rgba(29,28,29,.13); border-radius: 2px; padding: 1px 3px; margin: 0 4px; vertical-align: 1px; }
.who time { font-size: 12px; color: #616061; }
.header { font-size: 18px; font-weight: 900; line-height: 1.33; margin: 6px 0 4px; }
.section { margin: 4px 0; overflow-wrap: anywhere; }
.context { font-size: 12px; color: #616061; margin: 4px 0; overflow-wrap: anywhere; }
hr { border: 0; border-top: 1px solid #ddd; margin: 8px 0; }
blockquote { margin: 2px 0; padding-left: 12px; border-left: 4px solid #ddd; }
a { color: #1264a3; text-decoration: none; }
code { color: #e01e5a; background: rgba(29,28,29,.04); border: 1px solid rgba(29,28,29,.13); border-radius: 3px; padding: 1px 3px; font: 12px Monaco, "DejaVu Sans Mono", monospace; }
.mention { color: #1264a3; background: rgba(29,155,209,.1); border-radius: 3px; padding: 0 2px; }
.mention.broadcast { color: #1d1c1d; background: rgba(242,199,68,.4); }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0 4px; }
button { font: 700 13px Lato, "Helvetica Neue", "Liberation Sans", Arial, sans-serif; height: 28px; padding: 0 12px; border-radius: 4px; border: 1px solid rgba(29,28,29,.3); background: #fff; color: #1d1c1d; }
button.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
button.danger { background: #e01e5a; border-color: #e01e5a; color: #fff; }
.emoji { display: inline-block; width: 16px; height: 16px; margin: 0 2px; vertical-align: -2px; border-radius: 50%; }
.header .emoji { width: 18px; height: 18px; vertical-align: -2px; }
.emoji.red { background: #dd2e44; }
.emoji.orange { background: #f4900c; }
.emoji.yellow { background: #fdcb58; }
.emoji.muted { background: #99aab5; }
.emoji.check { border-radius: 3px; background: #77b255; position: relative; }
.emoji.check::after { content: ""; position: absolute; left: 5px; top: 2px; width: 4px; height: 8px; border: solid #fff; border-width: 0 2px 2px 0; transform: rotate(45deg); }
`;

/** A whole page: one message from the app, with its blocks (the fallback `text` is not shown). */
export function slackMessageHtml(payload: SlackPayload, options: SlackHtmlOptions = {}): string {
  const app = options.app ?? 'statuswatch';
  const blocks = payload.blocks.map((b) => blockHtml(b, options)).join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${textHtml(app)}</title><style>${CSS}</style></head>
<body><div class="message"><div class="avatar" aria-hidden="true">SW</div><div class="body">
<div class="who"><b>${textHtml(app)}</b><span class="badge">APP</span><time>${textHtml(options.time ?? '')}</time></div>
${blocks}
</div></div></body></html>
`;
}
