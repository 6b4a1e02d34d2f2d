/**
 * What the `/api/v1` API stores and shows. Objects are validated with exactly the config file's
 * schemas (`configSchema`'s subscription element and `channelConfigSchema`), so a stored object
 * could be pasted into the config file and the other way round:
 * - a channel is `{ name, …the config-file channel fields }`;
 * - a subscription is a config-file subscription.
 * Both may carry `team` (who owns it) and `source` (`api` or `config`) in what the API returns;
 * a request may send them back (`source: api` only), so `get` output can be `apply`-ed.
 */
import { z } from 'zod';
import {
  configSchema,
  channelConfigSchema,
  type ChannelConfig,
  type SubscriptionConfig,
} from '../config/schema.js';
import { formatDuration } from '../config/duration.js';
import { isPlainObject } from '../config/env.js';
import { channelKinds, type ChannelType } from '../notify/kinds.js';
import { zodShape } from '../redis/stored.js';
import { ApiError, invalid, issuesOf, type FieldIssue } from './errors.js';

/** The subscription schema of the config file (one element of `subscriptions:`). */
export const subscriptionSchema = configSchema.shape.subscriptions.element;
/** The channel name rule of the config file; subscription and team names follow it too. */
export const nameSchema = configSchema.shape.channels.keyType;
export { channelConfigSchema };

/** What the API shows instead of a secret value; sent back in a PUT it keeps the stored value. */
export const SET = '<set>';

export type Source = 'config' | 'api';

/** Keys a request may carry besides the object's own fields. */
const META_KEYS = ['team', 'source'] as const;

/** Secret field paths of a channel type (`url`, `smtp.auth.pass`); none for an unknown type. */
export function secretPathsOf(type: unknown): readonly string[] {
  if (typeof type !== 'string' || !Object.hasOwn(channelKinds, type)) return [];
  return channelKinds[type as ChannelType].secretPaths;
}

/** Fields that say where a channel's secrets are sent: its type, endpoints and servers. */
const DESTINATION_KEY = /^(type|url|apiUrl|webhookUrl|host|port|secure|region)$/;

/** Whether a field path names where a channel sends (`url`, `smtp.host`…). */
export function isDestinationPath(path: string): boolean {
  return DESTINATION_KEY.test(path.slice(path.lastIndexOf('.') + 1));
}

/**
 * Where a channel spec sends its secrets, as comparable text: every destination field (by key,
 * at any depth) outside `secretPaths`, with its path. A `"<set>"` may keep a stored secret only
 * while this stays the same: else a token that may edit the channel could send the stored
 * secret (a bot token, a routing key, an SMTP password) to a server of its choosing.
 */
export function destinationOf(
  spec: Record<string, unknown>,
  secretPaths: readonly string[],
): string {
  const out: [string, unknown][] = [];
  const walk = (node: Record<string, unknown>, prefix: string): void => {
    for (const [key, value] of Object.entries(node)) {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      if (secretPaths.includes(path)) continue;
      if (isPlainObject(value)) walk(value, path);
      else if (DESTINATION_KEY.test(key)) out.push([path, value]);
    }
  };
  walk(spec, '');
  return JSON.stringify(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function getAt(obj: Record<string, unknown>, path: string): unknown {
  let node: unknown = obj;
  for (const part of path.split('.')) {
    if (!isPlainObject(node) || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return node;
}

export function setAt(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = obj;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isPlainObject(next)) return;
    node = next;
  }
  const last = parts[parts.length - 1];
  if (last !== undefined) node[last] = value;
}

export function deleteAt(obj: Record<string, unknown>, path: string): void {
  const parts = path.split('.');
  let node = obj;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isPlainObject(next)) return;
    node = next;
  }
  const last = parts[parts.length - 1];
  if (last !== undefined) Reflect.deleteProperty(node, last);
}

/** A deep copy with every present secret field replaced by `"<set>"`. */
export function maskSecrets(
  spec: Record<string, unknown>,
  type: unknown = spec.type,
): Record<string, unknown> {
  const copy = structuredClone(spec);
  for (const path of secretPathsOf(type))
    if (getAt(copy, path) !== undefined) setAt(copy, path, SET);
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Stored shapes (versioned envelopes, src/redis/stored.ts)

export interface Audited {
  createdAt: number;
  updatedAt: number;
  /** Token ids. */
  createdBy: string;
  updatedBy: string;
}

export interface StoredChannel extends Audited {
  name: string;
  team: string;
  /** The channel as submitted, without its secret fields. */
  spec: Record<string, unknown>;
  /** Secret field path → ciphertext of the field's JSON (src/api/crypto.ts). */
  secrets: Record<string, string>;
}

export interface StoredSubscription extends Audited {
  name: string;
  team: string;
  /** The subscription as submitted (validated), `name` included. */
  spec: Record<string, unknown>;
}

/** A deleted subscription, still owed the closings of the openings it was told, until `until`. */
export interface SubscriptionTombstone {
  name: string;
  team: string;
  deletedAt: number;
  until: number;
}

/** A deleted channel, kept for the closings and retries still owed through it, until `until`. */
export interface ChannelTombstone extends StoredChannel {
  deletedAt: number;
  until: number;
}

export interface StoredToken {
  id: string;
  team: string;
  admin: boolean;
  /** SHA-256 (hex) of the whole token. */
  hash: string;
  createdAt: number;
  createdBy: string;
  expiresAt: number | null;
  revokedAt: number | null;
}

const audited = {
  createdAt: z.number(),
  updatedAt: z.number(),
  createdBy: z.string(),
  updatedBy: z.string(),
};
const storedChannelSchema = z.object({
  name: z.string(),
  team: z.string(),
  spec: z.record(z.string(), z.unknown()),
  secrets: z.record(z.string(), z.string()),
  ...audited,
});

export const STORED_CHANNEL = zodShape<StoredChannel>('api:channel', storedChannelSchema);
export const STORED_SUBSCRIPTION = zodShape<StoredSubscription>(
  'api:subscription',
  z.object({
    name: z.string(),
    team: z.string(),
    spec: z.record(z.string(), z.unknown()),
    ...audited,
  }),
);
export const SUBSCRIPTION_TOMBSTONE = zodShape<SubscriptionTombstone>(
  'api:subscription-tombstone',
  z.object({ name: z.string(), team: z.string(), deletedAt: z.number(), until: z.number() }),
);
export const CHANNEL_TOMBSTONE = zodShape<ChannelTombstone>(
  'api:channel-tombstone',
  storedChannelSchema.extend({ deletedAt: z.number(), until: z.number() }),
);
export const STORED_TOKEN = zodShape<StoredToken>(
  'api:token',
  z.object({
    id: z.string(),
    team: z.string(),
    admin: z.boolean(),
    hash: z.string(),
    createdAt: z.number(),
    createdBy: z.string(),
    expiresAt: z.number().nullable(),
    revokedAt: z.number().nullable(),
  }),
);

// ---------------------------------------------------------------------------------------------
// Requests

/** A validated object name from a URL path segment or a body; 400 naming `field` otherwise. */
export function checkName(value: unknown, field = 'name', what = 'name'): string {
  const result = nameSchema.safeParse(value);
  if (result.success) return result.data;
  throw invalid([
    {
      field,
      message:
        value === undefined
          ? 'required'
          : `invalid ${what}; use letters, digits, "-" and "_" (at most 64, starting with a letter or digit)`,
    },
  ]);
}

export interface ObjectRequest {
  name: string;
  /** The team the request names, if any. */
  team: string | undefined;
  /** The object's own fields (`name` included for subscriptions, excluded for channels). */
  spec: Record<string, unknown>;
}

/**
 * Splits a request body into the object and its `team` / `source`. The name comes from the body
 * or, for a PUT, from the path (both given: they must agree).
 */
function splitRequest(body: unknown, pathName: string | undefined): ObjectRequest {
  if (!isPlainObject(body)) throw invalid([{ field: '(root)', message: 'expected a JSON object' }]);
  const issues: FieldIssue[] = [];
  const spec: Record<string, unknown> = { ...body };
  let team: string | undefined;
  for (const key of META_KEYS) Reflect.deleteProperty(spec, key);
  if (body.team !== undefined) {
    const parsed = nameSchema.safeParse(body.team);
    if (parsed.success) team = parsed.data;
    else
      issues.push({
        field: 'team',
        message: 'invalid team name; use letters, digits, "-" and "_"',
      });
  }
  if (body.source !== undefined && body.source !== 'api') {
    issues.push({
      field: 'source',
      message:
        'only "api" objects can be written; config-file entries are read-only through the API',
    });
  }
  let name: string | undefined = pathName;
  if (body.name !== undefined) {
    const parsed = nameSchema.safeParse(body.name);
    if (!parsed.success) {
      issues.push({
        field: 'name',
        message:
          'invalid name; use letters, digits, "-" and "_" (at most 64, starting with a letter or digit)',
      });
    } else if (pathName !== undefined && parsed.data !== pathName) {
      issues.push({ field: 'name', message: 'differs from the name in the path' });
    } else name = parsed.data;
  }
  if (name === undefined && !issues.some((i) => i.field === 'name'))
    issues.push({ field: 'name', message: 'required' });
  if (issues.length > 0 || name === undefined) throw invalid(issues);
  return { name, team, spec };
}

export interface ChannelRequest extends ObjectRequest {
  /** The channel's fields without `name` (what the config file's channel map holds). */
  spec: Record<string, unknown>;
}

export function channelRequest(body: unknown, pathName?: string): ChannelRequest {
  const req = splitRequest(body, pathName);
  Reflect.deleteProperty(req.spec, 'name');
  return req;
}

export function subscriptionRequest(body: unknown, pathName?: string): ObjectRequest {
  const req = splitRequest(body, pathName);
  req.spec.name = req.name;
  return req;
}

/** A channel spec validated by the config schema; 400 naming every bad field. */
export function validateChannel(spec: Record<string, unknown>): ChannelConfig {
  const result = channelConfigSchema.safeParse(spec);
  if (!result.success) throw invalid(issuesOf(result.error));
  return result.data;
}

export function validateSubscription(spec: Record<string, unknown>): SubscriptionConfig {
  const result = subscriptionSchema.safeParse(spec);
  if (!result.success) throw invalid(issuesOf(result.error));
  return result.data;
}

// ---------------------------------------------------------------------------------------------
// Views

export type ChannelView = Record<string, unknown> & {
  name: string;
  team: string | null;
  source: Source;
};
export type SubscriptionView = Record<string, unknown> & {
  name: string;
  team: string | null;
  source: Source;
};

export function storedChannelView(c: StoredChannel): ChannelView {
  const spec = structuredClone(c.spec);
  for (const path of Object.keys(c.secrets)) setAt(spec, path, SET);
  return { name: c.name, ...spec, team: c.team, source: 'api' };
}

export function configChannelView(name: string, config: ChannelConfig): ChannelView {
  return {
    name,
    ...maskSecrets(config),
    team: null,
    source: 'config',
  };
}

export function storedSubscriptionView(s: StoredSubscription): SubscriptionView {
  return { ...structuredClone(s.spec), name: s.name, team: s.team, source: 'api' };
}

/** A config-file subscription as it would be written in the file (durations as text). */
export function configSubscriptionView(s: SubscriptionConfig): SubscriptionView {
  const out: Record<string, unknown> = {
    name: s.name,
    services: s.services,
    categories: s.categories,
    events: s.events,
    channels: s.channels,
  };
  if (s.group !== undefined) out.group = formatDuration(s.group);
  if (s.repeat !== undefined) out.repeat = formatDuration(s.repeat);
  if (s.quietHours !== undefined) {
    out.quietHours = {
      timezone: s.quietHours.timezone,
      windows: s.quietHours.windows.map((w) => w.text),
      except: s.quietHours.except,
    };
  }
  if (s.digest !== undefined) out.digest = { ...s.digest };
  if (s.templates !== undefined) out.templates = structuredClone(s.templates);
  return { ...out, name: s.name, team: null, source: 'config' };
}

/** `ApiError` for a name taken elsewhere (never says by whom). */
export function nameTaken(what: string, name: string): ApiError {
  return new ApiError(
    409,
    'name_taken',
    `the ${what} name ${JSON.stringify(name)} is taken (names are unique across the config file and the API)`,
    'name',
  );
}
