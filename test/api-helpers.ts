/**
 * Shared pieces of the `/api/v1` tests (test/api-*.test.ts): a world of real things (the
 * simulator with a clock the test moves, a Standard Webhooks receiver, Redis under a random
 * prefix, a temp dir), a JSON client that keeps every response for the secret scans, and a dump
 * of every key of the prefix.
 */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { createSimulator, type Simulator } from '../src/sim/index.js';
import { listen, readBody, verifyDelivery } from '../src/demo/sinks.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';
import { tempDir } from './helpers/process.js';
import type { Redis } from 'ioredis';
import { LOOPBACK_RECEIVERS } from './helpers/egress.js';

export const ADMIN_TOKEN = 'adm_api_ADMINTOKEN_c4ca4238a0b92382';

/** A webhook secret of `label` (recognisable in a scan). */
export function webhookSecret(label: string): string {
  return `whsec_${Buffer.from(`${label}-WHSECRET-${randomBytes(8).toString('hex')}`).toString('base64')}`;
}

export interface Hit {
  path: string;
  type: string;
  webhookId: string;
  verified: boolean;
  body: Record<string, unknown>;
}

export interface Receiver {
  base: string;
  hits: Hit[];
  /** Hits of `type` on `path`. */
  of(path: string, type?: string): Hit[];
  close(): Promise<void>;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

/**
 * A Standard Webhooks receiver: each path has its secret (`secrets[path]`), every request is
 * verified with the official library against it; answers 200.
 */
export async function receiver(secrets: Record<string, string>): Promise<Receiver> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    void readBody(req).then((text) => {
      const path = req.url ?? '/';
      const secret = secrets[path];
      const { headers, verified } =
        secret === undefined
          ? { headers: {} as Record<string, string>, verified: false }
          : verifyDelivery(new Webhook(secret), text, req.headers);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON
      }
      hits.push({
        path,
        type: typeof body.type === 'string' ? body.type : '?',
        webhookId: headers['webhook-id'] ?? '',
        verified,
        body,
      });
      res.writeHead(verified ? 200 : 400).end();
    });
  });
  const base = await listen(server);
  return {
    base,
    hits,
    of: (path, type) =>
      hits.filter((h) => h.path === path && (type === undefined || h.type === type)),
    close: () => closeServer(server),
  };
}

export interface World {
  sim: Simulator;
  simUrl: string;
  clock: { now: number; tick(ms?: number): void };
  tr: TestRedis;
  dir: string;
  cleanups: (() => Promise<void>)[];
}

export async function world(label: string): Promise<World> {
  const cleanups: (() => Promise<void>)[] = [];
  const clock = {
    now: Date.now(),
    tick(ms = 1000) {
      clock.now += ms;
    },
  };
  const sim = createSimulator({
    services: 40,
    seed: 11,
    rateLimit: { public: 100_000, premium: 100_000 },
    now: () => clock.now,
  });
  const simUrl = await sim.listen(0, '127.0.0.1');
  cleanups.push(() => sim.close());
  const tr = await testRedis(label);
  cleanups.push(() => tr.cleanup());
  const tmp = await tempDir();
  cleanups.push(() => tmp.cleanup());
  return { sim, simUrl, clock, tr, dir: tmp.dir, cleanups };
}

export function baseConfig(w: World, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    upstream: { baseUrl: w.simUrl, requestsPerMinute: 600, timeoutMs: 5000 },
    redis: { url: REDIS_URL, prefix: w.tr.prefix },
    poll: { status: '1s', incidents: '1s' },
    server: { port: 0, adminToken: ADMIN_TOKEN, egress: LOOPBACK_RECEIVERS },
    channels: {},
    subscriptions: [],
    ...extra,
  };
}

export interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test assertions read any field
  body: any;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** Every response text any client got (for the secret scans). */
export const responses: string[] = [];

export interface Client {
  (method: string, path: string, body?: unknown): Promise<Answer>;
  raw(
    method: string,
    path: string,
    body: string | undefined,
    headers?: Record<string, string>,
  ): Promise<Answer>;
}

/** A JSON client of `baseUrl` with `token` (none: no Authorization), from `localAddress` if given. */
export function client(baseUrl: string, token?: string, localAddress?: string): Client {
  const dispatcher = new Agent(localAddress === undefined ? {} : { localAddress });
  const raw = async (
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const res = await request(`${baseUrl}${path}`, {
      method: method as 'GET',
      dispatcher,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body }),
    });
    const text = await res.body.text();
    responses.push(text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.statusCode, body: parsed, text, headers: res.headers };
  };
  const call = ((method: string, path: string, body?: unknown) =>
    raw(method, path, body === undefined ? undefined : JSON.stringify(body))) as Client;
  call.raw = (method, path, body, headers) => raw(method, path, body, headers);
  return call;
}

/** Every key of `{prefix}` with its whole value, as text (strings, hashes, lists, sets, zsets, streams). */
export async function dumpPrefix(redis: Redis, prefix: string): Promise<string> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `{${prefix}}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  const parts: string[] = [];
  for (const key of keys) {
    const type = await redis.type(key);
    let value: unknown;
    switch (type) {
      case 'string':
        value = await redis.get(key);
        break;
      case 'hash':
        value = await redis.hgetall(key);
        break;
      case 'list':
        value = await redis.lrange(key, 0, -1);
        break;
      case 'set':
        value = await redis.smembers(key);
        break;
      case 'zset':
        value = await redis.zrange(key, '0', '-1', 'WITHSCORES');
        break;
      case 'stream':
        value = await redis.xrange(key, '-', '+');
        break;
      default:
        value = type;
    }
    parts.push(`${key} ${JSON.stringify(value)}`);
  }
  return parts.join('\n');
}

/** The forms a secret may take in a text: itself, and (for whsec_) its base64 part and key bytes. */
export function secretForms(secret: string): string[] {
  const forms = [secret];
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice('whsec_'.length);
    forms.push(b64, Buffer.from(b64, 'base64').toString('utf8'));
  }
  return forms;
}

export { REDIS_URL };
