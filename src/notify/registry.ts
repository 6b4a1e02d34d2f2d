/**
 * Channel config → notifier, for every kind in `kinds.ts`. Classification and secret scrubbing
 * happen here once, around every kind's `send`: whatever a notifier throws leaves as a
 * `DeliveryError` with none of the channel's secrets in its message, stack or causes.
 */
import { toError } from '../errors.js';
import { classifyError } from './classify.js';
import type { NotifierDeps } from './kind.js';
import { channelSecrets, kindOf, type ChannelConfig } from './kinds.js';
import { withLinks } from './links.js';
import { scrubDeliveryError } from './secrets.js';
import { DeliveryError, type Notification, type Notifier } from './types.js';

export type { NotifierDeps } from './kind.js';

/** The notifier for one zod-parsed channel config. */
export function createNotifier(config: ChannelConfig, deps: NotifierDeps = {}): Notifier {
  const inner = kindOf(config).create(config, deps);
  const secrets = channelSecrets(config);
  return {
    async send(notification: Notification): Promise<void> {
      try {
        await inner.send(withLinks(notification, deps.publicUrl));
      } catch (caught) {
        const error = caught instanceof DeliveryError ? caught : classifyError(toError(caught));
        throw scrubDeliveryError(error, secrets);
      }
    },
    close: () => inner.close(),
  };
}
