/**
 * The Slack notifier: renders, POSTs to the incoming webhook with `@slack/webhook`, classifies.
 * `@slack/webhook` 8 talks HTTP through an injectable `fetch` (not axios); we hand it undici's
 * fetch on our own dispatcher, a per-request timeout and `retries: 0` (BullMQ retries, not it).
 */
import { IncomingWebhook, IncomingWebhookHTTPError, type FetchFunction } from '@slack/webhook';
import { Agent, fetch as undiciFetch, type Dispatcher } from 'undici';
import { toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { scrubDeliveryError, urlSecrets } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { slackChannelConfigSchema, type SlackChannelConfig } from './config.js';
import { redactUrlPath, urlForms } from '../../config/secret-text.js';
import { defineChannelKind } from '../kind.js';
import { renderSlack } from './render.js';

export const DEFAULT_SLACK_TIMEOUT_MS = 10_000;

export interface SlackNotifierDeps {
  /** HTTP dispatcher (tests, proxies); default: an Agent owned (and closed) by the notifier. */
  dispatcher?: Dispatcher;
  /** Per-request timeout; default 10 s. */
  timeoutMs?: number;
  /** Clock for Retry-After HTTP-dates. */
  now?: () => number;
}

/** Slack answers errors as short snake_case words (`invalid_payload`, `channel_not_found`). */
function slackErrorWord(body: string): string | null {
  const word = body.trim();
  return /^[a-z_]{1,64}$/.test(word) ? word : null;
}

export function createSlackNotifier(
  config: SlackChannelConfig,
  deps: SlackNotifierDeps = {},
): Notifier {
  const ownsDispatcher = deps.dispatcher === undefined;
  const dispatcher: Dispatcher = deps.dispatcher ?? new Agent();
  const timeout = deps.timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  const secrets = urlSecrets(config.webhookUrl);

  async function send(notification: Notification): Promise<void> {
    const payload = renderSlack(notification, { mention: config.mention });
    // One fetch per send, so the Retry-After of *this* response is at hand when it fails.
    let retryAfter: string | null = null;
    const fetchFn: FetchFunction = async (url, init) => {
      const response = await undiciFetch(url, {
        method: init?.method ?? 'POST',
        headers: init?.headers ?? {},
        body: typeof init?.body === 'string' ? init.body : null,
        redirect: 'error',
        signal: init?.signal ?? null,
        dispatcher,
      });
      retryAfter = response.headers.get('retry-after');
      return response;
    };
    const webhook = new IncomingWebhook(config.webhookUrl, {
      fetch: fetchFn,
      timeout,
      retryConfig: { retries: 0 },
      ...(config.username === undefined ? {} : { username: config.username }),
      ...(config.iconEmoji === undefined ? {} : { icon_emoji: config.iconEmoji }),
    });
    try {
      await webhook.send(payload);
    } catch (caught) {
      throw scrubDeliveryError(toDeliveryError(caught, retryAfter, now()), secrets);
    }
  }

  return {
    send,
    async close(): Promise<void> {
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}

function toDeliveryError(caught: unknown, retryAfter: string | null, now: number): DeliveryError {
  const error = toError(caught);
  if (error instanceof IncomingWebhookHTTPError) {
    const verdict = classifyHttpStatus(error.statusCode, retryAfter, now);
    const word = slackErrorWord(error.body);
    if (verdict === null) {
      // A 2xx never throws; keep the verdict total anyway.
      return new DeliveryError({
        message: 'Slack send failed',
        retryable: true,
        reason: 'server',
        cause: error,
      });
    }
    return new DeliveryError({
      message: word === null ? `Slack: ${verdict.message}` : `Slack: ${verdict.message}: ${word}`,
      retryable: verdict.retryable,
      reason: verdict.reason,
      httpStatus: verdict.httpStatus,
      retryAfterMs: verdict.retryAfterMs,
    });
  }
  const verdict = classifyError(error);
  return new DeliveryError({
    message: `Slack: ${verdict.message}`,
    retryable: verdict.retryable,
    reason: verdict.reason,
    httpStatus: verdict.httpStatus,
    retryAfterMs: verdict.retryAfterMs,
    cause: error,
  });
}

export const slackKind = defineChannelKind({
  type: 'slack',
  schema: slackChannelConfigSchema,
  title: 'Slack: an incoming webhook, or a Slack app keeping one living message per episode',
  secretPaths: ['webhookUrl'],
  secrets: (config) => {
    const found = urlForms(config.webhookUrl);
    if (URL.canParse(config.webhookUrl)) {
      // The path is the secret part of a Slack webhook (/services/T…/B…/token).
      const { pathname, search } = new URL(config.webhookUrl);
      if (pathname.length > 1) found.push(pathname + search);
    }
    return found;
  },
  redact: (config) => ({ ...config, webhookUrl: redactUrlPath(config.webhookUrl) }),
  describe: () => 'slack (incoming webhook, URL hidden)',
  preview: (notification, name, config) => {
    const payload = renderSlack(notification, { mention: config.mention });
    return `POST <slack webhook URL of ${name}>\ncontent-type: application/json\n\n${JSON.stringify(payload, null, 2)}\n`;
  },
  create: (config, deps) => createSlackNotifier(config, deps),
  // Slack allows about one message a second to a channel (an incoming webhook posts to one).
  pacing: (config) => ({ destination: `slack:${config.webhookUrl}`, intervalMs: 1000 }),
});
