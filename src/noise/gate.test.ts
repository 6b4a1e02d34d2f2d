import { describe, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import { admitBatch, type GateSubscription } from './gate.js';
import { keyOfField, ledgerField } from '../routing/route.js';
import { parseQuietWindow } from '../config/quiet-hours.js';

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);

function t(kind: EventKind, feedId: string, n = 1): Transition {
  return {
    id: `t-${kind}-${feedId}-${String(n)}`,
    kind,
    feedId,
    subject: `incident:${feedId}-${String(n)}`,
    service: { feedId, name: feedId, canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current: {},
    incident: null,
    observedAt: NOW,
  };
}

const route = { subscription: 'all', channel: 'hook' };
const subs = new Map<string, GateSubscription>([['all', { name: 'all' }]]);

describe('admitBatch', () => {
  it('an opening and its closing in one batch: both sent, the ledger told then closed', () => {
    const state = { told: new Set<string>(), suppressed: new Set<string>() };
    const r = admitBatch({
      items: [
        { transition: t('incident.opened', 's'), routes: [route] },
        { transition: t('incident.resolved', 's'), routes: [route] },
      ],
      subscriptions: subs,
      state,
      silences: [],
      now: NOW,
    });
    expect(r.notifications.map((n) => n.id)).toEqual([
      't-incident.opened-s-1:all:hook',
      't-incident.resolved-s-1:all:hook',
    ]);
    expect(r.effects.map((e) => e.type)).toEqual(['tell', 'routed-log', 'close', 'routed-log']);
    expect(state.told.size).toBe(0);
  });

  it('closings close every route told of the opening, found by lifecycle key (5,000 at once)', () => {
    const field = (i: number, channel: string): string =>
      ledgerField({ subscription: 'all', channel }, `svc-${String(i)}|incident:svc-${String(i)}-1`);
    const told = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      told.add(field(i, 'hook'));
      told.add(field(i, 'mail'));
    }
    const state = { told, suppressed: new Set<string>() };
    const items = Array.from({ length: 5000 }, (_, i) => ({
      transition: t('incident.resolved', `svc-${String(i)}`),
      routes: [route],
    }));
    const r = admitBatch({ items, subscriptions: subs, state, silences: [], now: NOW });
    // Every closing was owed (told) and sent; the mail route, not routed here, is closed too.
    expect(r.notifications).toHaveLength(5000);
    const closes = r.effects.filter((e) => e.type === 'close');
    expect(closes).toHaveLength(5000);
    expect(closes[7]).toEqual({
      type: 'close',
      told: [field(7, 'hook'), field(7, 'mail')],
      suppressed: [],
    });
    expect(state.told.size).toBe(0);
  });

  it('keyOfField keeps a lifecycle key that itself holds "|"', () => {
    expect(keyOfField('sub-a|chan_1|stripe|incident:x|y')).toBe('stripe|incident:x|y');
  });

  it('after quiet hours, a route whose catch-up is still to go out holds what comes (due now); other routes send', () => {
    const quiet = {
      timezone: 'UTC',
      windows: [parseQuietWindow('Mon-Sun 00:00-06:00')],
      except: [],
    };
    const night = new Map<string, GateSubscription>([
      ['all', { name: 'all', quietHours: quiet }],
      ['day', { name: 'day', quietHours: quiet }],
    ]);
    const day = { subscription: 'day', channel: 'hook' };
    const r = admitBatch({
      items: [{ transition: t('incident.resolved', 's'), routes: [route, day] }],
      subscriptions: night,
      state: { told: new Set(), suppressed: new Set(), catchUpPending: new Set(['all|hook']) },
      silences: [],
      now: NOW,
    });
    expect(r.notifications.map((n) => n.id)).toEqual(['t-incident.resolved-s-1:day:hook']);
    expect(r.effects.filter((e) => e.type === 'hold')).toEqual([
      { type: 'hold', route: 'all|hook', transition: t('incident.resolved', 's'), until: NOW },
    ]);
  });
});
