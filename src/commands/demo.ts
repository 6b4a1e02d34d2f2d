import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { stringify } from 'yaml';
import { App } from '../app.js';
import { freePort } from '../net.js';
import { parseConfig } from '../config/load.js';
import { createLogger } from '../log.js';
import { createSimulator, demoScenario } from '../sim/index.js';
import { slackSink, smtpSink, webhookSink, type Received, type Sink } from '../demo/sinks.js';
import {
  startPagerdutyReceiver,
  type PagerdutyReceivedEvent,
} from '../demo/receivers/pagerduty.js';
import { startOpsgenieReceiver, type RecordedOpsgenieRequest } from '../demo/receivers/opsgenie.js';
import { startSlackApiReceiver } from '../demo/receivers/slack-api.js';
import { startTeamsReceiver } from '../demo/receivers/teams.js';
import { EVENT_KINDS, type EventKind } from '../config/events.js';

const DEMO_KEY = 'demo-premium-key-0123456789';

function redisAnswers(url: string, timeoutMs = 1000): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(
      Number(u.port === '' ? 6379 : u.port),
      u.hostname === '' ? '127.0.0.1' : u.hostname,
    );
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => {
      done(false);
    });
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      done(d.toString().startsWith('+PONG') || d.toString().startsWith('-NOAUTH'));
    });
    socket.on('error', () => {
      done(false);
    });
  });
}

/** REDIS_URL when Redis answers there; else a private redis-server child on a free port, when the binary exists. */
async function obtainRedis(
  write: (s: string) => void,
): Promise<{ url: string; child: ChildProcess | null }> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await redisAnswers(url)) return { url, child: null };
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const failed = new Promise<false>((resolve) =>
    child.once('error', () => {
      resolve(false);
    }),
  );
  const privateUrl = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    const ok = await Promise.race([redisAnswers(privateUrl, 200), failed]);
    if (ok) {
      write(`no Redis at ${url}: started a private redis-server on port ${port}\n`);
      return { url: privateUrl, child };
    }
    if (child.exitCode !== null || (await Promise.race([failed, Promise.resolve(null)])) === false)
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(
    `no Redis answers at ${url} and no redis-server could be started. Start one, e.g.\n` +
      '  sudo apt-get install -y redis-server && redis-server --daemonize yes\n' +
      'or point REDIS_URL at one (Redis 6.2+).',
  );
}

/** Demo-only credentials of the local PagerDuty and Slack stand-ins. */
const DEMO_PAGERDUTY_ROUTING_KEY = 'demo0routing0key0000000000000000';
const DEMO_SLACK_BOT_TOKEN = 'xoxb-demo-0000-local';

function pagerdutyLine(e: PagerdutyReceivedEvent): Received {
  const payload = e.body['payload'];
  const summary =
    typeof payload === 'object' && payload !== null && 'summary' in payload
      ? String(payload.summary)
      : '';
  const action = typeof e.body['event_action'] === 'string' ? e.body['event_action'] : 'change';
  return {
    sink: 'pagerduty',
    summary: `${action} ${e.dedupKey ?? ''}`.trim(),
    lines: summary === '' ? [] : [summary],
  };
}

/** An Opsgenie Alert API request as a line: `create <alias>`, `close <alias>`, `note <alias>`. */
function opsgenieLine(r: RecordedOpsgenieRequest): Received {
  const body =
    typeof r.body === 'object' && r.body !== null ? (r.body as Record<string, unknown>) : {};
  const parts = r.path.split('/').filter((p) => p !== '');
  // POST /v2/alerts (create) or /v2/alerts/<alias>/<action>
  const action = parts.length <= 2 ? 'create' : (parts[3] ?? 'update');
  const alias = typeof body['alias'] === 'string' ? body['alias'] : (parts[2] ?? '');
  const text = typeof body['message'] === 'string' ? body['message'] : (body['note'] ?? '');
  return {
    sink: 'opsgenie',
    summary: `${action} ${alias} (${String(r.status)})`,
    lines: typeof text === 'string' ? text.split('\n') : [],
  };
}

/** The first text block of an Adaptive Card: its heading. */
function teamsHeading(card: Record<string, unknown>): string {
  const body = Array.isArray(card['body']) ? (card['body'] as unknown[]) : [];
  for (const item of body) {
    if (typeof item === 'object' && item !== null && 'text' in item) return String(item.text);
  }
  return '(card)';
}

/** A label per sink (a kind added to `src/notify/kinds.ts` needs its label here). */
const SINK_LABELS: Record<Sink, string> = {
  slack: 'Slack    ',
  email: 'E-mail   ',
  webhook: 'Webhook  ',
  pagerduty: 'PagerDuty',
  teams: 'Teams    ',
  opsgenie: 'Opsgenie ',
  'slack-app': 'Slack app',
};

function format(r: Received, started: number): string {
  const t = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
  const label = SINK_LABELS[r.sink];
  const body = r.lines.filter((l) => l.trim() !== '').map((l) => `           ${l}`);
  return [`[${t}s] ${label} ${r.summary}`, ...body].join('\n');
}

/**
 * `statuswatch demo`: the simulator playing a one-minute scenario, local Slack / SMTP / webhook
 * sinks, and the daemon polling the simulator every few seconds; every notification is printed
 * as it arrives. Ends after `durationMs` (or Ctrl-C) with a list of the event kinds seen.
 */
export async function runDemo(o: { durationMs: number; verbose: boolean }): Promise<number> {
  const write = (s: string): void => {
    process.stdout.write(s);
  };
  const started = Date.now();
  const redis = await obtainRedis(write);
  const seen = new Set<string>();
  const print = (r: Received): void => {
    write(`${format(r, started)}\n`);
  };
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const webhook = await webhookSink(secret, (r) => {
    for (const kind of EVENT_KINDS) if (r.summary === kind) seen.add(kind);
    print(r);
  });
  const slack = await slackSink(print);
  const smtp = await smtpSink(print);
  const pagerduty = await startPagerdutyReceiver({
    onEvent: (e) => {
      print(pagerdutyLine(e));
    },
  });
  const opsgenie = await startOpsgenieReceiver({
    onRequest: (r) => {
      print(opsgenieLine(r));
    },
  });
  const teams = await startTeamsReceiver({
    onCard: (c) => {
      print({ sink: 'teams', summary: teamsHeading(c.card), lines: [] });
    },
  });
  const slackApp = await startSlackApiReceiver({
    token: DEMO_SLACK_BOT_TOKEN,
    channels: [{ id: 'C0DEMO0001', name: 'oncall' }],
    onEvent: (e) => {
      print({ sink: 'slack-app', summary: `${e.kind} ${e.ts}`, lines: e.text.split('\n') });
    },
  });

  const sim = createSimulator({
    services: 2000,
    keys: {
      [DEMO_KEY]: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] },
    },
  });
  const simUrl = await sim.listen(0, '127.0.0.1');
  const prefix = `statuswatch-demo-${randomBytes(3).toString('hex')}`;
  const watched = ['stripe', 'github', 'slack', 'aws-s3', 'okta'];
  const yaml = stringify({
    upstream: { baseUrl: simUrl, apiKey: DEMO_KEY, requestsPerMinute: 'auto', timeoutMs: 5000 },
    redis: { url: redis.url, prefix },
    poll: { status: '5s', incidents: '5s', sla: '5s', scores: '5s' },
    // One-minute horizons so the early warnings show within the demo's minute.
    rules: {
      scoreDrop: 5,
      statusConfirmations: 2,
      slaForecast: '1m',
      scoreTrend: { points: 10, window: '1m' },
    },
    server: { port: 0 },
    channels: {
      'demo-slack': { type: 'slack', webhookUrl: slack.url },
      'demo-mail': {
        type: 'email',
        smtp: { host: '127.0.0.1', port: smtp.port, secure: false, pool: true },
        from: 'statuswatch@demo.local',
        to: ['oncall@demo.local'],
      },
      'demo-webhook': { type: 'webhook', url: webhook.url, secret },
      'demo-pagerduty': {
        type: 'pagerduty',
        routingKey: DEMO_PAGERDUTY_ROUTING_KEY,
        url: pagerduty.url,
      },
      'demo-opsgenie': { type: 'opsgenie', apiKey: opsgenie.apiKey, url: opsgenie.url },
      'demo-teams': { type: 'teams', webhookUrl: teams.url },
      'demo-slack-app': {
        type: 'slack',
        botToken: DEMO_SLACK_BOT_TOKEN,
        channel: 'C0DEMO0001',
        apiUrl: slackApp.url,
      },
    },
    subscriptions: [
      {
        name: 'payments-and-infra',
        services: watched,
        channels: ['demo-slack', 'demo-webhook'],
        events: EVENT_KINDS.filter((k) => !k.startsWith('upstream.')),
      },
      {
        name: 'incidents-by-mail',
        services: ['stripe', 'github'],
        channels: ['demo-mail'],
        events: ['incident.opened', 'incident.updated', 'incident.resolved'],
      },
      {
        name: 'oncall',
        services: ['stripe', 'github'],
        channels: ['demo-pagerduty', 'demo-opsgenie', 'demo-teams', 'demo-slack-app'],
        events: [
          'incident.opened',
          'incident.updated',
          'incident.resolved',
          'status.changed',
          'sla.at_risk',
          'sla.breached',
          'sla.recovered',
        ],
      },
      {
        name: 'upstream-health',
        services: ['*'],
        channels: ['demo-webhook'],
        events: ['upstream.degraded', 'upstream.recovered'],
      },
    ],
  });
  const config = parseConfig(yaml, {}, 'demo');
  const log = createLogger({
    level: o.verbose ? 'info' : 'warn',
    secrets: [secret, DEMO_PAGERDUTY_ROUTING_KEY, DEMO_SLACK_BOT_TOKEN, opsgenie.apiKey],
  });
  const app = new App(config, { log, port: 0 });

  let stopped = false;
  const cleanup = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await app.stop().catch(() => undefined);
    // Leave no demo keys behind in a shared Redis.
    const { Redis } = await import('ioredis');
    const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `{${prefix}}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await r.del(...keys);
      } while (cursor !== '0');
    } finally {
      r.disconnect();
    }
    await Promise.allSettled([
      sim.close(),
      slack.close(),
      webhook.close(),
      smtp.close(),
      pagerduty.close(),
      opsgenie.close(),
      teams.close(),
      slackApp.close(),
    ]);
    redis.child?.kill();
  };

  write(
    'statuswatch demo\n' +
      `  simulator   ${simUrl}/api/v1 (2,000 services, Variant A, premium key)\n` +
      `  redis       ${redis.url} (prefix {${prefix}}, removed at the end)\n` +
      `  sinks       Slack ${slack.url}, SMTP 127.0.0.1:${smtp.port}, webhook ${webhook.url}\n` +
      `              PagerDuty ${pagerduty.url}, Opsgenie ${opsgenie.url}, Teams workflow,\n` +
      `              Slack Web API ${slackApp.url}\n` +
      `  watching    ${watched.join(', ')} every 5 s; status changes need 2 confirmations\n\n`,
  );
  await app.start();
  write(`  ops server  http://127.0.0.1:${String(app.port)}/metrics\n\n`);
  // First sight is a baseline: wait until every kind has been polled once before the scenario starts.
  const baselined = new Set<string>();
  await new Promise<void>((resolve) => {
    const onCycle = (r: { kind: string; outcome: string }): void => {
      if (r.outcome === 'ok') baselined.add(r.kind);
      if (baselined.size >= 4) {
        app.off('cycle', onCycle);
        resolve();
      }
    };
    app.on('cycle', onCycle);
  });
  write('baseline recorded silently; playing a 60 s scenario…\n\n');
  const playback = sim.play(demoScenario);
  // The upstream itself misbehaves for a while: three failed status polls, then it recovers.
  const outage = setTimeout(() => {
    sim.failNext({ path: '/api/v1/status', status: 503, count: 3 });
  }, 12_000);

  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, o.durationMs);
    process.once('SIGINT', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  clearTimeout(outage);
  playback.stop();
  await cleanup();
  const missing = (EVENT_KINDS as readonly EventKind[]).filter((k) => !seen.has(k));
  write(`\nevent kinds delivered: ${EVENT_KINDS.filter((k) => seen.has(k)).join(', ')}\n`);
  if (missing.length > 0) write(`not seen in this run: ${missing.join(', ')}\n`);
  // A kind that never arrived is a failure of the run, not of its input: exit 2.
  return missing.length === 0 ? 0 : 2;
}
