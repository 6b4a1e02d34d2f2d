/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API and console answers are JSON, read field by field */
/**
 * "No reflection": a team that points a channel at a server of its choice must not read that
 * server's answers back through statuswatch. Every receiver here answers failures with a canary
 * (HTTP bodies of webhook, PagerDuty, Opsgenie, Teams, Slack incoming webhook; a Slack app's
 * `ok:false` with an undocumented error word; an SMTP server's greeting and replies), and every
 * surface a team reads — the API's channel test, the console's test (JSON and page), the
 * console's pages and their JSON (delivery list, dead letters) — is searched for it as a team:
 * it is nowhere, while the operator's log has it. Network failures of any cause read alike.
 * The daemon is the real App in process (real Redis, the simulator, real local servers).
 */
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { SMTPServer } from 'smtp-server';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { readBody, listen } from '../src/demo/sinks.js';
import { CONFIG_ADMIN_TOKEN_ID, type Actor } from '../src/api/tokens.js';
import { newKey, SECRET_KEY_ENV } from '../src/api/crypto.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';
import { captureLog } from './helpers/log.js';
import { waitFor } from './helpers/wait.js';
import { LOOPBACK_RECEIVERS } from './helpers/egress.js';
import { notifyTest } from '../src/commands/notify-test.js';
import { refusedUrl } from './notify-helpers.js';
import { runCli } from './helpers/process.js';
import { EXIT_FAILURE } from '../src/api/client.js';

const ADMIN_TOKEN = 'adm_reflect_ADMINTOKEN_0123456789abcdef';
const WEBHOOK_SECRET = `whsec_${Buffer.from('reflect-WEBHOOKSECRET-0123456789').toString('base64')}`;
/** Lower-case letters only: it passes every "is this a plain word/code" filter on its way. */
const CANARY = `reflectcanary${[...randomBytes(10)].map((b) => String.fromCharCode(97 + (b % 26))).join('')}`;
const SUBSCRIPTION = 'reflect-watch';
const TEAM = 'red';

/** The channels whose failures a subscription turns into dead letters (permanent failures). */
const FAILING = [
  'c-webhook',
  'c-pagerduty',
  'c-opsgenie',
  'c-teams',
  'c-slack',
  'c-slackapp',
  'c-email',
];

interface Listening {
  base: string;
  close(): Promise<void>;
}

function closeHttp(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

/** One HTTP server for all HTTP receivers; every failure answer carries the canary. */
async function canaryHttp(): Promise<Listening> {
  const server = createServer((req, res) => {
    void readBody(req).then(() => {
      const path = req.url ?? '/';
      const json = (status: number, body: unknown): void => {
        res
          .writeHead(status, { 'content-type': 'application/json', 'x-canary': CANARY })
          .end(JSON.stringify(body));
      };
      if (path.startsWith('/webhook')) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(`rejected: ${CANARY}`);
      } else if (path.startsWith('/pd/')) {
        json(400, { status: 'invalid event', message: CANARY, errors: [CANARY] });
      } else if (path.startsWith('/og/')) {
        json(422, { message: CANARY, errors: { message: CANARY }, took: 0, requestId: CANARY });
      } else if (path.startsWith('/teams')) {
        json(400, { error: { code: CANARY, message: CANARY } });
      } else if (path.startsWith('/slack-hook')) {
        // Slack answers errors as one word: this one is not a documented one.
        res.writeHead(400, { 'content-type': 'text/plain' }).end(CANARY);
      } else if (path.startsWith('/slack-api/')) {
        json(200, { ok: false, error: CANARY });
      } else {
        res.writeHead(404).end(CANARY);
      }
    });
  });
  const base = await listen(server);
  return { base, close: () => closeHttp(server) };
}

/** A real SMTP server whose greeting banner and MAIL FROM refusal carry the canary. */
async function canarySmtp(): Promise<{ port: number; close(): Promise<void> }> {
  const server = new SMTPServer({
    name: 'mx.example.test',
    banner: `welcome ${CANARY}`,
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onMailFrom(_address, _session, callback) {
      callback(Object.assign(new Error(`sender refused ${CANARY}`), { responseCode: 550 }));
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A raw TCP server: `greeting` on connect (then it closes), or nothing but a reset. */
async function rawTcp(greeting: string | null): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: NetServer = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (greeting === null) socket.resetAndDestroy();
    else socket.end(greeting);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

let sim: Simulator;
let tr: TestRedis;
let app: App;
let http: Listening;
let smtp: { port: number; close(): Promise<void> };
let smtpGreeting: { port: number; close(): Promise<void> };
let garbage: { port: number; close(): Promise<void> };
let reset: { port: number; close(): Promise<void> };
let refused = '';
let base = '';
let teamToken = '';
let otherToken = '';
let previousKey: string | undefined;
const captured = captureLog('info');
/** Every text a team was answered, for the final scan. */
const teamSaw: { where: string; text: string }[] = [];

async function asTeam(
  method: string,
  path: string,
  body?: unknown,
  token = teamToken,
  accept = 'application/json',
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test assertions read any field
): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  teamSaw.push({ where: `${method} ${path} (${accept})`, text });
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // a page
  }
  return { status: res.status, text, json };
}

function channels(): Record<string, unknown>[] {
  return [
    { name: 'c-webhook', type: 'webhook', url: `${http.base}/webhook`, secret: WEBHOOK_SECRET },
    {
      name: 'c-pagerduty',
      type: 'pagerduty',
      routingKey: 'R0UTINGKEYreflect0123456789abcde',
      url: `${http.base}/pd/v2/enqueue`,
    },
    { name: 'c-opsgenie', type: 'opsgenie', apiKey: 'og-key-reflect', url: `${http.base}/og` },
    { name: 'c-teams', type: 'teams', webhookUrl: `${http.base}/teams?sig=abc` },
    { name: 'c-slack', type: 'slack', webhookUrl: `${http.base}/slack-hook/T0/B0/x` },
    {
      name: 'c-slackapp',
      type: 'slack',
      botToken: 'xoxb-reflect-0000',
      channel: 'C0123ABCD',
      apiUrl: `${http.base}/slack-api`,
    },
    {
      name: 'c-email',
      type: 'email',
      smtp: { host: '127.0.0.1', port: smtp.port, pool: false },
      from: 'statuswatch@example.test',
      to: ['oncall@example.test'],
    },
    // Only tested through the API (their failures are retried, not dead letters).
    {
      name: 'n-smtp-greeting',
      type: 'email',
      smtp: { host: '127.0.0.1', port: smtpGreeting.port, pool: false },
      from: 'statuswatch@example.test',
      to: ['oncall@example.test'],
    },
    { name: 'n-refused', type: 'webhook', url: refused, secret: WEBHOOK_SECRET },
    {
      name: 'n-garbage',
      type: 'webhook',
      url: `http://127.0.0.1:${garbage.port}/x`,
      secret: WEBHOOK_SECRET,
    },
    {
      name: 'n-reset',
      type: 'webhook',
      url: `http://127.0.0.1:${reset.port}/x`,
      secret: WEBHOOK_SECRET,
    },
  ];
}

beforeAll(async () => {
  sim = createSimulator({ services: 30, seed: 5, rateLimit: false });
  const simUrl = await sim.listen(0, '127.0.0.1');
  http = await canaryHttp();
  smtp = await canarySmtp();
  smtpGreeting = await rawTcp(`554 ${CANARY} go away\r\n`);
  garbage = await rawTcp(`${CANARY}\r\n\r\n`);
  reset = await rawTcp(null);
  refused = await refusedUrl('/x');
  tr = await testRedis('reflect');
  const config = parseConfig(
    stringify({
      upstream: { baseUrl: simUrl, requestsPerMinute: 6000, timeoutMs: 5000 },
      redis: { url: REDIS_URL, prefix: tr.prefix },
      poll: { status: '1s', incidents: '1s' },
      // egress: loopback receivers
      server: { port: 0, host: '127.0.0.1', adminToken: ADMIN_TOKEN, egress: LOOPBACK_RECEIVERS },
      channels: {
        ops: {
          type: 'webhook',
          url: `${http.base}/webhook/ops`,
          secret: WEBHOOK_SECRET,
          headers: { 'x-internal-key': 'OPS-INTERNAL-KEY-VALUE' },
        },
      },
      subscriptions: [],
    }),
    {},
  );
  // Channels with secrets are stored through the API under the daemon's key (read from the env).
  previousKey = process.env[SECRET_KEY_ENV];
  process.env[SECRET_KEY_ENV] = newKey();
  app = new App(config, { log: captured.log, port: 0, noiseTickMs: 500 });
  await app.start();
  base = `http://127.0.0.1:${String(app.port)}`;
  const admin: Actor = { tokenId: CONFIG_ADMIN_TOKEN_ID, team: null, admin: true, address: 'test' };
  teamToken = (await app.api.tokens.create(admin, { team: TEAM })).token;
  otherToken = (await app.api.tokens.create(admin, { team: 'blue' })).token;
  for (const channel of channels()) {
    const res = await asTeam('POST', '/api/v1/channels', channel);
    expect(res.status, res.text).toBe(201);
  }
  const sub = await asTeam('POST', '/api/v1/subscriptions', {
    name: SUBSCRIPTION,
    services: ['stripe'],
    channels: FAILING,
  });
  expect(sub.status, sub.text).toBe(201);
  await app.api.runtime.refresh();
  await waitFor(
    async () => {
      const polls = await app.history.upstream();
      return polls.has('status') && polls.has('incidents');
    },
    { timeoutMs: 15_000, intervalMs: 100, what: 'the first status and incidents cycles' },
  );
}, 60_000);

afterAll(async () => {
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the env var this file set
  if (previousKey === undefined) delete process.env[SECRET_KEY_ENV];
  else process.env[SECRET_KEY_ENV] = previousKey;
  await app.stop();
  await Promise.all([
    http.close(),
    smtp.close(),
    smtpGreeting.close(),
    garbage.close(),
    reset.close(),
  ]);
  await sim.close();
  await tr.cleanup();
}, 30_000);

describe('what a team reads of a failed send', () => {
  it('the API test of each channel says the outcome class, never the receiver’s words', async () => {
    const expected: Record<string, RegExp> = {
      'c-webhook': /webhook: receiver answered HTTP 400 \(rejected\)$/,
      'c-pagerduty': /pagerduty: receiver answered HTTP 400 \(rejected\)( \(.*\))?$/,
      'c-opsgenie':
        /opsgenie: create alert( \(1 of 2\))?: receiver answered HTTP 422 \(rejected\)$/,
      'c-teams': /Teams: receiver answered HTTP 400 \(rejected\): the card was refused$/,
      'c-slack': /Slack: receiver answered HTTP 400 \(rejected\): unknown_error$/,
      'c-slackapp': /Slack chat\.postMessage: unknown_error$/,
      'c-email': /e-mail: SMTP rejected the message \(SMTP 550\)$/,
      'n-smtp-greeting': /e-mail: SMTP rejected the message \(SMTP 554\)$/,
    };
    for (const [name, pattern] of Object.entries(expected)) {
      const res = await asTeam('POST', `/api/v1/channels/${name}/test`);
      expect(res.status, res.text).toBe(200);
      expect(res.json.ok, name).toBe(false);
      expect(res.json.message, name).toMatch(pattern);
      expect(res.text, name).not.toContain(CANARY);
    }
  });

  it('network failures read alike whatever their cause: refused, reset, a server answering garbage', async () => {
    const messages: string[] = [];
    for (const name of ['n-refused', 'n-reset', 'n-garbage']) {
      const res = await asTeam('POST', `/api/v1/channels/${name}/test`);
      expect(res.status, res.text).toBe(200);
      expect(res.json.ok).toBe(false);
      messages.push((res.json.message as string).replace(name, '<name>'));
    }
    expect(messages[0]).toContain('network, retryable');
    expect(messages[0]).toContain('could not reach the receiver');
    expect(new Set(messages).size, messages.join('\n')).toBe(1);
    for (const m of messages) expect(m).not.toMatch(/refused|reset|socket|ECONN|UND_ERR|HPE/);
  });

  it('the console’s test (JSON and page) says no more than the API', async () => {
    for (const name of ['c-webhook', 'c-slackapp', 'c-email', 'n-refused']) {
      const json = await asTeam('POST', `/channels/${name}/test`, undefined);
      expect(json.status, json.text).toBe(200);
      expect(json.json.ok).toBe(false);
      const page = await asTeam(
        'POST',
        `/channels/${name}/test`,
        undefined,
        teamToken,
        'text/html',
      );
      expect(page.status).toBe(200);
      expect(page.text).toContain(name);
    }
  });

  it('dead letters and the delivery list carry the safe message only', async () => {
    sim.openIncident('stripe', { title: 'Card payments failing', body: 'Investigating' });
    const notifications = await waitFor(
      async () => {
        const res = await asTeam('GET', '/notifications');
        const dead = (res.json?.deadLetters ?? []) as { channel: string }[];
        const channelsDead = new Set(dead.map((d) => d.channel));
        return FAILING.every((c) => channelsDead.has(c)) ? res : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'a dead letter for every failing channel' },
    );
    const dead = notifications.json.deadLetters as { channel: string; failedReason: string }[];
    for (const d of dead) expect(d.failedReason, d.channel).not.toContain(CANARY);
    expect(dead.find((d) => d.channel === 'c-slackapp')?.failedReason).toContain('unknown_error');
    // Every page and its JSON, as the team.
    for (const path of ['/', '/notifications', '/channels', '/subscriptions', '/audit']) {
      const json = await asTeam('GET', path);
      expect(json.status, path).toBe(200);
      const page = await asTeam('GET', path, undefined, teamToken, 'text/html');
      expect(page.status, path).toBe(200);
    }
    await asTeam('GET', '/notifications?outcome=dead');
    await asTeam('GET', '/api/v1/channels');
  });

  it('`statuswatch channel test` (the CLI, with a team token) prints the outcome class only', async () => {
    const env = { STATUSWATCH_URL: base, STATUSWATCH_TOKEN: teamToken };
    // The CLI prints the API's message: one HTTP receiver with a body, an app's error word, an
    // SMTP reply, a banner refusal, a garbage answer (each CLI start costs seconds of CPU).
    const names = ['c-pagerduty', 'c-slackapp', 'c-email', 'n-smtp-greeting', 'n-garbage'];
    const runs = await Promise.all(
      names.map((name) => runCli(['channel', 'test', name], env, 50_000)),
    );
    for (const [i, run] of runs.entries()) {
      const name = names[i] ?? '';
      teamSaw.push({ where: `statuswatch channel test ${name}`, text: run.stdout + run.stderr });
      expect(run.code, `${name}: ${run.stderr}`).toBe(EXIT_FAILURE);
      expect(run.stderr, name).toContain(name);
      expect(run.stdout + run.stderr, name).not.toContain(CANARY);
    }
  }, 90_000);
});

describe('what the operator reads', () => {
  it('notify-test run locally has the receiver’s words apart, in `detail`; its text has none', async () => {
    const result = await notifyTest('local-pd', {
      type: 'pagerduty',
      routingKey: 'R0UTINGKEYreflect0123456789abcde',
      url: `${http.base}/pd/v2/enqueue`,
    });
    expect(result.ok).toBe(false);
    expect(result.text).not.toContain(CANARY);
    expect(result.detail).toContain(CANARY);
    const smtpResult = await notifyTest('local-mail', {
      type: 'email',
      smtp: { host: '127.0.0.1', port: smtp.port, pool: false },
      from: 'statuswatch@example.test',
      to: ['oncall@example.test'],
    });
    expect(smtpResult.text).not.toContain(CANARY);
    expect(smtpResult.detail).toContain(`550: 550 sender refused ${CANARY}`);
  });
});

describe('previews and tests of channels a team does not own', () => {
  it('a team cannot preview or test a config-file channel; an admin can, its header values masked', async () => {
    const preview = await asTeam('GET', '/api/v1/channels/ops/preview?event=incident.opened');
    expect(preview.status, preview.text).toBe(403);
    expect(preview.text).not.toContain('OPS-INTERNAL-KEY-VALUE');
    const test = await asTeam('POST', '/api/v1/channels/ops/test');
    expect(test.status).toBe(403);
    const consolePreview = await asTeam('GET', '/channels?preview=ops&event=incident.opened');
    expect(consolePreview.text).not.toContain('OPS-INTERNAL-KEY-VALUE');
    expect(consolePreview.text).not.toContain('x-internal-key');
    const consoleTest = await asTeam('POST', '/channels/ops/test');
    expect(consoleTest.status).toBe(403);
    const admin = await asTeam(
      'GET',
      '/api/v1/channels/ops/preview?event=incident.opened',
      undefined,
      ADMIN_TOKEN,
    );
    expect(admin.status, admin.text).toBe(200);
    expect(admin.json.preview).toContain('x-internal-key: [REDACTED]');
    expect(admin.json.preview).not.toContain('OPS-INTERNAL-KEY-VALUE');
  });

  it('a team cannot preview or test another team’s channel', async () => {
    const preview = await asTeam(
      'GET',
      '/api/v1/channels/c-webhook/preview?event=incident.opened',
      undefined,
      otherToken,
    );
    expect(preview.status).toBe(404);
    const test = await asTeam('POST', '/api/v1/channels/c-webhook/test', undefined, otherToken);
    expect(test.status).toBe(404);
    const consolePreview = await asTeam(
      'GET',
      '/channels?preview=c-webhook&event=incident.opened',
      undefined,
      otherToken,
    );
    expect(consolePreview.text).not.toContain('POST <webhook URL of c-webhook>');
  });

  it('the header values of a team’s own webhook are masked in its preview, whatever their names', async () => {
    const created = await asTeam('POST', '/api/v1/channels', {
      name: 'c-headers',
      type: 'webhook',
      url: `${http.base}/webhook/h`,
      secret: WEBHOOK_SECRET,
      headers: { 'x-internal-key': 'TEAM-INTERNAL-KEY-VALUE', 'X-Tenant': 'TENANT-VALUE-42' },
    });
    expect(created.status, created.text).toBe(201);
    const read = await asTeam('GET', '/api/v1/channels/c-headers');
    expect(read.json.headers).toBe('<set>');
    const preview = await asTeam('GET', '/api/v1/channels/c-headers/preview?event=incident.opened');
    expect(preview.status, preview.text).toBe(200);
    expect(preview.json.preview).toContain('x-internal-key: [REDACTED]');
    expect(preview.json.preview).toContain('x-tenant: [REDACTED]');
    const page = await asTeam('GET', '/channels?preview=c-headers&event=incident.opened');
    for (const text of [preview.text, page.text]) {
      expect(text).not.toContain('TEAM-INTERNAL-KEY-VALUE');
      expect(text).not.toContain('TENANT-VALUE-42');
    }
  });
});

// Last, so that it reads every answer every test above got (previews and tests included).
describe('the final scan', () => {
  it('the canary is on no team-visible surface, and in the operator’s log', () => {
    expect(teamSaw.length).toBeGreaterThan(45);
    // Every surface above was read: the previews' and the CLI's answers too.
    expect(teamSaw.some((t) => t.where.includes('/preview'))).toBe(true);
    expect(teamSaw.some((t) => t.where.startsWith('statuswatch channel test'))).toBe(true);
    for (const { where, text } of teamSaw) expect(text.includes(CANARY), where).toBe(false);
    const failed = captured.lines.filter(
      (l) =>
        l.event === 'delivery:dead' && typeof l.channel === 'string' && FAILING.includes(l.channel),
    );
    expect(new Set(failed.map((l) => l.channel))).toEqual(new Set(FAILING));
    for (const line of failed) {
      expect(String(line.err), String(line.channel)).not.toContain(CANARY);
      if (line.channel !== 'c-webhook')
        expect(String(line.detail), String(line.channel)).toContain(CANARY);
    }
    // The API's test line has the receiver's words for the operator too.
    const tested = captured.lines.filter(
      (l) => l.event === 'api:channel_tested' && l.channel === 'c-pagerduty',
    );
    expect(String(tested[0]?.detail)).toContain(CANARY);
    // No secret of the channels in the log either.
    const log = JSON.stringify(captured.lines);
    expect(log).not.toContain('R0UTINGKEYreflect0123456789abcde');
    expect(log).not.toContain('xoxb-reflect-0000');
  });
});
