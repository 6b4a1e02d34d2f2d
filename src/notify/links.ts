/**
 * The two console links every notification carries when `server.publicUrl` is set: "open in
 * console" (the service page, scrolled to the transition's row) and "silence…" (the console's
 * silences page, its create form prefilled with the service, the event kinds of the transition's
 * lifecycle, the subscription and a default duration; the visitor confirms with the form's own
 * submit). Pure: computed once per notification from the notification and the public URL, then
 * handed to every renderer as `Notification.links`. The URLs are ours, never upstream text: every
 * value taken from a transition is percent-encoded.
 */
import type { EventKind } from '../config/events.js';
import { UPSTREAM_FEED_ID } from '../diff/transition.js';
import type { Notification } from './types.js';

export interface NotificationLinks {
  /** The console page of the (first) transition's service, at the transition's row. */
  console: string;
  /** The console's silences page, its create form prefilled for this notification. */
  silence: string;
}

/** The duration the silence form is prefilled with. */
export const DEFAULT_SILENCE_DURATION = '1h';

/** At most this many services are prefilled (a batch lists them most severe first). */
export const MAX_LINKED_SERVICES = 20;

/** The `id` of a transition's row on the service page (the fragment of the console link). */
export function transitionAnchor(transitionId: string): string {
  return `t-${transitionId}`;
}

/**
 * The event kinds silenced together: the kinds of one lifecycle (an incident's opening, updates
 * and resolution; an SLA's at-risk, breach and recovery; the upstream's degradation and
 * recovery), else the kind alone. Silencing only the kind just sent would let the rest of the
 * same story through.
 */
const LIFECYCLES: readonly (readonly EventKind[])[] = [
  ['incident.opened', 'incident.updated', 'incident.resolved'],
  ['sla.at_risk', 'sla.breached', 'sla.recovered'],
  ['upstream.degraded', 'upstream.recovered'],
];

export function lifecycleKinds(kind: EventKind): readonly EventKind[] {
  return LIFECYCLES.find((kinds) => kinds.includes(kind)) ?? [kind];
}

/** `publicUrl` without a trailing slash (the console is served at its `/`). */
function base(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '');
}

/**
 * The links of one notification, or undefined without a public URL, for a `test` notification
 * (its sample service is not watched) and for a notification without a subscription.
 */
export function notificationLinks(
  publicUrl: string | undefined,
  notification: Pick<Notification, 'type' | 'subscription' | 'transitions'>,
): NotificationLinks | undefined {
  if (publicUrl === undefined || publicUrl === '' || notification.type === 'test') return undefined;
  const root = base(publicUrl);
  const first = notification.transitions[0];
  const query = new URLSearchParams();
  let console: string;
  if (first === undefined || notification.type === 'digest') {
    console = `${root}/?subscription=${encodeURIComponent(notification.subscription)}`;
  } else {
    // `upstream.*` kinds have no service page: the overview's upstream health cards.
    console =
      first.feedId === UPSTREAM_FEED_ID
        ? `${root}/#upstream`
        : `${root}/services/${encodeURIComponent(first.feedId)}#${encodeURIComponent(transitionAnchor(first.id))}`;
    const services = [...new Set(notification.transitions.map((t) => t.feedId))].slice(
      0,
      MAX_LINKED_SERVICES,
    );
    query.set('services', services.join(','));
    const kinds = new Set(notification.transitions.flatMap((t) => lifecycleKinds(t.kind)));
    for (const kind of kinds) query.append('events', kind);
  }
  query.append('subscriptions', notification.subscription);
  query.set('duration', DEFAULT_SILENCE_DURATION);
  return { console, silence: `${root}/silences?${query.toString()}#silence-form` };
}

/** The notification with its links (the same object when there are none). */
export function withLinks(notification: Notification, publicUrl: string | undefined): Notification {
  const links = notificationLinks(publicUrl, notification);
  return links === undefined ? notification : { ...notification, links };
}
