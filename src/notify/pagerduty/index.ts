/**
 * The PagerDuty notifier: Events API v2 alert and change events, POSTed with undici one after the
 * other, each answer classified as PagerDuty documents it (202 accepted; 400 invalid event, never
 * retried; 429 throttled and 5xx retried; network errors retried). The routing key never appears
 * in an error: it is scrubbed from the message, the stack and the whole cause chain.
 */
import { toError } from '../../errors.js';
import { REDACTED, redactUrlPassword, urlPassword } from '../../config/secret-text.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { createHttpClient, httpTarget } from '../http.js';
import { SendProgress } from '../progress.js';
import { defineChannelKind, urlDestination, type NotifierDeps } from '../kind.js';
import { scrubDeliveryError } from '../secrets.js';
import { headerSafe, truncate } from '../text.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { pagerdutyCode } from '../vendor-codes.js';
import {
  changeEventsUrl,
  DEFAULT_PAGERDUTY_URL,
  pagerdutyChannelConfigSchema,
  type PagerdutyChannelConfig,
} from './config.js';
import { renderPagerduty, type PagerdutyRequest } from './render.js';
import { templatedPagerdutyRequests } from './templated.js';
import { previewSource, templatesFor } from '../template.js';

export const DEFAULT_PAGERDUTY_TIMEOUT_MS = 10_000;

/**
 * PagerDuty's Events API v2 accepts "approximately 120 calls/minute per integration key" (Events
 * API Rate Limits): one delivery per routing key every 500 ms across all replicas.
 */
export const PAGERDUTY_PACING_INTERVAL_MS = 500;

/** How much of a 400 answer is read for PagerDuty's `errors` list. */
const ERROR_BODY_MAX_BYTES = 8 * 1024;
const ERROR_DETAIL_MAX = 300;

/** The alert and change-event endpoints of a channel. */
export function pagerdutyEndpoints(config: Pick<PagerdutyChannelConfig, 'url'>): {
  enqueue: string;
  change: string;
} {
  const enqueue = config.url ?? DEFAULT_PAGERDUTY_URL;
  return { enqueue, change: changeEventsUrl(enqueue) };
}

/** The channel's secrets: the routing key (and a password, should the URL carry one). */
export function pagerdutySecrets(config: PagerdutyChannelConfig): string[] {
  return [config.routingKey, ...(config.url === undefined ? [] : urlPassword(config.url))];
}

function renderOptions(config: PagerdutyChannelConfig, routingKey: string) {
  return { routingKey, severity: config.severity, page: config.page };
}

/**
 * A 400 body: `code` is PagerDuty's documented message (`Event object is invalid`) when it is one
 * (vendor-codes.ts), for the team; `detail` the message and its `errors` list, for the operator.
 */
function invalidEvent(text: string): { code: string | null; detail: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { code: null, detail: '' };
  }
  if (typeof parsed !== 'object' || parsed === null) return { code: null, detail: '' };
  const { message, errors } = parsed as { message?: unknown; errors?: unknown };
  const parts = Array.isArray(errors)
    ? errors.filter((e): e is string => typeof e === 'string')
    : [];
  const head = typeof message === 'string' ? message : '';
  const detail = headerSafe(parts.length === 0 ? head : `${head}: ${parts.join('; ')}`);
  return { code: pagerdutyCode(message), detail: truncate(detail, ERROR_DETAIL_MAX) };
}

export function createPagerdutyNotifier(
  config: PagerdutyChannelConfig,
  deps: NotifierDeps = {},
): Notifier {
  const http = createHttpClient(
    config.timeoutMs ?? DEFAULT_PAGERDUTY_TIMEOUT_MS,
    deps.dispatcher,
    deps.egress,
  );
  const endpoints = pagerdutyEndpoints(config);
  const targets = {
    enqueue: httpTarget(endpoints.enqueue),
    change: httpTarget(endpoints.change),
  };
  const now = deps.now ?? Date.now;
  const secrets = pagerdutySecrets(config);
  const options = renderOptions(config, config.routingKey);

  /** One POST; null when PagerDuty accepted it. */
  async function post(request: PagerdutyRequest): Promise<DeliveryError | null> {
    try {
      const answer = await http.request(targets[request.endpoint], {
        headers: { 'content-type': 'application/json', 'user-agent': 'statuswatch' },
        body: JSON.stringify(request.body),
        // Only a 400 says something worth keeping: PagerDuty's list of what is invalid (for the
        // operator's log; a team reads PagerDuty's documented message only).
        read: (status) => (status === 400 ? ERROR_BODY_MAX_BYTES : 0),
      });
      const failure = classifyHttpStatus(answer.status, answer.headers['retry-after'], now());
      if (failure === null) return null;
      if (answer.status !== 400) return failure;
      const { code, detail } = invalidEvent(answer.text);
      return new DeliveryError({
        message: code === null ? failure.message : `${failure.message}: ${code}`,
        retryable: failure.retryable,
        reason: failure.reason,
        httpStatus: failure.httpStatus,
        retryAfterMs: failure.retryAfterMs,
        detail,
      });
    } catch (caught) {
      return classifyError(toError(caught));
    }
  }

  const progress = new SendProgress();

  /**
   * Sends the notification's events in order and stops at the first failure; its retry in this
   * process starts at the event that failed. A retry elsewhere (another replica, a restart)
   * sends them all again: PagerDuty folds a repeated trigger into the open alert with the same
   * dedup_key and drops a resolve for an alert already resolved. (Not undone then: a change event
   * accepted before the failure is recorded again, and in a burst whose events resolve an episode
   * and then fail further on, the repeated trigger opens a new alert that the repeated resolve
   * closes at once.)
   */
  async function send(notification: Notification): Promise<void> {
    const at = now();
    const requests = templatedPagerdutyRequests(
      notification,
      (n) => renderPagerduty(n, options, at),
      templatesFor(config.templates, deps.templates, notification.subscription),
    );
    const first = progress.start(notification.id, requests.length);
    for (let index = first; index < requests.length; index++) {
      const request = requests[index];
      if (request === undefined) break;
      const failure = await post(request);
      if (failure === null) continue;
      if (failure.retryable) progress.stoppedAt(notification.id, index);
      else progress.forget(notification.id);
      const what = request.endpoint === 'change' ? 'change event' : request.body.event_action;
      const where =
        requests.length > 1 ? ` (${what}, event ${index + 1} of ${requests.length})` : '';
      throw scrubDeliveryError(
        failure.withMessage(`pagerduty: ${failure.message}${where}`),
        secrets,
      );
    }
    progress.forget(notification.id);
  }

  return { send, close: () => http.close() };
}

/** What `render` prints: each request as it is sent, the routing key replaced by `[REDACTED]`. */
export function previewPagerduty(
  notification: Notification,
  config: PagerdutyChannelConfig,
  now: number,
): string {
  const { source, notes } = previewSource(config.templates);
  const requests = templatedPagerdutyRequests(
    notification,
    (n) => renderPagerduty(n, renderOptions(config, REDACTED), now),
    source,
  );
  if (requests.length === 0) {
    return '(nothing is sent: PagerDuty re-notifies and escalates an open incident itself, so reminders are not sent to it)\n';
  }
  const endpoints = pagerdutyEndpoints(config);
  return requests
    .map((request) => {
      const url = redactUrlPassword(endpoints[request.endpoint]);
      return `POST ${url}\ncontent-type: application/json\n\n${JSON.stringify(request.body, null, 2)}\n`;
    })
    .concat(notes.length === 0 ? [] : [`${notes.join('\n')}\n`])
    .join('\n');
}

export const pagerdutyKind = defineChannelKind({
  type: 'pagerduty',
  schema: pagerdutyChannelConfigSchema,
  title:
    'PagerDuty Events API v2: alerts triggered and resolved per episode, change events for the rest',
  secretPaths: ['routingKey'],
  secrets: pagerdutySecrets,
  // The URL is not secret (it is PagerDuty's endpoint); only a password in it would be.
  redact: (config) => ({
    ...config,
    routingKey: REDACTED,
    ...(config.url === undefined ? {} : { url: redactUrlPassword(config.url) }),
  }),
  describe: (config) => {
    const host = new URL(pagerdutyEndpoints(config).enqueue).host;
    const pages =
      config.page === undefined || config.page.length === 0
        ? ''
        : `; also pages on ${config.page.join(', ')}`;
    return `pagerduty (Events API v2 at ${host}, routing key hidden${pages})`;
  },
  preview: (notification, _name, config, now) => previewPagerduty(notification, config, now),
  destinations: (config) => [urlDestination('url', config.url ?? DEFAULT_PAGERDUTY_URL)],
  create: (config, deps) => createPagerdutyNotifier(config, deps),
  pacing: (config) => ({
    destination: `pagerduty:${config.routingKey}`,
    intervalMs: PAGERDUTY_PACING_INTERVAL_MS,
  }),
});
