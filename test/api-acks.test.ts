/**
 * `POST /api/v1/subscriptions/{name}/acks` (src/api/acks.ts): a team acknowledges an open episode
 * of its own subscription, gets a 404 on another team's (or the config file's), the admin acts on
 * any; every ack is audited and logged once (`ack:created`); nothing open is a 409; a bad body
 * names the field.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { TenancyApi } from '../src/api/index.js';
import type { Actor } from '../src/api/tokens.js';
import { lifecycleKey } from '../src/noise/policy.js';
import { transition } from './notify-helpers.js';
import { noiseHarness, type NoiseHarness } from './helpers/noise.js';
import { captureLog } from './helpers/log.js';

const ADMIN = 'admin-token-for-the-acks-test-0123456789';
const START = Date.UTC(2026, 10, 24, 10, 0, 0);
const ADMIN_ACTOR: Actor = {
  tokenId: 'config:adminToken',
  team: null,
  admin: true,
  address: '127.0.0.1',
};

let h: NoiseHarness | undefined;
let api: TenancyApi | undefined;
let server: Server | undefined;
afterEach(async () => {
  const open = server;
  if (open !== undefined) {
    open.closeAllConnections();
    await new Promise<void>((resolve) => {
      open.close(() => {
        resolve();
      });
    });
  }
  await api?.store.close();
  await h?.close();
  h = undefined;
  api = undefined;
  server = undefined;
});

async function post(url: string, token: string, body: unknown) {
  const res = await request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe('API acknowledgements', () => {
  it("a team acks its own, gets 404 on another team's, the admin on any; audited", async () => {
    h = await noiseHarness(
      [
        {
          name: 'ops',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved'],
        },
      ],
      { start: START },
    );
    const harness = h;
    const captured = captureLog('info');
    const a = (api = new TenancyApi({
      redis: harness.tr.redis,
      keys: harness.tr.keys,
      log: captured.log,
      silences: harness.silences,
      env: {},
      config: () => ({
        channels: harness.config.channels,
        subscriptions: harness.config.subscriptions,
        adminToken: ADMIN,
      }),
      onChannels: () => undefined,
      noise: harness.store,
      now: () => harness.clock.now,
    }));
    server = createServer((req, res) => {
      void a.http.handle(req, res, new URL(req.url ?? '/', 'http://127.0.0.1'));
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/api/v1`;
    const paymentsToken = await a.tokens.create(ADMIN_ACTOR, { team: 'payments' });
    const payments = paymentsToken.token;
    // A stored subscription of team payments, on the config file's webhook.
    await a.store.putSubscription(
      ADMIN_ACTOR,
      { name: 'pay-team', team: 'payments', services: ['stripe'], channels: ['hook'] },
      'create',
    );
    await a.runtime.refresh();

    const opened = transition('incident.opened', { observedAt: harness.clock.now });
    const key = lifecycleKey(opened);
    const episode = { service: 'stripe', subject: 'incident:inc-1' };
    // Nothing open yet: 409.
    expect((await post(`${base}/subscriptions/ops/acks`, ADMIN, episode)).status).toBe(409);
    await harness.route(opened);
    await harness.hook.waitFor(1);
    // The stored subscription is not routed by the harness: its told entry written as routing would.
    await harness.store.commitGate(
      [{ type: 'tell', subscription: 'pay-team', channel: 'hook', key, opening: opened }],
      [],
      harness.clock.now,
    );

    // A team token: its own subscription yes, the config file's (not the team's) no.
    const own = await post(`${base}/subscriptions/pay-team/acks`, payments, episode);
    expect(own.status).toBe(201);
    expect(own.body).toMatchObject({
      subscription: 'pay-team',
      service: 'stripe',
      subject: 'incident:inc-1',
      via: 'api',
      created: true,
    });
    expect((await post(`${base}/subscriptions/ops/acks`, payments, episode)).status).toBe(404);
    expect((await post(`${base}/subscriptions/nope/acks`, payments, episode)).status).toBe(404);
    // The admin acts on any; a second ack keeps the first (200, created false).
    expect((await post(`${base}/subscriptions/ops/acks`, ADMIN, episode)).status).toBe(201);
    const again = await post(`${base}/subscriptions/ops/acks`, ADMIN, episode);
    expect(again).toMatchObject({ status: 200, body: { created: false } });
    // A bad body names the field.
    const bad = await post(`${base}/subscriptions/ops/acks`, ADMIN, { service: 'stripe' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('subject');

    // One `ack:created` line per acknowledgement answered (a kept one included), none for refusals.
    const logged = captured.lines.filter((l) => l['event'] === 'ack:created');
    expect(
      logged.map(({ event, subscription, service, subject, created, tokenId, msg }) => ({
        event,
        subscription,
        service,
        subject,
        created,
        tokenId,
        msg,
      })),
    ).toEqual([
      {
        event: 'ack:created',
        subscription: 'pay-team',
        service: 'stripe',
        subject: 'incident:inc-1',
        created: true,
        tokenId: paymentsToken.id,
        msg: 'episode acknowledged through the API',
      },
      {
        event: 'ack:created',
        subscription: 'ops',
        service: 'stripe',
        subject: 'incident:inc-1',
        created: true,
        tokenId: 'config:adminToken',
        msg: 'episode acknowledged through the API',
      },
      {
        event: 'ack:created',
        subscription: 'ops',
        service: 'stripe',
        subject: 'incident:inc-1',
        created: false,
        tokenId: 'config:adminToken',
        msg: 'episode acknowledged through the API',
      },
    ]);

    const audit = await a.store.audit.read({ limit: 20, visible: () => true });
    const acks = audit.filter((e) => e.kind === 'ack');
    expect(acks.map((e) => [e.name, e.team, e.action])).toEqual([
      ['ops/stripe|incident:inc-1', '*', 'acknowledge'],
      ['pay-team/stripe|incident:inc-1', 'payments', 'acknowledge'],
    ]);
    // The team reads its own ack entry only.
    const teamAudit = await request(`${base}/audit`, {
      headers: { authorization: `Bearer ${payments}` },
    });
    const entries = (
      (await teamAudit.body.json()) as { entries: { kind: string; name: string }[] }
    ).entries.filter((e) => e.kind === 'ack');
    expect(entries.map((e) => e.name)).toEqual(['pay-team/stripe|incident:inc-1']);
  });
});
