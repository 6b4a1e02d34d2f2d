import { describe, expect, it } from 'vitest';
import type { Transition } from '../diff/transition.js';
import type { EventKind } from '../config/events.js';
import type { Notification } from '../notify/types.js';
import { eventNotification } from '../routing/match.js';
import { ordersOf } from './order.js';

const T = Date.UTC(2026, 10, 27, 7, 0, 0);
const route = { subscription: 'night', channel: 'hook' };

function t(kind: EventKind, feedId: string): Transition {
  return {
    id: `t-${kind}-${feedId}`,
    kind,
    feedId,
    subject: `incident:${feedId}-1`,
    service: { feedId, name: feedId, canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current: {},
    incident: null,
    observedAt: T,
  };
}

function several(type: Notification['type'], transitions: Transition[]): Notification {
  return { id: `${type}-1`, type, ...route, transitions, title: 'x', createdAt: T };
}

describe('ordersOf', () => {
  it('an event has its one place: an opening ranks before a closing of the same moment', () => {
    expect(ordersOf(eventNotification(t('incident.opened', 'a'), route, T))).toEqual([
      { field: 'night|hook|a|incident:a-1', rank: T * 2, first: true },
    ]);
    expect(ordersOf(eventNotification(t('incident.resolved', 'a'), route, T))).toEqual([
      { field: 'night|hook|a|incident:a-1', rank: T * 2 + 1, first: false },
    ]);
  });

  it('a catch-up or a batch has a place in each lifecycle it carries, all with one rank; reminders and digests none', () => {
    const carried = [
      t('incident.opened', 'a'),
      t('incident.opened', 'b'),
      t('incident.resolved', 'b'),
    ];
    for (const type of ['catchup', 'batch'] as const)
      expect(ordersOf(several(type, carried))).toEqual([
        { field: 'night|hook|a|incident:a-1', rank: T * 2 + 1, first: true },
        { field: 'night|hook|b|incident:b-1', rank: T * 2 + 1, first: false },
      ]);
    expect(ordersOf(several('reminder', [t('incident.opened', 'a')]))).toEqual([]);
    expect(ordersOf(several('digest', carried))).toEqual([]);
  });
});
