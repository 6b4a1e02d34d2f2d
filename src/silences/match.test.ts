import { describe, expect, it } from 'vitest';
import { isActive, silencedBy, silences, stateOf, type SilenceTarget } from './match.js';
import type { Silence, SilenceMatchers } from './model.js';

const T0 = 1_800_000_000_000;
const HOUR = 3_600_000;

function silence(matchers: SilenceMatchers, window: [number, number] = [T0, T0 + HOUR]): Silence {
  return {
    id: 'abc',
    matchers,
    startsAt: window[0],
    endsAt: window[1],
    author: 'me',
    comment: '',
    createdAt: T0,
  };
}

const target: SilenceTarget = {
  feedId: 'stripe',
  kind: 'incident.opened',
  subscription: 'payments',
  channel: 'oncall',
};

describe('isActive / stateOf', () => {
  const s = silence({ services: ['stripe'] });
  it.each([
    [T0 - 1, false, 'pending'],
    [T0, true, 'active'],
    [T0 + HOUR - 1, true, 'active'],
    [T0 + HOUR, false, 'expired'],
    [T0 + 2 * HOUR, false, 'expired'],
  ] as const)('at %d: active %s, state %s', (now, active, state) => {
    expect(isActive(s, now)).toBe(active);
    expect(stateOf(s, now)).toBe(state);
  });
});

describe('silences', () => {
  const now = T0 + 1;
  it.each<[string, SilenceMatchers, boolean]>([
    ['service matches', { services: ['stripe'] }, true],
    ['one of several services', { services: ['adyen', 'stripe'] }, true],
    ['other service', { services: ['adyen'] }, false],
    ['values are exact (no prefix)', { services: ['strip'] }, false],
    ['values are exact (case)', { services: ['Stripe'] }, false],
    ['event kind matches', { events: ['incident.opened'] }, true],
    ['other event kind', { events: ['incident.resolved'] }, false],
    ['subscription matches', { subscriptions: ['payments'] }, true],
    ['other subscription', { subscriptions: ['search'] }, false],
    ['channel matches', { channels: ['oncall'] }, true],
    ['other channel', { channels: ['pager'] }, false],
    [
      'all four match',
      {
        services: ['stripe'],
        events: ['incident.opened', 'incident.updated'],
        subscriptions: ['payments'],
        channels: ['oncall'],
      },
      true,
    ],
    [
      'all match but the channel',
      {
        services: ['stripe'],
        events: ['incident.opened'],
        subscriptions: ['payments'],
        channels: ['pager'],
      },
      false,
    ],
    ['service matches, event does not', { services: ['stripe'], events: ['sla.breached'] }, false],
  ])('%s → %s', (_name, matchers, want) => {
    expect(silences(silence(matchers), target, now)).toBe(want);
  });

  it('a subjects matcher silences that lifecycle only, and no target without a subject', () => {
    const one = silence({ services: ['stripe'], subjects: ['incident:inc-1'] });
    expect(silences(one, { ...target, subject: 'incident:inc-1' }, T0)).toBe(true);
    expect(silences(one, { ...target, subject: 'incident:inc-2' }, T0)).toBe(false);
    expect(silences(one, target, T0)).toBe(false);
  });

  it('does not match before it starts or once it ended', () => {
    const s = silence({ services: ['stripe'] });
    expect(silences(s, target, T0 - 1)).toBe(false);
    expect(silences(s, target, T0)).toBe(true);
    expect(silences(s, target, T0 + HOUR)).toBe(false);
  });

  it('silencedBy returns the first matching silence', () => {
    const other = { ...silence({ services: ['adyen'] }), id: 'other' };
    const hit = { ...silence({ channels: ['oncall'] }), id: 'hit' };
    const later = { ...silence({ events: ['incident.opened'] }), id: 'later' };
    expect(silencedBy([other, hit, later], target, now)?.id).toBe('hit');
    expect(silencedBy([other], target, now)).toBeUndefined();
    expect(silencedBy([], target, now)).toBeUndefined();
  });
});
