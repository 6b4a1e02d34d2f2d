/**
 * The built CLI (`node dist/cli.js`) as a real process: `check-config` on valid, invalid and
 * over-budget configs, `run` refusing an over-budget plan, and `simulate` serving the API.
 */
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { freePort, killAll, runCli, spawnCli, tempDir, writeConfig } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';

const API_KEY = 'sk_cli_APIKEY_5eb63bbbe01eeed0';
const ADMIN_TOKEN = 'adm_cli_ADMINTOKEN_2fd4e1c67a2d28fc';
const SLACK_URL = 'https://hooks.slack.com/services/T0CLI/B0CLI/SLACKTOKENcli9b2f';
const HOOK_URL = 'https://hooks.example.com/statuswatch/HOOKTOKENcli77a1';
const WEBHOOK_SECRET = `whsec_${Buffer.from('cli-WEBHOOKSECRET-0123456789abcd').toString('base64')}`;
const SMTP_PASSWORD = 'smtp-PASSWORD-cli-3c59dc048e88';
const REDIS_PASSWORD = 'redis-PASSWORD-cli-a87ff679';

const SECRETS = [
  API_KEY,
  ADMIN_TOKEN,
  SLACK_URL,
  'SLACKTOKENcli9b2f',
  HOOK_URL,
  'HOOKTOKENcli77a1',
  WEBHOOK_SECRET,
  WEBHOOK_SECRET.slice('whsec_'.length),
  SMTP_PASSWORD,
  REDIS_PASSWORD,
];

function expectNoSecrets(text: string): void {
  for (const s of SECRETS) expect(text.includes(s), `secret ${s} in output`).toBe(false);
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function dir(): Promise<string> {
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return tmp.dir;
}

async function simulator(): Promise<{ sim: Simulator; url: string }> {
  const sim = createSimulator({ services: 300, rateLimit: false });
  const url = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  return { sim, url };
}

function validConfig(baseUrl: string): Record<string, unknown> {
  return {
    upstream: { baseUrl, apiKey: API_KEY },
    redis: { url: `redis://:${REDIS_PASSWORD}@127.0.0.1:6379`, prefix: 'cli-test' },
    poll: { status: '30s', incidents: '1m', sla: '15m', scores: '15m' },
    rules: { scoreDrop: 5, statusConfirmations: 2 },
    server: { port: 8080, adminToken: ADMIN_TOKEN },
    channels: {
      oncall: { type: 'slack', webhookUrl: SLACK_URL },
      pager: { type: 'webhook', url: HOOK_URL, secret: WEBHOOK_SECRET },
      'sre-mail': {
        type: 'email',
        smtp: {
          host: 'smtp.example.com',
          port: 587,
          auth: { user: 'statuswatch', pass: SMTP_PASSWORD },
        },
        from: 'statuswatch@example.com',
        to: ['sre@example.com'],
      },
    },
    subscriptions: [
      {
        name: 'payments',
        services: ['stripe', 'adyen'],
        categories: ['payments'],
        events: ['incident.opened', 'incident.resolved', 'sla.at_risk'],
        channels: ['oncall', 'pager'],
      },
      { name: 'everything', services: ['*'], channels: ['sre-mail'] },
    ],
  };
}

describe('statuswatch check-config', () => {
  it('prints channels, subscriptions (categories resolved) and the plan; exit 0; no secret', async () => {
    const { url } = await simulator();
    const file = await writeConfig(await dir(), validConfig(url));
    const r = await runCli(['check-config', '--config', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out).toContain(`config ${file}: valid`);
    expect(out).toContain('API key set: premium polls on');
    expect(out).toContain('channels (3):');
    expect(out).toContain('  oncall: slack (incoming webhook, URL hidden)');
    expect(out).toContain('  pager: webhook (Standard Webhooks, URL and secret hidden)');
    expect(out).toContain(
      '  sre-mail: email via smtp.example.com:587 from statuswatch@example.com to sre@example.com',
    );
    expect(out).toContain('subscriptions (2):');
    expect(out).toContain('  payments → oncall, pager');
    expect(out).toContain('    events: incident.opened, incident.resolved, sla.at_risk');
    expect(out).toContain('    services: stripe, adyen');
    expect(out).toMatch(/ {4}category payments: \d+ services \(stripe, adyen/);
    expect(out).toContain('  everything → sre-mail');
    expect(out).toContain('    services: all (*)');
    expect(out).toContain('request plan (budget 120/min, plan may use 96/min):');
    expect(out).toMatch(/ {2}status +every 30s +2\/min/);
    expect(out).toMatch(/ {2}incidents +every 1m +1\/min/);
    expect(out).toMatch(/ {2}sla +every 15m +0\.07\/min/);
    expect(out).toMatch(
      / {2}incident confirmations +every 1m +10\/min {2}\(up to 10 per incidents poll/,
    );
    expect(out).toMatch(/ {2}total +13\.\d+\/min {2}OK/);
    expectNoSecrets(r.stdout + r.stderr);
  });

  it('an invalid config: exit 1 and stderr names the path of every error, no secret', async () => {
    const config = validConfig('http://127.0.0.1:9');
    config.upstream = { baseUrl: 'http://127.0.0.1:9', apiKey: API_KEY, timeoutMS: 5000 };
    config.poll = { status: '10 parsecs', incidents: '1m' };
    config.subscriptions = [
      { name: 'payments', services: ['stripe'], channels: ['oncall', 'pagr'] },
    ];
    const file = await writeConfig(await dir(), config);
    const r = await runCli(['check-config', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`invalid config ${file}: 3 problems`);
    expect(r.stderr).toMatch(/ {2}upstream\.timeoutMS \(line \d+\): unknown key/);
    expect(r.stderr).toMatch(/ {2}poll\.status \(line \d+\): expected a duration/);
    expect(r.stderr).toMatch(
      / {2}subscriptions\[0\]\.channels\[1\] \(line \d+\): unknown channel \(defined: oncall, pager, sre-mail\)/,
    );
    expectNoSecrets(r.stdout + r.stderr);
  });

  it('an over-budget plan (poll.status 1s without a key): exit 1 naming the interval', async () => {
    const config = validConfig('http://127.0.0.1:9');
    config.upstream = { baseUrl: 'http://127.0.0.1:9' };
    config.poll = { status: '1s' };
    config.subscriptions = [{ name: 'payments', services: ['stripe'], channels: ['oncall'] }];
    const file = await writeConfig(await dir(), config);
    const r = await runCli(['check-config', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('request plan (budget 30/min, plan may use 24/min):');
    expect(r.stdout).toMatch(/total +62\/min {2}OVER BUDGET/);
    expect(r.stdout).toContain('error: request plan needs 62 requests/min but may use at most 24');
    expect(r.stdout).toContain('poll.status every 1s = 60/min');
    expectNoSecrets(r.stdout + r.stderr);

    // `run` refuses the same plan before connecting anywhere.
    const run = await runCli(['run', '--config', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^statuswatch: request plan needs 62 requests\/min/);
    expect(run.stderr).toContain('poll.status every 1s = 60/min');
    expectNoSecrets(run.stdout + run.stderr);
  });
});

describe('statuswatch run: a start that waits for Redis', () => {
  it('answers /healthz (200) and /readyz (503) meanwhile, and a SIGTERM ends it within the grace period', async () => {
    const { url } = await simulator();
    const port = await freePort();
    const deadRedis = await freePort(); // nothing listens there
    const config = validConfig(url);
    config.redis = { url: `redis://127.0.0.1:${String(deadRedis)}`, prefix: 'cli-test' };
    config.server = { port, host: '127.0.0.1', adminToken: ADMIN_TOKEN };
    const file = await writeConfig(await dir(), config);
    const p = spawnCli(['run', '--config', file], { STATUSWATCH_GRACE_MS: '2000' });
    const base = `http://127.0.0.1:${String(port)}`;
    const health = await waitFor(
      async () => {
        try {
          return (await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) })).status;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 10_000, what: '/healthz while Redis is down' },
    );
    expect(health).toBe(200);
    const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(3000) });
    expect(ready.status).toBe(503);
    const t0 = Date.now();
    p.child.kill('SIGTERM');
    const exit = await p.waitForExit(6000);
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(exit).toEqual({ code: 0, signal: null }); // drained, not cut off by the grace timer
    expect(p.output()).toContain('SIGTERM: draining');
    expect(p.output()).not.toContain('app:grace_exceeded');
  });
});

describe("statuswatch run: the main thread's young generation (src/runtime/reexec.ts)", () => {
  /** The daemon's command line as the kernel has it now (after any re-execution). */
  async function commandLine(pid: number): Promise<string[]> {
    return (await readFile(`/proc/${String(pid)}/cmdline`, 'utf8')).split('\0').filter((a) => a);
  }
  const canExecve = typeof (process as unknown as { execve?: unknown }).execve === 'function';

  it.runIf(process.platform === 'linux')(
    'the same process re-executes itself with the semi-space of its main thread where Node.js can (and still drains on SIGTERM): one thread the upstream one, two threads the delivering one',
    async () => {
      const { url } = await simulator();
      for (const threads of ['1', '2']) {
        const port = await freePort();
        const config = validConfig(url);
        // No Redis: /healthz answers before it, which is all this needs.
        config.redis = { url: `redis://127.0.0.1:${String(await freePort())}`, prefix: 'cli-test' };
        config.server = { port, host: '127.0.0.1', adminToken: ADMIN_TOKEN };
        const file = await writeConfig(await dir(), config);
        const p = spawnCli(['run', '--config', file, '--threads', threads], {
          STATUSWATCH_GRACE_MS: '2000',
        });
        await waitFor(
          async () =>
            (await fetch(`http://127.0.0.1:${String(port)}/healthz`).catch(() => null))?.status ===
            200,
          { timeoutMs: 10_000, what: `/healthz with --threads ${threads}` },
        );
        // The PID that answers is the one spawned: the re-execution replaced the process.
        const args = await commandLine(p.pid);
        const flag = threads === '1' ? '--max-semi-space-size=2' : '--max-semi-space-size=8';
        const other = threads === '1' ? '--max-semi-space-size=8' : '--max-semi-space-size=2';
        expect(args.includes(flag), args.join(' ')).toBe(canExecve);
        expect(args, args.join(' ')).not.toContain(other);
        expect(args).toContain('run');
        expect(args).toContain(file);
        // The allocator's arenas come with the re-execution (its environment is the kernel's now).
        const environ = (await readFile(`/proc/${String(p.pid)}/environ`, 'utf8')).split('\0');
        const own = process.env['MALLOC_ARENA_MAX'];
        expect(environ.includes(`MALLOC_ARENA_MAX=${own ?? '2'}`)).toBe(
          canExecve || own !== undefined,
        );
        p.child.kill('SIGTERM');
        expect(await p.waitForExit(6000)).toEqual({ code: 0, signal: null });
        expect(p.stderr()).toBe('');
        // The log says what the main thread runs with, and why not when it lacks it.
        const lines = p
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { event?: string; heap?: unknown; reason?: unknown });
        expect(lines.find((l) => l.event === 'threads:planned')?.heap).toEqual({
          reexecuted: canExecve,
          semiSpace: canExecve ? flag : null,
          mallocArenaMax: canExecve ? (own ?? '2') : (own ?? null),
          without: canExecve ? null : 'no_execve',
        });
        expect(
          lines.filter((l) => l.event === 'threads:heap_default').map((l) => l.reason),
        ).toEqual(canExecve ? [] : ['no_execve']);
      }
    },
  );
});

describe('statuswatch run: a port in use', () => {
  it('is exit 2 naming server.host and server.port, before connecting to Redis', async () => {
    const { url } = await simulator();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const config = validConfig(url);
      // No Redis there either: the listen fails first.
      config.redis = { url: `redis://127.0.0.1:${String(await freePort())}`, prefix: 'cli-test' };
      config.server = { port, host: '127.0.0.1', adminToken: ADMIN_TOKEN };
      const file = await writeConfig(await dir(), config);
      const run = await runCli(['run', '--config', file]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        `server.host 127.0.0.1, server.port ${String(port)}: cannot listen`,
      );
      expect(run.stderr).toContain('EADDRINUSE');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('statuswatch run: STATUSWATCH_GRACE_MS', () => {
  it('a value that is neither milliseconds nor a duration is exit 1 naming the variable, before connecting anywhere', async () => {
    const { url } = await simulator();
    const file = await writeConfig(await dir(), validConfig(url));
    const run = await runCli(['run', '--config', file], { STATUSWATCH_GRACE_MS: '25 seconds' });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^statuswatch: STATUSWATCH_GRACE_MS: expected milliseconds/);
    // Longer than a Node.js timer takes (it would fire at once).
    const long = await runCli(['run', '--config', file], { STATUSWATCH_GRACE_MS: '30d' });
    expect(long.code).toBe(1);
    expect(long.stderr).toMatch(/^statuswatch: STATUSWATCH_GRACE_MS: at most 2147483647 ms/);
  });
});

describe('statuswatch notify-test and render', () => {
  it('a channel name the config lacks is exit 1 naming the channels, also a name every object inherits', async () => {
    const { url } = await simulator();
    const file = await writeConfig(await dir(), validConfig(url));
    for (const name of ['nope', 'constructor', 'toString']) {
      const test = await runCli(['notify-test', '--config', file, '--channel', name]);
      expect(test.code, test.stderr).toBe(1);
      expect(test.stderr).toContain(
        `no channel "${name}" in the config (channels: oncall, pager, sre-mail)`,
      );
      const render = await runCli([
        'render',
        '--config',
        file,
        '--channel',
        name,
        '--event',
        'incident.opened',
      ]);
      expect(render.code, render.stderr).toBe(1);
      expect(render.stderr).toContain(`no channel "${name}"`);
    }
  });
});

describe('statuswatch simulate', () => {
  it('serves /api/v1/status for --services 50 on --port N', async () => {
    const port = await freePort();
    const sim = spawnCli(['simulate', '--port', String(port), '--services', '50']);
    const banner = await sim.waitForOutput(/at (http:\/\/127\.0\.0\.1:\d+)\/api\/v1/);
    expect(banner[1]).toBe(`http://127.0.0.1:${String(port)}`);
    expect(sim.stdout()).toContain('variant A, 50 services');

    const res = await fetch(`http://127.0.0.1:${String(port)}/api/v1/status`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      success: boolean;
      data: unknown[];
      meta: { total: number };
    };
    expect(body.success).toBe(true);
    expect(body.data).toHaveLength(50);
    expect(body.meta.total).toBe(50);
    expect(res.headers.get('x-ratelimit-limit')).toBe('30');

    const missing = await fetch(`http://127.0.0.1:${String(port)}/api/v1/status/no-such-feed`);
    expect(missing.status).toBe(404);
    await missing.body?.cancel();

    sim.signal('SIGTERM');
    expect(await sim.waitForExit(5000)).toEqual({ code: 0, signal: null });
  });

  it('--services beyond the catalog limit is an invalid argument: exit 1 naming the range', async () => {
    const result = await runCli(['simulate', '--port', '0', '--services', '150000']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--services must be an integer from 1 to 100000');
  });
});
