import type { ChannelConfig } from '../config/schema.js';
import { createNotifier, type NotifierDeps } from '../notify/registry.js';
import { DeliveryError } from '../notify/types.js';
import { classifyError } from '../notify/classify.js';
import { sampleNotification } from './render.js';

export interface NotifyTestResult {
  ok: boolean;
  /**
   * The outcome as a team may read it (the API's and the console's test): the outcome class,
   * retryable or permanent, the HTTP status and the team-safe message — never the receiver's words.
   */
  text: string;
  /**
   * Operator-only: what the receiver or the network said (`DeliveryError.detail`), for the local
   * `statuswatch notify-test`; null when sent or when there is nothing more. Never shown to a team.
   */
  detail: string | null;
}

/** Sends one test notification through a channel and reports the outcome (no retries). */
export async function notifyTest(
  name: string,
  config: ChannelConfig,
  now = Date.now(),
  deps: NotifierDeps = {},
): Promise<NotifyTestResult> {
  const notification = sampleNotification('incident.opened', name, 'test', now);
  notification.id = `test-${now.toString(36)}:notify-test:${name}`;
  const notifier = createNotifier(config, deps);
  const started = performance.now();
  try {
    await notifier.send(notification);
    const ms = Math.round(performance.now() - started);
    return {
      ok: true,
      text: `sent a test notification to ${name} (${config.type}) in ${ms} ms; delivery id ${notification.id}\n`,
      detail: null,
    };
  } catch (raw) {
    const err = raw instanceof DeliveryError ? raw : classifyError(raw);
    const status = err.httpStatus === null ? '' : ` (HTTP ${err.httpStatus})`;
    return {
      ok: false,
      text:
        `failed to send to ${name} (${config.type}): ${err.reason}${status}, ` +
        `${err.retryable ? 'retryable: the daemon would retry' : 'permanent: the daemon would dead-letter it'}\n  ${err.message}\n`,
      detail: err.detail,
    };
  } finally {
    await notifier.close();
  }
}
