import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { webhookChannelConfigSchema } from '../src/notify/webhook/config.js';
import { createWebhookNotifier } from '../src/notify/webhook/index.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  refusedUrl,
  startReceiver,
  transition,
  type ReceivedRequest,
  type Receiver,
  type Reply,
} from './notify-helpers.js';

const SECRET = `whsec_${Buffer.from('statuswatch-test-signing-key-32b').toString('base64')}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  reply?: (req: ReceivedRequest, index: number) => Reply,
  extra: Record<string, unknown> = {},
): Promise<{ receiver: Receiver; notifier: Notifier }> {
  const receiver = await startReceiver(reply, '/statuswatch?token=receiver-token-123');
  const config = webhookChannelConfigSchema.parse({
    type: 'webhook',
    url: receiver.url,
    secret: SECRET,
    ...extra,
  });
  const notifier = createWebhookNotifier(config);
  cleanups.push(
    () => receiver.close(),
    () => notifier.close(),
  );
  return { receiver, notifier };
}

function verify(request: ReceivedRequest): unknown {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers[name] = value;
  }
  return new Webhook(SECRET).verify(request.body, headers);
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

describe('webhook notifier against a local receiver', () => {
  it('POSTs a Standard Webhooks request the official library verifies', async () => {
    const { receiver, notifier } = await setup(undefined, {
      headers: { Authorization: 'Bearer rcv-token', 'X-Team': 'sre' },
    });
    const t = transition('incident.opened');
    const n = notification([t]);
    const before = Math.floor(Date.now() / 1000);
    await notifier.send(n);
    const [request] = await receiver.waitFor(1);
    expect(receiver.received).toHaveLength(1);
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/statuswatch?token=receiver-token-123');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['webhook-id']).toBe(n.id);
    expect(Number(request?.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(request?.headers['webhook-timestamp'])).toBeLessThanOrEqual(
      Math.floor(Date.now() / 1000),
    );
    expect(request?.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(request?.headers.authorization).toBe('Bearer rcv-token');
    expect(request?.headers['x-team']).toBe('sre');
    const body = verify(request!) as {
      type: string;
      timestamp: string;
      data: Record<string, unknown>;
    };
    expect(body.type).toBe('incident.opened');
    expect(body.timestamp).toBe('2026-01-01T12:00:05.000Z');
    expect(body.data).toMatchObject({
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
      incident: { id: 'inc-1', title: 'Card payments failing' },
      observedAt: '2026-01-01T12:00:00.000Z',
    });
  });

  it('resends the same notification with the same webhook-id and a valid signature each time', async () => {
    const { receiver, notifier } = await setup((_req, index) =>
      index === 0 ? { status: 503 } : { status: 204 },
    );
    const n = notification([
      transition('sla.breached', { incident: null, current: { status: 'breached', margin: -0.4 } }),
    ]);
    const first = await failure(notifier.send(n));
    expect(first).toMatchObject({ retryable: true, reason: 'server', httpStatus: 503 });
    await notifier.send(n);
    const requests = await receiver.waitFor(2);
    expect(requests).toHaveLength(2);
    expect(requests[0]?.headers['webhook-id']).toBe(n.id);
    expect(requests[1]?.headers['webhook-id']).toBe(n.id);
    expect(requests[0]?.body).toBe(requests[1]?.body);
    for (const request of requests) expect(verify(request)).toMatchObject({ type: 'sla.breached' });
  });

  it('sends a batch with data.events, verified', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(
      notification(
        [transition('incident.opened'), transition('score.dropped', { incident: null })],
        { type: 'batch' },
      ),
    );
    const [request] = await receiver.waitFor(1);
    const body = verify(request!) as { type: string; data: { events: { kind: string }[] } };
    expect(body.type).toBe('batch');
    expect(body.data.events.map((e) => e.kind)).toEqual(['incident.opened', 'score.dropped']);
  });

  it('delivers a 40-transition batch as ONE signed request naming all 40 services', async () => {
    const { receiver, notifier } = await setup();
    const n = notification(manyServices(40), { type: 'batch' });
    await notifier.send(n);
    const [request] = await receiver.waitFor(1);
    expect(receiver.received).toHaveLength(1);
    expect(request?.headers['webhook-id']).toBe(n.id);
    const body = verify(request!) as {
      type: string;
      data: { count: number; title: string; events: { service: { feedId: string } }[] };
    };
    expect(body.type).toBe('batch');
    expect(body.data.count).toBe(40);
    expect(body.data.title).toBe('40 changes for payments');
    expect(body.data.events.map((e) => e.service.feedId)).toEqual(
      Array.from({ length: 40 }, (_, i) => `svc-${String(i).padStart(2, '0')}`),
    );
  });

  it.each(['reminder', 'catchup', 'digest'] as const)(
    'delivers a %s with hostile title and summary as verified JSON data',
    async (type) => {
      const { receiver, notifier } = await setup();
      await notifier.send(
        notification(manyServices(2), {
          type,
          title: HOSTILE_HEADING,
          summary: ['Incidents: 1 opened', HOSTILE_HEADING],
        }),
      );
      const [request] = await receiver.waitFor(1);
      const body = verify(request!) as {
        type: string;
        data: { title: string; summary?: string[]; events: { eventId: string }[] };
      };
      const flat = HOSTILE_HEADING.replace('\r\n', ' ');
      expect(body.type).toBe(type);
      expect(body.data.title).toBe(flat);
      expect(body.data.events.map((e) => e.eventId)).toEqual([
        'tsvc000123456789abcdef',
        'tsvc010123456789abcdef',
      ]);
      expect(body.data.summary).toEqual(
        type === 'digest' ? ['Incidents: 1 opened', flat] : undefined,
      );
    },
  );

  it('carries hostile text as JSON data, intact and verified', async () => {
    const { receiver, notifier } = await setup();
    const t = hostileTransition();
    await notifier.send(notification([t]));
    const [request] = await receiver.waitFor(1);
    const body = verify(request!) as { data: { incident: { title: string } } };
    expect(body.data.incident.title).toBe(t.incident?.title);
  });

  it.each<[string, Reply, Partial<DeliveryError>]>([
    [
      '500',
      { status: 500 },
      { retryable: true, reason: 'server', httpStatus: 500, retryAfterMs: null },
    ],
    [
      '429 + Retry-After: 7',
      { status: 429, headers: { 'retry-after': '7' } },
      { retryable: true, reason: 'rate_limited', retryAfterMs: 7000 },
    ],
    ['408', { status: 408 }, { retryable: true, reason: 'timeout', httpStatus: 408 }],
    ['404', { status: 404 }, { retryable: false, reason: 'client', httpStatus: 404 }],
    ['400', { status: 400 }, { retryable: false, reason: 'client', httpStatus: 400 }],
    ['401', { status: 401 }, { retryable: false, reason: 'auth', httpStatus: 401 }],
    [
      '302',
      { status: 302, headers: { location: 'http://127.0.0.1:1/' } },
      { retryable: false, reason: 'client', httpStatus: 302 },
    ],
  ])('receiver answering %s → %o', async (_name, reply, expected) => {
    const { receiver, notifier } = await setup(() => reply);
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject(expected);
    expect(receiver.received).toHaveLength(1);
  });

  it('a refused connection is a retryable network failure', async () => {
    const config = webhookChannelConfigSchema.parse({
      type: 'webhook',
      url: await refusedUrl('/x?token=abc'),
      secret: SECRET,
    });
    const notifier = createWebhookNotifier(config);
    cleanups.push(() => notifier.close());
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'network', httpStatus: null });
    expect(error.message).toContain('could not reach the receiver');
    expect(error.message).not.toContain('refused');
    expect(error.detail).toContain('ECONNREFUSED');
  });

  it('a receiver that never answers times out after timeoutMs, retryable', async () => {
    const { receiver, notifier } = await setup(() => ({ status: 200, hang: true }), {
      timeoutMs: 300,
    });
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    expect(receiver.received).toHaveLength(1);
  });

  it('a 200 whose body dribbles for ever is a success within timeoutMs, not a held slot', async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests += 1;
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        // One byte every 100 ms: never idle for bodyTimeout, never done.
        const drip = setInterval(() => res.write('.'), 100);
        res.on('close', () => {
          clearInterval(drip);
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    });
    const { port } = server.address() as AddressInfo;
    const notifier = createWebhookNotifier(
      webhookChannelConfigSchema.parse({
        type: 'webhook',
        url: `http://127.0.0.1:${String(port)}/hook`,
        secret: SECRET,
        timeoutMs: 400,
      }),
    );
    cleanups.push(() => notifier.close());

    const started = Date.now();
    await notifier.send(notification([transition()]));

    expect(requests).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
