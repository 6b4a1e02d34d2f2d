/**
 * Keeping secrets out of logs, errors and `check-config` output: the API key, the admin token,
 * the Redis password, Slack webhook URLs, webhook URLs, secrets and sensitive headers, and the
 * SMTP password.
 */
import { channelKindList, channelSecrets, redactChannel } from '../notify/kinds.js';
import type { Config } from './schema.js';
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
  found.push(...urlPassword(config.redis.url));
  for (const channel of Object.values(config.channels)) found.push(...channelSecrets(channel));
  return [...new Set(found.filter((value) => value !== ''))].sort((a, b) => b.length - a.length);
}

/** A deep copy of the config that is safe to print (used by `check-config`). */
export function redactedConfig(config: Config): Config {
  const copy = structuredClone(config);
  if (copy.upstream.apiKey !== undefined) copy.upstream.apiKey = REDACTED;
  if (copy.server.adminToken !== undefined) copy.server.adminToken = REDACTED;
  copy.redis.url = redactUrlPassword(copy.redis.url);
  for (const [name, channel] of Object.entries(copy.channels)) {
    copy.channels[name] = redactChannel(channel);
  }
  return copy;
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
  ...CHANNEL_SECRET_PATHS.map((path) => `channels.*.${path}`),
];

/**
 * Paths for pino's `redact` option: a config logged whole (at the root or as `config`), one
 * channel logged as `channel`, loose secret-named keys one level deep, and request headers.
 */
export const PINO_REDACT_PATHS: string[] = [
  ...CONFIG_SECRET_PATHS,
  ...CONFIG_SECRET_PATHS.map((path) => `config.${path}`),
  ...CHANNEL_SECRET_PATHS.map((path) => `channel.${path}`),
  ...[
    ...new Set(['apiKey', 'adminToken', 'secret', 'password', 'pass', ...LOOSE_CHANNEL_KEYS]),
  ].flatMap((key) => [key, `*.${key}`]),
  'smtp.auth.pass',
  '*.smtp.auth.pass',
  'auth.pass',
  ...['authorization', '["x-api-key"]', 'cookie'].flatMap((header) => {
    const access = header.startsWith('[') ? header : `.${header}`;
    return [`headers${access}`, `*.headers${access}`];
  }),
];
