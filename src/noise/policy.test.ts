import { describe, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import { decide, lifecycleKey, roleOf, type AdmitInput } from './policy.js';

function t(kind: EventKind, current: Record<string, string | boolean> = {}): Transition {
  return {
    id: 'tx',
    kind,
    feedId: 'stripe',
    subject: 'incident:i1',
    service: { feedId: 'stripe', name: 'Stripe', canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current,
    incident: null,
    observedAt: 0,
  };
}

describe('roleOf', () => {
  it.each([
    ['incident.opened', {}, 'opening'],
    ['incident.updated', {}, 'update'],
    ['incident.updated', { reopened: true }, 'opening'],
    ['incident.resolved', {}, 'closing'],
    ['status.changed', { status: 'major_outage' }, 'opening'],
    ['status.changed', { status: 'operational' }, 'closing'],
    ['sla.at_risk', {}, 'opening'],
    ['sla.breached', {}, 'opening'],
    ['sla.recovered', {}, 'closing'],
    ['score.dropped', {}, 'update'],
    ['upstream.degraded', {}, 'opening'],
    ['upstream.recovered', {}, 'closing'],
  ] as const)('%s %j is an %s', (kind, current, role) => {
    expect(roleOf(t(kind, current))).toBe(role);
  });

  it('keys a lifecycle by service and subject', () => {
    expect(lifecycleKey(t('incident.opened'))).toBe('stripe|incident:i1');
  });
});

describe('decide', () => {
  const base = {
    silenced: false,
    told: false,
    suppressed: false,
    quietUntil: null,
    grouped: false,
  };
  it.each<[string, EventKind, Partial<AdmitInput>, string, string]>([
    ['plain opening', 'incident.opened', {}, 'send', 'tell'],
    ['grouped opening', 'incident.opened', { grouped: true }, 'group', 'tell'],
    ['opening in quiet hours', 'incident.opened', { quietUntil: 1000 }, 'hold', 'tell'],
    [
      'quiet beats grouping',
      'incident.opened',
      { quietUntil: 1000, grouped: true },
      'hold',
      'tell',
    ],
    ['silenced opening', 'incident.opened', { silenced: true }, 'drop', 'suppress'],
    ['silenced update', 'incident.updated', { silenced: true }, 'drop', 'none'],
    ['update', 'incident.updated', {}, 'send', 'none'],
    ['update after a silenced opening', 'incident.updated', { suppressed: true }, 'send', 'tell'],
    [
      'update of a told opening',
      'incident.updated',
      { told: true, suppressed: true },
      'send',
      'none',
    ],
    [
      'closing of a told opening under a silence',
      'incident.resolved',
      { told: true, silenced: true },
      'send',
      'close',
    ],
    [
      'closing of a told opening in quiet hours',
      'incident.resolved',
      { told: true, quietUntil: 5 },
      'hold',
      'close',
    ],
    ['closing of a silenced opening', 'incident.resolved', { suppressed: true }, 'drop', 'close'],
    [
      'closing never opened here, silenced',
      'incident.resolved',
      { silenced: true },
      'drop',
      'close',
    ],
    ['closing never opened here', 'incident.resolved', {}, 'send', 'close'],
  ])('%s', (_name, kind, over, action, ledger) => {
    const d = decide({ ...base, transition: t(kind), ...over });
    expect(d.route.action).toBe(action);
    expect(d.ledger).toBe(ledger);
  });

  it('says why it drops', () => {
    expect(decide({ ...base, transition: t('incident.resolved'), suppressed: true }).route).toEqual(
      {
        action: 'drop',
        reason: 'opening_never_sent',
      },
    );
    expect(decide({ ...base, transition: t('incident.opened'), silenced: true }).route).toEqual({
      action: 'drop',
      reason: 'silenced',
    });
  });
});
