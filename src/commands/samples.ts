import type { EventKind } from '../config/events.js';
import { transitionId, type Transition } from '../diff/transition.js';

const STRIPE = {
  feedId: 'stripe',
  name: 'Stripe',
  canonicalUrl: 'https://status-directory.example/services/stripe',
  officialStatusUrl: 'https://status.stripe.com/',
};

/** A realistic sample transition of each kind, for `render` and `notify-test`. */
export function sampleTransition(kind: EventKind, now: number): Transition {
  const base = {
    id: transitionId(['sample', kind]),
    kind,
    feedId: STRIPE.feedId,
    service: STRIPE,
    incident: null,
    observedAt: now,
  };
  const incident = {
    id: 'inc-sample-1',
    title: 'Elevated API error rates',
    status: 'investigating',
    started: Math.floor(now / 1000) - 600,
    updateCount: 1,
    latestUpdate: 'We are investigating elevated error rates on the Charges API.',
  };
  switch (kind) {
    case 'incident.opened':
      return {
        ...base,
        subject: 'incident:inc-sample-1',
        previous: null,
        current: { status: 'investigating', updateCount: 1 },
        incident,
      };
    case 'incident.updated':
      return {
        ...base,
        subject: 'incident:inc-sample-1',
        previous: { status: 'investigating', updateCount: 1 },
        current: { status: 'identified', updateCount: 2 },
        incident: {
          ...incident,
          status: 'identified',
          updateCount: 2,
          latestUpdate: 'The cause has been identified; a fix is rolling out.',
        },
      };
    case 'incident.resolved':
      return {
        ...base,
        subject: 'incident:inc-sample-1',
        previous: { status: 'identified', updateCount: 2 },
        current: { status: 'resolved', updateCount: 3 },
        incident: {
          ...incident,
          status: 'resolved',
          updateCount: 3,
          latestUpdate: 'This incident has been resolved.',
        },
      };
    case 'status.changed':
      return {
        ...base,
        subject: 'status',
        previous: { status: 'operational', statusRaw: 'operational' },
        current: {
          status: 'partial_outage',
          statusRaw: 'partial_outage',
          summary: 'Some systems are unavailable',
          activeIncidentCount: 1,
        },
      };
    case 'sla.at_risk':
      return {
        ...base,
        subject: 'sla',
        previous: { status: 'met' },
        current: {
          status: 'at_risk',
          statusRaw: 'at_risk',
          margin: 0.04,
          uptime30d: 99.94,
          slaTarget: 99.9,
        },
      };
    case 'sla.breached':
      return {
        ...base,
        subject: 'sla',
        previous: { status: 'at_risk' },
        current: {
          status: 'breached',
          statusRaw: 'breached',
          margin: -0.4,
          uptime30d: 99.5,
          slaTarget: 99.9,
        },
      };
    case 'sla.recovered':
      return {
        ...base,
        subject: 'sla',
        previous: { status: 'breached' },
        current: {
          status: 'met',
          statusRaw: 'met',
          margin: 0.3,
          uptime30d: 99.93,
          slaTarget: 99.9,
        },
      };
    case 'score.dropped':
      return {
        ...base,
        subject: 'score',
        previous: { score: 92, grade: 'A' },
        current: { score: 84.5, grade: 'B', tier: 'good', drop: 7.5 },
      };
    case 'sla.forecast':
      return {
        ...base,
        subject: 'sla:forecast',
        previous: { status: 'met' },
        current: {
          status: 'met',
          statusRaw: 'met',
          margin: 0.12,
          uptime30d: 99.62,
          slaTarget: 99.5,
          burnPerDay: 0.06,
          projectedBreachAt: new Date(now + 48 * 3_600_000).toISOString(),
          hoursToBreach: 48,
        },
      };
    case 'score.trend':
      return {
        ...base,
        subject: 'score:trend',
        previous: { score: 91 },
        current: { score: 80.5, grade: 'B', tier: 'good', fall: 10.5, windowSeconds: 604_800 },
      };
    case 'upstream.degraded':
      return {
        ...base,
        feedId: 'upstream',
        subject: 'upstream:status',
        service: {
          feedId: 'upstream',
          name: 'Status API',
          canonicalUrl: null,
          officialStatusUrl: null,
        },
        previous: { health: 'ok', reason: null },
        current: {
          health: 'degraded',
          reason: 'upstream_server_error',
          endpoint: 'status',
          httpStatus: 500,
          ageSeconds: null,
          failures: 3,
        },
      };
    case 'upstream.recovered':
      return {
        ...base,
        feedId: 'upstream',
        subject: 'upstream:status',
        service: {
          feedId: 'upstream',
          name: 'Status API',
          canonicalUrl: null,
          officialStatusUrl: null,
        },
        previous: { health: 'degraded', reason: 'upstream_server_error' },
        current: {
          health: 'ok',
          reason: null,
          endpoint: 'status',
          httpStatus: null,
          ageSeconds: 12,
          failures: 0,
        },
      };
  }
}
