/**
 * The episodes the acknowledgement tests tell a subscription about (test/acks.test.ts through the
 * noise harness, test/slack-buttons.test.ts through the Slack buttons).
 */
import type { EventKind } from '../../src/config/events.js';
import type { Transition } from '../../src/diff/transition.js';
import { transition } from '../notify-helpers.js';

/**
 * A transition of Stripe's incident `inc-<n>` ("Card payments failing", started at `startedAt`
 * ms, no update text), observed at `at`. `extra` overrides any field, the id first of all: each
 * suite names its transitions its own way.
 */
export function stripeIncident(
  kind: EventKind,
  { at, startedAt, n = 1 }: { at: number; startedAt: number; n?: number },
  extra: Partial<Transition> = {},
): Transition {
  return transition(kind, {
    subject: `incident:inc-${n}`,
    incident: {
      id: `inc-${n}`,
      title: 'Card payments failing',
      status: kind === 'incident.resolved' ? 'resolved' : 'investigating',
      started: Math.floor(startedAt / 1000),
      updateCount: 1,
      latestUpdate: null,
    },
    observedAt: at,
    ...extra,
  });
}
