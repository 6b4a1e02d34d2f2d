/**
 * The ops server of a real daemon process (`node dist/cli.js run`, real Redis, the simulator as
 * upstream), over real HTTP: admin answers for malformed ids, unknown services and oversized
 * bodies, and `server.host`.
 */
import { readFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../src/sim/index.js';
import { REDIS_URL, testRedis } from './helpers/redis.js';
import {
  killAll,
  metricValue,
  runCli,
  startDaemon,
  tempDir,
  writeConfig,
  type Daemon,
} from './helpers/process.js';
import { waitFor } from './helpers/wait.js';

const ADMIN_TOKEN = 'adm_ops_ADMINTOKEN_5d41402abc4b2a76';
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

const cleanups: (() => Promise<void>)[] = [];

async function config(server: Record<string, unknown>): Promise<{ dir: string; file: string }> {
  const sim = createSimulator({ services: 20, seed: 5, rateLimit: false });
  const simUrl = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  const tr = await testRedis('ops');
  cleanups.push(() => tr.cleanup());
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  const file = await writeConfig(tmp.dir, {
    upstream: { baseUrl: simUrl, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: REDIS_URL, prefix: tr.prefix },
    poll: { status: '1s', incidents: '1s' },
    server,
    channels: {},
    subscriptions: [],
  });
  return { dir: tmp.dir, file };
}

/** Waits until the daemon has committed a first status poll (so it knows the upstream's services). */
async function firstStatusPoll(daemonUrl: string): Promise<void> {
  await waitFor(
    async () => {
      const text = await (await fetch(`${daemonUrl}/metrics`)).text();
      return metricValue(text, 'statuswatch_polls_total', { kind: 'status', outcome: 'ok' }) > 0;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: 'a first status poll' },
  );
}

/** POSTs `bytes` bytes with node:http (no fetch-level retries); the status or the socket error. */
function postLarge(url: string, bytes: number): Promise<{ status: number; body: string } | Error> {
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json', 'content-length': bytes },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => (body += s));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', resolve);
      },
    );
    req.on('error', resolve);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let left = bytes;
    const write = (): void => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          req.once('drain', write);
          return;
        }
      }
      req.end();
    };
    write();
  });
}

describe('ops server admin answers', () => {
  let d: Daemon;

  beforeAll(async () => {
    const { file } = await config({ port: 0, adminToken: ADMIN_TOKEN });
    d = await startDaemon(file);
    await firstStatusPoll(d.url);
  }, 30_000);

  afterAll(async () => {
    await killAll();
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('400 (not 500) for a malformed percent-encoding in a service or dead letter id', async () => {
    for (const raw of ['%', '%ZZ', 'a%E0%A4%A']) {
      const service = await fetch(`${d.url}/admin/services/${raw}`, { headers: AUTH });
      expect(service.status, `/admin/services/${raw}`).toBe(400);
      expect(await service.json()).toEqual({
        error: { code: 'invalid', message: 'bad service id encoding', field: null },
      });
      const retry = await fetch(`${d.url}/admin/dead-letters/${raw}/retry`, {
        method: 'POST',
        headers: AUTH,
      });
      expect(retry.status, `/admin/dead-letters/${raw}/retry`).toBe(400);
      expect(await retry.json()).toEqual({
        error: { code: 'invalid', message: 'bad dead letter id encoding', field: null },
      });
    }
    // Well-formed ones still reach their handlers.
    const encoded = await fetch(`${d.url}/admin/services/str%69pe`, { headers: AUTH });
    expect(encoded.status).toBe(200);
    expect(((await encoded.json()) as { feedId: string }).feedId).toBe('stripe');
    const missingRetry = await fetch(`${d.url}/admin/dead-letters/no-such-letter/retry`, {
      method: 'POST',
      headers: AUTH,
    });
    expect(missingRetry.status).toBe(404);
    expect(await missingRetry.json()).toEqual({
      error: { code: 'not_found', message: 'no dead letter no-such-letter', field: null },
    });
  });

  it('404 for a service nothing is known about; 200 for one the upstream serves', async () => {
    const unknown = await fetch(`${d.url}/admin/services/no-such-feed`, { headers: AUTH });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { code: 'not_found', message: 'no service no-such-feed known', field: null },
    });
    const known = await fetch(`${d.url}/admin/services/stripe`, { headers: AUTH });
    expect(known.status).toBe(200);
    const state = (await known.json()) as Record<string, unknown>;
    expect(state.feedId).toBe('stripe');
    expect(state.status).toMatchObject({ status: expect.any(String) as unknown });
  });

  it('413 with a JSON error for a 10 MB silence body, and the client sees it (no reset)', async () => {
    // `/admin/silences` is the API's route under another name: the API's 1 MB.
    const tooLarge = {
      error: { code: 'too_large', message: 'body larger than 1048576 bytes', field: '(root)' },
    };
    const big = await fetch(`${d.url}/admin/silences`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: 'x'.repeat(10 * 1024 * 1024),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual(tooLarge);
    // node:http, writing in 64 KiB chunks with backpressure.
    const raw = await postLarge(`${d.url}/admin/silences`, 10 * 1024 * 1024);
    expect(raw).toEqual({ status: 413, body: JSON.stringify(tooLarge) });
    // And the server is fine afterwards.
    const list = await fetch(`${d.url}/admin/silences`, { headers: AUTH });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({ silences: [], next: null });
  });
});

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

describe('server.host', () => {
  afterEach(async () => {
    await killAll();
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('server.host: 127.0.0.1 listens on 127.0.0.1 only', async () => {
    // Another loopback address reaches a server on 0.0.0.0 (Linux routes 127/8 to lo), so a
    // refusal there means the daemon bound 127.0.0.1 only.
    const probe: Server = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '0.0.0.0', resolve));
    const probePort = (probe.address() as AddressInfo).port;
    const otherLoopback = await accepts('127.0.0.2', probePort);
    await new Promise((resolve) => probe.close(resolve));

    const { file } = await config({ port: 0, host: '127.0.0.1' });
    const d = await startDaemon(file);
    const port = Number(new URL(d.url).port);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    await health.body?.cancel();
    if (otherLoopback) expect(await accepts('127.0.0.2', port)).toBe(false);
    // The daemon's own socket, as the kernel lists it: bound to 127.0.0.1 (0100007F).
    const table = await readFile('/proc/net/tcp', 'utf8').catch(() => null);
    if (table !== null) {
      const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
      const listening = table
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((cols) => cols[1]?.endsWith(`:${hexPort}`) && cols[3] === '0A');
      expect(listening.map((cols) => cols[1])).toEqual([`0100007F:${hexPort}`]);
    }
  }, 30_000);

  it('check-config rejects server.host "" and "not a host!" naming server.host', async () => {
    for (const host of ['', 'not a host!']) {
      const { file } = await config({ port: 8080, host });
      const r = await runCli(['check-config', '--config', file]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/ {2}server\.host \(line \d+\): /);
      expect(r.stderr).toContain(host === '' ? 'must not be empty' : 'expected an IPv4 or IPv6');
    }
    const { file } = await config({ port: 8080, host: '::1' });
    const ok = await runCli(['check-config', '--config', file]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
  }, 30_000);
});
