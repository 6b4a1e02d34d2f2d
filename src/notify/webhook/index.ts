/**
 * The webhook notifier: a signed Standard Webhooks POST with undici, the response classified.
 * The receiver URL and the secret never appear in an error (they are scrubbed from the chain).
 */
import { Agent, request, type Dispatcher } from 'undici';
import { StatuswatchError, toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { headerSecrets, scrubDeliveryError, urlSecrets } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { decodeWebhookSecret, type WebhookChannelConfig } from './config.js';
import { renderWebhookRequest } from './render.js';

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

export interface WebhookNotifierDeps {
  /** HTTP dispatcher (tests, proxies); default: an Agent owned (and closed) by the notifier. */
  dispatcher?: Dispatcher;
  /** Clock for `webhook-timestamp` and Retry-After dates. */
  now?: () => number;
}

export function createWebhookNotifier(
  config: WebhookChannelConfig,
  deps: WebhookNotifierDeps = {},
): Notifier {
  const decoded = decodeWebhookSecret(config.secret);
  if (decoded === undefined) {
    throw new StatuswatchError(
      'channel_config_invalid',
      'webhook secret must be "whsec_" + base64 of at least 16 bytes',
    );
  }
  const key: Buffer = decoded;
  const ownsDispatcher = deps.dispatcher === undefined;
  const dispatcher: Dispatcher = deps.dispatcher ?? new Agent();
  const timeoutMs = config.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  const secrets = [
    ...urlSecrets(config.url),
    config.secret,
    config.secret.slice('whsec_'.length),
    key.toString('base64'),
    ...headerSecrets(config.headers),
  ];

  async function send(notification: Notification): Promise<void> {
    const { body, headers } = renderWebhookRequest(notification, key, now(), config.headers);
    const signal = AbortSignal.timeout(timeoutMs);
    let failure: DeliveryError | null;
    try {
      const response = await request(config.url, {
        method: 'POST',
        headers,
        body,
        dispatcher,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      // Read nothing from the receiver but its status and Retry-After; drain the body for keep-alive.
      await response.body.dump();
      failure = classifyHttpStatus(response.statusCode, response.headers['retry-after'], now());
    } catch (caught) {
      const error = toError(caught);
      failure = signal.aborted
        ? new DeliveryError({
            message: `request timed out after ${timeoutMs} ms`,
            retryable: true,
            reason: 'timeout',
            cause: error,
          })
        : classifyError(error);
    }
    if (failure !== null) {
      throw scrubDeliveryError(
        new DeliveryError({
          message: `webhook: ${failure.message}`,
          retryable: failure.retryable,
          reason: failure.reason,
          httpStatus: failure.httpStatus,
          retryAfterMs: failure.retryAfterMs,
          cause: failure.cause,
        }),
        secrets,
      );
    }
  }

  return {
    send,
    async close(): Promise<void> {
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}
