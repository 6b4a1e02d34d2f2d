/**
 * The webhook notifier: a signed Standard Webhooks POST with undici, the response classified.
 * The receiver URL and the secret never appear in an error (they are scrubbed from the chain).
 */
import { createSecretKey } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { EgressPolicy } from '../../egress/policy.js';
import { StatuswatchError, toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { headerSecrets, scrubDeliveryError, urlSecrets } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import {
  decodeWebhookSecret,
  webhookChannelConfigSchema,
  type WebhookChannelConfig,
} from './config.js';
import {
  isSensitiveHeader,
  REDACTED,
  redactUrlPath,
  urlForms,
  urlPassword,
} from '../../config/secret-text.js';
import { defineChannelKind, urlDestination } from '../kind.js';
import { createHttpClient, httpTarget } from '../http.js';
import { renderWebhookRequest } from './render.js';
import { applyWebhookTemplate } from './templated.js';
import {
  previewTemplates,
  renderTemplates,
  templatesFor,
  type NotifierTemplates,
} from '../template.js';

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

export interface WebhookNotifierDeps {
  /**
   * HTTP dispatcher (tests, proxies); default: an Agent owned (and closed) by the notifier, whose
   * connect timeout is the channel's `timeoutMs`.
   */
  dispatcher?: Dispatcher;
  /** The egress policy of the notifier's own Agent (`NotifierDeps.egress`). */
  egress?: EgressPolicy;
  /** Clock for `webhook-timestamp` and Retry-After dates. */
  now?: () => number;
  /** The subscriptions' templates and the failure log (`NotifierDeps.templates`). */
  templates?: NotifierTemplates;
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
  const signingKey = createSecretKey(key);
  const http = createHttpClient(
    config.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS,
    deps.dispatcher,
    deps.egress,
  );
  const target = httpTarget(config.url);
  const now = deps.now ?? Date.now;
  const secrets = [
    ...urlSecrets(config.url),
    config.secret,
    config.secret.slice('whsec_'.length),
    key.toString('base64'),
    ...headerSecrets(config.headers),
  ];

  async function send(notification: Notification): Promise<void> {
    const { body, headers } = applyWebhookTemplate(
      renderWebhookRequest(notification, signingKey, now(), config.headers),
      renderTemplates(
        notification,
        'plain',
        templatesFor(config.templates, deps.templates, notification.subscription),
      ),
      signingKey,
    );
    let failure: DeliveryError | null;
    try {
      // Nothing is read from the receiver but its status and Retry-After.
      const answer = await http.request(target, { headers, body });
      failure = classifyHttpStatus(answer.status, answer.headers['retry-after'], now());
    } catch (caught) {
      failure = classifyError(toError(caught));
    }
    if (failure !== null) {
      throw scrubDeliveryError(failure.withMessage(`webhook: ${failure.message}`), secrets);
    }
  }

  return { send, close: () => http.close() };
}

export const webhookKind = defineChannelKind({
  type: 'webhook',
  schema: webhookChannelConfigSchema,
  title: 'Standard Webhooks: a signed JSON POST to any receiver',
  secretPaths: ['url', 'secret', 'headers'],
  secrets: (config) => [
    ...urlForms(config.url),
    ...urlPassword(config.url),
    config.secret,
    config.secret.slice('whsec_'.length),
    ...headerSecrets(config.headers),
  ],
  redact: (config) => ({
    ...config,
    url: redactUrlPath(config.url),
    secret: REDACTED,
    ...(config.headers === undefined
      ? {}
      : {
          headers: Object.fromEntries(
            Object.entries(config.headers).map(([name, value]) => [
              name,
              isSensitiveHeader(name) ? REDACTED : value,
            ]),
          ),
        }),
  }),
  describe: () => 'webhook (Standard Webhooks, URL and secret hidden)',
  preview: (notification, name, config, now) => {
    const key = decodeWebhookSecret(config.secret) ?? new Uint8Array(16);
    const { rendered, notes } = previewTemplates(notification, 'plain', config.templates);
    const request = applyWebhookTemplate(
      renderWebhookRequest(notification, key, now, config.headers ?? {}),
      rendered,
      key,
    );
    // The channel's own headers are all secret to the API (a read shows `headers: "<set>"`),
    // whatever their names: their values are never shown, only the names.
    const own = new Set(Object.keys(config.headers ?? {}).map((h) => h.toLowerCase()));
    const headers = Object.entries(request.headers).map(
      ([header, value]) =>
        `${header}: ${isSensitiveHeader(header) || own.has(header.toLowerCase()) ? REDACTED : value}`,
    );
    const body = JSON.stringify(JSON.parse(request.body), null, 2);
    const end = notes.length === 0 ? '' : `${notes.join('\n')}\n`;
    return `POST <webhook URL of ${name}>\n${headers.join('\n')}\n\n${body}\n${end}`;
  },
  destinations: (config) => [urlDestination('url', config.url)],
  create: (config, deps) => createWebhookNotifier(config, deps),
});
