/**
 * The config file schema (docs/configuration.md). Strict objects everywhere: an unknown key
 * is an error, because a typo must not silently disable alerting. Durations come out in
 * milliseconds.
 */
import { daemonConfigSchema } from '../runtime/config.js';
import { isIP } from 'node:net';
import { z } from 'zod';
import { toError } from '../errors.js';
import type { EmailChannelConfig } from '../notify/email/config.js';
import type { SlackChannelConfig } from '../notify/slack/config.js';
import type { WebhookChannelConfig } from '../notify/webhook/config.js';
import type { ChannelSchema } from '../notify/kind.js';
import {
  CHANNEL_TYPES,
  channelKindList,
  type ChannelConfig,
  type ChannelConfigInput,
  type ChannelType,
} from '../notify/kinds.js';
import { consoleConfigSchema } from '../console/config.js';
import { quotasConfigSchema } from '../api/quota-config.js';
import { egressConfigSchema } from '../egress/config.js';
import {
  PARENT_NEEDS_SLACK_APP,
  subscriptionTemplatesSchema,
  unknownTemplateChannels,
} from '../notify/template.js';
import { CRON_HINT, parseCron } from './cron.js';
import { isPlainObject } from './env.js';
import { EVENT_KINDS } from './events.js';
import {
  durationField,
  expected,
  httpUrlField,
  intField,
  nonEmptyString,
  numberAbove,
  optionalSecretField,
  timeZoneField,
} from './fields.js';
import { formatPath } from './path.js';
import { CLUSTER_DEFAULT_PORT, parseRedisEndpoint, SENTINEL_DEFAULT_PORT } from '../redis.js';
import { parseQuietWindow, QUIET_WINDOW_HINT } from './quiet-hours.js';

export type { EmailChannelConfig, SlackChannelConfig, WebhookChannelConfig };

export { CHANNEL_TYPES, type ChannelConfig, type ChannelType };

/** Channel and subscription names end up in delivery job ids (`transition:subscription:channel`). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const NAME_HINT = 'letters, digits, "-" and "_" (at most 64, starting with a letter or digit)';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const DEFAULT_POLL_MS = {
  status: 60 * SECOND,
  incidents: 60 * SECOND,
  sla: 15 * MINUTE,
  scores: 15 * MINUTE,
} as const;

function isRedisUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
}

const eventKindSchema = z.enum(EVENT_KINDS, {
  error: `unknown event kind; expected one of: ${EVENT_KINDS.join(', ')}`,
});

const RPM_HINT = 'expected "auto" or a positive integer';

const upstreamSchema = z.strictObject({
  /** The API's {base_url} (without `/api/v1`); a trailing slash is removed. */
  baseUrl: httpUrlField().transform((url) => url.replace(/\/+$/, '')),
  apiKey: optionalSecretField(),
  /** `auto` = 30 without an API key, 120 with one. */
  requestsPerMinute: z
    .preprocess(
      (value) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value),
      z
        .union([z.literal('auto'), z.number()], { error: RPM_HINT })
        .refine((value) => value === 'auto' || (Number.isInteger(value) && value >= 1), {
          error: RPM_HINT,
        }),
    )
    .default('auto'),
  timeoutMs: intField(1, 600_000).default(10_000),
});

const REDIS_PREFIX_HINT = 'expected letters, digits, "_", "-" and ":" only';
const CLUSTER_SEED_HINT = 'a redis:// or rediss:// URL or host:port';
const SENTINEL_HINT = 'host:port or a redis:// URL';

/** One Redis (`url`): today's form. */
export interface RedisUrlConfig {
  /** `redis://[user:password@]host:port[/db]` or `rediss://`; the password is a secret. */
  url: string;
  prefix: string;
  cluster?: never;
  sentinels?: never;
}

/** A Redis Cluster: seed nodes (any nodes of it; the rest are discovered). */
export interface RedisClusterConfig {
  /** `redis://[user:password@]host:port`, `rediss://…` or `host:port`; credentials may be in the URLs. */
  cluster: string[];
  prefix: string;
  username?: string;
  /** A secret. */
  password?: string;
  url?: never;
  sentinels?: never;
}

/** The master that Redis Sentinels name. */
export interface RedisSentinelConfig {
  /** `host:port` or `redis://host:port` (26379 when a URL has no port). */
  sentinels: string[];
  /** The master's name (`sentinel monitor <name> …`). */
  name: string;
  prefix: string;
  /** The master's and replicas' password; a secret. */
  password?: string;
  /** The sentinels' own password (their `requirepass`); a secret. */
  sentinelPassword?: string;
  url?: never;
  cluster?: never;
}

/** The `redis` section: exactly one of `url`, `cluster` or `sentinels`. */
export type RedisSectionConfig = RedisUrlConfig | RedisClusterConfig | RedisSentinelConfig;

/** A list; a `${VAR}` gives a string, so a comma-separated string is a list too. */
function addressList(hint: string, isValid: (text: string) => boolean) {
  return z.preprocess(
    (value) =>
      typeof value === 'string'
        ? value
            .split(',')
            .map((item) => item.trim())
            .filter((item) => item !== '')
        : value,
    z
      .array(z.string({ error: expected(hint) }).refine(isValid, { error: `expected ${hint}` }), {
        error: expected('a list of addresses'),
      })
      .min(1, { error: 'expected at least one address' }),
  );
}

const isClusterSeed = (text: string): boolean =>
  parseRedisEndpoint(text, CLUSTER_DEFAULT_PORT) !== null;
const isSentinel = (text: string): boolean =>
  parseRedisEndpoint(text, SENTINEL_DEFAULT_PORT) !== null;

/** Keys that belong to one form only, and which. */
const FORM_ONLY_KEYS = {
  username: 'cluster',
  password: 'cluster or sentinels',
  name: 'sentinels',
  sentinelPassword: 'sentinels',
} as const;

const redisFields = z.strictObject({
  url: z
    .string({ error: expected('a redis:// or rediss:// URL') })
    .refine(isRedisUrl, { error: 'expected a redis:// or rediss:// URL' })
    .optional(),
  cluster: addressList(CLUSTER_SEED_HINT, isClusterSeed).optional(),
  sentinels: addressList(SENTINEL_HINT, isSentinel).optional(),
  name: nonEmptyString('the master name the sentinels monitor').optional(),
  username: optionalSecretField(),
  password: optionalSecretField(),
  sentinelPassword: optionalSecretField(),
  prefix: z
    .string({ error: expected('a key prefix') })
    .regex(/^[A-Za-z0-9_:-]+$/, { error: REDIS_PREFIX_HINT })
    .default('statuswatch'),
});

type RedisFields = z.output<typeof redisFields>;

/** The strings of a list field (this check also runs when some of its items are invalid). */
function listOf(value: unknown): string[] {
  return Array.isArray(value) ? value.map((item) => (typeof item === 'string' ? item : '')) : [];
}

/** The form-wide rules: one form, its keys only, one set of credentials on a cluster. */
function checkRedisForm(value: RedisFields, ctx: z.core.$RefinementCtx<RedisFields>): void {
  const forms = (['url', 'cluster', 'sentinels'] as const).filter((k) => value[k] !== undefined);
  if (forms.length === 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['url'],
      message:
        'required: set url (one Redis), cluster (Redis Cluster seed nodes) or sentinels and name (Redis Sentinel)',
    });
    return;
  }
  for (const extra of forms.slice(1)) {
    ctx.addIssue({
      code: 'custom',
      path: [extra],
      message: `use one of url, cluster or sentinels (${forms[0] ?? ''} is set)`,
    });
  }
  const form = forms[0];
  for (const [key, only] of Object.entries(FORM_ONLY_KEYS) as [keyof RedisFields, string][]) {
    if (value[key] !== undefined && !only.split(' or ').includes(form ?? '')) {
      ctx.addIssue({ code: 'custom', path: [key], message: `only with ${only}` });
    }
  }
  if (form === 'sentinels') {
    if (value.name === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['name'],
        message: 'required with sentinels: the master name the sentinels monitor',
      });
    }
    for (const [i, text] of listOf(value.sentinels).entries()) {
      const endpoint = parseRedisEndpoint(text, SENTINEL_DEFAULT_PORT);
      const problem =
        endpoint === null
          ? undefined
          : endpoint.tls
            ? 'rediss:// (TLS) to sentinels is not supported'
            : endpoint.username !== undefined || endpoint.password !== undefined
              ? 'no credentials in a sentinel address: use sentinelPassword (and password for the master)'
              : endpoint.db !== undefined
                ? 'a sentinel address has no database'
                : undefined;
      if (problem !== undefined)
        ctx.addIssue({ code: 'custom', path: ['sentinels', i], message: problem });
    }
  }
  if (form === 'cluster') {
    const seeds = listOf(value.cluster).map((text) =>
      parseRedisEndpoint(text, CLUSTER_DEFAULT_PORT),
    );
    // One username and one password at most, each from the fields or the URLs.
    const usernames = new Set([value.username]);
    const passwords = new Set([value.password]);
    for (const [i, seed] of seeds.entries()) {
      if (seed === null) continue;
      if ((seed.db ?? 0) !== 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['cluster', i],
          message: 'a Redis Cluster has database 0 only',
        });
      }
      if (seed.tls !== seeds[0]?.tls) {
        ctx.addIssue({
          code: 'custom',
          path: ['cluster', i],
          message: 'every seed uses redis:// or every seed rediss://',
        });
      }
      usernames.add(seed.username);
      passwords.add(seed.password);
    }
    usernames.delete(undefined);
    passwords.delete(undefined);
    if (usernames.size > 1 || passwords.size > 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['cluster'],
        message:
          'the seeds and username/password name different credentials: give them once (username/password, or the same in every URL)',
      });
    }
  }
}

/** The section as the daemon uses it: one of the three forms, with only its own keys. */
function toRedisSection(value: RedisFields): RedisSectionConfig {
  const { prefix } = value;
  const optional = <K extends string>(key: K, v: string | undefined) =>
    (v === undefined ? {} : { [key]: v }) as Partial<Record<K, string>>;
  if (value.url !== undefined) return { url: value.url, prefix };
  if (value.cluster !== undefined) {
    return {
      cluster: value.cluster,
      prefix,
      ...optional('username', value.username),
      ...optional('password', value.password),
    };
  }
  return {
    sentinels: value.sentinels ?? [],
    name: value.name ?? '',
    prefix,
    ...optional('password', value.password),
    ...optional('sentinelPassword', value.sentinelPassword),
  };
}

/**
 * `redis`: one Redis (`url`), a Redis Cluster (`cluster`: seed nodes, with `username`/`password`
 * or credentials in the URLs) or Redis Sentinel (`sentinels`, `name`, `password`,
 * `sentinelPassword`); `prefix` in each. Every key carries the `{prefix}` hash tag, so on a
 * cluster one installation's keys share one slot.
 */
const redisSchema = redisFields.superRefine(checkRedisForm).transform(toRedisSection);

const pollSchema = z
  .strictObject({
    status: durationField(SECOND).default(DEFAULT_POLL_MS.status),
    incidents: durationField(SECOND).default(DEFAULT_POLL_MS.incidents),
    sla: durationField(SECOND).default(DEFAULT_POLL_MS.sla),
    scores: durationField(SECOND).default(DEFAULT_POLL_MS.scores),
  })
  .prefault({});

const rulesSchema = z
  .strictObject({
    /** Points below the last notified score before `score.dropped` fires. */
    scoreDrop: numberAbove(0).default(5),
    /** Distinct upstream snapshots before `status.changed` fires. */
    statusConfirmations: intField(1, 100).default(2),
    /** `sla.forecast` when the burn rate of uptime_30d projects a breach within this. */
    slaForecast: durationField(MINUTE).default(72 * HOUR),
    /** `score.trend` on a fall of `points` sustained over `window`. */
    scoreTrend: z
      .strictObject({
        points: numberAbove(0).default(10),
        window: durationField(MINUTE).default(7 * 24 * HOUR),
      })
      .prefault({}),
  })
  .prefault({});

/** A host name (RFC 1123 labels) or an IPv4 / IPv6 address (without brackets). */
function isListenHost(value: string): boolean {
  if (isIP(value) !== 0) return true;
  return (
    value.length <= 253 &&
    /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/.test(
      value,
    )
  );
}

const LISTEN_HOST_HINT = 'expected an IPv4 or IPv6 address (without brackets) or a host name';

const serverSchema = z
  .strictObject({
    port: intField(0, 65_535).default(8080),
    /**
     * The address the ops server listens on: `127.0.0.1` local only, `::` every address. Unset
     * means `0.0.0.0` (every IPv4 address; the OpsServer's default).
     */
    host: nonEmptyString('a host name or IP address')
      .refine((value) => value.trim() === '' || isListenHost(value), { error: LISTEN_HOST_HINT })
      .optional(),
    /** Bearer token for /admin/*; the admin API is off when unset or empty. */
    adminToken: optionalSecretField(),
    /**
     * Where people reach the console (`https://statuswatch.example.com`): every notification then
     * links to it ("open in console", "silence…", `src/notify/links.ts`). No query, fragment or
     * credentials; a trailing slash is dropped. Unset: no links.
     */
    publicUrl: httpUrlField()
      .refine(
        (value) => {
          const url = new URL(value);
          return url.search === '' && url.hash === '' && url.username === '' && url.password === '';
        },
        { error: 'expected a URL without a query, a fragment or credentials' },
      )
      .transform((url) => url.replace(/\/+$/, ''))
      .optional(),
    /**
     * Where the Slack app's buttons post their interactions (docs/acting-on-alerts.md): the
     * app's Interactivity Request URL is `publicUrl` + this path.
     */
    slackInteractionsPath: z
      .string({ error: expected('a path such as /slack/interactions') })
      .regex(/^\/[A-Za-z0-9._~/-]{1,200}$/, {
        error: 'expected a path such as /slack/interactions',
      })
      .refine((p) => !/^\/(api|admin|healthz|readyz|metrics)(\/|$)/.test(p), {
        error:
          'must not be one of the ops server’s own paths (/api, /admin, /healthz, /readyz, /metrics)',
      })
      .default('/slack/interactions'),
    /** The web console at `/` (sessions, trusted proxies, proxy login). */
    console: consoleConfigSchema.optional(),
    /** Per-team limits of the tenancy API's stored objects (src/api/quota-config.ts). */
    quotas: quotasConfigSchema.prefault({}),
    /** Where channels may send (`src/egress/config.ts`): internal addresses refused for teams. */
    egress: egressConfigSchema,
  })
  .prefault({});

const channelSchemas = channelKindList.map((kind) => kind.schema) as [
  ChannelSchema,
  ...ChannelSchema[],
];

/** One member per channel kind (`src/notify/kinds.ts`), told apart by `type`. */
export const channelConfigSchema = z.discriminatedUnion('type', channelSchemas, {
  // Typed as invalid_union only, but a non-map entry arrives here as invalid_type.
  error: (issue) => {
    const code: string = issue.code;
    if (code === 'invalid_union') {
      return `unknown channel type; expected one of: ${CHANNEL_TYPES.join(', ')}`;
    }
    return issue.input === undefined
      ? 'required'
      : 'expected a channel definition (a map with a type)';
  },
}) as unknown as z.ZodType<ChannelConfig, ChannelConfigInput>;

const quietWindowSchema = z
  .string({ error: expected(`a window string; ${QUIET_WINDOW_HINT}`) })
  .transform((text, ctx) => {
    try {
      return parseQuietWindow(text);
    } catch (caught) {
      ctx.addIssue({ code: 'custom', message: toError(caught).message });
      return z.NEVER;
    }
  });

const quietHoursSchema = z.strictObject({
  timezone: timeZoneField(),
  windows: z
    .array(quietWindowSchema, { error: expected('a list of windows') })
    .min(1, { error: 'at least one window is required' }),
  /** Event kinds that are delivered even during quiet hours. */
  except: z.array(eventKindSchema, { error: expected('a list of event kinds') }).default([]),
});

const cronSchema = z.string({ error: expected(CRON_HINT) }).transform((text, ctx) => {
  try {
    return parseCron(text).expression;
  } catch (caught) {
    ctx.addIssue({ code: 'custom', message: toError(caught).message });
    return z.NEVER;
  }
});

const digestSchema = z.strictObject({
  /** 5-field cron expression, evaluated in `timezone`. */
  schedule: cronSchema,
  timezone: timeZoneField(),
});

function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

const subscriptionSchema = z
  .strictObject({
    name: z
      .string({ error: expected('a subscription name') })
      .regex(NAME, { error: `expected a name made of ${NAME_HINT}` }),
    /** Upstream feedIds; `*` means every service. */
    services: z
      .array(
        nonEmptyString('a feedId or "*"').refine((s) => !/\s/.test(s), {
          error: 'must not contain whitespace',
        }),
        { error: expected('a list of feedIds') },
      )
      .default([]),
    /** Category slugs (resolved with GET /services?category=). */
    categories: z
      .array(
        z
          .string({ error: expected('a category slug') })
          .regex(/^[a-z0-9][a-z0-9_-]*$/, { error: 'expected a lower-case category slug' }),
        { error: expected('a list of category slugs') },
      )
      .default([]),
    /** Defaults to every event kind. */
    events: z
      .array(eventKindSchema, { error: expected('a list of event kinds') })
      .min(1, { error: 'at least one event kind is required (omit the key for all kinds)' })
      .transform(unique)
      .default(() => [...EVENT_KINDS]),
    channels: z
      .array(nonEmptyString('a channel name'), { error: expected('a list of channel names') })
      .min(1, { error: 'at least one channel is required' })
      .transform(unique),
    /** Batch window: a burst becomes one message per channel. */
    group: durationField(SECOND).optional(),
    /** Reminder interval while a problem persists. */
    repeat: durationField(MINUTE).optional(),
    quietHours: quietHoursSchema.optional(),
    digest: digestSchema.optional(),
    /** Message templates per channel name, over the channel's own (docs/templates.md). */
    templates: subscriptionTemplatesSchema.optional(),
  })
  .superRefine(
    (value, ctx) => {
      const raw: unknown = value;
      if (!isPlainObject(raw)) return;
      const count = (items: unknown) => (Array.isArray(items) ? items.length : 0);
      const hasServices = 'services' in raw && raw.services !== undefined;
      const hasCategories = 'categories' in raw && raw.categories !== undefined;
      // Only when both lists are valid (or absent) and empty: otherwise their own issue says enough.
      if (
        (hasServices && !Array.isArray(raw.services)) ||
        (hasCategories && !Array.isArray(raw.categories))
      ) {
        return;
      }
      // A template for a channel the subscription does not deliver to would never be used: refused
      // (a misspelt channel name would otherwise silently keep the channel's own wording).
      for (const problem of unknownTemplateChannels(raw.templates, raw.channels)) {
        ctx.addIssue({
          code: 'custom',
          path: ['templates', problem.channel],
          message: problem.message,
        });
      }
      if (count(raw.services) + count(raw.categories) === 0) {
        ctx.addIssue({
          code: 'custom',
          message:
            'at least one of services or categories must list something ("*" = every service)',
        });
      }
    },
    { when: () => true },
  );

/** Cross-field checks: run even when other parts are invalid, so all problems show at once. */
function checkReferences(value: unknown, ctx: z.RefinementCtx): void {
  if (!isPlainObject(value)) return;
  const channels = isPlainObject(value.channels) ? Object.keys(value.channels) : undefined;
  const subscriptions = Array.isArray(value.subscriptions)
    ? (value.subscriptions as unknown[])
    : [];
  const firstIndexByName = new Map<string, number>();
  subscriptions.forEach((subscription, index) => {
    if (!isPlainObject(subscription)) return;
    const { name } = subscription;
    if (typeof name === 'string') {
      const first = firstIndexByName.get(name);
      if (first === undefined) {
        firstIndexByName.set(name, index);
      } else {
        ctx.addIssue({
          code: 'custom',
          path: ['subscriptions', index, 'name'],
          message: `duplicate subscription name (already used by ${formatPath(['subscriptions', first])})`,
        });
      }
    }
    if (channels !== undefined && isPlainObject(subscription.templates)) {
      // `parent` shapes the Slack app's living message: only a channel with a bot token has one.
      for (const [channel, map] of Object.entries(subscription.templates)) {
        if (!isPlainObject(map) || !Object.hasOwn(map, 'parent')) continue;
        const config = isPlainObject(value.channels) ? value.channels[channel] : undefined;
        if (!isPlainObject(config) || !channels.includes(channel)) continue;
        if (config.type === 'slack' && config.botToken !== undefined) continue;
        ctx.addIssue({
          code: 'custom',
          path: ['subscriptions', index, 'templates', channel, 'parent'],
          message: PARENT_NEEDS_SLACK_APP,
        });
      }
    }
    if (channels === undefined || !Array.isArray(subscription.channels)) return;
    (subscription.channels as unknown[]).forEach((channel, position) => {
      if (typeof channel === 'string' && channel !== '' && !channels.includes(channel)) {
        const known =
          channels.length === 0 ? 'no channels are defined' : `defined: ${channels.join(', ')}`;
        ctx.addIssue({
          code: 'custom',
          path: ['subscriptions', index, 'channels', position],
          message: `unknown channel (${known})`,
        });
      }
    });
  });
}

export const configSchema = z
  .strictObject({
    upstream: upstreamSchema,
    redis: redisSchema,
    poll: pollSchema,
    rules: rulesSchema,
    server: serverSchema,
    /** How one `statuswatch run` uses its cores: threads and roles (src/runtime/config.ts). */
    daemon: daemonConfigSchema,
    channels: z.record(
      z.string().regex(NAME, { error: `invalid channel name; use ${NAME_HINT}` }),
      channelConfigSchema,
      { error: expected('a map of channel names to channel definitions') },
    ),
    subscriptions: z.array(subscriptionSchema, { error: expected('a list of subscriptions') }),
  })
  .superRefine(
    (value, ctx) => {
      checkReferences(value, ctx);
    },
    { when: () => true },
  );

/** The validated config: defaults applied, durations in milliseconds. */
export type Config = z.output<typeof configSchema>;
/** What the YAML file may contain (after `${VAR}` substitution). */
export type ConfigInput = z.input<typeof configSchema>;

export type UpstreamConfig = Config['upstream'];
export type RedisConfig = Config['redis'];
export type PollConfig = Config['poll'];
export type RulesConfig = Config['rules'];
export type ServerConfig = Config['server'];
export type SubscriptionConfig = Config['subscriptions'][number];
export type QuietHoursConfig = NonNullable<SubscriptionConfig['quietHours']>;
export type DigestConfig = NonNullable<SubscriptionConfig['digest']>;
