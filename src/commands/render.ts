import type { ChannelConfig } from '../config/schema.js';
import type { EventKind } from '../config/events.js';
import type { Notification } from '../notify/types.js';
import { sampleTransition } from './samples.js';
import { kindOf } from '../notify/kinds.js';

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

/** Exactly what a channel would receive for a sample transition of `kind` (secrets are not printed). */
export function renderForChannel(
  kind: EventKind,
  name: string,
  config: ChannelConfig,
  now = Date.now(),
): string {
  return kindOf(config).preview(sampleNotification(kind, name, 'event', now), name, config, now);
}
