/**
 * The Microsoft Teams notifier: one Adaptive Card POSTed to a Teams Workflows webhook ("Post to a
 * channel when a webhook request is received") with undici, the response classified.
 *
 * Status handling (as Alertmanager's notify/msteamsv2, which leaves it to its generic retrier):
 * any 2xx is success — Workflows answer 202 Accepted, the retired Office 365 connectors 200;
 * 400 (malformed card), 413 (over 28 KB), 401/403 (the flow requires sign-in or the signature is
 * wrong) and 404 (flow deleted or turned off) are permanent; 408, 429 (throttled, with
 * Retry-After) and 5xx retry; network failures as `classifyError` says. The webhook URL carries
 * the flow's signature (`sig=`): it never appears in an error.
 */
import { redactUrlPath } from '../../config/secret-text.js';
import { toError } from '../../errors.js';
import { classifyError, classifyHttpStatus } from '../classify.js';
import { createHttpClient, httpTarget } from '../http.js';
import { defineChannelKind, urlDestination, type NotifierDeps } from '../kind.js';
import { scrubDeliveryError, urlSecrets } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { teamsCode } from '../vendor-codes.js';
import { teamsChannelConfigSchema, type TeamsChannelConfig } from './config.js';
import { renderTeamsRequest, TEAMS_MAX_BODY_BYTES, teamsBodySize } from './render.js';
import { applyTeamsTemplate } from './templated.js';
import { previewTemplates, renderTemplates, templatesFor } from '../template.js';

export const DEFAULT_TEAMS_TIMEOUT_MS = 10_000;

/** How much of an error response is read for its error code (Power Automate answers JSON). */
const ERROR_BODY_MAX_BYTES = 8 * 1024;

/**
 * The error code of a Power Automate / Teams error body (`{"error":{"code":"…"}}`)
 * when it is a plain identifier, else null. Never the message: it may quote the request. A team
 * reads it only when `teamsCode` knows it.
 */
export function teamsErrorCode(body: string): string | null {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== 'object' || parsed === null) return null;
    const error = (parsed as { error?: unknown }).error;
    if (typeof error !== 'object' || error === null) return null;
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && /^[A-Za-z][A-Za-z0-9_.]{0,63}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}

function failureDetail(status: number): string {
  switch (status) {
    case 400:
      return ': the card was refused';
    case 401:
    case 403:
      return ': the flow refused the request (set "Who can trigger the flow" to Anyone, or renew the URL)';
    case 404:
      return ': no such flow (deleted or turned off)';
    case 413:
      return ': the card is over 28 KB';
    default:
      return '';
  }
}

export function createTeamsNotifier(config: TeamsChannelConfig, deps: NotifierDeps = {}): Notifier {
  const http = createHttpClient(
    config.timeoutMs ?? DEFAULT_TEAMS_TIMEOUT_MS,
    deps.dispatcher,
    deps.egress,
  );
  const target = httpTarget(config.webhookUrl);
  const now = deps.now ?? Date.now;
  const secrets = urlSecrets(config.webhookUrl);

  const fail = (failure: DeliveryError, explained = ''): DeliveryError =>
    scrubDeliveryError(failure.withMessage(`Teams: ${failure.message}${explained}`), secrets);

  async function send(notification: Notification): Promise<void> {
    const { body } = applyTeamsTemplate(
      renderTeamsRequest(notification),
      renderTemplates(
        notification,
        'teams',
        templatesFor(config.templates, deps.templates, notification.subscription),
      ),
      { keepNote: notification.type === 'test' },
    );
    const size = teamsBodySize(body);
    if (size > TEAMS_MAX_BODY_BYTES) {
      // The renderer keeps every card well within the limit; never send one Teams would drop.
      throw new DeliveryError({
        message: `Teams: card of ${size} bytes is over the 28 KB limit; not sent`,
        retryable: false,
        reason: 'client',
      });
    }
    let failure: DeliveryError | null;
    let explained = '';
    try {
      // A failure's body is read for the flow's error code (a bounded read, within the timeout).
      const answer = await http.request(target, {
        headers: { 'content-type': 'application/json' },
        body,
        read: (status) => (status >= 200 && status <= 299 ? 0 : ERROR_BODY_MAX_BYTES),
      });
      failure = classifyHttpStatus(answer.status, answer.headers['retry-after'], now());
      if (failure !== null) {
        // A team reads the flow's error code only when it is a documented one (vendor-codes.ts);
        // the operator's log has the code as answered.
        const code = teamsErrorCode(answer.text);
        const known = teamsCode(code);
        explained = `${failureDetail(answer.status)}${known === null ? '' : ` [${known}]`}`;
        if (code !== null) failure = failure.withDetail(`error code ${code}`);
      }
    } catch (caught) {
      failure = classifyError(toError(caught));
    }
    if (failure !== null) throw fail(failure, explained);
  }

  return { send, close: () => http.close() };
}

export const teamsKind = defineChannelKind({
  type: 'teams',
  schema: teamsChannelConfigSchema,
  title: 'Microsoft Teams: an Adaptive Card posted to a channel through a Workflows webhook',
  secretPaths: ['webhookUrl'],
  secrets: (config) => urlSecrets(config.webhookUrl),
  redact: (config) => ({ ...config, webhookUrl: redactUrlPath(config.webhookUrl) }),
  describe: () => 'teams (Workflows webhook, Adaptive Card 1.4, URL hidden)',
  preview: (notification, name, config) => {
    const { rendered, notes } = previewTemplates(notification, 'teams', config.templates);
    const { message } = applyTeamsTemplate(renderTeamsRequest(notification), rendered, {
      keepNote: notification.type === 'test',
    });
    const end = notes.length === 0 ? '' : `${notes.join('\n')}\n`;
    return `POST <teams workflow URL of ${name}>\ncontent-type: application/json\n\n${JSON.stringify(message, null, 2)}\n${end}`;
  },
  destinations: (config) => [urlDestination('webhookUrl', config.webhookUrl)],
  create: (config, deps) => createTeamsNotifier(config, deps),
  // Teams throttles a webhook sent more than four requests in one second ("Create Incoming
  // Webhooks", learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/
  // add-incoming-webhook): at most 4/s per workflow URL.
  pacing: (config) => ({ destination: `teams:${config.webhookUrl}`, intervalMs: 250 }),
});
