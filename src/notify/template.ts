/**
 * Message templates (docs/templates.md): per channel, and per subscription × channel, a LiquidJS
 * template may replace the title and the text of each event kind's message.
 *
 * Why LiquidJS: Liquid is a logic-light language built for untrusted authors (Shopify themes):
 * no code execution, no prototype access (`ownPropertyOnly`), static analysis of the variables a
 * template reads (so an unknown variable is refused when the template is stored, with its line),
 * and per-render limits on time and allocations.
 *
 * Escaping: every `{{ … }}` output goes through the target's escaper (Slack mrkdwn, Teams
 * Markdown, none for plain text), so upstream text stays text; the template's own literal text is
 * the operator's or the team's and keeps its light formatting (`*bold*`), but in every template —
 * from the config file or the API alike — the target's live syntax for mentions and links
 * (`<!channel>`, `<@U…>`, `<url|label>` in Slack; `[label](url)` and `<…>` in Teams) is
 * neutralised too: mentions come only from the channel's `mention`, links only from statuswatch's
 * own link lines and buttons. E-mail renders the text as plain text; its HTML part is that text
 * HTML-escaped.
 *
 * Failure: a template that fails to render (a render error, more than `TEMPLATE_RENDER_MS` of
 * work, an output over the size limits) is dropped for that delivery: the message is the
 * default rendering and a `template:failed` warning is logged.
 */
import { Liquid, type Template } from 'liquidjs';
import { z } from 'zod';
import { EVENT_KINDS, type EventKind } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import {
  changeSummary,
  describe,
  escapeSlackMrkdwn,
  eventLabel,
  headerSafe,
  incidentTitle,
  serviceLabel,
} from './text.js';
import type { Notification } from './types.js';

/** Longest template source (characters). */
export const TEMPLATE_SOURCE_MAX = 8000;
/** Render time budget of one template (ms): a loop that runs longer is stopped. */
export const TEMPLATE_RENDER_MS = 50;
/** Allocation budget of one render (LiquidJS `memoryLimit`, in characters/elements). */
export const TEMPLATE_MEMORY_LIMIT = 1_000_000;
/** Largest rendered title and text; a larger output is refused (default rendering instead). */
export const TEMPLATE_TITLE_MAX = 4 * 1024;
export const TEMPLATE_TEXT_MAX = 16 * 1024;

/** The keys of a template map: an event kind, or `default` for every kind without its own. */
export const TEMPLATE_KEYS = [...EVENT_KINDS, 'default'] as const;
export type TemplateKey = (typeof TEMPLATE_KEYS)[number];

export interface MessageTemplate {
  title?: string | undefined;
  text?: string | undefined;
}
/** A channel's `templates:` (event kind or `default` → title/text). */
export type TemplateMap = Partial<Record<TemplateKey, MessageTemplate>>;

/** What a template is rendered for: how its variables are escaped and its literal text cleaned. */
export type TemplateTarget = 'slack' | 'teams' | 'plain';

/**
 * The variables a template may read. `true`: a leaf or an open map (any property); an object:
 * the fixed properties of that variable.
 */
const VARIABLES: Record<string, true | Record<string, true>> = {
  kind: true,
  event: true,
  summary: true,
  change: true,
  time: true,
  test: true,
  subscription: true,
  channel: true,
  service: { feedId: true, name: true, url: true, officialStatusUrl: true },
  incident: { id: true, title: true, status: true, update: true, started: true },
  previous: true,
  current: true,
  links: { console: true, silence: true },
};
export const TEMPLATE_VARIABLES = Object.keys(VARIABLES);

// Private-use marks around every variable output, so the literal text can be told apart after
// rendering. Upstream text loses any such character before it is escaped.
const OPEN = '\uE000';
const CLOSE = '\uE001';
const MARKS = /[\uE000\uE001]/g;

/** A value as a template prints it. */
function shown(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function engine(): Liquid {
  const liquid = new Liquid({
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    templates: {},
    parseLimit: TEMPLATE_SOURCE_MAX * 2,
    renderLimit: TEMPLATE_RENDER_MS,
    memoryLimit: TEMPLATE_MEMORY_LIMIT,
    outputEscape: (value: unknown) => `${OPEN}${shown(value).replace(MARKS, '')}${CLOSE}`,
  });
  // No way around the escaping, and nothing read from elsewhere.
  liquid.unregisterFilter('raw');
  for (const tag of ['include', 'render', 'layout', 'block']) {
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete
    delete liquid.tags[tag];
  }
  return liquid;
}

const liquid = engine();

/** `line 2: …` from a LiquidJS error (its own `, line:2, col:5` suffix moved to the front). */
function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const match = /,? line:(\d+), col:\d+/.exec(message);
  if (match === null) return message.split('\n')[0] ?? message;
  const text = message.replace(match[0], '').split('\n')[0] ?? '';
  return `line ${match[1]}: ${text}`;
}

/** Problems of one template source ([] when it is valid): syntax, unknown tags, filters, variables. */
export function templateProblems(source: string): string[] {
  let parsed: Template[];
  try {
    parsed = liquid.parse(source);
  } catch (error) {
    return [describeError(error)];
  }
  const problems: string[] = [];
  let analysis;
  try {
    analysis = liquid.analyzeSync(parsed, { partials: false });
  } catch (error) {
    return [describeError(error)];
  }
  for (const variables of Object.values(analysis.globals)) {
    for (const variable of variables) {
      const [root, property] = variable.segments;
      const line = variable.location.row;
      const known = typeof root === 'string' ? VARIABLES[root] : undefined;
      if (known === undefined) {
        problems.push(`line ${line}: unknown variable "${String(variable)}"`);
      } else if (known !== true && property !== undefined) {
        if (typeof property !== 'string' || known[property] !== true) {
          problems.push(
            `line ${line}: unknown variable "${String(variable)}" (${String(root)} has: ${Object.keys(known).join(', ')})`,
          );
        }
      }
    }
  }
  return [...new Set(problems)];
}

const source = z
  .string({ error: 'expected a template (a string)' })
  .max(TEMPLATE_SOURCE_MAX, { error: `a template is at most ${TEMPLATE_SOURCE_MAX} characters` })
  .superRefine((text, ctx) => {
    for (const message of templateProblems(text)) ctx.addIssue({ code: 'custom', message });
  });

export const messageTemplateSchema = z.strictObject({
  title: source.optional(),
  text: source.optional(),
});

/** A channel's `templates:`: event kind (or `default`) → `{ title?, text? }`. */
export const templateMapSchema = z.partialRecord(z.enum(TEMPLATE_KEYS), messageTemplateSchema, {
  error: `expected a map of event kinds (or "default") to { title, text }`,
});

/** A subscription's `templates:`: channel name → a template map that overrides the channel's. */
export const subscriptionTemplatesSchema = z.record(
  z.string({ error: 'expected a channel name' }),
  templateMapSchema,
  { error: 'expected a map of channel names to template maps' },
);

// ---------------------------------------------------------------- rendering

/** A template's own text on Slack: no `<…>` (mention, channel, link); `>` quotes stay. */
function slackLiteral(text: string): string {
  return text.replace(/</g, '&lt;');
}

/** A template's own text on Teams: no `[label](url)` link and no `<…>`; `>` quotes stay. */
function teamsLiteral(text: string): string {
  return text.replace(/[[\]<]/g, '\\$&');
}

/**
 * Teams Markdown escaping of one variable's output (kept in sync with `escapeTeamsMarkdown` of
 * the Teams renderer, without its trimming: a template places its variables itself).
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function teamsValue(text: string): string {
  return text
    .replace(INVISIBLE, '')
    .replace(/[\\`*_{}[\]()<>#|~&]/g, '\\$&')
    .replace(/^([ ]*)([-+=])/gm, '$1\\$2')
    .replace(/^([ ]*\d+)([.)])/gm, '$1\\$2');
}

const ESCAPERS: Record<
  TemplateTarget,
  { value: (text: string) => string; literal: (text: string) => string }
> = {
  slack: { value: escapeSlackMrkdwn, literal: slackLiteral },
  teams: { value: teamsValue, literal: teamsLiteral },
  plain: { value: (text) => text, literal: (text) => text },
};

/** The marked render output → the final text: values escaped, literal text neutralised. */
function finish(marked: string, target: TemplateTarget): string {
  const { value, literal } = ESCAPERS[target];
  let out = '';
  let rest = marked;
  for (;;) {
    const open = rest.indexOf(OPEN);
    if (open === -1) break;
    const close = rest.indexOf(CLOSE, open);
    if (close === -1) break;
    out += literal(rest.slice(0, open)) + value(rest.slice(open + 1, close));
    rest = rest.slice(close + 1);
  }
  return (out + literal(rest.replace(MARKS, ''))).trim();
}

/** The variables of one single-transition notification (see docs/templates.md). */
export function templateScope(notification: Notification, transition: Transition): object {
  const { incident, service } = transition;
  const links = (notification as { links?: { console?: string; silence?: string } }).links;
  return {
    kind: transition.kind,
    event: eventLabel(transition.kind),
    summary: describe(transition),
    change: changeSummary(transition) ?? '',
    time: Number.isFinite(transition.observedAt)
      ? new Date(transition.observedAt).toISOString()
      : '',
    test: notification.type === 'test',
    subscription: notification.subscription,
    channel: notification.channel,
    service: {
      feedId: service.feedId,
      name: serviceLabel(transition),
      url: service.canonicalUrl ?? '',
      officialStatusUrl: service.officialStatusUrl ?? '',
    },
    incident:
      incident === null
        ? null
        : {
            id: incident.id,
            title: incidentTitle(transition),
            status: incident.status,
            update: incident.latestUpdate ?? '',
            started: Number.isFinite(incident.started)
              ? new Date(incident.started * 1000).toISOString()
              : '',
          },
    previous: { ...(transition.previous ?? {}) },
    current: { ...transition.current },
    links: { console: links?.console ?? '', silence: links?.silence ?? '' },
  };
}

/** What templates made of one notification: the title and/or text to use, escaped for the target. */
export interface RenderedTemplate {
  title?: string;
  text?: string;
}

export interface TemplateFailure {
  channel: string;
  kind: EventKind;
  field: 'title' | 'text';
  reason: string;
}

/** Where `template:failed` goes (the daemon's log; `render` prints it). */
export type TemplateWarn = (failure: TemplateFailure) => void;

/** The template of `kind` in `map`: its own entry, field by field over `default`. */
function pick(map: TemplateMap | undefined, kind: EventKind): MessageTemplate {
  if (map === undefined) return {};
  const own = Object.hasOwn(map, kind) ? map[kind] : undefined;
  const fallback = Object.hasOwn(map, 'default') ? map.default : undefined;
  return { title: own?.title ?? fallback?.title, text: own?.text ?? fallback?.text };
}

/** The subscription's template (field by field) over the channel's. */
export function resolveTemplate(
  kind: EventKind,
  channel: TemplateMap | undefined,
  subscription: TemplateMap | undefined,
): MessageTemplate {
  const fromChannel = pick(channel, kind);
  const fromSubscription = pick(subscription, kind);
  return {
    title: fromSubscription.title ?? fromChannel.title,
    text: fromSubscription.text ?? fromChannel.text,
  };
}

const parsedCache = new Map<string, Template[]>();

function parsed(text: string): Template[] {
  let found = parsedCache.get(text);
  if (found === undefined) {
    found = liquid.parse(text);
    if (parsedCache.size >= 500) parsedCache.clear();
    parsedCache.set(text, found);
  }
  return found;
}

/** One template rendered for `target`; throws on a render error or a limit. */
export function renderTemplateText(
  text: string,
  scope: object,
  target: TemplateTarget,
  max: number,
): string {
  const marked: unknown = liquid.renderSync(parsed(text), scope);
  const out = finish(String(marked), target);
  if (out.length > max) {
    throw new Error(`output of ${out.length} characters is over the limit of ${max}`);
  }
  return out;
}

export interface TemplateSource {
  /** The channel's `templates:`. */
  channel?: TemplateMap | undefined;
  /** The subscription's `templates:` for this channel. */
  subscription?: TemplateMap | undefined;
  warn?: TemplateWarn | undefined;
}

/**
 * The templated title and text of a notification, or null when none applies: templates shape
 * single-event (and test) messages only; batch-like ones keep the default rendering. A field
 * whose template fails is left out (the renderer's default) and `warn` is told why.
 */
export function renderTemplates(
  notification: Notification,
  target: TemplateTarget,
  templates: TemplateSource | undefined,
): RenderedTemplate | null {
  if (templates === undefined) return null;
  if (notification.type !== 'event' && notification.type !== 'test') return null;
  const [transition, ...rest] = notification.transitions;
  if (transition === undefined || rest.length > 0) return null;
  const chosen = resolveTemplate(transition.kind, templates.channel, templates.subscription);
  if (chosen.title === undefined && chosen.text === undefined) return null;
  const scope = templateScope(notification, transition);
  const out: RenderedTemplate = {};
  const fields = [
    ['title', chosen.title, TEMPLATE_TITLE_MAX],
    ['text', chosen.text, TEMPLATE_TEXT_MAX],
  ] as const;
  for (const [field, text, max] of fields) {
    if (text === undefined) continue;
    try {
      let value = renderTemplateText(text, scope, target, max);
      if (field === 'title') value = headerSafe(value);
      out[field] = value;
    } catch (error) {
      templates.warn?.({
        channel: notification.channel,
        kind: transition.kind,
        field,
        reason: describeError(error),
      });
    }
  }
  return out.title === undefined && out.text === undefined ? null : out;
}

/** What a notifier is given for templates besides its channel's own (`NotifierDeps.templates`). */
export interface NotifierTemplates {
  /** The subscription's `templates:` for this channel. */
  subscription?: ((subscription: string) => TemplateMap | undefined) | undefined;
  /** Where a template that failed is told (`template:failed`). */
  warn?: TemplateWarn | undefined;
}

/** The templates of one delivery, or undefined when neither the channel nor any subscription has any. */
export function templatesFor(
  channel: TemplateMap | undefined,
  deps: NotifierTemplates | undefined,
  subscription: string,
): TemplateSource | undefined {
  const own = deps?.subscription?.(subscription);
  if (channel === undefined && own === undefined) return undefined;
  return { channel, subscription: own, warn: deps?.warn };
}

/**
 * The templated title/text for a preview (`render`, the API's and the console's preview) and the
 * failures it met (printed with the preview).
 */
export function previewTemplates(
  notification: Notification,
  target: TemplateTarget,
  channel: TemplateMap | undefined,
): { rendered: RenderedTemplate | null; notes: string[] } {
  const notes: string[] = [];
  const rendered = renderTemplates(
    notification,
    target,
    channel === undefined
      ? undefined
      : {
          channel,
          warn: (f) =>
            notes.push(`(template ${f.kind} ${f.field} failed: ${f.reason}; default rendering)`),
        },
  );
  return { rendered, notes };
}
