/**
 * End to end: the built daemon (`node dist/cli.js run`) as a real child process, real Redis (a
 * random key prefix per test), the upstream simulator in this process on 127.0.0.1 with a clock
 * the test moves, and local Slack / Standard Webhooks receivers. Nothing is mocked.
 */
import { createServer, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { listen, readBody, verifyDelivery } from '../src/demo/sinks.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';
import { baselined } from './helpers/baselined.js';
import { waitFor } from './helpers/wait.js';
import { casesOncePerCi, itOncePerCi } from './helpers/once-per-ci.js';
import { promtoolCheck } from './helpers/promtool.js';
import {
  killAll,
  metricsOf,
  metricValue,
  morePolls,
  okPolls,
  queuesIdle,
  startDaemon,
  tempDir,
  writeConfig,
  type Daemon,
} from './helpers/process.js';

// Recognizable secrets: none of them may ever show up in the daemon's output.
const API_KEY = 'sk_e2e_APIKEY_d41d8cd98f00b204';
const ADMIN_TOKEN = 'adm_e2e_ADMINTOKEN_9e107d9d372bb6826';
const WEBHOOK_SECRET = `whsec_${Buffer.from('e2e-WEBHOOKSECRET-0123456789abcdef').toString('base64')}`;
const SLACK_PATH = '/services/T0E2E/B0E2E/SLACKTOKEN4f9a2c7e1b';
const HOOK_PATH = '/hooks/HOOKPATHTOKEN7d3e5a91';

const WATCHED = ['stripe', 'github', 'slack', 'twilio'];
const EVENTS = ['incident.opened', 'incident.updated', 'incident.resolved', 'status.changed'];

// ---------------------------------------------------------------------------------------------
// Local receivers

interface Hit {
  id: string;
  type: string;
  feedId: string;
  eventId: string;
  verified: boolean;
  status: number;
  /** The whole answer was written to the socket. */
  answered: boolean;
  /** The client went away before the answer. */
  aborted: boolean;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

interface WebhookReceiver {
  url: string;
  hits: Hit[];
  /** How long to hold each answer. */
  delayMs: number;
  /** Answer the next N requests with 500. */
  failNext: number;
  /** Answered-200 hits. */
  delivered(): Hit[];
  close(): Promise<void>;
}

/** A Standard Webhooks receiver verifying with the official library; answers 200 (after `delayMs`). */
async function webhookReceiver(): Promise<WebhookReceiver> {
  const wh = new Webhook(WEBHOOK_SECRET);
  const receiver: WebhookReceiver = {
    url: '',
    hits: [],
    delayMs: 0,
    failNext: 0,
    delivered: () => receiver.hits.filter((h) => h.answered && h.status === 200),
    close: () => closeServer(server),
  };
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const { headers, verified } = verifyDelivery(wh, body, req.headers);
      const parsed = JSON.parse(body) as {
        type: string;
        data: { eventId: string; service: { feedId: string } };
      };
      let status = verified ? 200 : 400;
      if (verified && receiver.failNext > 0) {
        receiver.failNext -= 1;
        status = 500;
      }
      const hit: Hit = {
        id: headers['webhook-id'] ?? '',
        type: parsed.type,
        feedId: parsed.data.service.feedId,
        eventId: parsed.data.eventId,
        verified,
        status,
        answered: false,
        aborted: false,
      };
      receiver.hits.push(hit);
      res.on('finish', () => {
        hit.answered = true;
      });
      res.on('close', () => {
        if (!res.writableFinished) hit.aborted = true;
      });
      const answer = (): void => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  receiver.url = `${await listen(server)}${HOOK_PATH}`;
  return receiver;
}

interface SlackMessage {
  text: string;
  /** The delivery id from the message's context line. */
  deliveryId: string;
}

interface SlackReceiver {
  url: string;
  messages: SlackMessage[];
  failNext: number;
  close(): Promise<void>;
}

/** A stand-in for a Slack incoming webhook: 404 unless the secret path is used, else `ok`. */
async function slackReceiver(): Promise<SlackReceiver> {
  const receiver: SlackReceiver = {
    url: '',
    messages: [],
    failNext: 0,
    close: () => closeServer(server),
  };
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      if (req.url !== SLACK_PATH) {
        res.writeHead(404).end('no_service');
        return;
      }
      if (receiver.failNext > 0) {
        receiver.failNext -= 1;
        res.writeHead(500).end('internal_error');
        return;
      }
      const parsed = JSON.parse(body) as {
        text: string;
        blocks: { type: string; elements?: { text: string }[] }[];
      };
      const context = parsed.blocks.find((b) => b.type === 'context')?.elements?.[0]?.text ?? '';
      receiver.messages.push({
        text: parsed.text,
        deliveryId: /Delivery: (\S+)/.exec(context)?.[1] ?? '',
      });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  receiver.url = `${await listen(server)}${SLACK_PATH}`;
  return receiver;
}

// ---------------------------------------------------------------------------------------------
// Per-test world

interface World {
  sim: Simulator;
  simUrl: string;
  /** The simulator's clock: frozen unless the test moves it, so upstream snapshots are deterministic. */
  clock: { now: number; tick(ms?: number): void };
  hook: WebhookReceiver;
  slack: SlackReceiver;
  tr: TestRedis;
  dir: string;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function world(): Promise<World> {
  const clock = {
    now: Date.now(),
    tick(ms = 1000) {
      clock.now += ms;
    },
  };
  const sim = createSimulator({
    services: 50,
    seed: 7,
    keys: { [API_KEY]: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] } },
    rateLimit: { public: 100_000, premium: 100_000 },
    now: () => clock.now,
  });
  const simUrl = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  const hook = await webhookReceiver();
  cleanups.push(() => hook.close());
  const slack = await slackReceiver();
  cleanups.push(() => slack.close());
  const tr = await testRedis('e2e');
  cleanups.push(() => tr.cleanup());
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return { sim, simUrl, clock, hook, slack, tr, dir: tmp.dir };
}

function configOf(
  w: World,
  o: { prefix?: string; adminToken?: string; threads?: number } = {},
): Record<string, unknown> {
  return {
    ...(o.threads === undefined ? {} : { daemon: { threads: o.threads } }),
    upstream: { baseUrl: w.simUrl, apiKey: API_KEY, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: REDIS_URL, prefix: o.prefix ?? w.tr.prefix },
    poll: { status: '1s', incidents: '1s', sla: '15m', scores: '15m' },
    rules: { scoreDrop: 5, statusConfirmations: 2 },
    server: o.adminToken === undefined ? { port: 0 } : { port: 0, adminToken: o.adminToken },
    channels: {
      hook: { type: 'webhook', url: w.hook.url, secret: WEBHOOK_SECRET, timeoutMs: 5000 },
      chat: { type: 'slack', webhookUrl: w.slack.url },
    },
    subscriptions: [
      { name: 'core', services: WATCHED, events: EVENTS, channels: ['hook', 'chat'] },
    ],
  };
}

const pairsOf = (hits: readonly Hit[]): string[] => hits.map((h) => `${h.type} ${h.feedId}`).sort();

async function hookArrived(w: World, type: string, feedId: string): Promise<Hit> {
  return waitFor(() => w.hook.delivered().find((h) => h.type === type && h.feedId === feedId), {
    timeoutMs: 10_000,
    what: `webhook ${type} ${feedId}`,
  });
}

function expectNoSecrets(output: string, w: World): void {
  const secrets = [
    API_KEY,
    ADMIN_TOKEN,
    WEBHOOK_SECRET,
    WEBHOOK_SECRET.slice('whsec_'.length),
    SLACK_PATH,
    'SLACKTOKEN4f9a2c7e1b',
    w.slack.url,
    w.hook.url,
    'HOOKPATHTOKEN7d3e5a91',
  ];
  for (const s of secrets) expect(output.includes(s), `secret ${s} in output`).toBe(false);
}

// ---------------------------------------------------------------------------------------------

describe('statuswatch run (real process, Redis, simulator, sinks)', () => {
  it('a scripted timeline reaches Slack and the webhook exactly as expected', async () => {
    const w = await world();
    const d = await startDaemon(await writeConfig(w.dir, configOf(w)));
    await baselined(d);
    expect(w.hook.hits).toEqual([]); // first sight is a baseline, not news

    w.clock.tick();
    const inc = w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Looking' });
    await hookArrived(w, 'incident.opened', 'stripe');
    w.clock.tick();
    w.sim.updateIncident('stripe', inc, { status: 'identified', body: 'Root cause found' });
    await hookArrived(w, 'incident.updated', 'stripe');
    w.clock.tick();
    w.sim.resolveIncident('stripe', inc, 'Fixed');
    await hookArrived(w, 'incident.resolved', 'stripe');

    // A flap seen in polls of one upstream snapshot only: no status.changed.
    w.clock.tick();
    w.sim.setStatus('slack', 'major_outage');
    await morePolls(d, 2, { kinds: ['status'] });
    w.clock.tick();
    w.sim.setStatus('slack', 'operational');
    await morePolls(d, 2, { kinds: ['status'] });
    // A change held over 3 polls and 2 distinct snapshots: one status.changed.
    w.clock.tick(60_000);
    w.sim.setStatus('github', 'degraded');
    await morePolls(d, 2, { kinds: ['status'] });
    expect(pairsOf(w.hook.hits).filter((p) => p.startsWith('status.changed'))).toEqual([]);
    w.clock.tick(60_000); // the next upstream cycle: a second distinct snapshot
    const changed = await hookArrived(w, 'status.changed', 'github');
    await morePolls(d, 3);
    const text = await queuesIdle(d);

    const expected = [
      'incident.opened stripe',
      'incident.resolved stripe',
      'incident.updated stripe',
      'status.changed github',
    ];
    expect(pairsOf(w.hook.hits)).toEqual(expected);
    expect(w.hook.hits.every((h) => h.verified && h.status === 200 && h.answered)).toBe(true);
    expect(new Set(w.hook.hits.map((h) => h.id)).size).toBe(4);
    for (const h of w.hook.hits) expect(h.id).toBe(`${h.eventId}:core:hook`);
    expect(changed.eventId).toMatch(/^t[0-9a-f]{31}$/);

    // Slack got the same four transitions, once each.
    const slackIds = w.slack.messages.map((m) => m.deliveryId).sort();
    expect(slackIds).toEqual(w.hook.hits.map((h) => `${h.eventId}:core:chat`).sort());
    const texts = w.slack.messages.map((m) => m.text);
    expect(texts.filter((t) => t.includes('incident opened'))).toHaveLength(1);
    expect(texts.filter((t) => t.includes('incident resolved'))).toHaveLength(1);
    expect(texts.filter((t) => t.includes('status operational → degraded'))).toHaveLength(1);

    // The daemon's own accounting agrees: 4 transitions, 8 deliveries, nothing else.
    expect(metricValue(text, 'statuswatch_transitions_total', {})).toBe(4);
    expect(metricValue(text, 'statuswatch_transitions_total', { kind: 'status.changed' })).toBe(1);
    expect(metricValue(text, 'statuswatch_deliveries_total', { outcome: 'sent' })).toBe(8);
    expect(metricValue(text, 'statuswatch_deliveries_total', {})).toBe(8);
    expectNoSecrets(d.proc.output(), w);
  }, 45_000);

  // Two threads running all the time (`threads: 2`: the upstream thread polls and routes, the
  // main thread delivers), and four (two more delivery threads): the drain covers every thread.
  // Four threads once per CI run: the second Node.js pass skips them (CI's time budget).
  it.each(casesOncePerCi([{ threads: 2 }], [{ threads: 4 }]))(
    'SIGTERM during slow deliveries ($threads threads), then a restart: nothing lost, nothing doubled',
    async ({ threads }) => {
      const w = await world();
      const file = await writeConfig(w.dir, configOf(w, { threads }));
      const grace = 10_000;
      const env = { STATUSWATCH_GRACE_MS: String(grace) };
      const first = await startDaemon(file, env, 60_000);
      await baselined(first);
      w.hook.delayMs = 1500;

      w.clock.tick();
      const ids = new Map(
        ['stripe', 'github'].map((f) => [f, w.sim.openIncident(f, { title: `${f} is down` })]),
      );
      await waitFor(() => w.hook.hits.length > 0, { what: 'a first webhook in flight' });
      // More changes just before the signal: they may be mid-poll, queued or not yet seen.
      w.clock.tick();
      for (const f of ['slack', 'twilio'])
        ids.set(f, w.sim.openIncident(f, { title: `${f} down` }));
      const inFlight = w.hook.hits.filter((h) => !h.answered);
      expect(inFlight.length).toBeGreaterThan(0);
      const signalled = Date.now();
      first.proc.signal('SIGTERM');
      // And one while the daemon drains or is down.
      w.clock.tick();
      w.sim.resolveIncident('stripe', ids.get('stripe')!, 'Fixed');

      const exit = await first.proc.waitForExit(grace);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(grace);
      // The drain let every in-flight delivery finish: none was cut off.
      expect(inFlight.every((h) => h.answered && !h.aborted)).toBe(true);
      expect(first.proc.output()).toContain('"event":"app:stopped"');

      w.hook.delayMs = 100;
      const second = await startDaemon(file, env, 60_000);
      const expected = [
        'incident.opened github',
        'incident.opened slack',
        'incident.opened stripe',
        'incident.opened twilio',
        'incident.resolved stripe',
      ];
      await waitFor(() => expected.every((p) => pairsOf(w.hook.delivered()).includes(p)), {
        timeoutMs: 15_000,
        what: `every expected webhook (have ${pairsOf(w.hook.delivered()).join(', ')})`,
      });
      await morePolls(second, 2);
      await queuesIdle(second);

      const delivered = w.hook.delivered();
      // Each webhook-id answered 200 exactly once; one webhook-id per expected transition.
      const perId = new Map<string, number>();
      for (const h of delivered) perId.set(h.id, (perId.get(h.id) ?? 0) + 1);
      expect([...perId.values()].every((n) => n === 1)).toBe(true);
      expect(pairsOf(delivered)).toEqual(expected);
      expect(w.hook.hits.every((h) => h.verified)).toBe(true);
      // Any re-sent webhook-id is one whose earlier attempt was not answered.
      const answeredIds = new Set(delivered.map((h) => h.id));
      expect(w.hook.hits.filter((h) => !answeredIds.has(h.id))).toEqual([]);
      // Slack: the same transitions, each once.
      expect(w.slack.messages.map((m) => m.deliveryId).sort()).toEqual(
        delivered.map((h) => `${h.eventId}:core:chat`).sort(),
      );
      expectNoSecrets(first.proc.output() + second.proc.output(), w);
    },
    150_000,
  );

  // Once per CI run, like the Redis topologies: the second Node.js pass skips it.
  itOncePerCi(
    'two replicas of four threads each: consecutive cycles of a lifecycle arrive in order, each once; /metrics merges every thread',
    async () => {
      const w = await world();
      const file = await writeConfig(w.dir, configOf(w, { threads: 4 }));
      // Each thread loads the program on its own: a loaded machine takes a while to start eight.
      const replicas = [await startDaemon(file, {}, 60_000), await startDaemon(file, {}, 60_000)];
      await baselined(...replicas);
      w.hook.delayMs = 30;

      // Each step in a cycle of its own (a poll of the incidents list in between), without waiting
      // for the webhooks: routing and delivery of one cycle still run while the next is polled.
      const feeds = ['stripe', 'github', 'slack'];
      w.clock.tick();
      const ids = new Map(feeds.map((f) => [f, w.sim.openIncident(f, { title: `${f} down` })]));
      for (const step of ['investigating', 'identified', 'monitoring']) {
        await morePolls(replicas, 1, { kinds: ['incidents'] });
        w.clock.tick();
        for (const f of feeds) w.sim.updateIncident(f, ids.get(f)!, { status: step, body: step });
      }
      await morePolls(replicas, 1, { kinds: ['incidents'] });
      w.clock.tick();
      for (const f of feeds) w.sim.resolveIncident(f, ids.get(f)!, 'Fixed');
      await waitFor(
        () =>
          feeds.every((f) =>
            w.hook.delivered().some((h) => h.feedId === f && h.type === 'incident.resolved'),
          ),
        { timeoutMs: 20_000, what: 'every resolution' },
      );
      await morePolls(replicas, 2);
      for (const d of replicas) await queuesIdle(d);

      const delivered = w.hook.delivered();
      expect(new Set(delivered.map((h) => h.id)).size).toBe(delivered.length);
      for (const f of feeds) {
        const kinds = delivered.filter((h) => h.feedId === f).map((h) => h.type);
        // Opened first, resolved last, the updates between (a cycle whose update the upstream
        // showed only in passing may fold into the next one's).
        expect(kinds[0]).toBe('incident.opened');
        expect(kinds.at(-1)).toBe('incident.resolved');
        expect(kinds.slice(1, -1).every((k) => k === 'incident.updated')).toBe(true);
        expect(kinds.length).toBeGreaterThanOrEqual(3);
      }
      // One scrape of each replica shows every one of its threads.
      for (const d of replicas) {
        const text = await metricsOf(d);
        for (const thread of ['main', 'upstream', 'deliver-1', 'deliver-2']) {
          expect(text).toContain(`statuswatch_thread_busy_seconds_total{thread="${thread}"}`);
          // Each isolate's own heap: used within committed, neither zero.
          const used = metricValue(text, 'statuswatch_thread_heap_bytes', {
            thread,
            state: 'used',
          });
          const committed = metricValue(text, 'statuswatch_thread_heap_bytes', {
            thread,
            state: 'committed',
          });
          expect(used).toBeGreaterThan(1e6);
          expect(committed).toBeGreaterThanOrEqual(used);
        }
        const ready = (await (await fetch(`${d.url}/readyz`)).json()) as { checks: object };
        expect(ready.checks).toMatchObject({ threads: true, workers: true });
      }
      // Between them, the replicas counted each delivery once (every thread's counters merged).
      const texts = await Promise.all(replicas.map((d) => metricsOf(d)));
      const sent = texts.reduce(
        (sum, t) =>
          sum +
          metricValue(t, 'statuswatch_deliveries_total', {
            channel_type: 'webhook',
            outcome: 'sent',
          }),
        0,
      );
      expect(sent).toBe(delivered.length);
    },
    180_000,
  );

  it('/metrics carries the key series and passes promtool when it is installed', async () => {
    const w = await world();
    const d = await startDaemon(await writeConfig(w.dir, configOf(w)));
    await baselined(d);
    w.clock.tick();
    w.sim.openIncident('twilio', { title: 'SMS delays' });
    await hookArrived(w, 'incident.opened', 'twilio');
    await waitFor(() => w.slack.messages.length === 1, { what: 'the Slack message' });
    const text = await queuesIdle(d);

    expect(okPolls(text, 'status')).toBeGreaterThanOrEqual(1);
    expect(okPolls(text, 'incidents')).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'statuswatch_transitions_total', { kind: 'incident.opened' })).toBe(1);
    expect(
      metricValue(text, 'statuswatch_deliveries_total', {
        channel_type: 'webhook',
        outcome: 'sent',
      }),
    ).toBe(1);
    expect(
      metricValue(text, 'statuswatch_deliveries_total', { channel_type: 'slack', outcome: 'sent' }),
    ).toBe(1);
    expect(
      metricValue(text, 'statuswatch_upstream_requests_total', { status: '200' }),
    ).toBeGreaterThanOrEqual(3);
    // Both deliveries travelled in one batch job, removed once done; nothing failed.
    expect(
      metricValue(text, 'statuswatch_queue_jobs', { queue: 'deliveries', state: 'failed' }),
    ).toBe(0);
    expect(metricValue(text, 'statuswatch_dead_letters', {})).toBe(0);
    for (const series of [
      '# TYPE statuswatch_polls_total counter',
      '# TYPE statuswatch_transitions_total counter',
      '# TYPE statuswatch_deliveries_total counter',
      '# TYPE statuswatch_upstream_requests_total counter',
      '# TYPE statuswatch_queue_jobs gauge',
      '# TYPE statuswatch_process_cpu_seconds_total counter',
      '# TYPE statuswatch_process_resident_memory_bytes gauge',
      '# TYPE statuswatch_nodejs_heap_size_used_bytes gauge',
      '# TYPE statuswatch_poll_cycle_duration_seconds histogram',
    ])
      expect(text).toContain(series);
    expect(metricValue(text, 'statuswatch_process_resident_memory_bytes', {})).toBeGreaterThan(0);

    const promtool = await promtoolCheck(text);
    if (promtool === null) {
      console.warn(
        'promtool not on PATH: skipped `promtool check metrics` (Debian package: prometheus)',
      );
      return;
    }
    expect(promtool.stderr + promtool.stdout).toBe('');
    expect(promtool.code).toBe(0);
  }, 30_000);

  it('/admin: 404 without an adminToken, 401 with a wrong bearer, 200 with the right one', async () => {
    const w = await world();
    const other = await testRedis('e2e-noadmin');
    cleanups.push(() => other.cleanup());
    const [withToken, without] = await Promise.all([
      writeConfig(w.dir, configOf(w, { adminToken: ADMIN_TOKEN }), 'admin.yaml').then((f) =>
        startDaemon(f),
      ),
      writeConfig(w.dir, configOf(w, { prefix: other.prefix }), 'no-admin.yaml').then((f) =>
        startDaemon(f),
      ),
    ]);
    await baselined(withToken);
    const get = (d: Daemon, path: string, authorization?: string) =>
      fetch(`${d.url}${path}`, {
        headers: authorization === undefined ? {} : { authorization },
      });

    const disabled = await get(without, '/admin/dead-letters', `Bearer ${ADMIN_TOKEN}`);
    expect(disabled.status).toBe(404);
    expect(await disabled.json()).toEqual({
      error: {
        code: 'admin_disabled',
        message: 'admin API disabled (no server.adminToken)',
        field: null,
      },
    });

    for (const auth of [undefined, 'Bearer wrong-token', `Basic ${ADMIN_TOKEN}`, 'Bearer ']) {
      const res = await get(withToken, '/admin/dead-letters', auth);
      expect(res.status, `authorization ${String(auth)}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      await res.body?.cancel();
    }
    const wrongOnService = await get(withToken, '/admin/services/stripe', 'Bearer nope');
    expect(wrongOnService.status).toBe(401);
    await wrongOnService.body?.cancel();

    const letters = await get(withToken, '/admin/dead-letters', `Bearer ${ADMIN_TOKEN}`);
    expect(letters.status).toBe(200);
    expect(await letters.json()).toEqual({ deadLetters: [], next: null });

    const stripe = await get(withToken, '/admin/services/stripe', `Bearer ${ADMIN_TOKEN}`);
    expect(stripe.status).toBe(200);
    const state = (await stripe.json()) as Record<string, unknown>;
    expect(state.feedId).toBe('stripe');
    expect(state.status).toMatchObject({ status: 'operational' });

    // What the upstream's words were seen to be, and how each is read.
    const vocabulary = await get(withToken, '/admin/upstream/vocabulary', `Bearer ${ADMIN_TOKEN}`);
    expect(vocabulary.status).toBe(200);
    const { fields } = (await vocabulary.json()) as {
      fields: {
        field: string;
        promised: string[];
        seen: { value: string; recognised: boolean }[];
      }[];
    };
    const display = fields.find((f) => f.field === 'status.displayStatus');
    expect(display?.promised).toEqual(['operational']);
    expect(display?.seen.find((s) => s.value === 'operational')).toMatchObject({
      recognised: true,
    });
    const noVocabulary = await get(withToken, '/admin/upstream/vocabulary', 'Bearer nope');
    expect(noVocabulary.status).toBe(401);
    await noVocabulary.body?.cancel();
    expectNoSecrets(withToken.proc.output() + without.proc.output(), w);
  }, 30_000);

  it('secrets never appear in stdout/stderr, even on failure paths and a reload', async () => {
    const w = await world();
    const file = await writeConfig(w.dir, configOf(w, { adminToken: ADMIN_TOKEN }));
    const d = await startDaemon(file, { LOG_LEVEL: 'debug' });
    await baselined(d);

    // Upstream errors, a failing webhook receiver and Slack, a wrong and a right admin bearer.
    w.sim.failNext({ path: '/api/v1/status', status: 503, count: 2 });
    w.hook.failNext = 1;
    w.slack.failNext = 1;
    w.clock.tick();
    w.sim.openIncident('github', { title: 'Actions queued' });
    await hookArrived(w, 'incident.opened', 'github');
    await waitFor(() => w.slack.messages.length === 1, {
      timeoutMs: 10_000,
      what: 'the Slack retry',
    });
    await waitFor(() => d.proc.stdout().includes('"event":"poll:failed"'), {
      what: 'a poll:failed log line',
    });
    const wrong = await fetch(`${d.url}/admin/dead-letters`, {
      headers: { authorization: 'Bearer not-it' },
    });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${d.url}/admin/services/github`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(right.status).toBe(200);
    d.proc.signal('SIGHUP');
    await d.proc.waitForOutput(/"event":"config:reload"/);
    d.proc.signal('SIGTERM');
    expect(await d.proc.waitForExit(10_000)).toEqual({ code: 0, signal: null });

    const output = d.proc.output();
    // The failure paths really were logged...
    expect(output).toContain('"event":"delivery:retry"');
    expect(output).toContain('"event":"delivery:sent"');
    expect(output).toContain('"event":"poll:failed"');
    expect(output).toContain('"level":"debug"');
    // ...and no secret is in any of it.
    expectNoSecrets(output, w);
  }, 30_000);
});
