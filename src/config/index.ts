/** The config stage: load, validate and redact the statuswatch config file. */
export { CronError, parseCron, type CronSchedule } from './cron.js';
export { DurationError, formatDuration, parseDuration } from './duration.js';
export { expandString, substituteEnv, type EnvSource } from './env.js';
export { ConfigError, formatIssue, type ConfigErrorCode, type ConfigIssue } from './errors.js';
export { EVENT_KINDS, isEventKind, type EventKind } from './events.js';
export { DEFAULT_CONFIG_PATH, loadConfig, parseConfig, resolveConfigPath } from './load.js';
export {
  isValidTimeZone,
  parseQuietWindow,
  QuietHoursError,
  validateTimeZone,
  type QuietWindow,
  type Weekday,
} from './quiet-hours.js';
export {
  isSensitiveHeader,
  PINO_REDACT_PATHS,
  REDACTED,
  redactedConfig,
  redactText,
  secretValues,
} from './redact.js';
export {
  CHANNEL_TYPES,
  channelConfigSchema,
  configSchema,
  DEFAULT_POLL_MS,
  type ChannelConfig,
  type ChannelType,
  type Config,
  type ConfigInput,
  type DigestConfig,
  type EmailChannelConfig,
  type PollConfig,
  type QuietHoursConfig,
  type RedisConfig,
  type RulesConfig,
  type ServerConfig,
  type SlackChannelConfig,
  type SubscriptionConfig,
  type UpstreamConfig,
  type WebhookChannelConfig,
} from './schema.js';
