import { describe, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import type { Transition, TransitionValues } from '../diff/transition.js';
import { buildDigest, DIGEST_TRANSITION_LIMIT, formatSpan, type DigestInput } from './digest.js';

const NAMES: Record<string, string> = {
  stripe: 'Stripe',
  adyen: 'Adyen',
  paypal: 'PayPal',
  klarna: 'Klarna',
};

interface Extra {
  incident?: { id: string; title: string; started?: string };
  previous?: TransitionValues | null;
  current?: TransitionValues;
}

/** A transition as the diff stage makes it; ids are readable names so orders read well. */
function tr(
  id: string,
  kind: EventKind,
  feedId: string,
  observed: string,
  extra: Extra = {},
): Transition {
  const incident = extra.incident;
  return {
    id,
    kind,
    feedId,
    subject:
      incident !== undefined
        ? `incident:${incident.id}`
        : kind.startsWith('sla.')
          ? 'sla'
          : kind === 'score.dropped'
            ? 'score'
            : 'status',
    service: { feedId, name: NAMES[feedId] ?? null, canonicalUrl: null, officialStatusUrl: null },
    previous: extra.previous ?? null,
    current: extra.current ?? {},
    incident:
      incident === undefined
        ? null
        : {
            id: incident.id,
            title: incident.title,
            status: kind === 'incident.resolved' ? 'resolved' : 'investigating',
            started: Date.parse(incident.started ?? observed) / 1000,
            updateCount: 1,
            latestUpdate: null,
          },
    observedAt: Date.parse(observed),
  };
}

const CARDS = { id: 'inc-1', title: 'Card payments failing' };
const PAYOUTS = { id: 'inc-2', title: 'Payouts delayed' };
const WEBHOOKS = { id: 'inc-3', title: 'Webhook delays' };
const LOGIN = { id: 'inc-4', title: 'Login errors', started: '2026-11-15T22:00:00Z' };
const CHECKOUT = { id: 'inc-5', title: 'Checkout degraded' };

// A week of history for "payments": Mon 16 Nov 2026 08:00 CET → Mon 23 Nov 08:00 CET (UTC+1).
// Comments give the local (Europe/Berlin) time.
const WEEK: Transition[] = [
  tr('paypal-resolved', 'incident.resolved', 'paypal', '2026-11-16T08:15:00Z', { incident: LOGIN }), // Mon 09:15
  tr('stripe-open', 'incident.opened', 'stripe', '2026-11-17T09:04:00Z', { incident: CARDS }), // Tue 10:04
  tr('stripe-status-1', 'status.changed', 'stripe', '2026-11-17T09:05:00Z', {
    previous: { status: 'operational' },
    current: { status: 'degraded' },
  }),
  tr('stripe-update', 'incident.updated', 'stripe', '2026-11-17T09:30:00Z', { incident: CARDS }),
  tr('stripe-resolved', 'incident.resolved', 'stripe', '2026-11-17T10:34:00Z', { incident: CARDS }), // Tue 11:34
  tr('stripe-status-2', 'status.changed', 'stripe', '2026-11-17T10:40:00Z', {
    previous: { status: 'degraded' },
    current: { status: 'operational' },
  }),
  tr('stripe-sla-risk', 'sla.at_risk', 'stripe', '2026-11-18T08:00:00Z', {
    previous: { status: 'met' },
    current: { status: 'at_risk', margin: 0.05, uptime30d: 99.95, slaTarget: 99.9 },
  }),
  tr('adyen-sla-risk', 'sla.at_risk', 'adyen', '2026-11-18T09:00:00Z', {
    previous: { status: 'met' },
    current: { status: 'at_risk', margin: 0.05, uptime30d: 99.95, slaTarget: 99.9 },
  }),
  tr('adyen-update', 'incident.updated', 'adyen', '2026-11-18T11:00:00Z', { incident: PAYOUTS }),
  tr('adyen-status', 'status.changed', 'adyen', '2026-11-18T11:05:00Z', {
    previous: { status: 'operational' },
    current: { status: 'partial_outage' },
  }),
  tr('klarna-open', 'incident.opened', 'klarna', '2026-11-19T13:00:00Z', { incident: CHECKOUT }), // Thu 14:00
  tr('klarna-sla-risk', 'sla.at_risk', 'klarna', '2026-11-19T14:00:00Z', {
    previous: { status: 'met' },
    current: { status: 'at_risk', margin: 0.02, uptime30d: 99.52, slaTarget: 99.5 },
  }),
  tr('adyen-score-1', 'score.dropped', 'adyen', '2026-11-19T15:00:00Z', {
    previous: { score: 92.5, grade: 'A' },
    current: { score: 86, grade: 'B', drop: 6.5 },
  }),
  tr('stripe-score', 'score.dropped', 'stripe', '2026-11-19T16:00:00Z', {
    previous: { score: 95, grade: 'A' },
    current: { score: 89.5, grade: 'A', drop: 5.5 },
  }),
  tr('klarna-resolved', 'incident.resolved', 'klarna', '2026-11-20T15:45:00Z', {
    incident: CHECKOUT,
  }), // Fri 16:45
  tr('stripe-sla-recovered', 'sla.recovered', 'stripe', '2026-11-20T17:00:00Z', {
    previous: { status: 'at_risk' },
    current: { status: 'met', margin: 0.2, uptime30d: 100, slaTarget: 99.8 },
  }),
  tr('adyen-sla-breached', 'sla.breached', 'adyen', '2026-11-21T08:00:00Z', {
    previous: { status: 'at_risk' },
    current: { status: 'breached', margin: -0.15, uptime30d: 99.75, slaTarget: 99.9 },
  }),
  tr('adyen-score-2', 'score.dropped', 'adyen', '2026-11-21T09:00:00Z', {
    previous: { score: 86, grade: 'B' },
    current: { score: 80.25, grade: 'B', drop: 5.75 },
  }),
  tr('stripe-open-2', 'incident.opened', 'stripe', '2026-11-22T20:10:00Z', { incident: WEBHOOKS }), // Sun 21:10
  // At `to` exactly: the next period's.
  tr('klarna-status', 'status.changed', 'klarna', '2026-11-23T07:00:00Z', {
    previous: { status: 'operational' },
    current: { status: 'degraded' },
  }),
];

const STILL_OPEN: Transition[] = [
  tr('adyen-open', 'incident.opened', 'adyen', '2026-11-13T17:00:00Z', { incident: PAYOUTS }), // Fri 13 Nov 18:00
  WEEK.find((t) => t.id === 'stripe-open-2')!,
];

function weekInput(overrides: Partial<DigestInput> = {}): DigestInput {
  return {
    subscription: 'payments',
    from: Date.parse('2026-11-16T07:00:00Z'),
    to: Date.parse('2026-11-23T07:00:00Z'),
    transitions: WEEK,
    stillOpen: STILL_OPEN,
    timezone: 'Europe/Berlin',
    premium: true,
    ...overrides,
  };
}

const INCIDENT_AND_STATUS_LINES = [
  'PayPal — Login errors: started Sun 15 Nov 23:00, resolved Mon 16 Nov 09:15 (10h 15m)',
  'Stripe — Card payments failing: opened Tue 10:04, resolved Tue 11:34 (1h 30m)',
  'Klarna — Checkout degraded: opened Thu 14:00, resolved Fri 16:45 (1d 2h)',
  'Adyen — Payouts delayed: still open since Fri 13 Nov 18:00 (9d 14h)',
  'Stripe — Webhook delays: still open since Sun 21:10 (10h 50m)',
  'Stripe: 2 status changes, now operational',
  'Adyen: 1 status change, now partial outage',
];

describe('buildDigest: a week of history', () => {
  it('a still-open incident someone acknowledged says by whom', () => {
    const digest = buildDigest(weekInput({ acknowledged: new Map([['adyen-open', 'alice']]) }));
    expect(digest.summary).toContain(
      'Adyen — Payouts delayed: still open since Fri 13 Nov 18:00 (9d 14h), acknowledged by alice',
    );
    expect(digest.summary).toContain(
      'Stripe — Webhook delays: still open since Sun 21:10 (10h 50m)',
    );
  });

  it('premium: title, every summary line, transitions most relevant first', () => {
    const digest = buildDigest(weekInput());
    expect(digest.title).toBe('Weekly digest for payments: 16–23 Nov 2026');
    expect(digest.summary).toEqual([
      ...INCIDENT_AND_STATUS_LINES,
      'Adyen SLA breached: margin -0.15 pp (uptime 99.75%, target 99.9%)',
      'Klarna SLA at risk: margin +0.02 pp (uptime 99.52%, target 99.5%)',
      'Adyen score: 92.5 (A) → 80.25 (B)',
      'Stripe score: 95 (A) → 89.5 (A)',
    ]);
    expect(digest.transitions.map((t) => t.id)).toEqual([
      'stripe-open-2', // opened and still open
      'adyen-sla-breached',
      'klarna-open',
      'stripe-open',
      'klarna-sla-risk',
      'adyen-sla-risk',
      'stripe-sla-risk',
      'adyen-score-2',
      'stripe-score',
      'adyen-score-1',
      'adyen-status',
      'stripe-status-2',
      'stripe-status-1',
      'klarna-resolved',
      'stripe-resolved',
      'paypal-resolved',
      'adyen-update',
      'stripe-update',
      'stripe-sla-recovered',
    ]);
    // The transitions are the input objects, not copies.
    expect(digest.transitions[0]).toBe(WEEK.find((t) => t.id === 'stripe-open-2'));
  });

  it('without premium: no SLA or score lines, and no SLA or score transitions', () => {
    const digest = buildDigest(weekInput({ premium: false }));
    expect(digest.title).toBe('Weekly digest for payments: 16–23 Nov 2026');
    expect(digest.summary).toEqual(INCIDENT_AND_STATUS_LINES);
    expect(digest.transitions.map((t) => t.id)).toEqual([
      'stripe-open-2',
      'klarna-open',
      'stripe-open',
      'adyen-status',
      'stripe-status-2',
      'stripe-status-1',
      'klarna-resolved',
      'stripe-resolved',
      'paypal-resolved',
      'adyen-update',
      'stripe-update',
    ]);
  });

  it('an empty week says so for every section', () => {
    const digest = buildDigest(weekInput({ transitions: [], stillOpen: [] }));
    expect(digest).toEqual({
      title: 'Weekly digest for payments: 16–23 Nov 2026',
      summary: [
        'No incidents',
        'No status changes',
        'No SLA at risk or breached',
        'No score or grade changes',
      ],
      transitions: [],
    });
    expect(
      buildDigest(weekInput({ transitions: [], stillOpen: [], premium: false })).summary,
    ).toEqual(['No incidents', 'No status changes']);
  });

  it('SLA records that recovered by the end of the period are not listed', () => {
    const digest = buildDigest(
      weekInput({ transitions: WEEK.filter((t) => t.feedId === 'stripe'), stillOpen: [] }),
    );
    expect(digest.summary).toEqual([
      'Stripe — Card payments failing: opened Tue 10:04, resolved Tue 11:34 (1h 30m)',
      'Stripe — Webhook delays: opened Sun 21:10',
      'Stripe: 2 status changes, now operational',
      'No SLA at risk or breached',
      'Stripe score: 95 (A) → 89.5 (A)',
    ]);
  });

  it(`keeps at most ${DIGEST_TRANSITION_LIMIT} transitions, newest first within a kind`, () => {
    const many = Array.from({ length: 60 }, (_, i) =>
      tr(
        `status-${String(i).padStart(2, '0')}`,
        'status.changed',
        'stripe',
        new Date(Date.parse('2026-11-16T08:00:00Z') + i * 3600_000).toISOString(),
        {
          current: { status: i % 2 === 0 ? 'degraded' : 'operational' },
        },
      ),
    );
    const digest = buildDigest(weekInput({ transitions: many, stillOpen: [] }));
    expect(digest.transitions).toHaveLength(50);
    expect(digest.transitions[0]?.id).toBe('status-59');
    expect(digest.transitions[49]?.id).toBe('status-10');
    expect(digest.summary).toContain('Stripe: 60 status changes, now operational');
  });
});

describe('buildDigest: incidents with part of their story in the period', () => {
  it.each([
    [
      'resolved, opened before the period, upstream start unknown',
      [
        tr('r', 'incident.resolved', 'stripe', '2026-11-18T09:00:00Z', {
          incident: { ...CARDS, started: '1970-01-01T00:00:00Z' },
        }),
      ],
      'Stripe — Card payments failing: resolved Wed 10:00 (opened before this period)',
    ],
    [
      'opened, neither resolved nor still open (its resolution was not routed here)',
      [tr('o', 'incident.opened', 'stripe', '2026-11-18T09:00:00Z', { incident: CARDS })],
      'Stripe — Card payments failing: opened Wed 10:00',
    ],
    [
      'only updated',
      [tr('u', 'incident.updated', 'stripe', '2026-11-18T09:00:00Z', { incident: CARDS })],
      'Stripe — Card payments failing: updated Wed 10:00',
    ],
    [
      'a service without a name shows its feedId',
      [tr('o', 'incident.opened', 'acme', '2026-11-18T09:00:00Z', { incident: CARDS })],
      'acme — Card payments failing: opened Wed 10:00',
    ],
  ])('%s', (_what, transitions, line) => {
    const digest = buildDigest(weekInput({ transitions, stillOpen: [], premium: false }));
    expect(digest.summary).toEqual([line, 'No status changes']);
  });
});

describe('buildDigest: daylight-saving weeks (Europe/Berlin)', () => {
  it('autumn: durations are real time, times are local', () => {
    const opened = tr('o', 'incident.opened', 'stripe', '2026-10-25T00:30:00Z', {
      incident: CARDS,
    }); // 02:30 CEST
    const resolved = tr('r', 'incident.resolved', 'stripe', '2026-10-25T01:15:00Z', {
      incident: CARDS,
    }); // 02:15 CET
    const payouts = tr('p', 'incident.opened', 'adyen', '2026-10-24T21:00:00Z', {
      incident: PAYOUTS,
    }); // Sat 23:00 CEST
    const digest = buildDigest({
      subscription: 'payments',
      from: Date.parse('2026-10-19T06:00:00Z'), // Mon 08:00 CEST
      to: Date.parse('2026-10-26T07:00:00Z'), // Mon 08:00 CET
      transitions: [payouts, opened, resolved],
      stillOpen: [payouts],
      timezone: 'Europe/Berlin',
      premium: false,
    });
    expect(digest.title).toBe('Weekly digest for payments: 19–26 Oct 2026');
    expect(digest.summary).toEqual([
      'Stripe — Card payments failing: opened Sun 02:30, resolved Sun 02:15 (45m)',
      'Adyen — Payouts delayed: still open since Sat 23:00 (1d 10h)',
      'No status changes',
    ]);
    expect(digest.transitions.map((t) => t.id)).toEqual(['p', 'o', 'r']);
  });

  it('spring: an incident across the skipped hour lasted one real hour', () => {
    const digest = buildDigest({
      subscription: 'payments',
      from: Date.parse('2026-03-23T07:00:00Z'), // Mon 08:00 CET
      to: Date.parse('2026-03-30T06:00:00Z'), // Mon 08:00 CEST
      transitions: [
        tr('o', 'incident.opened', 'stripe', '2026-03-29T00:30:00Z', { incident: CARDS }), // 01:30 CET
        tr('r', 'incident.resolved', 'stripe', '2026-03-29T01:30:00Z', { incident: CARDS }), // 03:30 CEST
      ],
      stillOpen: [],
      timezone: 'Europe/Berlin',
      premium: false,
    });
    expect(digest.title).toBe('Weekly digest for payments: 23–30 Mar 2026');
    expect(digest.summary).toEqual([
      'Stripe — Card payments failing: opened Sun 01:30, resolved Sun 03:30 (1h)',
      'No status changes',
    ]);
  });
});

describe('buildDigest: titles', () => {
  it.each([
    [
      'daily at 08:00',
      '2026-11-16T07:00:00Z',
      '2026-11-17T07:00:00Z',
      'Daily digest for payments: 16–17 Nov 2026',
    ],
    [
      'daily at midnight',
      '2026-11-15T23:00:00Z',
      '2026-11-16T23:00:00Z',
      'Daily digest for payments: 16 Nov 2026',
    ],
    [
      'the 23-hour day of spring forward',
      '2026-03-28T23:00:00Z',
      '2026-03-29T22:00:00Z',
      'Daily digest for payments: 29 Mar 2026',
    ],
    [
      'weekly across months',
      '2026-10-26T07:00:00Z',
      '2026-11-02T07:00:00Z',
      'Weekly digest for payments: 26 Oct–2 Nov 2026',
    ],
    [
      'weekly across years',
      '2026-12-28T07:00:00Z',
      '2027-01-04T07:00:00Z',
      'Weekly digest for payments: 28 Dec 2026–4 Jan 2027',
    ],
    [
      'monthly',
      '2026-09-30T22:00:00Z',
      '2026-10-31T23:00:00Z',
      'Monthly digest for payments: 1–31 Oct 2026',
    ],
    [
      'any other length',
      '2026-11-16T07:00:00Z',
      '2026-11-19T07:00:00Z',
      'Digest for payments: 16–19 Nov 2026',
    ],
  ])('%s', (_what, from, to, title) => {
    const digest = buildDigest({
      subscription: 'payments',
      from: Date.parse(from),
      to: Date.parse(to),
      transitions: [],
      stillOpen: [],
      timezone: 'Europe/Berlin',
      premium: false,
    });
    expect(digest.title).toBe(title);
  });
});

describe('formatSpan', () => {
  it.each([
    [0, '<1m'],
    [59_999, '<1m'],
    [-5_000, '<1m'],
    [60_000, '1m'],
    [45 * 60_000, '45m'],
    [90 * 60_000, '1h 30m'],
    [2 * 3600_000, '2h'],
    [86_400_000, '1d'],
    [(26 * 60 + 45) * 60_000, '1d 2h'],
    [(9 * 24 + 14) * 3600_000, '9d 14h'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatSpan(ms)).toBe(text);
  });
});
