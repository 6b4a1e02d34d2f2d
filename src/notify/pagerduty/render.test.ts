import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  HOSTILE_TITLE,
  hostileTransition,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import type { Transition } from '../../diff/transition.js';
import type { Notification } from '../types.js';
import {
  defaultSeverity,
  pagerdutyAction,
  renderPagerduty,
  SUMMARY_MAX,
  type PagerdutyAlertEvent,
  type PagerdutyChangeEvent,
  type PagerdutyRenderOptions,
  type PagerdutyRequest,
} from './render.js';

const KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 7);
const OPTIONS: PagerdutyRenderOptions = { routingKey: KEY };

function render(
  n: Notification,
  options: Partial<PagerdutyRenderOptions> = {},
): PagerdutyRequest[] {
  return renderPagerduty(n, { ...OPTIONS, ...options }, NOW);
}

function alert(request: PagerdutyRequest | undefined): PagerdutyAlertEvent {
  expect(request?.endpoint).toBe('enqueue');
  return request!.body as PagerdutyAlertEvent;
}

function change(request: PagerdutyRequest | undefined): PagerdutyChangeEvent {
  expect(request?.endpoint).toBe('change');
  return request!.body;
}

const LINKS = [
  { href: 'https://status.stripe.com/', text: 'Official status page' },
  { href: 'https://stripe.com/', text: 'Service page' },
];

const opened = transition('incident.opened');
const updated = transition('incident.updated', {
  current: { status: 'identified', updateCount: 2 },
  incident: {
    id: 'inc-1',
    title: 'Card payments failing',
    status: 'identified',
    started: 1_767_225_600,
    updateCount: 2,
    latestUpdate: 'The issue has been identified.\nA fix is being deployed.',
  },
  observedAt: Date.UTC(2026, 0, 1, 12, 10, 0),
});
const resolved = transition('incident.resolved', {
  observedAt: Date.UTC(2026, 0, 1, 12, 30, 0),
});

describe('pagerduty render: an incident lifecycle', () => {
  it('renders incident.opened as the exact documented trigger event', () => {
    const n = notification([opened]);
    const requests = render(n);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toEqual({
      endpoint: 'enqueue',
      body: {
        routing_key: KEY,
        event_action: 'trigger',
        dedup_key: 'statuswatch:stripe:incident:inc-1',
        client: 'statuswatch',
        payload: {
          summary: '[statuswatch] Stripe: incident opened — Card payments failing',
          source: 'status.stripe.com',
          severity: 'error',
          timestamp: '2026-01-01T12:00:00.000Z',
          component: 'stripe',
          group: 'payments',
          class: 'incident.opened',
          custom_details: {
            event: 'incident.opened',
            service: 'Stripe',
            feed_id: 'stripe',
            subscription: 'payments',
            change: 'investigating',
            previous: null,
            current: { status: 'investigating', updateCount: 1 },
            incident: {
              id: 'inc-1',
              title: 'Card payments failing',
              status: 'investigating',
              started: '2026-01-01T00:00:00.000Z',
              update_count: 1,
              latest_update: 'We are investigating elevated error rates.',
            },
            observed_at: '2026-01-01T12:00:00.000Z',
            transition_id: opened.id,
            delivery_id: n.id,
          },
        },
        links: LINKS,
      },
    });
  });

  it('renders incident.updated as a trigger that updates the same alert', () => {
    const n = notification([updated]);
    const body = alert(render(n)[0]);
    expect(body).toEqual({
      routing_key: KEY,
      event_action: 'trigger',
      dedup_key: 'statuswatch:stripe:incident:inc-1',
      client: 'statuswatch',
      payload: {
        summary: '[statuswatch] Stripe: incident updated (identified) — Card payments failing',
        source: 'status.stripe.com',
        severity: 'error',
        timestamp: '2026-01-01T12:10:00.000Z',
        component: 'stripe',
        group: 'payments',
        class: 'incident.updated',
        custom_details: {
          event: 'incident.updated',
          service: 'Stripe',
          feed_id: 'stripe',
          subscription: 'payments',
          change: 'investigating → identified',
          previous: { status: 'investigating', updateCount: 1 },
          current: { status: 'identified', updateCount: 2 },
          incident: {
            id: 'inc-1',
            title: 'Card payments failing',
            status: 'identified',
            started: '2026-01-01T00:00:00.000Z',
            update_count: 2,
            latest_update: 'The issue has been identified.\nA fix is being deployed.',
          },
          observed_at: '2026-01-01T12:10:00.000Z',
          transition_id: updated.id,
          delivery_id: n.id,
        },
      },
      links: LINKS,
    });
  });

  it('renders incident.resolved as a resolve event', () => {
    const n = notification([resolved]);
    const body = alert(render(n)[0]);
    expect(body).toEqual({
      routing_key: KEY,
      event_action: 'resolve',
      dedup_key: 'statuswatch:stripe:incident:inc-1',
      client: 'statuswatch',
      payload: {
        summary: '[statuswatch] Stripe: incident resolved — Card payments failing',
        source: 'status.stripe.com',
        severity: 'info',
        timestamp: '2026-01-01T12:30:00.000Z',
        component: 'stripe',
        group: 'payments',
        class: 'incident.resolved',
        custom_details: {
          event: 'incident.resolved',
          service: 'Stripe',
          feed_id: 'stripe',
          subscription: 'payments',
          change: 'investigating → resolved',
          previous: { status: 'investigating', updateCount: 1 },
          current: { status: 'investigating', updateCount: 1 },
          incident: {
            id: 'inc-1',
            title: 'Card payments failing',
            status: 'resolved',
            started: '2026-01-01T00:00:00.000Z',
            update_count: 1,
            latest_update: 'We are investigating elevated error rates.',
          },
          observed_at: '2026-01-01T12:30:00.000Z',
          transition_id: resolved.id,
          delivery_id: n.id,
        },
      },
      links: LINKS,
    });
  });

  it('gives opened, updated and resolved of one incident one dedup_key, from content only', () => {
    const keys = [opened, updated, resolved].map(
      (t) => alert(render(notification([t]))[0]).dedup_key,
    );
    expect(new Set(keys).size).toBe(1);
    // Another subscription, channel and delivery: the same episode, the same key.
    const other = render(
      notification([opened], { id: 'x:ops:pd', subscription: 'ops', channel: 'pd' }),
    );
    expect(alert(other[0]).dedup_key).toBe(keys[0]);
    // Another incident of the same service: another key.
    const second = transition('incident.opened', { subject: 'incident:inc-2' });
    expect(alert(render(notification([second]))[0]).dedup_key).not.toBe(keys[0]);
  });

  it('keeps a dedup_key within 255 characters for a very long subject, still distinct', () => {
    const long = (suffix: string): Transition =>
      transition('incident.opened', { subject: `incident:${'x'.repeat(400)}${suffix}` });
    const a = alert(render(notification([long('a')]))[0]).dedup_key;
    const b = alert(render(notification([long('b')]))[0]).dedup_key;
    expect(a.length).toBeLessThanOrEqual(255);
    expect(b.length).toBeLessThanOrEqual(255);
    expect(a).not.toBe(b);
  });
});

describe('pagerduty render: limits and hostile text', () => {
  it('cuts a summary built from a 10,000-character title to at most 1024 characters', () => {
    const t = transition('incident.opened', {
      incident: { ...opened.incident!, title: 'T'.repeat(10_000) },
    });
    const { summary } = alert(render(notification([t]))[0]).payload;
    expect(summary.length).toBeLessThanOrEqual(SUMMARY_MAX);
    expect(summary.startsWith('[statuswatch] Stripe: incident opened — TTT')).toBe(true);
    expect(summary.endsWith('…')).toBe(true);
  });

  it('keeps hostile upstream text as plain text: one line, no control characters, nothing escaped', () => {
    const t = hostileTransition();
    const body = alert(render(notification([t]))[0]);
    const { summary, custom_details: details } = body.payload;
    expect(summary).toBe(
      `[statuswatch] <!here> Stripe & <@U999>: incident opened — ${HOSTILE_TITLE.replace('\r\n', ' ')}`,
    );
    // eslint-disable-next-line no-control-regex
    expect(summary).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(summary).not.toContain('&lt;');
    const incident = details['incident'] as { title: string; latest_update: string };
    expect(incident.title).toBe(HOSTILE_TITLE.replace('\r\n', ' '));
    expect(incident.latest_update.length).toBeLessThanOrEqual(2000);
    expect(incident.latest_update.startsWith('<!channel> <!channel>')).toBe(true);
    const current = details['current'] as { summary: string };
    expect(current.summary.length).toBeLessThanOrEqual(2000);
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(512 * 1024);
  });

  it('drops control characters from multi-line text but keeps its line breaks', () => {
    const t = transition('incident.updated', {
      incident: { ...opened.incident!, latestUpdate: 'line one\r\nline\u0007 two\u0000\u001b[31m' },
    });
    const details = alert(render(notification([t]))[0]).payload.custom_details;
    expect((details['incident'] as { latest_update: string }).latest_update).toBe(
      'line one\nline two[31m',
    );
  });

  it('links only http(s) addresses and falls back to the feed id as source', () => {
    const t = transition('status.changed', {
      service: {
        feedId: 'acme',
        name: 'Acme',
        canonicalUrl: 'javascript:alert(1)',
        officialStatusUrl: null,
      },
      feedId: 'acme',
      previous: { status: 'operational' },
      current: { status: 'major_outage' },
    });
    const body = alert(render(notification([t]))[0]);
    expect(body.links).toEqual([]);
    expect(body.payload.source).toBe('acme');
  });
});

describe('pagerduty render: event kinds', () => {
  it('records score.dropped as a change event (not a page)', () => {
    const t = transition('score.dropped', {
      subject: 'score',
      previous: { score: 92 },
      current: { score: 87 },
    });
    const n = notification([t]);
    const requests = render(n);
    expect(requests).toHaveLength(1);
    expect(change(requests[0])).toEqual({
      routing_key: KEY,
      payload: {
        summary: '[statuswatch] Stripe: score dropped 92 → 87',
        source: 'status.stripe.com',
        timestamp: '2026-01-01T12:00:00.000Z',
        custom_details: {
          event: 'score.dropped',
          service: 'Stripe',
          feed_id: 'stripe',
          subscription: 'payments',
          change: '92 → 87',
          previous: { score: 92 },
          current: { score: 87 },
          observed_at: '2026-01-01T12:00:00.000Z',
          transition_id: t.id,
          delivery_id: n.id,
        },
      },
      links: LINKS,
    });
  });

  it('pages on an informational kind listed in `page`', () => {
    const t = transition('score.dropped', { previous: { score: 92 }, current: { score: 87 } });
    const body = alert(render(notification([t]), { page: ['score.dropped'] })[0]);
    expect(body.event_action).toBe('trigger');
    expect(body.payload.severity).toBe('warning');
    expect(change(render(notification([t]), { page: ['sla.forecast'] })[0]).payload.summary).toBe(
      '[statuswatch] Stripe: score dropped 92 → 87',
    );
  });

  it.each<[string, Transition, 'trigger' | 'resolve' | 'change', string]>([
    ['incident.opened', opened, 'trigger', 'error'],
    ['incident.updated', updated, 'trigger', 'error'],
    [
      'incident.updated (reopened)',
      transition('incident.updated', { current: { status: 'investigating', reopened: true } }),
      'trigger',
      'error',
    ],
    ['incident.resolved', resolved, 'resolve', 'info'],
    [
      'status.changed → major_outage',
      transition('status.changed', { current: { status: 'major_outage' } }),
      'trigger',
      'error',
    ],
    [
      'status.changed → degraded',
      transition('status.changed', { current: { status: 'degraded' } }),
      'trigger',
      'warning',
    ],
    [
      'status.changed → operational',
      transition('status.changed', { current: { status: 'operational' } }),
      'resolve',
      'info',
    ],
    ['sla.at_risk', transition('sla.at_risk', { subject: 'sla' }), 'trigger', 'warning'],
    ['sla.breached', transition('sla.breached', { subject: 'sla' }), 'trigger', 'critical'],
    ['sla.recovered', transition('sla.recovered', { subject: 'sla' }), 'resolve', 'info'],
    ['upstream.degraded', transition('upstream.degraded'), 'trigger', 'warning'],
    ['upstream.recovered', transition('upstream.recovered'), 'resolve', 'info'],
    ['sla.forecast', transition('sla.forecast'), 'change', 'warning'],
    ['score.trend', transition('score.trend'), 'change', 'warning'],
  ])('%s → %s, default severity %s', (_name, t, action, severity) => {
    expect(pagerdutyAction(t)).toBe(action);
    expect(defaultSeverity(t)).toBe(severity);
  });

  it('takes a configured severity over the default', () => {
    const t = transition('status.changed', { current: { status: 'degraded' } });
    const body = alert(
      render(notification([t]), { severity: { 'status.changed': 'critical' } })[0],
    );
    expect(body.payload.severity).toBe('critical');
    expect(
      alert(render(notification([opened]), { severity: { 'sla.breached': 'info' } })[0]).payload
        .severity,
    ).toBe('error');
  });

  it('sends every transition of a batch, in the order they happened', () => {
    // A batch lists the most severe first; PagerDuty must see an opening before its resolution.
    const later = transition('incident.opened', {
      id: 'tlater',
      subject: 'incident:inc-9',
      observedAt: Date.UTC(2026, 0, 1, 12, 20, 0),
    });
    const n = notification([later, resolved, opened, manyServices(2)[1]!], { type: 'batch' });
    const requests = render(n);
    expect(requests.map((r) => (r.endpoint === 'change' ? 'change' : r.body.event_action))).toEqual(
      ['change', 'trigger', 'trigger', 'resolve'],
    );
    expect(requests.slice(1).map((r) => (r.body as PagerdutyAlertEvent).dedup_key)).toEqual([
      'statuswatch:stripe:incident:inc-1',
      'statuswatch:stripe:incident:inc-9',
      'statuswatch:stripe:incident:inc-1',
    ]);
  });

  it('sends each transition of a catch-up the same way', () => {
    const n = notification([opened, resolved], { type: 'catchup', title: 'Quiet hours ended' });
    expect(render(n).map((r) => alert(r).event_action)).toEqual(['trigger', 'resolve']);
  });
});

describe('pagerduty render: notification types', () => {
  it('sends nothing for a reminder (PagerDuty escalates by itself)', () => {
    expect(render(notification([opened], { type: 'reminder' }))).toEqual([]);
  });

  it('sends a digest as one change event with its heading and summary lines', () => {
    const n = notification(manyServices(3), {
      type: 'digest',
      title: HOSTILE_HEADING,
      summary: ['Incidents: 1 opened', 'Still open:\r\n2'],
    });
    const requests = render(n);
    expect(requests).toHaveLength(1);
    const body = change(requests[0]);
    expect(body.payload.summary).toBe(`[statuswatch] ${HOSTILE_HEADING.replace('\r\n', ' ')}`);
    expect(body.payload.source).toBe('statuswatch');
    expect(body.payload.timestamp).toBe('2026-01-01T12:00:05.000Z');
    expect(body.payload.custom_details).toMatchObject({
      subscription: 'payments',
      summary: ['Incidents: 1 opened', 'Still open: 2'],
      changes_total: 3,
      delivery_id: n.id,
    });
    expect(body.payload.custom_details['changes']).toHaveLength(3);
  });

  it('sends notify-test as a trigger and a resolve under statuswatch:test:<id>', () => {
    const n = notification([opened], { type: 'test', id: 'test-123:payments:pd' });
    const requests = render(n);
    expect(requests).toHaveLength(2);
    const [trigger, resolve] = requests.map(alert);
    expect(trigger?.event_action).toBe('trigger');
    expect(resolve?.event_action).toBe('resolve');
    expect(trigger?.dedup_key).toBe('statuswatch:test:test-123:payments:pd');
    expect(resolve?.dedup_key).toBe(trigger?.dedup_key);
    expect(trigger?.payload).toMatchObject({
      severity: 'info',
      source: 'statuswatch',
      class: 'test',
      timestamp: new Date(NOW).toISOString(),
    });
    expect(trigger?.payload.summary).toBe(
      '[statuswatch] Test notification for channel oncall (subscription payments) — sample: Stripe: incident opened — Card payments failing',
    );
  });
});
