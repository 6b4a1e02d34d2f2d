import { describe as group, expect, it } from 'vitest';
import type { EventKind } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import {
  bySeverity,
  changeSummary,
  countLine,
  describe,
  escapeHtml,
  escapeSlackMrkdwn,
  escapeTruncated,
  formatDuration,
  formatMargin,
  formatSeconds,
  formatUtc,
  headerSafe,
  isHttpUrl,
  listHeading,
  listItem,
  listOrder,
  summaryLines,
  TITLE_TEXT_MAX,
  SUMMARY_LINE_MAX,
  truncate,
} from './text.js';
import type { Notification } from './types.js';
import { sampleTransition } from '../commands/samples.js';

function t(kind: EventKind, parts: Partial<Transition> = {}): Transition {
  return {
    id: `t-${kind}`,
    kind,
    feedId: 'svc',
    subject: 'status',
    service: { feedId: 'svc', name: 'Svc', canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current: {},
    incident: null,
    observedAt: 0,
    ...parts,
  };
}

const incident = (title: string, status = 'investigating') => ({
  id: 'i1',
  title,
  status,
  started: 0,
  updateCount: 1,
  latestUpdate: null,
});

group('escapeSlackMrkdwn', () => {
  it.each([
    ['<!channel>', '&lt;!channel&gt;'],
    ['<@U123>', '&lt;@U123&gt;'],
    ['<http://x|y>', '&lt;http://x|y&gt;'],
    ['a & b', 'a &amp; b'],
    ['&lt;', '&amp;lt;'],
    ['plain *bold*', 'plain *bold*'],
  ])('%j → %j', (input, expected) => {
    expect(escapeSlackMrkdwn(input)).toBe(expected);
  });
});

group('escapeHtml', () => {
  it('escapes markup and quotes', () => {
    expect(escapeHtml(`<script>alert("x")</script> & 'y'`)).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;',
    );
  });
});

group('headerSafe', () => {
  it.each([
    ['Subject\r\nBcc: victim@example.com', 'Subject Bcc: victim@example.com'],
    ['a\n\n\tb', 'a b'],
    ['  lead and trail  ', 'lead and trail'],
    ['nul\u0000bell\u0007del\u007fnel\u0085ls\u2028end', 'nul bell del nel ls end'],
    ['Zürich ✓', 'Zürich ✓'],
  ])('%j → %j', (input, expected) => {
    expect(headerSafe(input)).toBe(expected);
    expect(headerSafe(input)).not.toMatch(/[\r\n]/);
  });
});

group('truncate', () => {
  it('keeps short text and cuts long text with an ellipsis', () => {
    expect(truncate('hello', 5)).toBe('hello');
    expect(truncate('hello world', 6)).toBe('hello…');
    expect(truncate('hello world', 6)).toHaveLength(6);
    expect(truncate('x'.repeat(10_000), 3000)).toHaveLength(3000);
  });

  it('never splits a surrogate pair', () => {
    const out = truncate('ab😀cd', 4);
    expect(out).toBe('ab…');
  });

  it('escapeTruncated stays within the limit after escaping and never cuts an entity', () => {
    const out = escapeTruncated('<'.repeat(100), 20, escapeSlackMrkdwn);
    expect(out.length).toBeLessThanOrEqual(20);
    expect(out).toBe(`${'&lt;'.repeat(4)}…`);
    expect(escapeTruncated('a<b', 10, escapeSlackMrkdwn)).toBe('a&lt;b');
  });
});

group('describe', () => {
  it.each<[string, Transition, string]>([
    [
      'incident.opened',
      t('incident.opened', {
        service: { feedId: 'stripe', name: 'Stripe', canonicalUrl: null, officialStatusUrl: null },
        incident: incident('Card payments failing'),
      }),
      'Stripe: incident opened — Card payments failing',
    ],
    [
      'incident.updated',
      t('incident.updated', { incident: incident('Slow API', 'monitoring') }),
      'Svc: incident updated (monitoring) — Slow API',
    ],
    [
      'incident.resolved',
      t('incident.resolved', { incident: incident('Slow API', 'resolved') }),
      'Svc: incident resolved — Slow API',
    ],
    [
      'status.changed',
      t('status.changed', {
        service: { feedId: 'github', name: 'GitHub', canonicalUrl: null, officialStatusUrl: null },
        previous: { status: 'operational' },
        current: { status: 'degraded' },
      }),
      'GitHub: status operational → degraded',
    ],
    [
      'status.changed with underscores',
      t('status.changed', {
        previous: { status: 'degraded' },
        current: { status: 'major_outage' },
      }),
      'Svc: status degraded → major outage',
    ],
    [
      'sla.breached',
      t('sla.breached', {
        service: { feedId: 'adyen', name: 'Adyen', canonicalUrl: null, officialStatusUrl: null },
        previous: { status: 'at_risk' },
        current: { status: 'breached', margin: -0.4 },
      }),
      'Adyen: SLA breached (margin \u22120.40 pp)',
    ],
    [
      'sla.at_risk',
      t('sla.at_risk', { current: { status: 'at_risk', margin: 0.05 } }),
      'Svc: SLA at risk (margin +0.05 pp)',
    ],
    ['sla.recovered', t('sla.recovered', { current: { status: 'met' } }), 'Svc: SLA recovered'],
    [
      'score.dropped',
      t('score.dropped', {
        service: { feedId: 'slack', name: 'Slack', canonicalUrl: null, officialStatusUrl: null },
        previous: { score: 92, grade: 'A' },
        current: { score: 87, grade: 'B', drop: 5 },
      }),
      'Slack: score dropped 92 → 87',
    ],
    [
      'upstream.degraded',
      t('upstream.degraded', {
        service: {
          feedId: 'upstream',
          name: 'Status API',
          canonicalUrl: null,
          officialStatusUrl: null,
        },
        current: { health: 'degraded', reason: 'upstream_server_error' },
      }),
      'Status API: upstream degraded (upstream_server_error)',
    ],
    [
      'upstream.recovered',
      t('upstream.recovered', { current: { health: 'ok', reason: null } }),
      'Svc: upstream recovered',
    ],
    [
      'no name falls back to feedId',
      t('status.changed', {
        service: { feedId: 'svc-x', name: null, canonicalUrl: null, officialStatusUrl: null },
        previous: { status: 'operational' },
        current: { status: 'degraded' },
      }),
      'svc-x: status operational → degraded',
    ],
  ])('%s', (_name, transition, expected) => {
    expect(describe(transition)).toBe(expected);
  });

  it('stays on one line whatever the upstream title holds', () => {
    const line = describe(
      t('incident.opened', { incident: incident('Broken\r\nBcc: x@example.com\n\tagain') }),
    );
    expect(line).toBe('Svc: incident opened — Broken Bcc: x@example.com again');
  });

  it('formats margins with a real minus sign', () => {
    expect(formatMargin(-0.4)).toBe('\u22120.40 pp');
    expect(formatMargin(0)).toBe('0.00 pp');
    expect(formatMargin(-0.001)).toBe('0.00 pp');
  });
});

group('changeSummary', () => {
  it('shows one status when an incident update did not change it', () => {
    const same = t('incident.updated', {
      previous: { status: 'investigating' },
      incident: incident('x'),
    });
    expect(changeSummary(same)).toBe('investigating');
    const moved = t('incident.updated', {
      previous: { status: 'investigating' },
      incident: incident('x', 'monitoring'),
    });
    expect(changeSummary(moved)).toBe('investigating → monitoring');
  });
});

group('bySeverity', () => {
  it('puts problems first and recoveries last, keeping order among equals', () => {
    const list = [
      t('incident.resolved'),
      t('score.dropped'),
      t('incident.opened', { id: 'a' }),
      t('sla.at_risk'),
      t('incident.opened', { id: 'b' }),
    ];
    expect(bySeverity(list).map((x) => x.id)).toEqual([
      'a',
      'b',
      't-sla.at_risk',
      't-score.dropped',
      't-incident.resolved',
    ]);
  });
});

group('isHttpUrl', () => {
  it.each([
    ['https://status.example.com/', true],
    ['http://x.example', true],
    ['javascript:alert(1)', false],
    ['ftp://x.example', false],
    ['not a url', false],
    [null, false],
  ])('%j → %j', (url, expected) => {
    expect(isHttpUrl(url)).toBe(expected);
  });
});

const HOUR = 3_600_000;

function n(transitions: Transition[], parts: Partial<Notification> = {}): Notification {
  return {
    id: 'n1',
    type: 'batch',
    subscription: 'payments',
    channel: 'oncall',
    transitions,
    createdAt: 4 * HOUR,
    ...parts,
  };
}

const stripeOpened = t('incident.opened', {
  service: { feedId: 'stripe', name: 'Stripe', canonicalUrl: null, officialStatusUrl: null },
  incident: incident('Card payments failing'),
  observedAt: 0,
});

group('formatDuration', () => {
  it.each<[number, string | null]>([
    [0, 'less than a minute'],
    [59_999, 'less than a minute'],
    [60_000, '1m'],
    [45 * 60_000, '45m'],
    [4 * HOUR, '4h'],
    [4 * HOUR + 30 * 60_000 + 59_000, '4h 30m'],
    [24 * HOUR, '1d'],
    [51 * HOUR, '2d 3h'],
    [-1, null],
    [Number.NaN, null],
  ])('%d ms → %j', (ms, expected) => {
    expect(formatDuration(ms)).toBe(expected);
  });

  it('formats UTC times to the minute', () => {
    expect(formatUtc(Date.UTC(2026, 0, 1, 22, 15, 59))).toBe('2026-01-01 22:15 UTC');
    expect(formatUtc(Number.NaN)).toBe('unknown time');
  });
});

group('batch-like headings', () => {
  it.each<[string, Notification, 'batch' | 'reminder' | 'catchup' | 'digest', string]>([
    ['batch', n([stripeOpened, stripeOpened]), 'batch', '2 changes for payments'],
    ['batch of one', n([stripeOpened]), 'batch', '1 change for payments'],
    [
      'reminder about one',
      n([stripeOpened], { type: 'reminder' }),
      'reminder',
      'Reminder: still open — Stripe: incident opened — Card payments failing (open for 4h)',
    ],
    [
      'reminder about several',
      n([stripeOpened, stripeOpened], { type: 'reminder' }),
      'reminder',
      'Reminder: 2 still open for payments',
    ],
    [
      'catch-up',
      n([stripeOpened, stripeOpened, stripeOpened], { type: 'catchup' }),
      'catchup',
      'Quiet hours ended: 3 notifications held',
    ],
    [
      'catch-up of one',
      n([stripeOpened], { type: 'catchup' }),
      'catchup',
      'Quiet hours ended: 1 notification held',
    ],
    ['digest', n([stripeOpened], { type: 'digest' }), 'digest', 'Digest for payments: 1 change'],
    ['empty digest', n([], { type: 'digest' }), 'digest', 'Digest for payments: no changes'],
    [
      'a title wins',
      n([stripeOpened], { type: 'reminder', title: 'Weekly\r\nreport' }),
      'reminder',
      'Weekly report',
    ],
    ['a blank title is no title', n([], { title: ' \n ' }), 'batch', '0 changes for payments'],
  ])('%s', (_name, notification, type, expected) => {
    expect(listHeading(type, notification)).toBe(expected);
  });

  it('keeps the count line even when a title is given', () => {
    expect(countLine('batch', n([stripeOpened], { title: 'Storm' }))).toBe('1 change for payments');
  });

  it('bounds and flattens title and summary lines', () => {
    const long = n([], { title: 'x'.repeat(5000), summary: ['a\r\nb', '', 'y'.repeat(9000)] });
    expect(listHeading('digest', long)).toHaveLength(TITLE_TEXT_MAX);
    expect(summaryLines(long)).toEqual(['a b', `${'y'.repeat(SUMMARY_LINE_MAX - 1)}…`]);
  });

  it('says how long a reminded transition has been open and when catch-up items happened', () => {
    const opened = { ...stripeOpened, observedAt: Date.UTC(2026, 0, 1, 8, 0) };
    const createdAt = Date.UTC(2026, 0, 1, 12, 30);
    expect(listItem('reminder', opened, createdAt)).toBe(
      'Stripe: incident opened — Card payments failing (open for 4h 30m)',
    );
    expect(listItem('catchup', opened, createdAt)).toBe(
      'Stripe: incident opened — Card payments failing (2026-01-01 08:00 UTC)',
    );
    expect(listItem('batch', opened, createdAt)).toBe(
      'Stripe: incident opened — Card payments failing',
    );
    // A clock skew never renders a negative duration.
    expect(listItem('reminder', opened, opened.observedAt - 1)).toBe(
      'Stripe: incident opened — Card payments failing',
    );
  });

  it('keeps a catch-up in the given order and sorts the others most severe first', () => {
    const list = [t('incident.resolved', { id: 'r' }), t('incident.opened', { id: 'o' })];
    expect(listOrder('catchup', list).map((x) => x.id)).toEqual(['r', 'o']);
    for (const type of ['batch', 'reminder', 'digest'] as const) {
      expect(listOrder(type, list).map((x) => x.id)).toEqual(['o', 'r']);
    }
  });
});

group('early warnings and reopenings, in words', () => {
  const now = Date.UTC(2026, 10, 26, 8, 0, 0);
  it.each([
    [
      'sla.forecast',
      'Stripe: SLA breach projected in about 2d at the current burn rate (margin +0.12 pp)',
    ],
    ['score.trend', 'Stripe: score falling 91 → 80.5 over 7d'],
  ] as const)('%s', (kind, line) => {
    expect(describe(sampleTransition(kind, now))).toBe(line);
  });

  it('a reopened incident says so', () => {
    const updated = sampleTransition('incident.updated', now);
    expect(
      describe({
        ...updated,
        current: { ...updated.current, status: 'investigating', reopened: true },
        incident:
          updated.incident === null ? null : { ...updated.incident, status: 'investigating' },
      }),
    ).toBe('Stripe: incident reopened (investigating) — Elevated API error rates');
  });

  it.each([
    [45, '45s'],
    [20 * 60, '20m'],
    [36 * 3600, '36h'],
    [7 * 86_400, '7d'],
    [3 * 86_400 + 4 * 3600, '3d 4h'],
  ])('formatSeconds(%d) = %s', (seconds, text) => {
    expect(formatSeconds(seconds)).toBe(text);
  });
});
