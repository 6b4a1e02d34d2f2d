/** Public surface of the upstream client. */
export * from './model.js';
export {
  createUpstreamClient,
  parseRateLimit,
  parseRetryAfter,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_TIMEOUT_MS,
  type ResponseInfo,
  type StatusInclude,
  type UpstreamClient,
  type UpstreamClientOptions,
} from './client.js';
export { UpstreamError, isRetryableCode, type UpstreamErrorCode } from './errors.js';
export type { JsonValue, Normalized } from './normalize.js';
