import { describe, expect, it } from 'vitest';
import type { Transition } from '../diff/transition.js';
import { encode } from '../redis/stored.js';
import {
  ROUTED_LOG_ITEM,
  TOLD_ENTRY,
  encodeRoutedLogItem,
  encodeToldEntry,
  type RoutedLogItem,
  type ToldEntry,
} from './store.js';

const opening: Transition = {
  id: 't0123456789abcdef0123456789abcde',
  kind: 'incident.opened',
  feedId: 'stripe',
  subject: 'incident:i-"1"',
  service: {
    feedId: 'stripe',
    name: 'Stripe \u2028 "quoted"',
    canonicalUrl: null,
    officialStatusUrl: 'https://status.stripe.com',
  },
  previous: null,
  current: { status: 'investigating', title: 'Payments <!channel> \n down', updates: 2 },
  incident: null,
  observedAt: 1_700_000_000_123,
};

describe('commitGate texts', () => {
  it('a told entry encodes as encode(TOLD_ENTRY) does, character for character', () => {
    for (const now of [1_700_000_000_456, 0, 1.5]) {
      const entry: ToldEntry = {
        subscription: 'ops-team',
        channel: 'sink_1',
        opening,
        toldAt: now,
        lastSentAt: now,
        reminders: 0,
      };
      expect(encodeToldEntry(entry, JSON.stringify(opening))).toBe(encode(TOLD_ENTRY, entry));
    }
  });

  it('a routed-log item encodes as encode(ROUTED_LOG_ITEM) does', () => {
    for (const subscriptions of [[], ['a'], ['ops-team', 'b_2']]) {
      const item: RoutedLogItem = { t: opening, subscriptions };
      expect(encodeRoutedLogItem(item, JSON.stringify(opening))).toBe(
        encode(ROUTED_LOG_ITEM, item),
      );
    }
  });
});
