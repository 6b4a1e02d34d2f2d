/**
 * The world of the console tests: the real daemon (`App`, in process: pollers, routing, noise
 * control, delivery, the ops server with the console) on real Redis (a random prefix), the
 * upstream simulator, and a local webhook receiver that can be told to refuse deliveries (for
 * dead letters). Two teams with tokens and a subscription each, made through the API's stores.
 */
import { createServer } from 'node:http';
import { stringify } from 'yaml';
import { App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { createSimulator, type Simulator } from '../../src/sim/index.js';
import { listen, readBody } from '../../src/demo/sinks.js';
import { CONFIG_ADMIN_TOKEN_ID, type Actor } from '../../src/api/tokens.js';
import { REDIS_URL, testRedis, type TestRedis } from './redis.js';
import { waitFor } from './wait.js';
import { LOOPBACK_RECEIVERS } from './egress.js';

export const API_KEY = 'sk_console_APIKEY_0123456789';
export const ADMIN_TOKEN = 'adm_console_ADMINTOKEN_0123456789abcdef';
const WEBHOOK_SECRET = `whsec_${Buffer.from('console-WEBHOOKSECRET-0123456789').toString('base64')}`;

export interface Hit {
  id: string;
  type: string;
  feedId: string;
  status: number;
  title: string | null;
}

export interface Sink {
  url: string;
  hits: Hit[];
  /** Answer 400 (a permanent failure: a dead letter at once) while true. */
  refuse: boolean;
  delivered(): Hit[];
  close(): Promise<void>;
}

async function webhookSink(): Promise<Sink> {
  const sink: Sink = {
    url: '',
    hits: [],
    refuse: false,
    delivered: () => sink.hits.filter((h) => h.status === 200),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const parsed = JSON.parse(body) as {
        type: string;
        data: { service?: { feedId: string }; incident?: { title: string } | null };
      };
      const status = sink.refuse ? 400 : 200;
      sink.hits.push({
        id: String(req.headers['webhook-id'] ?? ''),
        type: parsed.type,
        feedId: parsed.data.service?.feedId ?? '',
        status,
        title: parsed.data.incident?.title ?? null,
      });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  sink.url = `${await listen(server)}/hook`;
  return sink;
}

export interface World {
  app: App;
  sim: Simulator;
  sink: Sink;
  tr: TestRedis;
  base: string;
  tokens: { admin: string; payments: string; search: string };
  close(): Promise<void>;
}

export const TEAM_A = {
  team: 'payments',
  subscription: 'payments-vendors',
  services: ['stripe', 'github'],
};
export const TEAM_B = { team: 'search', subscription: 'search-vendors', services: ['slack'] };

export async function consoleWorld(): Promise<World> {
  const sim = createSimulator({
    services: 60,
    seed: 11,
    rateLimit: false,
    keys: { [API_KEY]: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] } },
  });
  const simUrl = await sim.listen(0, '127.0.0.1');
  const sink = await webhookSink();
  const tr = await testRedis('console');
  const config = parseConfig(
    stringify({
      upstream: { baseUrl: simUrl, apiKey: API_KEY, requestsPerMinute: 6000, timeoutMs: 5000 },
      redis: { url: REDIS_URL, prefix: tr.prefix },
      poll: { status: '1s', incidents: '1s', sla: '15m', scores: '15m' },
      rules: { scoreDrop: 5, statusConfirmations: 2 },
      server: { port: 0, host: '127.0.0.1', adminToken: ADMIN_TOKEN, egress: LOOPBACK_RECEIVERS },
      channels: {
        hook: { type: 'webhook', url: sink.url, secret: WEBHOOK_SECRET, timeoutMs: 5000 },
      },
      subscriptions: [{ name: 'ops-all', services: ['twilio'], channels: ['hook'] }],
    }),
    {},
  );
  const app = new App(config, { log: silentLogger(), port: 0, noiseTickMs: 500 });
  await app.start();
  const admin: Actor = { tokenId: CONFIG_ADMIN_TOKEN_ID, team: null, admin: true, address: 'test' };
  const tokens = {
    admin: ADMIN_TOKEN,
    payments: (await app.api.tokens.create(admin, { team: TEAM_A.team })).token,
    search: (await app.api.tokens.create(admin, { team: TEAM_B.team })).token,
  };
  for (const t of [TEAM_A, TEAM_B]) {
    const actor: Actor = { tokenId: 'test', team: t.team, admin: false, address: 'test' };
    await app.api.store.putSubscription(
      actor,
      { name: t.subscription, services: t.services, channels: ['hook'] },
      'create',
    );
  }
  await app.api.runtime.refresh();
  // Baselined: a status and an incidents cycle committed (first sight is silent).
  await waitFor(
    async () => {
      const polls = await app.history.upstream();
      return polls.has('status') && polls.has('incidents');
    },
    { timeoutMs: 15_000, intervalMs: 100, what: 'the first status and incidents cycles' },
  );
  return {
    app,
    sim,
    sink,
    tr,
    base: `http://127.0.0.1:${String(app.port)}`,
    tokens,
    async close() {
      await app.stop();
      await sink.close();
      await sim.close();
      await tr.cleanup();
    },
  };
}

/** Waits until the sink got a delivery matching `match`. */
export function delivered(w: World, match: (h: Hit) => boolean, what: string): Promise<Hit> {
  return waitFor(() => w.sink.delivered().find(match), {
    timeoutMs: 20_000,
    intervalMs: 100,
    what,
  });
}
