import { request } from 'undici';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { startPagerdutyReceiver, type PagerdutyReceiver } from '../src/demo/receivers/pagerduty.js';
import { pagerdutyChannelConfigSchema } from '../src/notify/pagerduty/config.js';
import { createPagerdutyNotifier, pagerdutyKind } from '../src/notify/pagerduty/index.js';
import type { ChannelKind } from '../src/notify/kind.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import {
  exposedText,
  notification,
  refusedUrl,
  startReceiver,
  transition,
} from './notify-helpers.js';

/** A well-formed (32 characters) routing key, recognisable in any text. */
const KEY = 'e93facc04764012d7bfb002500d5d1a6';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(): Promise<PagerdutyReceiver> {
  const started = await startPagerdutyReceiver();
  cleanups.push(() => started.close());
  return started;
}

function notifier(url: string, extra: Record<string, unknown> = {}): Notifier {
  const config = pagerdutyChannelConfigSchema.parse({
    type: 'pagerduty',
    routingKey: KEY,
    url,
    ...extra,
  });
  const created = createPagerdutyNotifier(config);
  cleanups.push(() => created.close());
  return created;
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

const opened = transition('incident.opened');
const updated = transition('incident.updated', {
  current: { status: 'identified', updateCount: 2 },
  incident: { ...opened.incident!, status: 'identified', updateCount: 2 },
});
const resolved = transition('incident.resolved');

function actions(pd: PagerdutyReceiver): string[] {
  return pd.events.map((e) =>
    e.endpoint === 'change' ? 'change' : String(e.body['event_action']),
  );
}

describe('pagerduty notifier against a local Events API v2', () => {
  it('an incident lifecycle is trigger → trigger → resolve of ONE alert', async () => {
    const pd = await receiver();
    const pager = notifier(pd.url);
    await pager.send(notification([opened]));
    await pager.send(notification([updated]));
    await pager.send(notification([resolved]));

    expect(pd.requests.map((r) => [r.path, r.status])).toEqual([
      ['/v2/enqueue', 202],
      ['/v2/enqueue', 202],
      ['/v2/enqueue', 202],
    ]);
    expect(actions(pd)).toEqual(['trigger', 'trigger', 'resolve']);
    const keys = new Set(pd.events.map((e) => e.body['dedup_key']));
    expect([...keys]).toEqual(['statuswatch:stripe:incident:inc-1']);
    // PagerDuty answered with the key it filed the events under: ours.
    expect(pd.events.map((e) => e.dedupKey)).toEqual([...keys, ...keys, ...keys]);
    expect(pd.alerts).toEqual([
      {
        dedupKey: 'statuswatch:stripe:incident:inc-1',
        status: 'resolved',
        summary: '[statuswatch] Stripe: incident updated (identified) — Card payments failing',
        severity: 'error',
        events: 3,
      },
    ]);
    expect(pd.events[0]?.headers['content-type']).toBe('application/json');
    expect(pd.events[0]?.body['routing_key']).toBe(KEY);
  });

  it('a second replica (another notifier instance) resolves the alert the first opened', async () => {
    const pd = await receiver();
    await notifier(pd.url).send(notification([opened]));
    await notifier(pd.url).send(notification([resolved], { id: 'other-delivery' }));
    expect(pd.events[0]?.body['dedup_key']).toBe(pd.events[1]?.body['dedup_key']);
    expect(pd.alerts.map((a) => a.status)).toEqual(['resolved']);
  });

  it('records informational kinds as change events on /v2/change/enqueue', async () => {
    const pd = await receiver();
    await notifier(pd.url).send(
      notification([
        transition('score.dropped', { previous: { score: 92 }, current: { score: 87 } }),
      ]),
    );
    expect(pd.requests.map((r) => [r.path, r.status])).toEqual([['/v2/change/enqueue', 202]]);
    expect(pd.events[0]?.body).toMatchObject({
      routing_key: KEY,
      payload: { summary: '[statuswatch] Stripe: score dropped 92 → 87' },
    });
    expect(pd.alerts).toEqual([]);
  });

  it('notify-test opens an alert and resolves it', async () => {
    const pd = await receiver();
    await notifier(pd.url).send(notification([opened], { type: 'test', id: 'nt-1' }));
    expect(actions(pd)).toEqual(['trigger', 'resolve']);
    expect(pd.alerts).toEqual([
      expect.objectContaining({ dedupKey: 'statuswatch:test:nt-1', status: 'resolved', events: 2 }),
    ]);
  });

  it('sends nothing for a reminder', async () => {
    const pd = await receiver();
    await notifier(pd.url).send(notification([opened], { type: 'reminder' }));
    expect(pd.requests).toEqual([]);
  });

  it('a 400 is permanent (client): PagerDuty’s documented message for a team, its list of errors for the operator', async () => {
    const pd = await receiver();
    pd.failNext(
      400,
      1,
      {},
      JSON.stringify({
        status: 'invalid event',
        message: 'Event object is invalid',
        errors: ["'payload.summary' is missing or blank"],
      }),
    );
    const error = await failure(notifier(pd.url).send(notification([opened])));
    expect(error).toMatchObject({ retryable: false, reason: 'client', httpStatus: 400 });
    expect(error.message).toBe(
      'pagerduty: receiver answered HTTP 400 (rejected): Event object is invalid',
    );
    expect(error.detail).toBe("Event object is invalid: 'payload.summary' is missing or blank");
  });

  it('a 400 whose message PagerDuty does not document reads without it', async () => {
    const pd = await receiver();
    pd.failNext(400, 1, {}, JSON.stringify({ message: 'CANARY-pd banner', errors: ['CANARY-pd'] }));
    const error = await failure(notifier(pd.url).send(notification([opened])));
    expect(error.message).toBe('pagerduty: receiver answered HTTP 400 (rejected)');
    expect(error.detail).toBe('CANARY-pd banner: CANARY-pd');
  });

  it('a 429 with Retry-After: 7 is retryable after 7 s; the retry is accepted', async () => {
    const pd = await receiver();
    const pager = notifier(pd.url);
    pd.failNext(429, 1, { 'retry-after': '7' });
    const error = await failure(pager.send(notification([opened])));
    expect(error).toMatchObject({
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 7000,
    });
    await pager.send(notification([opened]));
    expect(pd.requests.map((r) => r.status)).toEqual([429, 202]);
    expect(pd.alerts.map((a) => a.status)).toEqual(['triggered']);
  });

  it.each([500, 502, 503])('a %i is retryable (server)', async (status) => {
    const pd = await receiver();
    pd.failNext(status);
    const error = await failure(notifier(pd.url).send(notification([opened])));
    expect(error).toMatchObject({ retryable: true, reason: 'server', httpStatus: status });
  });

  it.each<[number, string]>([
    [401, 'auth'],
    [403, 'auth'],
    [404, 'client'],
  ])('a %i is permanent (%s)', async (status, reason) => {
    const pd = await receiver();
    pd.failNext(status);
    const error = await failure(notifier(pd.url).send(notification([opened])));
    expect(error).toMatchObject({ retryable: false, reason, httpStatus: status });
  });

  it('a failure mid-way names the event; the retry here resumes at it, a retry elsewhere sends all and PagerDuty folds them', async () => {
    const pd = await receiver();
    const pager = notifier(pd.url);
    const n = notification([opened, resolved], { type: 'batch' });
    pd.acceptNext(1);
    pd.failNext(503);
    const error = await failure(pager.send(n));
    expect(error).toMatchObject({ retryable: true, reason: 'server', httpStatus: 503 });
    expect(error.message).toBe(
      'pagerduty: receiver answered HTTP 503 (server error) (resolve, event 2 of 2)',
    );
    expect(pd.alerts.map((a) => a.status)).toEqual(['triggered']);
    // The retry in this process sends only the resolve that failed.
    await pager.send(n);
    expect(actions(pd)).toEqual(['trigger', 'resolve']);
    expect(pd.alerts).toEqual([expect.objectContaining({ status: 'resolved', events: 2 })]);

    // Another replica (no memory of the first attempt) sends both; PagerDuty folds the trigger
    // into the one alert under the same dedup_key, and the resolve changes nothing.
    const other = await receiver();
    const first = notifier(other.url);
    other.acceptNext(1);
    other.failNext(503);
    await failure(first.send(n));
    await notifier(other.url).send(n);
    expect(actions(other)).toEqual(['trigger', 'trigger', 'resolve']);
    expect(new Set(other.events.map((e) => e.dedupKey)).size).toBe(1);
  });

  it('a receiver that never answers times out after timeoutMs, retryable', async () => {
    const silent = await startReceiver(() => ({ status: 202, hang: true }), '/v2/enqueue');
    cleanups.push(() => silent.close());
    const error = await failure(
      notifier(silent.url, { timeoutMs: 300 }).send(notification([opened])),
    );
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    expect(silent.received).toHaveLength(1);
  });

  it('a refused connection is a retryable network failure', async () => {
    const error = await failure(
      notifier(await refusedUrl('/v2/enqueue')).send(notification([opened])),
    );
    expect(error).toMatchObject({ retryable: true, reason: 'network', httpStatus: null });
    expect(error.message).toContain('could not reach the receiver');
    expect(error.message).not.toContain('refused');
    expect(error.detail).toContain('ECONNREFUSED');
  });

  it('never lets the routing key into an error, even when the receiver echoes it', async () => {
    const pd = await receiver();
    pd.failNext(
      400,
      1,
      {},
      JSON.stringify({
        status: 'invalid event',
        message: 'Event object is invalid',
        errors: [`routing_key ${KEY} is not known`],
      }),
    );
    const rejected = await failure(notifier(pd.url).send(notification([opened])));
    expect(rejected.message).not.toContain('routing_key');
    expect(rejected.detail).toContain('[REDACTED]');
    const refused = await failure(
      notifier(await refusedUrl('/v2/enqueue')).send(notification([opened])),
    );
    for (const error of [rejected, refused]) {
      const text = await exposedText(error);
      expect(text).not.toContain(KEY);
      expect(JSON.stringify(error)).not.toContain(KEY);
    }
  });
});

describe('the local Events API v2 receiver follows PagerDuty’s documentation', () => {
  async function post(url: string, body: unknown): Promise<{ status: number; json: unknown }> {
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.body.text();
    return { status: response.statusCode, json: text === '' ? null : JSON.parse(text) };
  }

  const trigger = {
    routing_key: KEY,
    event_action: 'trigger',
    dedup_key: 'srv01/mysql',
    payload: {
      summary: 'DISK at 99%',
      source: 'prod-datapipe03.example.com',
      severity: 'critical',
    },
  };

  it('answers a valid event 202 with the documented body', async () => {
    const pd = await receiver();
    expect(await post(pd.url, trigger)).toEqual({
      status: 202,
      json: { status: 'success', message: 'Event processed', dedup_key: 'srv01/mysql' },
    });
  });

  it('rejects an invalid routing key with the documented 400 body', async () => {
    const pd = await receiver();
    expect(await post(pd.url, { ...trigger, routing_key: 'samplekeyhere' })).toEqual({
      status: 400,
      json: {
        status: 'invalid event',
        message: 'Event object is invalid',
        errors: ["Length of 'routing_key' is incorrect (should be 32 characters)"],
      },
    });
    expect(pd.events).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['no routing key', { ...trigger, routing_key: undefined }, "'routing_key' is missing or blank"],
    ['an unknown action', { ...trigger, event_action: 'open' }, "'event_action' is invalid"],
    [
      'a trigger without summary',
      { ...trigger, payload: { ...trigger.payload, summary: ' ' } },
      "'payload.summary' is missing or blank",
    ],
    [
      'a trigger without source',
      { ...trigger, payload: { ...trigger.payload, source: undefined } },
      "'payload.source' is missing or blank",
    ],
    [
      'a trigger with an unknown severity',
      { ...trigger, payload: { ...trigger.payload, severity: 'major' } },
      "'payload.severity' is invalid",
    ],
    [
      'a summary of 1025 characters',
      { ...trigger, payload: { ...trigger.payload, summary: 'x'.repeat(1025) } },
      "'payload.summary' is too long",
    ],
    [
      'a dedup_key of 256 characters',
      { ...trigger, dedup_key: 'k'.repeat(256) },
      "'dedup_key' is too long",
    ],
    [
      'a resolve without dedup_key',
      { routing_key: KEY, event_action: 'resolve' },
      "'dedup_key' is missing or blank",
    ],
    ['a link without href', { ...trigger, links: [{ text: 'x' }] }, "'links[0].href' is missing"],
  ])('rejects %s (400, invalid event)', async (_name, body, expected) => {
    const pd = await receiver();
    const { status, json } = await post(pd.url, body);
    expect(status).toBe(400);
    expect(json).toMatchObject({ status: 'invalid event', message: 'Event object is invalid' });
    expect((json as { errors: string[] }).errors.join('\n')).toContain(expected);
  });

  it('rejects a body that is not JSON as documented', async () => {
    const pd = await receiver();
    expect(await post(pd.url, '{not json')).toEqual({
      status: 400,
      json: {
        status: 'Unrecognized object',
        message: 'Event object format is unrecognized',
        errors: ['JSON parse error'],
      },
    });
  });

  it('accepts a resolve with only routing_key, dedup_key and event_action; drops it when nothing is open', async () => {
    const pd = await receiver();
    const resolve = { routing_key: KEY, dedup_key: 'srv01/mysql', event_action: 'resolve' };
    expect((await post(pd.url, resolve)).status).toBe(202);
    expect(pd.alerts).toEqual([]);
    await post(pd.url, trigger);
    await post(pd.url, resolve);
    await post(pd.url, trigger);
    expect(pd.alerts.map((a) => a.status)).toEqual(['resolved', 'triggered']);
  });

  it('takes change events on /v2/change/enqueue and requires their summary', async () => {
    const pd = await receiver();
    const changeEvent = { routing_key: KEY, payload: { summary: 'Build passed', source: 'ci' } };
    expect(await post(pd.changeUrl, changeEvent)).toEqual({
      status: 202,
      json: { status: 'success', message: 'Event processed' },
    });
    const { status, json } = await post(pd.changeUrl, { routing_key: KEY, payload: {} });
    expect(status).toBe(400);
    expect(json).toMatchObject({ errors: ["'payload.summary' is missing or blank"] });
  });
});

describe('pagerduty channel config and kind', () => {
  const parse = (extra: Record<string, unknown>) =>
    pagerdutyChannelConfigSchema.safeParse({ type: 'pagerduty', routingKey: KEY, ...extra });

  function messages(extra: Record<string, unknown>): string[] {
    const result = parse(extra);
    expect(result.success).toBe(false);
    return result.success
      ? []
      : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  }

  it('accepts a full config', () => {
    const result = parse({
      url: 'https://events.eu.pagerduty.com/v2/enqueue',
      severity: { 'incident.opened': 'critical', 'status.changed': 'warning' },
      page: ['sla.forecast'],
      timeoutMs: '5000',
    });
    expect(result.success).toBe(true);
    expect(result.data?.timeoutMs).toBe(5000);
  });

  it('requires a 32-character routing key and says so, without echoing it', () => {
    expect(messages({ routingKey: undefined })).toEqual(['routingKey: required']);
    expect(messages({ routingKey: '' })).toEqual(['routingKey: must not be empty']);
    const wrong = messages({ routingKey: 'short-secret-key' });
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toContain('32-character Integration Key');
    expect(wrong[0]).not.toContain('short-secret-key');
  });

  it('names an unknown event kind in `severity` and an unknown severity', () => {
    expect(messages({ severity: { 'incident.exploded': 'critical' } })[0]).toContain(
      'unknown event kind "incident.exploded"',
    );
    expect(messages({ severity: { 'incident.opened': 'major' } })).toEqual([
      'severity.incident.opened: expected a PagerDuty severity: critical, error, warning, info',
    ]);
  });

  it('allows only informational kinds in `page`', () => {
    expect(messages({ page: ['incident.opened'] })[0]).toContain(
      'only informational event kinds can be listed (score.dropped, sla.forecast, score.trend)',
    );
  });

  it('is a channel kind like the others (kinds.ts lists it as `pagerduty: pagerdutyKind`)', () => {
    const general: ChannelKind = pagerdutyKind;
    expect(general.type).toBe('pagerduty');
    expect(general.schema.safeParse({ type: 'pagerduty', routingKey: KEY }).success).toBe(true);
  });

  it('converts to JSON Schema for the Helm chart, routing key pattern included', () => {
    const schema = z.toJSONSchema(pagerdutyChannelConfigSchema, {
      io: 'input',
      target: 'draft-07',
      unrepresentable: 'any',
    }) as { properties: Record<string, { pattern?: string }>; required: string[] };
    expect(schema.required).toEqual(['type', 'routingKey']);
    expect(schema.properties['routingKey']?.pattern).toBe('^[A-Za-z0-9]{32}$');
  });

  it('hides the routing key in redact, describe, preview; paces per routing key', () => {
    const config = pagerdutyChannelConfigSchema.parse({ type: 'pagerduty', routingKey: KEY });
    expect(pagerdutyKind.secrets(config)).toContain(KEY);
    expect(pagerdutyKind.secretPaths).toEqual(['routingKey']);
    expect(pagerdutyKind.redact(config)).toEqual({ type: 'pagerduty', routingKey: '[REDACTED]' });
    expect(pagerdutyKind.describe(config)).toBe(
      'pagerduty (Events API v2 at events.pagerduty.com, routing key hidden)',
    );
    const preview = pagerdutyKind.preview(
      notification([opened], { type: 'test' }),
      'oncall',
      config,
      Date.UTC(2026, 0, 1),
    );
    expect(preview).not.toContain(KEY);
    expect(
      preview.startsWith(
        'POST https://events.pagerduty.com/v2/enqueue\ncontent-type: application/json\n\n{',
      ),
    ).toBe(true);
    expect(preview).toContain('"routing_key": "[REDACTED]"');
    expect(preview.match(/^POST /gm)).toHaveLength(2);
    expect(pagerdutyKind.pacing?.(config)).toEqual({
      destination: `pagerduty:${KEY}`,
      intervalMs: 500,
    });
  });

  it('derives the change-event endpoint from the configured one (EU region)', () => {
    const config = pagerdutyChannelConfigSchema.parse({
      type: 'pagerduty',
      routingKey: KEY,
      url: 'https://events.eu.pagerduty.com/v2/enqueue',
    });
    const preview = pagerdutyKind.preview(
      notification([transition('score.dropped')]),
      'oncall',
      config,
      0,
    );
    expect(preview.startsWith('POST https://events.eu.pagerduty.com/v2/change/enqueue\n')).toBe(
      true,
    );
  });
});
