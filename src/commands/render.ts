import type { ChannelConfig } from '../config/schema.js';
import type { EventKind } from '../config/events.js';
import type { Notification } from '../notify/types.js';
import { sampleTransition } from './samples.js';
import { kindOf } from '../notify/kinds.js';
import { withLinks } from '../notify/links.js';

export function sampleNotification(
  kind: EventKind,
  channel: string,
  type: Notification['type'],
  now: number,
): Notification {
  const t = sampleTransition(kind, now);
  return {
    id: `${t.id}:sample:${channel}`,
    type,
    subscription: 'sample',
    channel,
    transitions: [t],
    createdAt: now,
  };
}

/**
 * Exactly what a channel would receive for a sample transition of `kind` (secrets are not
 * printed), with the console links when `publicUrl` (`server.publicUrl`) is given.
 */
export function renderForChannel(
  kind: EventKind,
  name: string,
  config: ChannelConfig,
  now = Date.now(),
  publicUrl?: string,
): string {
  const notification = withLinks(sampleNotification(kind, name, 'event', now), publicUrl);
  return kindOf(config).preview(notification, name, config, now);
}
