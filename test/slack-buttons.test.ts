/**
 * The Slack app's buttons (src/notify/slack/interactions.ts) against the local Slack stand-in
 * (src/demo/receivers/slack-api.ts) and the real Redis, routed through the daemon's own stages
 * (the noise harness): a signed click acknowledges (reminders stop) or silences exactly that
 * lifecycle for that subscription (the closing still arrives); a bad signature, an old timestamp
 * and a replay are refused with nothing done; a click signed by another team's Slack app does
 * nothing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  blockActions,
  signRequest,
  startSlackApiReceiver,
  type SlackApiReceiver,
} from '../src/demo/receivers/slack-api.js';
import type { EventKind } from '../src/config/events.js';
import type { Transition } from '../src/diff/transition.js';
import { TenancyApi } from '../src/api/index.js';
import { silentLogger } from '../src/log.js';
import { SlackInteractions } from '../src/notify/slack/interactions.js';
import { stripeIncident } from './helpers/episode.js';
import { noiseHarness, type NoiseHarness } from './helpers/noise.js';
import { waitFor } from './helpers/wait.js';

const TOKEN = 'xoxb-1111-2222-buttonsB0tT0ken';
const SECRET_A = '8f742231b10e8888abcd99yyyzzz85a5';
const SECRET_B = '0123456789abcdef0123456789abcdef';
const START = Date.UTC(2026, 10, 24, 10, 0, 0);
const ALICE = { id: 'U0ALICE1', username: 'alice' };

interface World {
  h: NoiseHarness;
  slack: SlackApiReceiver;
  api: TenancyApi;
  buttons: SlackInteractions;
  url: string;
  server: Server;
}

let world: World | undefined;
afterEach(async () => {
  if (world === undefined) return;
  const w = world;
  world = undefined;
  await w.buttons.close();
  await new Promise<void>((resolve) =>
    w.server.close(() => {
      resolve();
    }),
  );
  await w.api.store.close();
  await w.h.close();
  await w.slack.close();
});

function incident(kind: EventKind, at: number, extra: Partial<Transition> = {}): Transition {
  const id = `t${kind.replace('.', '')}${String(at)}`;
  return stripeIncident(kind, { at, startedAt: START }, { id, ...extra });
}

const EVENTS = ['incident.opened', 'incident.updated', 'incident.resolved'];

async function setup(): Promise<World> {
  const slack = await startSlackApiReceiver({
    token: TOKEN,
    channels: [
      { id: 'C0ALERTS1', name: 'alerts' },
      { id: 'C0OTHER01', name: 'other' },
    ],
  });
  const h = await noiseHarness(
    [
      // Team A's subscription on its Slack app (secret A), reminded hourly.
      { name: 'ops', services: ['stripe'], channels: ['slack-a'], events: EVENTS, repeat: '1h' },
      // Another subscription of the same service, on the webhook.
      { name: 'pay', services: ['stripe'], channels: ['hook'], events: EVENTS, repeat: '1h' },
      // Team B's subscription on its own Slack app (secret B).
      { name: 'other', services: ['stripe'], channels: ['slack-b'], events: EVENTS },
    ],
    {
      start: START,
      channelState: true,
      channels: {
        'slack-a': {
          type: 'slack',
          botToken: TOKEN,
          channel: '#alerts',
          apiUrl: slack.url,
          signingSecret: SECRET_A,
        },
        'slack-b': {
          type: 'slack',
          botToken: TOKEN,
          channel: '#other',
          apiUrl: slack.url,
          signingSecret: SECRET_B,
        },
      },
    },
  );
  const api = new TenancyApi({
    redis: h.tr.redis,
    keys: h.tr.keys,
    log: silentLogger(),
    silences: h.silences,
    env: {},
    config: () => ({ channels: h.config.channels, subscriptions: h.config.subscriptions }),
    onChannels: () => undefined,
    noise: h.store,
    now: () => h.clock.now,
  });
  const acks = api.acks;
  if (acks === null) throw new Error('no acks');
  const buttons = new SlackInteractions({
    redis: h.tr.redis,
    keys: h.tr.keys,
    log: silentLogger(),
    path: () => '/slack/interactions',
    channels: () => h.config.channels,
    subscriptions: () => h.config.subscriptions,
    deps: () => ({}),
    noise: h.store,
    acks,
    createSilence: (actor, draft) => api.createSilence(actor, draft),
    now: () => h.clock.now,
  });
  const server = createServer((req, res) => {
    void buttons.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/slack/interactions`;
  return { h, slack, api, buttons, url, server };
}

/** The living message of #alerts once `count` deliveries reached it. */
async function parent(w: World, channel = '#alerts') {
  await waitFor(() => w.slack.messages(channel).length >= 1, { what: `a parent in ${channel}` });
  const [message] = w.slack.messages(channel);
  if (message === undefined) throw new Error('no message');
  return message;
}

async function click(w: World, body: string, headers: Record<string, string>): Promise<number> {
  const res = await request(w.url, { method: 'POST', headers, body });
  await res.body.dump();
  await w.buttons.idle();
  return res.statusCode;
}

function clickBody(
  w: World,
  message: { ts: string; text: string; blocks: unknown[] },
  actionId: string,
  channelId = 'C0ALERTS1',
): string {
  return blockActions({
    channelId,
    message,
    actionId,
    user: ALICE,
    responseUrl: w.slack.responseUrl(),
  });
}

/** Every value of the installation's own state (not BullMQ's), to show nothing changed. */
async function state(w: World): Promise<Record<string, unknown>> {
  const { redis, prefix } = w.h.tr;
  const out: Record<string, unknown> = {};
  for (const pattern of ['noise:*', 'silences', 'slack-app:*', 'api:*']) {
    for (const key of await redis.keys(`${prefix}:${pattern}`)) {
      const type = await redis.type(key);
      out[key] =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'set'
              ? (await redis.smembers(key)).sort()
              : type === 'stream'
                ? await redis.xlen(key)
                : type;
    }
  }
  return out;
}

const updates = (w: World): number =>
  w.slack.calls.filter((c) => c.method === 'chat.update').length;

describe('Slack app buttons', () => {
  it('a signed Acknowledge click acknowledges the episode: the message says so, its reminders stop, the audit log has the Slack user', async () => {
    const w = (world = await setup());
    await w.h.route(incident('incident.opened', w.h.clock.now));
    const message = await parent(w);
    const actions = JSON.stringify(message.blocks);
    expect(actions).toContain('statuswatch_ack');
    expect(actions).toContain('statuswatch_silence_resolved');
    await w.h.hook.waitFor(1);

    const body = clickBody(w, message, 'statuswatch_ack');
    const headers = signRequest(SECRET_A, body, w.h.clock.now / 1000);
    expect(await click(w, body, headers)).toBe(200);
    expect(updates(w)).toBe(1);
    const edited = JSON.stringify((await parent(w)).blocks);
    expect(edited).toContain('Acknowledged by <@U0ALICE1>');
    expect(edited).not.toContain('statuswatch_ack');
    expect(edited).toContain('statuswatch_silence_1h');

    const audit = await w.api.store.audit.read({ limit: 10, visible: () => true });
    expect(audit).toContainEqual(
      expect.objectContaining({ kind: 'ack', action: 'acknowledge', tokenId: 'slack:U0ALICE1' }),
    );
    expect(JSON.stringify(audit)).toContain('alice');

    // An hour on: only `pay` is reminded; #alerts gets no reminder post.
    w.h.clock.now += 60 * 60_000;
    expect(await w.h.ticker.tick()).toMatchObject({ reminders: 1 });
    await w.h.hook.waitFor(2);
    expect(w.h.hooks().map((b) => b.type)).toEqual(['incident.opened', 'reminder']);
    expect(w.slack.messages('#alerts')).toHaveLength(1);

    // A replay of the same signed request: 401, nothing changed, no second chat.update.
    const before = await state(w);
    expect(await click(w, body, headers)).toBe(401);
    expect(await state(w)).toEqual(before);
    expect(updates(w)).toBe(1);
  });

  it('Silence 1h silences exactly that lifecycle for that subscription; the closing still arrives', async () => {
    const w = (world = await setup());
    await w.h.route(incident('incident.opened', w.h.clock.now));
    const message = await parent(w);
    await w.h.hook.waitFor(1);
    await waitFor(() => w.slack.messages('#other').length === 1, { what: "team B's parent" });
    const body = clickBody(w, message, 'statuswatch_silence_1h');
    expect(await click(w, body, signRequest(SECRET_A, body, w.h.clock.now / 1000))).toBe(200);
    const silences = await w.h.silences.list();
    expect(silences).toHaveLength(1);
    expect(silences[0]).toMatchObject({
      matchers: { services: ['stripe'], subjects: ['incident:inc-1'], subscriptions: ['ops'] },
      endsAt: w.h.clock.now + 3600_000,
    });
    expect(JSON.stringify((await parent(w)).blocks)).toContain('Silenced until');

    // Another incident of the same service is not silenced for `ops`.
    const other = incident('incident.opened', w.h.clock.now + 1000, {
      subject: 'incident:inc-2',
      incident: {
        id: 'inc-2',
        title: 'Payouts delayed',
        status: 'investigating',
        started: Math.floor(START / 1000),
        updateCount: 1,
        latestUpdate: null,
      },
    });
    await w.h.route(other);
    await waitFor(() => w.slack.messages('#alerts').length === 2, { what: 'the other incident' });
    // An update of the silenced one reaches `pay` and team B, not #alerts.
    w.h.clock.now += 10 * 60_000;
    await w.h.route(incident('incident.updated', w.h.clock.now));
    await w.h.hook.waitFor(3);
    await waitFor(() => (w.slack.messages('#other')[0]?.replies.length ?? 0) === 1, {
      what: "team B's update",
    });
    expect(w.slack.messages('#alerts')[0]?.replies).toHaveLength(0);
    // The closing arrives everywhere, #alerts included.
    w.h.clock.now += 10 * 60_000;
    await w.h.route(incident('incident.resolved', w.h.clock.now));
    await waitFor(() => (w.slack.messages('#alerts')[0]?.replies.length ?? 0) === 1, {
      what: 'the closing in #alerts',
    });
    expect(JSON.stringify(w.slack.messages('#alerts')[0]?.replies)).toContain('resolved');
    await w.h.hook.waitFor(4);
  });

  it('Silence until resolved ends at the closing', async () => {
    const w = (world = await setup());
    await w.h.route(incident('incident.opened', w.h.clock.now));
    const message = await parent(w);
    const body = clickBody(w, message, 'statuswatch_silence_resolved');
    expect(await click(w, body, signRequest(SECRET_A, body, w.h.clock.now / 1000))).toBe(200);
    expect(await w.h.silences.active()).toHaveLength(1);
    w.h.clock.now += 60_000;
    await w.h.route(incident('incident.resolved', w.h.clock.now));
    await waitFor(() => (w.slack.messages('#alerts')[0]?.replies.length ?? 0) === 1, {
      what: 'the closing in #alerts',
    });
    expect(await w.h.silences.active()).toHaveLength(0);
  });

  it('refuses a bad signature, an old timestamp and an unsigned request with 401, doing nothing', async () => {
    const w = (world = await setup());
    await w.h.route(incident('incident.opened', w.h.clock.now));
    const message = await parent(w);
    await w.h.hook.waitFor(1);
    const before = await state(w);
    const calls = w.slack.calls.length;
    const body = clickBody(w, message, 'statuswatch_ack');
    const now = w.h.clock.now / 1000;
    // Signed with a secret no channel has.
    expect(await click(w, body, signRequest('ffffffffffffffffffffffffffffffff', body, now))).toBe(
      401,
    );
    // The right secret, but over 5 minutes old (and in the future).
    expect(await click(w, body, signRequest(SECRET_A, body, now - 301))).toBe(401);
    expect(await click(w, body, signRequest(SECRET_A, body, now + 301))).toBe(401);
    // A body changed after signing.
    const headers = signRequest(SECRET_A, body, now);
    expect(await click(w, body.replace('statuswatch_ack', 'statuswatch_silence_4h'), headers)).toBe(
      401,
    );
    // No signature at all.
    expect(await click(w, body, { 'content-type': 'application/x-www-form-urlencoded' })).toBe(401);
    expect(await state(w)).toEqual(before);
    expect(w.slack.calls.length).toBe(calls);
    expect(w.slack.responses).toEqual([]);
  });

  it("answers refusals in the ops server's one error shape, with their statuses", async () => {
    const w = (world = await setup());
    const refusal = async (
      method: 'GET' | 'POST',
      body: string | undefined,
      headers: Record<string, string>,
    ) => {
      const res = await request(w.url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      return {
        status: res.statusCode,
        allow: res.headers['allow'],
        type: res.headers['content-type'],
        body: await res.body.json(),
      };
    };
    expect(await refusal('GET', undefined, {})).toEqual({
      status: 405,
      allow: 'POST',
      type: 'application/json',
      body: { error: { code: 'method_not_allowed', message: 'POST only', field: null } },
    });
    expect(await refusal('POST', 'payload=x', {})).toMatchObject({
      status: 401,
      body: { error: { code: 'unauthorized', message: 'request not verified', field: null } },
    });
    // Signed and fresh, but not an interaction payload.
    const notPayload = 'payload=%7B%7D';
    expect(
      await refusal('POST', notPayload, signRequest(SECRET_A, notPayload, w.h.clock.now / 1000)),
    ).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid', message: 'not an interaction payload', field: null } },
    });
  });

  it("a click signed by another team's Slack app cannot act on this channel's message", async () => {
    const w = (world = await setup());
    await w.h.route(incident('incident.opened', w.h.clock.now));
    const message = await parent(w);
    await waitFor(() => w.slack.messages('#other').length === 1, { what: "team B's parent" });
    const before = await state(w);
    const calls = w.slack.calls.length;
    // Team B's app (secret B) forwards a click on team A's message.
    const body = clickBody(w, message, 'statuswatch_silence_4h');
    expect(await click(w, body, signRequest(SECRET_B, body, w.h.clock.now / 1000))).toBe(200);
    const after = await state(w);
    // Only the replay guard's mark is new: no silence, no ack, no edit.
    expect(await w.h.silences.list()).toEqual([]);
    expect(after).toEqual(before);
    expect(w.slack.calls.length).toBe(calls);
    expect(w.slack.responses).toHaveLength(1);
    expect(JSON.stringify(w.slack.responses[0]?.body)).toContain('nothing was done');
    expect(JSON.stringify(w.slack.responses[0]?.body)).not.toContain('ops');
  });
});
