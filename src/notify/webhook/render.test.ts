import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import { decodeWebhookSecret } from './config.js';
import {
  renderWebhookBody,
  renderWebhookRequest,
  signWebhook,
  webhookEventData,
  webhookPayload,
} from './render.js';

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const KEY = decodeWebhookSecret(SECRET)!;

describe('webhook render', () => {
  it('builds the documented body for one event', () => {
    const t = transition('incident.opened');
    const payload = webhookPayload(notification([t]));
    expect(payload).toEqual({
      type: 'incident.opened',
      timestamp: '2026-01-01T12:00:05.000Z',
      data: {
        eventId: t.id,
        kind: 'incident.opened',
        subscription: 'payments',
        service: {
          feedId: 'stripe',
          name: 'Stripe',
          canonicalUrl: 'https://stripe.com/',
          officialStatusUrl: 'https://status.stripe.com/',
        },
        previous: null,
        current: { status: 'investigating', updateCount: 1 },
        incident: t.incident,
        observedAt: '2026-01-01T12:00:00.000Z',
      },
    });
  });

  it('builds batch and test bodies', () => {
    const batch = webhookPayload(
      notification(
        [transition('incident.opened'), transition('sla.breached', { incident: null })],
        { type: 'batch' },
      ),
    );
    expect(batch.type).toBe('batch');
    expect(batch.data).toMatchObject({
      subscription: 'payments',
      count: 2,
      title: '2 changes for payments',
    });
    expect('events' in batch.data && batch.data.events.map((e) => e.kind)).toEqual([
      'incident.opened',
      'sla.breached',
    ]);
    expect(webhookPayload(notification([transition()], { type: 'test' })).type).toBe('test');
  });

  it('signs "{id}.{timestamp}.{body}" with HMAC-SHA256 of the decoded secret', () => {
    const expected = createHmac('sha256', KEY).update('msg_1.1767268800.{"a":1}').digest('base64');
    expect(signWebhook('msg_1', 1_767_268_800, '{"a":1}', KEY)).toBe(`v1,${expected}`);
  });

  it('produces headers the official Standard Webhooks library verifies', () => {
    const n = notification([transition()]);
    const { body, headers } = renderWebhookRequest(n, KEY, Date.now(), {
      Authorization: 'Bearer x',
    });
    expect(body).toBe(renderWebhookBody(n));
    expect(headers['webhook-id']).toBe(n.id);
    expect(headers['content-type']).toBe('application/json');
    expect(headers.authorization).toBe('Bearer x');
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('sends a configured header whatever its name, __proto__ too', () => {
    const { headers } = renderWebhookRequest(notification([transition()]), KEY, Date.now(), {
      __PROTO__: 'p',
      constructor: 'c',
    });
    expect(Object.entries(headers)).toContainEqual(['__proto__', 'p']);
    expect(Object.entries(headers)).toContainEqual(['constructor', 'c']);
  });

  it('uses the attempt time for webhook-timestamp and keeps webhook-id', () => {
    const n = notification([transition()]);
    const a = renderWebhookRequest(n, KEY, 1_767_268_800_999);
    const b = renderWebhookRequest(n, KEY, 1_767_268_900_000);
    expect(a.headers['webhook-timestamp']).toBe('1767268800');
    expect(b.headers['webhook-timestamp']).toBe('1767268900');
    expect(a.headers['webhook-id']).toBe(b.headers['webhook-id']);
    expect(a.body).toBe(b.body);
  });
});

describe('webhook render for batch-like notifications', () => {
  it('a 40-transition batch is ONE body naming all 40 services in the given order', () => {
    const transitions = manyServices(40);
    const n = notification(transitions, { type: 'batch' });
    const body = JSON.parse(renderWebhookBody(n)) as unknown;
    expect(body).toEqual({
      type: 'batch',
      timestamp: '2026-01-01T12:00:05.000Z',
      data: {
        subscription: 'payments',
        count: 40,
        title: '40 changes for payments',
        events: transitions.map((t) => webhookEventData(t, 'payments')),
      },
    });
    const payload = webhookPayload(n);
    expect('events' in payload.data && payload.data.events.map((e) => e.service.name)).toEqual(
      Array.from({ length: 40 }, (_, i) => `Service ${String(i).padStart(2, '0')}`),
    );
    expect('events' in payload.data && payload.data.events[0]).toMatchObject({
      eventId: 'tsvc000123456789abcdef',
      kind: 'status.changed',
      previous: { status: 'operational' },
      current: { status: 'major_outage' },
      observedAt: '2026-01-01T11:00:00.000Z',
    });
  });

  it('a batch carries its title when given', () => {
    const payload = webhookPayload(
      notification(manyServices(2), { type: 'batch', title: 'Storm at payments' }),
    );
    expect(payload).toMatchObject({
      type: 'batch',
      data: { count: 2, title: 'Storm at payments' },
    });
  });

  it('a reminder is type "reminder" with data.events', () => {
    const t = transition('incident.opened');
    const payload = webhookPayload(
      notification([t], { type: 'reminder', createdAt: Date.UTC(2026, 0, 1, 16, 0) }),
    );
    expect(payload).toEqual({
      type: 'reminder',
      timestamp: '2026-01-01T16:00:00.000Z',
      data: {
        subscription: 'payments',
        count: 1,
        title:
          'Reminder: still open — Stripe: incident opened — Card payments failing (open for 4h)',
        events: [webhookEventData(t, 'payments')],
      },
    });
  });

  it('a catch-up is type "catchup" with data.events in the given order', () => {
    const opened = transition('incident.opened', { id: 'o' });
    const resolved = transition('incident.resolved', { id: 'r' });
    const payload = webhookPayload(notification([opened, resolved], { type: 'catchup' }));
    expect(payload.type).toBe('catchup');
    expect(payload.data).toMatchObject({
      count: 2,
      title: 'Quiet hours ended: 2 notifications held',
    });
    expect('events' in payload.data && payload.data.events.map((e) => e.eventId)).toEqual([
      'o',
      'r',
    ]);
  });

  it('a digest is type "digest" with data.title, data.summary and data.events', () => {
    const transitions = manyServices(3);
    const payload = webhookPayload(
      notification(transitions, {
        type: 'digest',
        title: 'Weekly digest',
        summary: ['Incidents: 3 opened', '', 'Still open:\nStripe'],
      }),
    );
    expect(payload).toEqual({
      type: 'digest',
      timestamp: '2026-01-01T12:00:05.000Z',
      data: {
        subscription: 'payments',
        count: 3,
        title: 'Weekly digest',
        summary: ['Incidents: 3 opened', 'Still open: Stripe'],
        events: transitions.map((t) => webhookEventData(t, 'payments')),
      },
    });
  });

  it('an empty digest still has a title, its summary and no events', () => {
    const payload = webhookPayload(notification([], { type: 'digest', summary: ['Quiet week'] }));
    expect(payload).toMatchObject({
      type: 'digest',
      data: {
        count: 0,
        title: 'Digest for payments: no changes',
        summary: ['Quiet week'],
        events: [],
      },
    });
  });

  it('hostile title and summary are data: one line, bounded, the body valid and verifiable', () => {
    const n = notification(manyServices(2), {
      type: 'digest',
      title: `${HOSTILE_HEADING}${'t'.repeat(5000)}`,
      summary: [HOSTILE_HEADING, `"},"type":"event" ${'s'.repeat(10_000)}`],
    });
    const { body, headers } = renderWebhookRequest(n, KEY, Date.now());
    const parsed = JSON.parse(body) as { type: string; data: { title: string; summary: string[] } };
    expect(parsed.type).toBe('digest');
    expect(parsed.data.title).toHaveLength(1000);
    expect(parsed.data.title.startsWith('<!channel> Digest <@U123>')).toBe(true);
    expect(parsed.data.title).not.toMatch(/[\r\n]/);
    expect(parsed.data.summary[0]).toBe(
      '<!channel> Digest <@U123> <https://evil.example|click> <script>alert(1)</script> Bcc: victim@example.com',
    );
    expect(parsed.data.summary[1]).toHaveLength(2000);
    expect(parsed.data.summary[1]?.startsWith('"},"type":"event" sss')).toBe(true);
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(parsed);
  });
});
