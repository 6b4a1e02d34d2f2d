import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { notification, transition } from '../../../test/notify-helpers.js';
import { decodeWebhookSecret } from './config.js';
import { renderWebhookBody, renderWebhookRequest, signWebhook, webhookPayload } from './render.js';

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
    expect(batch.data).toMatchObject({ subscription: 'payments', count: 2 });
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
