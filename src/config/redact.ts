/**
 * Keeping secrets out of logs, errors and `check-config` output: the API key, the admin token,
 * the Redis password, Slack webhook URLs, webhook URLs, secrets and sensitive headers, and the
 * SMTP password.
 */
import type { Config } from './schema.js';

export const REDACTED = '[REDACTED]';

const SENSITIVE_HEADER = /authorization|cookie|token|secret|signature|password|api-?key|auth/i;

/** True for header names whose values are treated as secrets. */
export function isSensitiveHeader(name: string): boolean {
  return SENSITIVE_HEADER.test(name);
}

function urlPassword(url: string): string[] {
  if (!URL.canParse(url)) return [];
  const { password } = new URL(url);
  if (password === '') return [];
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // keep the encoded form only
  }
  return [password, decoded];
}

function urlForms(url: string): string[] {
  if (!URL.canParse(url)) return [url];
  const parsed = new URL(url);
  return [url, parsed.href];
}

/**
 * Every secret string in a loaded config, longest first and without duplicates or empty strings:
 * feed them to `redactText` before anything derived from the config is logged or printed.
 */
export function secretValues(config: Config): string[] {
  const found: string[] = [];
  if (config.upstream.apiKey !== undefined) found.push(config.upstream.apiKey);
  if (config.server.adminToken !== undefined) found.push(config.server.adminToken);
  found.push(...urlPassword(config.redis.url));
  for (const channel of Object.values(config.channels)) {
    switch (channel.type) {
      case 'slack': {
        found.push(...urlForms(channel.webhookUrl));
        if (URL.canParse(channel.webhookUrl)) {
          // The path is the secret part of a Slack webhook (/services/T…/B…/token).
          const { pathname, search } = new URL(channel.webhookUrl);
          if (pathname.length > 1) found.push(pathname + search);
        }
        break;
      }
      case 'webhook': {
        found.push(...urlForms(channel.url), ...urlPassword(channel.url));
        found.push(channel.secret, channel.secret.slice('whsec_'.length));
        for (const [name, value] of Object.entries(channel.headers ?? {})) {
          if (isSensitiveHeader(name)) found.push(value);
        }
        break;
      }
      case 'email': {
        if (channel.smtp.auth !== undefined) found.push(channel.smtp.auth.pass);
        break;
      }
    }
  }
  return [...new Set(found.filter((value) => value !== ''))].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of each secret in `text` with `[REDACTED]` (longest first). */
export function redactText(text: string, secrets: readonly string[]): string {
  const ordered = [...secrets].filter((s) => s !== '').sort((a, b) => b.length - a.length);
  let out = text;
  for (const secret of ordered) out = out.split(secret).join(REDACTED);
  return out;
}

/** `redis://user:[REDACTED]@host:6379/0`: keeps everything but the password. */
function redactUrlPassword(url: string): string {
  if (!URL.canParse(url)) return REDACTED;
  if (new URL(url).password === '') return url;
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/]*:)[^@]*@/, `$1${REDACTED}@`);
}

/** `https://hooks.slack.com/[REDACTED]`: the origin stays readable, path and query do not. */
function redactUrlPath(url: string): string {
  if (!URL.canParse(url)) return REDACTED;
  const parsed = new URL(url);
  const hidden = parsed.pathname.length > 1 || parsed.search !== '' || parsed.username !== '';
  return hidden ? `${parsed.origin}/${REDACTED}` : parsed.origin;
}

/** A deep copy of the config that is safe to print (used by `check-config`). */
export function redactedConfig(config: Config): Config {
  const copy = structuredClone(config);
  if (copy.upstream.apiKey !== undefined) copy.upstream.apiKey = REDACTED;
  if (copy.server.adminToken !== undefined) copy.server.adminToken = REDACTED;
  copy.redis.url = redactUrlPassword(copy.redis.url);
  for (const channel of Object.values(copy.channels)) {
    switch (channel.type) {
      case 'slack':
        channel.webhookUrl = redactUrlPath(channel.webhookUrl);
        break;
      case 'webhook':
        channel.url = redactUrlPath(channel.url);
        channel.secret = REDACTED;
        if (channel.headers !== undefined) {
          for (const name of Object.keys(channel.headers)) {
            if (isSensitiveHeader(name)) channel.headers[name] = REDACTED;
          }
        }
        break;
      case 'email':
        if (channel.smtp.auth !== undefined) channel.smtp.auth.pass = REDACTED;
        break;
    }
  }
  return copy;
}

const CONFIG_SECRET_PATHS = [
  'upstream.apiKey',
  'server.adminToken',
  'redis.url',
  'channels.*.webhookUrl',
  'channels.*.url',
  'channels.*.secret',
  'channels.*.headers',
  'channels.*.smtp.auth.pass',
];

const CHANNEL_SECRET_PATHS = ['webhookUrl', 'url', 'secret', 'headers', 'smtp.auth.pass'];

/**
 * Paths for pino's `redact` option: a config logged whole (at the root or as `config`), one
 * channel logged as `channel`, loose secret-named keys one level deep, and request headers.
 */
export const PINO_REDACT_PATHS: string[] = [
  ...CONFIG_SECRET_PATHS,
  ...CONFIG_SECRET_PATHS.map((path) => `config.${path}`),
  ...CHANNEL_SECRET_PATHS.map((path) => `channel.${path}`),
  ...['apiKey', 'adminToken', 'webhookUrl', 'secret', 'password', 'pass'].flatMap((key) => [
    key,
    `*.${key}`,
  ]),
  'smtp.auth.pass',
  '*.smtp.auth.pass',
  'auth.pass',
  ...['authorization', '["x-api-key"]', 'cookie'].flatMap((header) => {
    const access = header.startsWith('[') ? header : `.${header}`;
    return [`headers${access}`, `*.headers${access}`];
  }),
];
