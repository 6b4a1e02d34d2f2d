/**
 * The Opsgenie notifier: the requests of `renderOpsgenieRequests`, sent one after the other to the
 * Alert API with undici, each answer classified. The API key never appears in an error (it is
 * scrubbed from message, stack and causes).
 *
 * Answers (https://docs.opsgenie.com/docs/response):
 * - 2xx (the Alert API answers 202 Accepted: the request is valid and processed asynchronously)
 *   is success;
 * - 404 to close, add-note or update-priority is success: the alert is already gone;
 * - 400 (invalid JSON) and 422 (semantic errors) are permanent (`client`), 401/403 permanent
 *   (`auth`): resending cannot help;
 * - 429 and 5xx are retryable, with the `Retry-After` delay, else Opsgenie's
 *   `X-RateLimit-Period-In-Sec` for a 429;
 * - network errors and timeouts are classified by `classifyError` (retryable).
 *
 * A retry sends the notification again from the first request that did not succeed when the same
 * process saw the earlier attempt, else from the start. Both are safe: a create whose alias has an
 * open alert is deduplicated by Opsgenie (its count goes up, nobody is notified again), a second
 * note only repeats text, and closing a closed alert changes nothing. Skipping what already
 * succeeded matters for a delivery that both opens and closes an episode (a batch, a catch-up):
 * re-sending its create after its close would open the alert a second time.
 */
import { REDACTED } from '../../config/secret-text.js';
import { toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { createHttpClient } from '../http.js';
import { SendProgress } from '../progress.js';
import { defineChannelKind, urlDestination, type NotifierDeps } from '../kind.js';
import { scrubDeliveryError } from '../secrets.js';
import { headerSafe, truncate } from '../text.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { opsgenieCode } from '../vendor-codes.js';
import {
  DEFAULT_OPSGENIE_URL,
  opsgenieChannelConfigSchema,
  type OpsgenieChannelConfig,
} from './config.js';
import { renderOpsgenieRequests, type OpsgenieAction, type OpsgenieRequest } from './render.js';
import { templatedOpsgenieRequests } from './templated.js';
import { previewSource, templatesFor } from '../template.js';

export const DEFAULT_OPSGENIE_TIMEOUT_MS = 10_000;

/**
 * Spacing of deliveries per API key. Opsgenie limits the Alert API per account with token buckets
 * per second and per minute whose sizes depend on the plan (and are not published as one number;
 * `GET /v2/request-limits` shows an account's): one delivery a second stays far below any of them
 * even when a delivery holds a few requests, and a 429 is retried after the delay Opsgenie asks.
 */
export const OPSGENIE_PACING_MS = 1000;

/** How much of an answer is read (the vendor's error message, for the operator); the rest is drained. */
const ANSWER_READ_MAX = 16 * 1024;
/** Longest vendor explanation kept in an error message. */
const VENDOR_DETAIL_MAX = 300;

const ACTION_LABELS: Record<OpsgenieAction, string> = {
  create: 'create alert',
  note: 'add note',
  close: 'close alert',
  priority: 'update priority',
};

/** The API base with no trailing slash: `https://api.opsgenie.com`. */
export function opsgenieBaseUrl(config: Pick<OpsgenieChannelConfig, 'url'>): URL {
  const base = new URL(config.url ?? DEFAULT_OPSGENIE_URL);
  base.pathname = base.pathname.replace(/\/+$/, '');
  return base;
}

function baseText(base: URL): string {
  return `${base.origin}${base.pathname === '/' ? '' : base.pathname}`;
}

/** The request headers; `Authorization: GenieKey <apiKey>`. */
export function opsgenieHeaders(apiKey: string): Record<string, string> {
  return {
    authorization: `GenieKey ${apiKey}`,
    'content-type': 'application/json',
    accept: 'application/json',
    'user-agent': 'statuswatch',
  };
}

/**
 * Opsgenie's explanation of a refusal — `message`, the `errors` map and the `requestId` support
 * asks for — on one bounded line, or '' when the answer is not Opsgenie's JSON. For the
 * operator's log only (`DeliveryError.detail`): a team reads `vendorCode` at most.
 */
export function vendorDetail(text: string): string {
  const answer = parseAnswer(text);
  if (answer === null) return '';
  const parts: string[] = [];
  if (typeof answer.message === 'string' && answer.message.trim() !== '') {
    parts.push(answer.message);
  }
  const errors = answer.errors;
  if (errors !== null && typeof errors === 'object' && !Array.isArray(errors)) {
    const entries = Object.entries(errors as Record<string, unknown>)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .map(([key, value]) => `${key}: ${value}`);
    if (entries.length > 0) parts.push(`(${entries.join('; ')})`);
  }
  if (typeof answer.requestId === 'string' && /^[\w-]{1,100}$/.test(answer.requestId)) {
    parts.push(`[requestId ${answer.requestId}]`);
  }
  return truncate(headerSafe(parts.join(' ')), VENDOR_DETAIL_MAX);
}

/** Opsgenie's documented `message` of a refusal (vendor-codes.ts), or null: what a team reads. */
export function vendorCode(text: string): string | null {
  return opsgenieCode(parseAnswer(text)?.message);
}

function parseAnswer(text: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  return parsed as Record<string, unknown>;
}

/** Opsgenie's `X-RateLimit-Period-In-Sec` (the window that was exceeded) in ms, or null. */
function rateLimitPeriodMs(header: string | string[] | undefined): number | null {
  const raw = typeof header === 'string' ? header : header?.[0];
  if (raw === undefined || !/^\s*\d{1,6}\s*$/.test(raw)) return null;
  return Number(raw) * 1000;
}

export function createOpsgenieNotifier(
  config: OpsgenieChannelConfig,
  deps: NotifierDeps = {},
): Notifier {
  const http = createHttpClient(
    config.timeoutMs ?? DEFAULT_OPSGENIE_TIMEOUT_MS,
    deps.dispatcher,
    deps.egress,
  );
  const base = opsgenieBaseUrl(config);
  const origin = base.origin;
  const prefix = base.pathname === '/' ? '' : base.pathname;
  const headers = opsgenieHeaders(config.apiKey);
  const now = deps.now ?? Date.now;
  const secrets = [config.apiKey, `GenieKey ${config.apiKey}`];
  const progress = new SendProgress();

  async function attempt(request: OpsgenieRequest): Promise<DeliveryError | null> {
    try {
      const {
        status,
        headers: answerHeaders,
        text: answer,
      } = await http.request(
        { origin, path: `${prefix}${request.path}` },
        {
          method: request.method,
          headers,
          body: JSON.stringify(request.body),
          read: () => ANSWER_READ_MAX,
        },
      );
      // The alert is gone already (closed and deleted, or never created): nothing left to do.
      if (status === 404 && request.action !== 'create') return null;
      const failure = classifyHttpStatus(status, answerHeaders['retry-after'], now());
      if (failure === null) return null;
      const retryAfterMs =
        failure.retryAfterMs ??
        (status === 429 ? rateLimitPeriodMs(answerHeaders['x-ratelimit-period-in-sec']) : null);
      const code = vendorCode(answer);
      return new DeliveryError({
        message: code === null ? failure.message : `${failure.message}: ${code}`,
        retryable: failure.retryable,
        reason: failure.reason,
        httpStatus: status,
        retryAfterMs,
        detail: vendorDetail(answer),
      });
    } catch (caught) {
      return classifyError(toError(caught));
    }
  }

  async function send(notification: Notification): Promise<void> {
    const requests = templatedOpsgenieRequests(
      notification,
      (n) => renderOpsgenieRequests(n, config),
      templatesFor(config.templates, deps.templates, notification.subscription),
    );
    const first = progress.start(notification.id, requests.length);
    for (let index = first; index < requests.length; index++) {
      const request = requests[index];
      if (request === undefined) break;
      const failure = await attempt(request);
      if (failure === null) continue;
      if (failure.retryable) progress.stoppedAt(notification.id, index);
      else progress.forget(notification.id);
      const step =
        requests.length === 1
          ? ACTION_LABELS[request.action]
          : `${ACTION_LABELS[request.action]} (${index + 1} of ${requests.length})`;
      throw scrubDeliveryError(
        failure.withMessage(`opsgenie: ${step}: ${failure.message}`),
        secrets,
      );
    }
    progress.forget(notification.id);
  }

  return { send, close: () => http.close() };
}

/** What `render` prints: every request with its URL, headers (key hidden) and JSON body. */
export function previewOpsgenie(notification: Notification, config: OpsgenieChannelConfig): string {
  const { source, notes } = previewSource(config.templates);
  const requests = templatedOpsgenieRequests(
    notification,
    (n) => renderOpsgenieRequests(n, config),
    source,
  );
  if (requests.length === 0) {
    return `(nothing is sent: Opsgenie re-notifies about an open alert by itself, through its escalation policies)\n`;
  }
  const base = baseText(opsgenieBaseUrl(config));
  const headers = Object.entries(opsgenieHeaders(config.apiKey))
    .map(([name, value]) => `${name}: ${name === 'authorization' ? REDACTED : value}`)
    .join('\n');
  return requests
    .map(
      (request) =>
        `${request.method} ${base}${request.path}\n${headers}\n\n${JSON.stringify(request.body, null, 2)}\n`,
    )
    .concat(notes.length === 0 ? [] : [`${notes.join('\n')}\n`])
    .join('\n');
}

export const opsgenieKind = defineChannelKind({
  type: 'opsgenie',
  schema: opsgenieChannelConfigSchema,
  title: 'Opsgenie: one alert per episode through the Alert API, created and closed by alias',
  secretPaths: ['apiKey'],
  secrets: (config) => [config.apiKey, `GenieKey ${config.apiKey}`],
  redact: (config) => ({ ...config, apiKey: REDACTED }),
  describe: (config) => `opsgenie via ${opsgenieBaseUrl(config).host} (API key hidden)`,
  preview: (notification, _name, config) => previewOpsgenie(notification, config),
  destinations: (config) => [urlDestination('url', config.url ?? DEFAULT_OPSGENIE_URL)],
  create: (config, deps) => createOpsgenieNotifier(config, deps),
  // Deliveries to one Opsgenie account (its API key) are spaced across replicas; the pacer only
  // stores a hash of the destination.
  pacing: (config) => ({
    destination: `opsgenie:${config.apiKey}`,
    intervalMs: OPSGENIE_PACING_MS,
  }),
});
