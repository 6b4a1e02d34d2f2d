/**
 * The Slack notifier: renders, POSTs to the incoming webhook with `@slack/webhook`, classifies.
 * `@slack/webhook` 8 talks HTTP through an injectable `fetch` (not axios); we hand it undici's
 * fetch on our own dispatcher, a per-request timeout and `retries: 0` (BullMQ retries, not it).
 */
import { IncomingWebhook, IncomingWebhookHTTPError, type FetchFunction } from '@slack/webhook';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { egressAgent } from '../../egress/connect.js';
import type { EgressPolicy } from '../../egress/policy.js';
import { toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { scrubDeliveryError, urlSecrets } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { headerSafe, truncate } from '../text.js';
import { slackCode } from '../vendor-codes.js';
import { z } from 'zod';
import { httpUrlField } from '../../config/fields.js';
import { REDACTED, redactUrlPath, urlForms } from '../../config/secret-text.js';
import { createSlackAppNotifier } from './app.js';
import {
  describeSlackApp,
  SLACK_APP_DEFAULT_API_URL,
  SLACK_APP_SECRET_PATHS,
  SLACK_REPLY_BROADCAST,
  slackAppConfigShape,
  slackAppPacing,
  slackAppSecrets,
  type SlackAppChannelConfig,
} from './app-config.js';
import { renderSlackApp } from './app-render.js';
import { slackChannelConfigSchema, type SlackChannelConfig } from './config.js';
import { defineChannelKind, urlDestination } from '../kind.js';
import { renderSlack } from './render.js';
import { applySlackParentTemplate, applySlackTemplate } from './templated.js';
import {
  previewSource,
  previewTemplates,
  renderTemplates,
  slackTemplateMapSchema,
  templatesFor,
  type NotifierTemplates,
} from '../template.js';

export const DEFAULT_SLACK_TIMEOUT_MS = 10_000;

export interface SlackNotifierDeps {
  /** HTTP dispatcher (tests, proxies); default: an Agent owned (and closed) by the notifier. */
  dispatcher?: Dispatcher;
  /** The egress policy of the notifier's own Agent (`NotifierDeps.egress`). */
  egress?: EgressPolicy;
  /** Per-request timeout; default 10 s. */
  timeoutMs?: number;
  /** Clock for Retry-After HTTP-dates. */
  now?: () => number;
  /** The subscriptions' templates and the failure log (`NotifierDeps.templates`). */
  templates?: NotifierTemplates;
}

/** Slack answers errors as short snake_case words (`invalid_payload`, `channel_not_found`). */
function slackErrorWord(body: string): string | null {
  const word = body.trim();
  return /^[a-z_]{1,64}$/.test(word) ? word : null;
}

/** The receiver's answer, printable and bounded: for the operator's log only. */
function answerDetail(body: string): string {
  return truncate(headerSafe(body), 200);
}

export function createSlackNotifier(
  config: SlackChannelConfig,
  deps: SlackNotifierDeps = {},
): Notifier {
  const ownsDispatcher = deps.dispatcher === undefined;
  const dispatcher: Dispatcher = deps.dispatcher ?? egressAgent(deps.egress);
  const timeout = deps.timeoutMs ?? config.timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  const secrets = urlSecrets(config.webhookUrl);

  async function send(notification: Notification): Promise<void> {
    const payload = applySlackTemplate(
      renderSlack(notification, { mention: config.mention }),
      renderTemplates(
        notification,
        'slack',
        templatesFor(config.templates, deps.templates, notification.subscription),
      ),
      { mention: config.mention, keepNote: notification.type === 'test' },
    );
    // One fetch per send, so the Retry-After of *this* response is at hand when it fails.
    let retryAfter: string | null = null;
    const answered = { status: 0 };
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
      answered.status = response.status;
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
      // Slack answered 2xx and the body then failed (a reset, a timeout): the message is posted;
      // sending it again would post it twice.
      if (answered.status >= 200 && answered.status < 300) return;
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
    // A team reads Slack's word only when Slack documents it (vendor-codes.ts).
    return new DeliveryError({
      message:
        word === null
          ? `Slack: ${verdict.message}`
          : `Slack: ${verdict.message}: ${slackCode(word)}`,
      retryable: verdict.retryable,
      reason: verdict.reason,
      httpStatus: verdict.httpStatus,
      retryAfterMs: verdict.retryAfterMs,
      detail: answerDetail(error.body),
    });
  }
  const verdict = classifyError(error);
  return new DeliveryError({
    message: `Slack: ${verdict.message}`,
    retryable: verdict.retryable,
    reason: verdict.reason,
    httpStatus: verdict.httpStatus,
    retryAfterMs: verdict.retryAfterMs,
    detail: verdict.detail,
    cause: error,
  });
}

/**
 * The `slack` channel: an incoming webhook (`webhookUrl`) or a Slack app (`botToken` + `channel`:
 * one living message per episode, see app.ts). Exactly one of the two; app-only fields need the
 * bot token.
 */
export const slackKindSchema = z
  .strictObject({
    type: z.literal('slack'),
    webhookUrl: slackChannelConfigSchema.shape.webhookUrl.optional(),
    botToken: slackAppConfigShape.botToken.optional(),
    signingSecret: slackAppConfigShape.signingSecret,
    channel: slackAppConfigShape.channel.optional(),
    apiUrl: httpUrlField().optional(),
    replyBroadcast: z
      .enum(SLACK_REPLY_BROADCAST, { error: 'expected one of: closing, all, none' })
      .optional(),
    username: slackChannelConfigSchema.shape.username,
    iconEmoji: slackChannelConfigSchema.shape.iconEmoji,
    mention: slackChannelConfigSchema.shape.mention,
    timeoutMs: slackChannelConfigSchema.shape.timeoutMs,
    /** `parent` (the living message) only in app mode: refused below without a bot token. */
    templates: slackTemplateMapSchema.optional(),
  })
  .superRefine((config, ctx) => {
    const app = config.botToken !== undefined;
    if (config.webhookUrl === undefined && !app) {
      ctx.addIssue({
        code: 'custom',
        path: ['webhookUrl'],
        message: 'required: an incoming-webhook URL, or botToken and channel for a Slack app',
      });
    }
    // `parent` shapes the living message of app mode: an incoming webhook has none.
    if (!app && config.templates !== undefined && Object.hasOwn(config.templates, 'parent')) {
      ctx.addIssue({
        code: 'custom',
        path: ['templates', 'parent'],
        message:
          'only for a Slack app (with botToken): an incoming webhook has no living message to shape',
      });
    }
    if (config.webhookUrl !== undefined && app) {
      ctx.addIssue({
        code: 'custom',
        path: ['botToken'],
        message: 'give either webhookUrl (incoming webhook) or botToken (Slack app), not both',
      });
    }
    if (app && config.channel === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['channel'],
        message: 'required with botToken: a channel id such as C0123ABCD or a name such as #alerts',
      });
    }
    if (!app) {
      for (const field of ['channel', 'apiUrl', 'replyBroadcast', 'signingSecret'] as const) {
        if (config[field] !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message:
              'only for a Slack app (with botToken); an incoming webhook posts where it was made for',
          });
        }
      }
    }
  });

export type SlackKindConfig = z.output<typeof slackKindSchema>;

/** The app-mode config of a channel with a bot token, defaults applied; null for webhook mode. */
export function slackAppConfigOf(config: SlackKindConfig): SlackAppChannelConfig | null {
  if (config.botToken === undefined || config.channel === undefined) return null;
  return {
    type: 'slack',
    botToken: config.botToken,
    channel: config.channel,
    apiUrl: config.apiUrl ?? SLACK_APP_DEFAULT_API_URL,
    replyBroadcast: config.replyBroadcast ?? 'closing',
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.iconEmoji === undefined ? {} : { iconEmoji: config.iconEmoji }),
    ...(config.mention === undefined ? {} : { mention: config.mention }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    ...(config.templates === undefined ? {} : { templates: config.templates }),
    ...(config.signingSecret === undefined ? {} : { signingSecret: config.signingSecret }),
  };
}

/** The incoming-webhook config of a channel with a webhook URL. */
function slackWebhookConfigOf(config: SlackKindConfig): SlackChannelConfig {
  return {
    type: 'slack',
    webhookUrl: config.webhookUrl ?? '',
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.iconEmoji === undefined ? {} : { iconEmoji: config.iconEmoji }),
    ...(config.mention === undefined ? {} : { mention: config.mention }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    ...(config.templates === undefined ? {} : { templates: config.templates }),
  };
}

function webhookSecrets(webhookUrl: string): string[] {
  const found = urlForms(webhookUrl);
  if (URL.canParse(webhookUrl)) {
    // The path is the secret part of a Slack webhook (/services/T…/B…/token).
    const { pathname, search } = new URL(webhookUrl);
    if (pathname.length > 1) found.push(pathname + search);
  }
  return found;
}

export const slackKind = defineChannelKind({
  type: 'slack',
  schema: slackKindSchema,
  title: 'Slack: an incoming webhook, or a Slack app keeping one living message per episode',
  secretPaths: ['webhookUrl', ...SLACK_APP_SECRET_PATHS],
  secrets: (config) => [
    ...(config.webhookUrl === undefined ? [] : webhookSecrets(config.webhookUrl)),
    ...(config.botToken === undefined
      ? []
      : slackAppSecrets({ botToken: config.botToken, signingSecret: config.signingSecret })),
  ],
  redact: (config) => ({
    ...config,
    ...(config.webhookUrl === undefined ? {} : { webhookUrl: redactUrlPath(config.webhookUrl) }),
    ...(config.botToken === undefined ? {} : { botToken: REDACTED }),
    ...(config.signingSecret === undefined ? {} : { signingSecret: REDACTED }),
  }),
  describe: (config) => {
    const app = slackAppConfigOf(config);
    return app === null
      ? 'slack (incoming webhook, URL hidden)'
      : `slack (${describeSlackApp(app)}, one living message per episode, token hidden)`;
  },
  preview: (notification, name, config) => {
    const app = slackAppConfigOf(config);
    const { rendered, notes } = previewTemplates(notification, 'slack', config.templates);
    const noted = (text: string): string =>
      notes.length === 0 ? text : `${text}${notes.join('\n')}\n`;
    const options = { mention: config.mention, keepNote: notification.type === 'test' };
    if (app === null) {
      const payload = applySlackTemplate(
        renderSlack(notification, { mention: config.mention }),
        rendered,
        options,
      );
      return noted(
        `POST <slack webhook URL of ${name}>\ncontent-type: application/json\n\n${JSON.stringify(payload, null, 2)}\n`,
      );
    }
    const message = renderSlackApp(notification, undefined, { mention: app.mention });
    const head = `POST ${app.apiUrl}/chat.postMessage\nauthorization: Bearer ${REDACTED}\ncontent-type: application/json\n\n`;
    if (message.kind !== 'episode') {
      const post = message.kind === 'post' ? message.post : message.parent;
      const body = { channel: app.channel, ...applySlackTemplate(post, rendered, options) };
      return noted(`${head}${JSON.stringify(body, null, 2)}\n`);
    }
    // The living message (with the `parent` template), then what a later change of the episode
    // posts in its thread (with the event kind's template).
    const { source, notes: parentNotes } = previewSource(config.templates);
    const parent = applySlackParentTemplate(
      message.parent,
      notification,
      message.transition,
      null,
      source,
      app.mention,
    );
    const reply = applySlackTemplate(message.reply, rendered, options);
    notes.push(...parentNotes);
    return noted(
      `${head}${JSON.stringify({ channel: app.channel, ...parent }, null, 2)}\n(later changes of the episode: chat.update of this message and a thread reply such as)\n${JSON.stringify({ channel: app.channel, thread_ts: '<parent ts>', ...reply }, null, 2)}\n`,
    );
  },
  destinations: (config) => {
    const app = slackAppConfigOf(config);
    return app === null
      ? [urlDestination('webhookUrl', config.webhookUrl ?? '')]
      : [urlDestination('apiUrl', app.apiUrl)];
  },
  create: (config, deps) => {
    const app = slackAppConfigOf(config);
    return app === null
      ? createSlackNotifier(slackWebhookConfigOf(config), deps)
      : createSlackAppNotifier(app, deps);
  },
  // Slack allows about one message a second to a channel.
  pacing: (config) => {
    const app = slackAppConfigOf(config);
    return app === null
      ? { destination: `slack:${config.webhookUrl ?? ''}`, intervalMs: 1000 }
      : slackAppPacing(app);
  },
});
