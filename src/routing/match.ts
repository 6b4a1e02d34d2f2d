import type { Transition } from '../diff/transition.js';
import type { Notification } from '../notify/types.js';
import type { EventKind } from '../config/events.js';

/** The part of a subscription routing needs (a subset of the config's subscription). */
export interface RoutableSubscription {
  name: string;
  services?: readonly string[] | undefined;
  categories?: readonly string[] | undefined;
  events: readonly EventKind[];
  channels: readonly string[];
}

export type { Route } from './route.js';
import type { Route } from './route.js';

const UPSTREAM_KINDS: ReadonlySet<EventKind> = new Set(['upstream.degraded', 'upstream.recovered']);

/**
 * Does the subscription watch this service? `services: ["*"]` watches all; a category matches
 * when the service is a member of it (resolved upstream through GET /services?category=).
 * upstream.* transitions are about the upstream itself: they match on the event kind alone.
 */
export function watches(
  sub: RoutableSubscription,
  t: Pick<Transition, 'feedId' | 'kind'>,
  inCategory: (slug: string, feedId: string) => boolean,
): boolean {
  if (!sub.events.includes(t.kind)) return false;
  if (UPSTREAM_KINDS.has(t.kind)) return true;
  if (sub.services?.includes('*') === true || sub.services?.includes(t.feedId) === true)
    return true;
  return sub.categories?.some((slug) => inCategory(slug, t.feedId)) === true;
}

/** Every (subscription, channel) a transition goes to, in config order, each pair once. */
export function route(
  t: Pick<Transition, 'feedId' | 'kind'>,
  subscriptions: readonly RoutableSubscription[],
  inCategory: (slug: string, feedId: string) => boolean,
): Route[] {
  const out: Route[] = [];
  for (const sub of subscriptions) {
    if (!watches(sub, t, inCategory)) continue;
    for (const channel of new Set(sub.channels)) out.push({ subscription: sub.name, channel });
  }
  return out;
}

/** The delivery id, stable across retries and replicas: `transition:subscription:channel`. */
export function deliveryId(transitionId: string, subscription: string, channel: string): string {
  return `${transitionId}:${subscription}:${channel}`;
}

/** The notification of one transition to one route; its id is the delivery id. */
export function eventNotification(t: Transition, r: Route, createdAt: number): Notification {
  return {
    id: deliveryId(t.id, r.subscription, r.channel),
    type: 'event',
    subscription: r.subscription,
    channel: r.channel,
    transitions: [t],
    createdAt,
  };
}
