import { describe, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import { deliveryId, route, watches, type RoutableSubscription } from './match.js';

const PAYMENTS = new Set(['stripe', 'adyen']);
const inCategory = (slug: string, feedId: string): boolean =>
  slug === 'payments' && PAYMENTS.has(feedId);

const sub = (
  overrides: Partial<RoutableSubscription> & Pick<RoutableSubscription, 'events'>,
): RoutableSubscription => ({ name: 's', channels: ['c'], ...overrides });

describe('watches', () => {
  const cases: [string, RoutableSubscription, EventKind, string, boolean][] = [
    [
      'listed feedId',
      sub({ services: ['stripe'], events: ['incident.opened'] }),
      'incident.opened',
      'stripe',
      true,
    ],
    [
      'other feedId',
      sub({ services: ['stripe'], events: ['incident.opened'] }),
      'incident.opened',
      'github',
      false,
    ],
    [
      '"*" watches every service',
      sub({ services: ['*'], events: ['status.changed'] }),
      'status.changed',
      'anything',
      true,
    ],
    [
      '"*" still filters the kind',
      sub({ services: ['*'], events: ['status.changed'] }),
      'incident.opened',
      'stripe',
      false,
    ],
    [
      'category member',
      sub({ categories: ['payments'], events: ['sla.at_risk'] }),
      'sla.at_risk',
      'adyen',
      true,
    ],
    [
      'not a category member',
      sub({ categories: ['payments'], events: ['sla.at_risk'] }),
      'sla.at_risk',
      'github',
      false,
    ],
    [
      'unknown category',
      sub({ categories: ['cloud'], events: ['sla.at_risk'] }),
      'sla.at_risk',
      'stripe',
      false,
    ],
    [
      'feedId or category',
      sub({ services: ['github'], categories: ['payments'], events: ['score.dropped'] }),
      'score.dropped',
      'github',
      true,
    ],
    [
      'kind not watched',
      sub({ services: ['stripe'], events: ['incident.opened'] }),
      'incident.resolved',
      'stripe',
      false,
    ],
    [
      'no services, no categories',
      sub({ events: ['incident.opened'] }),
      'incident.opened',
      'stripe',
      false,
    ],
    [
      'empty services',
      sub({ services: [], events: ['incident.opened'] }),
      'incident.opened',
      'stripe',
      false,
    ],
    [
      'upstream.degraded by kind alone',
      sub({ services: ['github'], events: ['upstream.degraded'] }),
      'upstream.degraded',
      'upstream',
      true,
    ],
    [
      'upstream.recovered without services',
      sub({ events: ['upstream.recovered'] }),
      'upstream.recovered',
      'upstream',
      true,
    ],
    [
      'upstream kind not watched',
      sub({ services: ['*'], events: ['upstream.degraded'] }),
      'upstream.recovered',
      'upstream',
      false,
    ],
    [
      'feedId "upstream" for a service kind',
      sub({ services: ['github'], events: ['status.changed'] }),
      'status.changed',
      'upstream',
      false,
    ],
  ];
  it.each(cases)('%s', (_name, subscription, kind, feedId, expected) => {
    expect(watches(subscription, { kind, feedId }, inCategory)).toBe(expected);
  });
});

describe('route', () => {
  const subs: RoutableSubscription[] = [
    { name: 'a', services: ['stripe'], events: ['incident.opened'], channels: ['pay', 'ops'] },
    { name: 'b', categories: ['payments'], events: ['incident.opened'], channels: ['pay', 'pay'] },
    { name: 'c', services: ['*'], events: ['status.changed'], channels: ['all'] },
    { name: 'd', events: ['upstream.degraded'], channels: ['up', 'pay'] },
  ];
  const cases: [EventKind, string, string[]][] = [
    ['incident.opened', 'stripe', ['a pay', 'a ops', 'b pay']],
    ['incident.opened', 'adyen', ['b pay']],
    ['incident.opened', 'github', []],
    ['incident.updated', 'stripe', []],
    ['status.changed', 'stripe', ['c all']],
    ['upstream.degraded', 'upstream', ['d up', 'd pay']],
    ['upstream.recovered', 'upstream', []],
  ];
  it.each(cases)('%s %s → %j', (kind, feedId, expected) => {
    const routes = route({ kind, feedId }, subs, inCategory);
    expect(routes.map((r) => `${r.subscription} ${r.channel}`)).toEqual(expected);
  });

  it('routes nothing without subscriptions', () => {
    expect(route({ kind: 'incident.opened', feedId: 'stripe' }, [], inCategory)).toEqual([]);
  });
});

describe('deliveryId', () => {
  it('is transition:subscription:channel', () => {
    expect(deliveryId('tabc', 'payments', 'pager')).toBe('tabc:payments:pager');
  });
});
