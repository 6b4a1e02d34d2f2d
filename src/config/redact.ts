/**
 * Keeping secrets out of logs, errors and `check-config` output: the API key, the admin token,
 * the Redis passwords (in URLs, cluster seeds, `password`, `sentinelPassword`), Slack webhook URLs, webhook URLs, secrets and sensitive headers, and the
 * SMTP password.
 */
import { channelKindList, channelSecrets, redactChannel } from '../notify/kinds.js';
import type { Config, RedisSectionConfig } from './schema.js';
import { urlPassword, redactUrlPassword, REDACTED } from './secret-text.js';

export {
  REDACTED,
  isSensitiveHeader,
  redactText,
  redactUrlPassword,
  redactUrlPath,
} from './secret-text.js';

/**
 * Every secret string in a loaded config, longest first and without duplicates or empty strings:
 * feed them to `redactText` before anything derived from the config is logged or printed.
 */
export function secretValues(config: Config): string[] {
  const found: string[] = [];
  if (config.upstream.apiKey !== undefined) found.push(config.upstream.apiKey);
  if (config.server.adminToken !== undefined) found.push(config.server.adminToken);
  found.push(...redisSecrets(config.redis));
  for (const channel of Object.values(config.channels)) found.push(...channelSecrets(channel));
  return [...new Set(found.filter((value) => value !== ''))].sort((a, b) => b.length - a.length);
}

/** A deep copy of the config that is safe to print (used by `check-config`). */
export function redactedConfig(config: Config): Config {
  const copy = structuredClone(config);
  if (copy.upstream.apiKey !== undefined) copy.upstream.apiKey = REDACTED;
  if (copy.server.adminToken !== undefined) copy.server.adminToken = REDACTED;
  copy.redis = redactedRedis(copy.redis);
  for (const [name, channel] of Object.entries(copy.channels)) {
    copy.channels[name] = redactChannel(channel);
  }
  return copy;
}

/** The Redis passwords: in URLs (`url`, cluster seeds; sentinel addresses have none) and fields. */
function redisSecrets(redis: RedisSectionConfig): string[] {
  const urls =
    redis.url !== undefined ? [redis.url] : redis.cluster !== undefined ? redis.cluster : [];
  const fields = [
    'password' in redis ? redis.password : undefined,
    'sentinelPassword' in redis ? redis.sentinelPassword : undefined,
  ];
  return [
    ...urls.flatMap((url) => (url.includes('://') ? urlPassword(url) : [])),
    ...fields.filter((value) => value !== undefined),
  ];
}

/** A seed / sentinel address without its password (`host:port` stays as it is). */
const redactAddress = (text: string): string =>
  text.includes('://') ? redactUrlPassword(text) : text;

function redactedRedis(redis: RedisSectionConfig): RedisSectionConfig {
  if (redis.url !== undefined) return { ...redis, url: redactUrlPassword(redis.url) };
  if (redis.cluster !== undefined) {
    return {
      ...redis,
      cluster: redis.cluster.map(redactAddress),
      ...(redis.password === undefined ? {} : { password: REDACTED }),
    };
  }
  return {
    ...redis,
    sentinels: redis.sentinels.map(redactAddress),
    ...(redis.password === undefined ? {} : { password: REDACTED }),
    ...(redis.sentinelPassword === undefined ? {} : { sentinelPassword: REDACTED }),
  };
}

/**
 * One line for `check-config`: which Redis topology, its addresses and which credentials are
 * set, without any secret.
 */
export function describeRedis(redis: RedisSectionConfig): string {
  const set = (what: string, value: string | undefined): string[] =>
    value === undefined ? [] : [`${what} set`];
  if (redis.url !== undefined) return `redis ${redactUrlPassword(redis.url)} (one Redis)`;
  if (redis.cluster !== undefined) {
    const notes = [`${redis.cluster.length} seed${redis.cluster.length === 1 ? '' : 's'}`];
    if (redis.username !== undefined) notes.push(`username ${redis.username}`);
    const inUrls = redis.cluster.some(
      (seed) => seed.includes('://') && urlPassword(seed).length > 0,
    );
    notes.push(...set('password', inUrls ? '' : redis.password));
    return `redis cluster ${redis.cluster.map(redactAddress).join(', ')} (${notes.join(', ')})`;
  }
  const notes = [
    `${redis.sentinels.length} sentinel${redis.sentinels.length === 1 ? '' : 's'}`,
    ...set('password', redis.password),
    ...set('sentinel password', redis.sentinelPassword),
  ];
  return `redis sentinel master "${redis.name}" via ${redis.sentinels.map(redactAddress).join(', ')} (${notes.join(', ')})`;
}

const CHANNEL_SECRET_PATHS = [...new Set(channelKindList.flatMap((kind) => kind.secretPaths))];

/** Secret field names of channels that mean a secret wherever they appear (not `url`, `headers`). */
const LOOSE_CHANNEL_KEYS = CHANNEL_SECRET_PATHS.filter(
  (path) => !path.includes('.') && path !== 'url' && path !== 'headers',
);

const CONFIG_SECRET_PATHS = [
  'upstream.apiKey',
  'server.adminToken',
  'redis.url',
  'redis.password',
  'redis.sentinelPassword',
  'redis.cluster[*]',
  ...CHANNEL_SECRET_PATHS.map((path) => `channels.*.${path}`),
];

const LOOSE_KEYS = [
  ...new Set(['apiKey', 'adminToken', 'secret', 'password', 'pass', ...LOOSE_CHANNEL_KEYS]),
];
const SECRET_HEADERS = ['authorization', '["x-api-key"]', 'cookie'];

/**
 * Paths for pino's `redact` option (`src/log.ts`): a config logged whole (at the root or as
 * `config`), one channel logged as `channel`, secret-named keys at the root, and request headers.
 * No path starts with a wildcard: a leading `*.` costs pino about 15 µs on every log line, and
 * every configured secret is also scrubbed by value from each serialized line.
 */
export const PINO_REDACT_PATHS: string[] = [
  ...CONFIG_SECRET_PATHS,
  ...CONFIG_SECRET_PATHS.map((path) => `config.${path}`),
  ...CHANNEL_SECRET_PATHS.map((path) => `channel.${path}`),
  ...LOOSE_KEYS,
  'smtp.auth.pass',
  'auth.pass',
  ...['headers', 'req.headers', 'request.headers', 'res.headers'].flatMap((parent) =>
    SECRET_HEADERS.map((header) => `${parent}${header.startsWith('[') ? header : `.${header}`}`),
  ),
];
