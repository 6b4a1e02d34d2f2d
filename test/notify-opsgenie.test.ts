import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request as undiciRequest } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startOpsgenieReceiver,
  type OpsgenieReceiver,
  type RecordedOpsgenieRequest,
} from '../src/demo/receivers/opsgenie.js';
import type { Transition } from '../src/diff/transition.js';
import { opsgenieChannelConfigSchema } from '../src/notify/opsgenie/config.js';
import { createOpsgenieNotifier, opsgenieKind } from '../src/notify/opsgenie/index.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import { exposedText, notification, refusedUrl, transition } from './notify-helpers.js';

const API_KEY = 'c0ffee00-1234-4abc-9def-0123456789ab';
const ALIAS = 'statuswatch:stripe:incident:inc-1';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function notifierFor(
  url: string,
  extra: Record<string, unknown> = {},
  deps: Parameters<typeof createOpsgenieNotifier>[1] = {},
): Notifier {
  const config = opsgenieChannelConfigSchema.parse({
    type: 'opsgenie',
    apiKey: API_KEY,
    url,
    ...extra,
  });
  const notifier = createOpsgenieNotifier(config, deps);
  cleanups.push(() => notifier.close());
  return notifier;
}

async function setup(
  extra: Record<string, unknown> = {},
): Promise<{ receiver: OpsgenieReceiver; notifier: Notifier }> {
  const receiver = await startOpsgenieReceiver({ apiKey: API_KEY });
  cleanups.push(() => receiver.close());
  return { receiver, notifier: notifierFor(receiver.url, extra) };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  const error = caught as DeliveryError;
  expect(await exposedText(error)).not.toContain(API_KEY);
  return error;
}

const opened = (): Transition => transition('incident.opened');
const updated = (): Transition =>
  transition('incident.updated', {
    incident: {
      ...transition('incident.updated').incident!,
      status: 'identified',
      latestUpdate: 'A fix is rolling out.',
    },
  });
const resolved = (): Transition => transition('incident.resolved');

const event = (t: Transition) => notification([t]);

describe('opsgenie notifier against a local Alert API', () => {
  it('an incident lifecycle is one alert: create, note, close by alias; count 1', async () => {
    const { receiver, notifier } = await setup({ tags: ['payments'] });
    await notifier.send(event(opened()));
    await notifier.send(event(updated()));
    await notifier.send(event(resolved()));

    const encoded = encodeURIComponent(ALIAS);
    expect(receiver.requests.map((r) => [r.method, r.path, r.query, r.status])).toEqual([
      ['POST', '/v2/alerts', {}, 202],
      ['POST', `/v2/alerts/${ALIAS}/notes`, { identifierType: 'alias' }, 202],
      ['POST', `/v2/alerts/${ALIAS}/close`, { identifierType: 'alias' }, 202],
    ]);
    expect(encoded).toContain('%3A');
    for (const request of receiver.requests) {
      expect(request.headers.authorization).toBe(`GenieKey ${API_KEY}`);
      expect(request.headers['content-type']).toBe('application/json');
    }
    const alert = receiver.alerts.get(ALIAS);
    expect(alert).toMatchObject({
      status: 'closed',
      count: 1,
      priority: 'P2',
      message: 'Stripe: incident opened — Card payments failing',
      entity: 'Stripe',
      source: 'statuswatch',
      tags: ['payments'],
      details: { kind: 'incident.opened', feedId: 'stripe', incidentId: 'inc-1' },
    });
    expect(alert?.notes).toHaveLength(2);
    expect(alert?.notes[0]).toContain('Latest update: A fix is rolling out.');
    expect(alert?.notes[1]).toContain('Stripe: incident resolved — Card payments failing');
    expect(receiver.history).toHaveLength(1);
    expect([...receiver.requestStatuses.values()].map((s) => [s.action, s.success])).toEqual([
      ['Create', true],
      ['AddNote', true],
      ['Close', true],
    ]);
  });

  it('a second notifier (another replica, a restart) addresses the same alert by alias', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(event(opened()));
    const agent = new Agent();
    cleanups.push(() => agent.close());
    const replica = notifierFor(receiver.url, {}, { dispatcher: agent });
    // The replica sends the same opening again (a duplicate delivery): Opsgenie deduplicates it.
    await replica.send(event(opened()));
    await replica.send(event(updated()));
    await replica.send(event(resolved()));
    expect(receiver.history).toHaveLength(1);
    expect(receiver.alerts.get(ALIAS)).toMatchObject({ status: 'closed', count: 2 });
    expect(receiver.alerts.get(ALIAS)?.notes).toHaveLength(2);
  });

  it('a wrong API key: 401, a permanent auth failure; the key is in no error text', async () => {
    const receiver = await startOpsgenieReceiver({
      apiKey: 'ffffffff-0000-4000-8000-000000000000',
    });
    cleanups.push(() => receiver.close());
    const notifier = notifierFor(receiver.url);
    const error = await failure(notifier.send(event(opened())));
    expect(error).toMatchObject({ retryable: false, reason: 'auth', httpStatus: 401 });
    expect(error.message).toBe(
      'opsgenie: create alert: receiver answered HTTP 401 (not authorized): Key format is not valid!',
    );
    expect(error.detail).toMatch(/^Key format is not valid! \[requestId [\w-]+\]$/);
    expect(receiver.alerts.size).toBe(0);
  });

  it('422 and 400 are permanent client failures: Opsgenie’s documented message for a team, its explanation for the operator', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(
      422,
      1,
      {},
      JSON.stringify({
        message: 'Request body is not processable. Please check the errors.',
        errors: { 'responders#type': "Invalid recipient type 'bb'" },
        took: 0.083,
        requestId: 'req-422',
      }),
    );
    const rejected = await failure(notifier.send(event(opened())));
    expect(rejected).toMatchObject({ retryable: false, reason: 'client', httpStatus: 422 });
    expect(rejected.message).toBe(
      'opsgenie: create alert: receiver answered HTTP 422 (rejected): Request body is not processable. Please check the errors.',
    );
    expect(rejected.detail).toBe(
      "Request body is not processable. Please check the errors. (responders#type: Invalid recipient type 'bb') [requestId req-422]",
    );
    receiver.failNext(400);
    const invalid = await failure(notifier.send(event(opened())));
    expect(invalid).toMatchObject({ retryable: false, reason: 'client', httpStatus: 400 });
  });

  it('429 is retryable with Retry-After, else with X-RateLimit-Period-In-Sec', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(429, 1, { 'retry-after': '7' });
    const limited = await failure(notifier.send(event(opened())));
    expect(limited).toMatchObject({
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 7000,
    });
    expect(limited.message).toContain('You are making too many requests!');
    receiver.failNext(429, 1, {
      'x-ratelimit-state': 'THROTTLED',
      'x-ratelimit-reason': 'ACCOUNT',
      'x-ratelimit-period-in-sec': '60',
    });
    const throttled = await failure(notifier.send(event(opened())));
    expect(throttled).toMatchObject({ retryable: true, retryAfterMs: 60_000 });
    await notifier.send(event(opened()));
    expect(receiver.alerts.get(ALIAS)?.count).toBe(1);
  });

  it('500 and 503 are retryable server failures', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(500);
    expect(await failure(notifier.send(event(opened())))).toMatchObject({
      retryable: true,
      reason: 'server',
      httpStatus: 500,
    });
    receiver.failNext(503, 1, { 'retry-after': '2' });
    expect(await failure(notifier.send(event(opened())))).toMatchObject({
      retryable: true,
      reason: 'server',
      retryAfterMs: 2000,
    });
  });

  it('a refused connection is a retryable network failure', async () => {
    const notifier = notifierFor(new URL(await refusedUrl()).origin);
    const error = await failure(notifier.send(event(opened())));
    expect(error).toMatchObject({ retryable: true, reason: 'network', httpStatus: null });
    expect(error.message).toContain('could not reach the receiver');
    expect(error.message).not.toContain('refused');
    expect(error.detail).toContain('ECONNREFUSED');
  });

  it('an API that never answers times out after timeoutMs, retryable', async () => {
    const server = createServer((req) => {
      req.resume();
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
    const notifier = notifierFor(`http://127.0.0.1:${String(port)}`, { timeoutMs: 300 });
    const error = await failure(notifier.send(event(opened())));
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
  });

  it('the API key echoed in an answer is scrubbed from the error', async () => {
    const { receiver, notifier } = await setup();
    receiver.failNext(
      400,
      1,
      {},
      JSON.stringify({ message: `Invalid key GenieKey ${API_KEY}`, took: 0, requestId: 'r1' }),
    );
    const error = await failure(notifier.send(event(opened())));
    expect(error.message).toBe('opsgenie: create alert: receiver answered HTTP 400 (rejected)');
    expect(error.detail).toContain('Invalid key [REDACTED]');
    expect(await exposedText(error)).not.toContain(API_KEY);
  });

  it('404 on close or note means the alert is gone: success; 404 on create fails', async () => {
    const { receiver, notifier } = await setup();
    const isAction = (r: RecordedOpsgenieRequest): boolean => r.path !== '/v2/alerts';
    receiver.failOn(isAction, 404, 2);
    await notifier.send(event(updated()));
    await notifier.send(event(resolved()));
    expect(receiver.requests.map((r) => r.status)).toEqual([404, 404]);
    receiver.failNext(404);
    expect(await failure(notifier.send(event(opened())))).toMatchObject({
      retryable: false,
      reason: 'client',
      httpStatus: 404,
    });
  });

  it('a retry continues after what succeeded: an alert closed in the batch is not reopened', async () => {
    const { receiver, notifier } = await setup();
    const outage = transition('status.changed', {
      id: 'tstatus-acme',
      feedId: 'acme',
      service: { feedId: 'acme', name: 'Acme', canonicalUrl: null, officialStatusUrl: null },
      previous: { status: 'operational' },
      current: { status: 'major_outage' },
      observedAt: 3000,
    });
    const n = notification(
      [
        transition('incident.opened', { observedAt: 1000 }),
        transition('incident.resolved', { observedAt: 2000 }),
        outage,
      ],
      { type: 'catchup' },
    );
    receiver.failOn(
      (r) =>
        r.path === '/v2/alerts' &&
        (r.body as { alias?: string }).alias === 'statuswatch:acme:status',
      500,
    );
    const error = await failure(notifier.send(n));
    expect(error.message).toMatch(/^opsgenie: create alert \(3 of 3\): receiver answered HTTP 500/);
    expect(receiver.alerts.get(ALIAS)?.status).toBe('closed');

    await notifier.send(n);
    expect(receiver.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/v2/alerts 202',
      `/v2/alerts/${ALIAS}/close 202`,
      '/v2/alerts 500',
      '/v2/alerts 202',
    ]);
    expect(receiver.history.map((a) => [a.alias, a.status, a.count])).toEqual([
      [ALIAS, 'closed', 1],
      ['statuswatch:acme:status', 'open', 1],
    ]);
  });

  it('notify-test creates a P5 alert and closes it again', async () => {
    const { receiver, notifier } = await setup();
    const n = notification([opened()], { type: 'test', id: 'test-m1:notify-test:oncall' });
    await notifier.send(n);
    const alias = 'statuswatch:test:test-m1:notify-test:oncall';
    expect(receiver.alerts.get(alias)).toMatchObject({
      status: 'closed',
      count: 1,
      priority: 'P5',
    });
    expect(receiver.alerts.has(ALIAS)).toBe(false);
  });

  it('a reminder sends nothing', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(notification([opened()], { type: 'reminder' }));
    expect(receiver.requests).toEqual([]);
  });
});

describe('the local Opsgenie receiver follows the documented contract', () => {
  async function call(
    receiver: OpsgenieReceiver,
    path: string,
    body: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await undiciRequest(`${receiver.url}${path}`, {
      method: 'POST',
      headers: {
        authorization: `GenieKey ${receiver.apiKey}`,
        'content-type': 'application/json',
        ...headers,
      },
      body,
    });
    return {
      status: response.statusCode,
      json: (await response.body.json()) as Record<string, unknown>,
    };
  }

  it('answers 202 with result, took and requestId; 401, 400 and 422 as documented', async () => {
    const receiver = await startOpsgenieReceiver();
    cleanups.push(() => receiver.close());
    const ok = await call(receiver, '/v2/alerts', JSON.stringify({ message: 'hi', alias: 'a' }));
    expect(ok.status).toBe(202);
    expect(ok.json.result).toBe('Request will be processed');
    expect(typeof ok.json.took).toBe('number');
    expect(ok.json.requestId).toMatch(/^[0-9a-f-]{36}$/);

    const unauthorized = await call(receiver, '/v2/alerts', '{"message":"hi"}', {
      authorization: 'GenieKey nope',
    });
    expect(unauthorized).toMatchObject({
      status: 401,
      json: { message: 'Key format is not valid!' },
    });
    expect((await call(receiver, '/v2/alerts', '{"message":')).status).toBe(400);
    const missing = await call(receiver, '/v2/alerts', '{"alias":"x"}');
    expect(missing).toMatchObject({
      status: 422,
      json: { errors: { message: 'Message can not be empty.' } },
    });
    const long = await call(receiver, '/v2/alerts', JSON.stringify({ message: 'm'.repeat(131) }));
    expect(long.status).toBe(422);
    const alias = await call(
      receiver,
      '/v2/alerts',
      JSON.stringify({ message: 'm', alias: 'a'.repeat(513) }),
    );
    expect(alias.status).toBe(422);
    expect(alias.json.errors).toHaveProperty('alias');
    const note = await call(receiver, '/v2/alerts/a/notes?identifierType=alias', '{}');
    expect(note).toMatchObject({
      status: 422,
      json: { errors: { note: 'Note can not be empty.' } },
    });
    // Closing an unknown alias is accepted; the request status says what became of it.
    const unknown = await call(receiver, '/v2/alerts/nope/close?identifierType=alias', '{}');
    expect(unknown.status).toBe(202);
    expect(receiver.requestStatuses.get(String(unknown.json.requestId))).toMatchObject({
      success: false,
      status: 'Alert does not exist',
    });
    expect(receiver.alerts.get('a')).toMatchObject({ status: 'open', count: 1, message: 'hi' });
  });
});

describe('opsgenie channel kind', () => {
  const config = opsgenieChannelConfigSchema.parse({ type: 'opsgenie', apiKey: API_KEY });

  it('validates the config without echoing values', () => {
    const eu = opsgenieChannelConfigSchema.parse({
      type: 'opsgenie',
      apiKey: API_KEY,
      url: 'https://api.eu.opsgenie.com',
      priority: { 'sla.at_risk': 'P2', 'score.dropped': 'P4' },
      responders: [
        { type: 'team', name: 'payments' },
        { type: 'user', username: 'ana@example.com' },
        { type: 'schedule', id: '4513b7ea-3b91-438f-b7e4-e3e54af9147c' },
      ],
      tags: ['statuswatch'],
      timeoutMs: '5000',
    });
    expect(eu.timeoutMs).toBe(5000);
    expect(opsgenieKind.describe(eu)).toBe('opsgenie via api.eu.opsgenie.com (API key hidden)');
    const bad = (extra: Record<string, unknown>): string[] => {
      const result = opsgenieChannelConfigSchema.safeParse({
        type: 'opsgenie',
        apiKey: API_KEY,
        ...extra,
      });
      expect(result.success).toBe(false);
      return result.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
    };
    expect(bad({ apiKey: '  ' })).toEqual(['apiKey: must not be empty']);
    expect(bad({ apiKey: `${API_KEY}\r\nX: y` }).join()).not.toContain(API_KEY);
    expect(bad({ priority: { 'incident.opened': 'P0' } })).toEqual([
      'priority.incident.opened: expected P1, P2, P3, P4 or P5',
    ]);
    expect(bad({ priority: { 'incident.nope': 'P1' } }).length).toBeGreaterThan(0);
    expect(bad({ responders: [{ type: 'team' }] })).toEqual([
      'responders.0: a team responder needs exactly one of id or name',
    ]);
    expect(bad({ responders: [{ type: 'user', name: 'ana' }] })).toEqual([
      'responders.0.name: a user responder is named by id or username, not name',
    ]);
    expect(bad({ responders: [{ type: 'group', name: 'x' }] }).length).toBe(1);
    expect(bad({ tags: ['t'.repeat(51)] })).toEqual(['tags.0: a tag has at most 50 characters']);
    expect(bad({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })).toEqual([
      'tags: at most 20 tags',
    ]);
    expect(bad({ url: 'https://user:pw@api.opsgenie.com' }).length).toBe(1);
    expect(bad({ url: 'ftp://api.opsgenie.com' }).length).toBe(1);
    expect(bad({ unknown: true }).length).toBe(1);
  });

  it('redacts, describes, paces and lists its secrets', () => {
    expect(opsgenieKind.type).toBe('opsgenie');
    expect(opsgenieKind.secretPaths).toEqual(['apiKey']);
    expect(opsgenieKind.secrets(config)).toContain(API_KEY);
    expect(opsgenieKind.redact(config)).toEqual({ type: 'opsgenie', apiKey: '[REDACTED]' });
    expect(opsgenieKind.describe(config)).toBe('opsgenie via api.opsgenie.com (API key hidden)');
    expect(opsgenieKind.pacing?.(config)).toEqual({
      destination: `opsgenie:${API_KEY}`,
      intervalMs: 1000,
    });
  });

  it('previews every request with its URL and headers, the key hidden', () => {
    const text = opsgenieKind.preview(
      notification([opened()], { type: 'test', id: 'test-1:notify-test:oncall' }),
      'oncall',
      config,
      Date.now(),
    );
    expect(text).not.toContain(API_KEY);
    expect(text).toContain('POST https://api.opsgenie.com/v2/alerts\nauthorization: [REDACTED]\n');
    expect(text).toContain(
      'POST https://api.opsgenie.com/v2/alerts/statuswatch%3Atest%3Atest-1%3Anotify-test%3Aoncall/close?identifierType=alias\n',
    );
    expect(text).toContain('"priority": "P5"');
    const reminder = opsgenieKind.preview(
      notification([opened()], { type: 'reminder' }),
      'oncall',
      config,
      Date.now(),
    );
    expect(reminder).toContain('nothing is sent');
  });
});
