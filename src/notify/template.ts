/**
 * Message templates (docs/templates.md): per channel, and per subscription × channel, a LiquidJS
 * template may replace the title and the text of each event kind's message, of each batch-like
 * message (`batch`, `reminder`, `catchup`, `digest`) and of the Slack app's living message
 * (`parent`).
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
import { EVENT_KINDS } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import { chronological } from './order.js';
import {
  changeSummary,
  countLine,
  describe,
  escapeSlackMrkdwn,
  eventLabel,
  headerSafe,
  incidentTitle,
  listHeading,
  listItem,
  listOrder,
  serviceLabel,
  summaryLines,
  type ListType,
} from './text.js';
import type { Notification } from './types.js';

/** Longest template source (characters). */
export const TEMPLATE_SOURCE_MAX = 8000;
/**
 * Render time budget of one template (ms, wall clock): a loop that runs longer is stopped (and
 * tried once more, see `renderTemplateText`).
 */
export const TEMPLATE_RENDER_MS = 50;
/** Allocation budget of one render (LiquidJS `memoryLimit`, in characters/elements). */
export const TEMPLATE_MEMORY_LIMIT = 1_000_000;
/** Largest rendered title and text; a larger output is refused (default rendering instead). */
export const TEMPLATE_TITLE_MAX = 4 * 1024;
export const TEMPLATE_TEXT_MAX = 16 * 1024;

/** How many transitions a batch-like template sees in `events` (`count` is the whole number). */
export const TEMPLATE_LIST_ITEMS = 100;

/** The keys of the batch-like messages: one per notification type rendered as a list. */
export const LIST_TEMPLATE_KEYS = ['batch', 'reminder', 'catchup', 'digest'] as const;
/** The key of the Slack app's living message of an episode (app mode only). */
export const PARENT_TEMPLATE_KEY = 'parent';

/**
 * The keys of a template map: an event kind, `default` for every kind without its own, the
 * batch-like messages, and (Slack app channels only, see `templateMapSchema`) `parent`.
 */
export const TEMPLATE_KEYS = [
  ...EVENT_KINDS,
  'default',
  ...LIST_TEMPLATE_KEYS,
  PARENT_TEMPLATE_KEY,
] as const;
export type TemplateKey = (typeof TEMPLATE_KEYS)[number];

/** Which variables a template may read: a single event's, a list's, or a living message's. */
export type TemplateScopeKind = 'event' | 'list' | 'parent';

export function scopeKindOf(key: TemplateKey): TemplateScopeKind {
  if (key === PARENT_TEMPLATE_KEY) return 'parent';
  return (LIST_TEMPLATE_KEYS as readonly string[]).includes(key) ? 'list' : 'event';
}

export interface MessageTemplate {
  title?: string | undefined;
  text?: string | undefined;
}
/** A channel's `templates:` (event kind or `default` → title/text). */
export type TemplateMap = { [K in TemplateKey]?: MessageTemplate | undefined };

/** What a template is rendered for: how its variables are escaped and its literal text cleaned. */
export type TemplateTarget = 'slack' | 'teams' | 'plain';

type Variables = Record<string, true | Record<string, true>>;

/**
 * The variables a template may read. `true`: a leaf or an open map (any property); an object:
 * the fixed properties of that variable.
 */
const EVENT_VARIABLES: Variables = {
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

/**
 * A batch-like message's variables. `events` is a list (its items have a single event's
 * variables and `line`; Liquid's static analysis does not follow a loop variable, so an item's
 * properties are not checked) and `lines` the digest's summary lines.
 */
const LIST_VARIABLES: Variables = {
  kind: true,
  event: true,
  title: true,
  summary: true,
  count: true,
  lines: true,
  events: true,
  time: true,
  test: true,
  subscription: true,
  channel: true,
  links: { console: true, silence: true },
};

/** The living message's variables: the episode's latest event, and the episode. */
const PARENT_VARIABLES: Variables = {
  ...EVENT_VARIABLES,
  episode: { state: true, opened: true, heading: true },
};

const VARIABLES: Record<TemplateScopeKind, Variables> = {
  event: EVENT_VARIABLES,
  list: LIST_VARIABLES,
  parent: PARENT_VARIABLES,
};
export const TEMPLATE_VARIABLES = Object.keys(EVENT_VARIABLES);

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
    // The `date` filter's day and month names, in English as the rest of a message. Without it
    // LiquidJS asks `Intl.DateTimeFormat` for the process's locale when the engine is built,
    // which maps about 5 MB of Node.js's ICU data into every daemon, templates or not.
    locale: 'en-US',
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

/**
 * Problems of one template source ([] when it is valid): syntax, unknown tags, filters, and
 * variables unknown to the template's scope (an event kind's, a batch-like message's, `parent`'s).
 */
export function templateProblems(source: string, scope: TemplateScopeKind = 'event'): string[] {
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
  for (const found of Object.values(analysis.globals)) {
    for (const variable of found) {
      const [root, property] = variable.segments;
      const line = variable.location.row;
      const variables = VARIABLES[scope];
      const known =
        typeof root === 'string' && Object.hasOwn(variables, root) ? variables[root] : undefined;
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

const sourceSchema = z
  .string({ error: 'expected a template (a string)' })
  .max(TEMPLATE_SOURCE_MAX, { error: `a template is at most ${TEMPLATE_SOURCE_MAX} characters` });

/** `{ title?, text? }`; what each may read depends on its key (checked by the map's schema). */
export const messageTemplateSchema = z.strictObject({
  title: sourceSchema.optional(),
  text: sourceSchema.optional(),
});

/**
 * A template map: a record over `keys` (so the JSON Schema of the Helm chart stays one
 * `propertyNames` list), each template checked against the variables of its key's scope.
 */
function mapSchema(keys: readonly [TemplateKey, ...TemplateKey[]]) {
  const names = `event kinds, "default", ${LIST_TEMPLATE_KEYS.map((k) => `"${k}"`).join(', ')}${keys.includes(PARENT_TEMPLATE_KEY) ? ', "parent"' : ''}`;
  return z
    .partialRecord(z.enum(keys), messageTemplateSchema, {
      error: `expected a map of template keys (${names}) to { title, text }`,
    })
    .superRefine((map, ctx) => {
      for (const [key, template] of Object.entries(map) as [TemplateKey, MessageTemplate][]) {
        for (const field of ['title', 'text'] as const) {
          const text = template[field];
          if (text === undefined) continue;
          for (const message of templateProblems(text, scopeKindOf(key))) {
            ctx.addIssue({ code: 'custom', path: [key, field], message });
          }
        }
      }
    });
}

/** A channel's `templates:`: template key → `{ title?, text? }` (no `parent`: see below). */
export const templateMapSchema = mapSchema([...EVENT_KINDS, 'default', ...LIST_TEMPLATE_KEYS]);

/**
 * A Slack channel's `templates:`: `parent` too (the Slack kind refuses it without a bot token:
 * only app mode has a living message).
 */
export const slackTemplateMapSchema = mapSchema(TEMPLATE_KEYS);

/**
 * A subscription's `templates:`: channel name → a template map that overrides the channel's. A
 * name must be one of the subscription's channels, and `parent` needs a Slack app channel (both
 * checked where the channels are known: `config/schema.ts`, the API's store).
 */
export const subscriptionTemplatesSchema = z.record(
  z.string({ error: 'expected a channel name' }),
  slackTemplateMapSchema,
  { error: 'expected a map of channel names to template maps' },
);

/** Why `parent` is refused on a channel that is not a Slack app. */
export const PARENT_NEEDS_SLACK_APP =
  'only for a Slack app channel (one with botToken): only app mode has a living message to shape';

/**
 * The channel names of a subscription's raw `templates` that are not among its raw `channels`
 * (each with the message to report at `templates.<name>`); [] when either is not yet valid.
 */
export function unknownTemplateChannels(
  templates: unknown,
  channels: unknown,
): { channel: string; message: string }[] {
  if (typeof templates !== 'object' || templates === null || Array.isArray(templates)) return [];
  if (!Array.isArray(channels)) return [];
  const own = channels.filter((c): c is string => typeof c === 'string');
  return Object.keys(templates)
    .filter((name) => !own.includes(name))
    .map((name) => ({
      channel: name,
      message: `not a channel of this subscription (its channels: ${own.join(', ') || 'none'}): its templates would never be used`,
    }));
}

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

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : '';
}

/** One transition's variables (a single event's, and each item of a list's `events`). */
function transitionVariables(transition: Transition): Record<string, unknown> {
  const { incident, service } = transition;
  return {
    kind: transition.kind,
    event: eventLabel(transition.kind),
    summary: describe(transition),
    change: changeSummary(transition) ?? '',
    time: iso(transition.observedAt),
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
            started: iso(incident.started * 1000),
          },
    previous: { ...(transition.previous ?? {}) },
    current: { ...transition.current },
  };
}

function linkVariables(notification: Notification): { console: string; silence: string } {
  const links = notification.links;
  return { console: links?.console ?? '', silence: links?.silence ?? '' };
}

/** The variables of one single-transition notification (see docs/templates.md). */
export function templateScope(notification: Notification, transition: Transition): object {
  return {
    ...transitionVariables(transition),
    test: notification.type === 'test',
    subscription: notification.subscription,
    channel: notification.channel,
    links: linkVariables(notification),
  };
}

/** What a batch-like message is called in `event`. */
const LIST_LABELS: Record<ListType, string> = {
  batch: 'Batch',
  reminder: 'Reminder',
  catchup: 'Quiet hours catch-up',
  digest: 'Digest',
};

/**
 * The variables of a batch-like notification: its default heading and count line, the digest's
 * summary lines, and its transitions in the order the default message lists them (at most
 * `TEMPLATE_LIST_ITEMS`), each with a single event's variables and its default list `line`.
 */
export function listScope(notification: Notification, type: ListType): object {
  const ordered = listOrder(type, notification.transitions);
  return {
    kind: type,
    event: LIST_LABELS[type],
    title: listHeading(type, notification),
    summary: countLine(type, notification),
    count: ordered.length,
    lines: summaryLines(notification),
    events: ordered.slice(0, TEMPLATE_LIST_ITEMS).map((transition) => ({
      ...transitionVariables(transition),
      line: listItem(type, transition, notification.createdAt),
    })),
    time: iso(notification.createdAt),
    test: false,
    subscription: notification.subscription,
    channel: notification.channel,
    links: linkVariables(notification),
  };
}

/** What the living message of an episode shows besides its latest event (`parent`'s `episode`). */
export interface EpisodeVariables {
  /** `open`, or `resolved` once the episode's closing arrived. */
  state: 'open' | 'resolved';
  /** When the episode's first notified transition was observed (Unix ms), null when unknown. */
  openedAt: number | null;
  /** The default heading (status emoji and subject). */
  heading: string;
}

/** The variables of the Slack app's living message: its latest event's, and `episode`. */
export function parentScope(
  notification: Notification,
  transition: Transition,
  episode: EpisodeVariables,
): object {
  return {
    ...templateScope(notification, transition),
    episode: {
      state: episode.state,
      opened: episode.openedAt === null ? '' : iso(episode.openedAt),
      heading: episode.heading,
    },
  };
}

/** What templates made of one notification: the title and/or text to use, escaped for the target. */
export interface RenderedTemplate {
  title?: string;
  text?: string;
}

export interface TemplateFailure {
  channel: string;
  /** The template's key: an event kind, a batch-like message's key, or `parent`. */
  kind: TemplateKey;
  field: 'title' | 'text';
  reason: string;
}

/** Where `template:failed` goes (the daemon's log; `render` prints it). */
export type TemplateWarn = (failure: TemplateFailure) => void;

/**
 * The template of `key` in `map`: its own entry, field by field over `default` for an event kind
 * (the batch-like messages and `parent` have other variables: `default` is not theirs).
 */
function pick(map: TemplateMap | undefined, key: TemplateKey): MessageTemplate {
  if (map === undefined) return {};
  const own = Object.hasOwn(map, key) ? map[key] : undefined;
  const fallback =
    scopeKindOf(key) === 'event' && key !== 'default' && Object.hasOwn(map, 'default')
      ? map.default
      : undefined;
  return { title: own?.title ?? fallback?.title, text: own?.text ?? fallback?.text };
}

/** The subscription's template (field by field) over the channel's. */
export function resolveTemplate(
  key: TemplateKey,
  channel: TemplateMap | undefined,
  subscription: TemplateMap | undefined,
): MessageTemplate {
  const fromChannel = pick(channel, key);
  const fromSubscription = pick(subscription, key);
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
  let marked: unknown;
  try {
    marked = liquid.renderSync(parsed(text), scope);
  } catch (error) {
    // LiquidJS's time limit is a wall-clock deadline: on a busy machine (or across a GC pause) a
    // short template can miss it. One more try tells that apart from a template that loops; a
    // loop costs two budgets, still bounded.
    if (!(error instanceof Error) || !error.message.includes('render limit exceeded')) throw error;
    marked = liquid.renderSync(parsed(text), scope);
  }
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

/** The template key of a notification and the variables its template sees. */
function keyAndScope(notification: Notification): { key: TemplateKey; scope: () => object } {
  const [first, ...rest] = notification.transitions;
  switch (notification.type) {
    case 'event':
    case 'test':
      if (first !== undefined && rest.length === 0) {
        return { key: first.kind, scope: () => templateScope(notification, first) };
      }
      // An `event` of several transitions is rendered as a batch by every channel.
      return { key: 'batch', scope: () => listScope(notification, 'batch') };
    case 'batch':
    case 'reminder':
    case 'catchup':
    case 'digest': {
      const type = notification.type;
      return { key: type, scope: () => listScope(notification, type) };
    }
  }
}

/** Renders the chosen title and text; a field that fails is left out and `warn` is told why. */
function renderChosen(
  chosen: MessageTemplate,
  scope: object,
  target: TemplateTarget,
  key: TemplateKey,
  channel: string,
  warn: TemplateWarn | undefined,
): RenderedTemplate | null {
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
      warn?.({ channel, kind: key, field, reason: describeError(error) });
    }
  }
  return out.title === undefined && out.text === undefined ? null : out;
}

/**
 * The templated title and text of a notification, or null when none applies: a single event (or
 * test) takes its kind's template (over `default`), a batch-like notification its type's
 * (`batch`, `reminder`, `catchup`, `digest`). A field whose template fails is left out (the
 * renderer's default) and `warn` is told why.
 */
export function renderTemplates(
  notification: Notification,
  target: TemplateTarget,
  templates: TemplateSource | undefined,
): RenderedTemplate | null {
  if (templates === undefined) return null;
  const { key, scope } = keyAndScope(notification);
  const chosen = resolveTemplate(key, templates.channel, templates.subscription);
  if (chosen.title === undefined && chosen.text === undefined) return null;
  return renderChosen(chosen, scope(), target, key, notification.channel, templates.warn);
}

/**
 * The templated title and text of the Slack app's living message of an episode (`parent`), or
 * null when none applies.
 */
export function renderParentTemplate(
  notification: Notification,
  transition: Transition,
  episode: EpisodeVariables,
  templates: TemplateSource | undefined,
): RenderedTemplate | null {
  if (templates === undefined) return null;
  const chosen = resolveTemplate(PARENT_TEMPLATE_KEY, templates.channel, templates.subscription);
  if (chosen.title === undefined && chosen.text === undefined) return null;
  const scope = parentScope(notification, transition, episode);
  return renderChosen(
    chosen,
    scope,
    'slack',
    PARENT_TEMPLATE_KEY,
    notification.channel,
    templates.warn,
  );
}

/**
 * The single-event view of one transition of a batch-like notification: what a channel that
 * sends one alert per transition (PagerDuty, Opsgenie) templates with the transition's kind.
 */
export function singleEvent(notification: Notification, transition: Transition): Notification {
  return { ...notification, type: 'event', transitions: [transition] };
}

/**
 * The requests of a notification with its templates, for a channel that sends one alert (or
 * update) per transition (PagerDuty, Opsgenie): an event, a batch and a catch-up are rendered a
 * transition at a time, in the renderer's `order`, each with its own kind's template (the `batch`
 * and `catchup` templates have no message to shape there); a digest takes `digest`, a test its
 * sample's kind (the first request only). `apply` lays a rendered template over requests.
 */
export function templatedPerTransition<R>(
  notification: Notification,
  templates: TemplateSource | undefined,
  channel: {
    render: (notification: Notification) => R[];
    apply: (
      requests: R[],
      template: RenderedTemplate | null,
      options?: { firstOnly?: boolean },
    ) => R[];
  },
): R[] {
  const { render, apply } = channel;
  const perTransition =
    notification.type === 'event' ||
    notification.type === 'batch' ||
    notification.type === 'catchup';
  if (templates !== undefined && perTransition) {
    // The same requests, in the same order, as the renderer makes of the whole notification.
    return chronological(notification.transitions).flatMap((transition) => {
      const one = singleEvent(notification, transition);
      return apply(render(one), renderTemplates(one, 'plain', templates));
    });
  }
  return apply(render(notification), renderTemplates(notification, 'plain', templates), {
    firstOnly: notification.type === 'test',
  });
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
  const { source, notes } = previewSource(channel);
  return { rendered: renderTemplates(notification, target, source), notes };
}

/** A channel's templates for a preview, its failures collected as notes. */
export function previewSource(channel: TemplateMap | undefined): {
  source: TemplateSource | undefined;
  notes: string[];
} {
  const notes: string[] = [];
  const source =
    channel === undefined
      ? undefined
      : {
          channel,
          warn: (f: TemplateFailure) =>
            notes.push(`(template ${f.kind} ${f.field} failed: ${f.reason}; default rendering)`),
        };
  return { source, notes };
}
