/**
 * Vitest `globalSetup` (vitest.config.ts): makes sure a Redis answers at `REDIS_URL` (default
 * redis://127.0.0.1:6379) before any test runs. When one answers, nothing happens. When none does
 * and `redis-server` is on PATH and the URL names a loopback address, a private one (no
 * persistence) is started there for the run and stopped in teardown. Otherwise the run fails at
 * once with one line saying what to install or set, instead of every test failing with
 * ECONNREFUSED.
 *
 * Also used by tests that need a Redis of their own to stop and start (`startRedisServer`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Whether anything speaking RESP answers a PING at host:port within `timeoutMs` (-NOAUTH counts). */
export function redisAnswers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (answers: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answers);
    };
    const timer = setTimeout(() => {
      done(false);
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: string) => {
      reply += chunk;
      if (reply.includes('\r\n')) done(reply.startsWith('+') || reply.startsWith('-'));
    });
    socket.once('error', () => {
      done(false);
    });
    socket.once('close', () => {
      done(false);
    });
  });
}

/** The absolute path of executable `name` on `pathEnv` (a PATH value), or null. */
export async function findOnPath(
  name: string,
  pathEnv = process.env.PATH ?? '',
): Promise<string | null> {
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  /** SIGTERM (SIGKILL after 5 s); resolves once the process has exited. */
  stop(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Starts `redis-server` on host:port with no persistence (`--save '' --appendonly no`, in a
 * temporary directory) and waits until it answers; rejects with its output when it does not.
 */
export async function startRedisServer(o: {
  host: string;
  port: number;
  binary?: string;
  password?: string;
  timeoutMs?: number;
}): Promise<RedisServer> {
  const binary = o.binary ?? 'redis-server';
  const bind = o.host === 'localhost' ? '127.0.0.1' : o.host.replace(/^\[(.*)\]$/, '$1');
  const dir = await mkdtemp(join(tmpdir(), 'statuswatch-redis-'));
  const args = [
    '--port',
    String(o.port),
    '--bind',
    bind,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
    ...(o.password === undefined ? [] : ['--requirepass', o.password]),
  ];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (output += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (output += s));
  const state = { exited: false };
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      state.exited = true;
      resolve();
    });
    child.once('error', (err) => {
      output += err.message;
      state.exited = true;
      resolve();
    });
  });
  // A test run that dies without teardown must not leave the server behind.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (!state.exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exit;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (o.timeoutMs ?? 5000);
  for (;;) {
    if (state.exited) {
      await stop();
      throw new Error(`${binary} exited at start: ${output.trim().split('\n').join(' | ')}`);
    }
    if (await redisAnswers(bind, o.port, 250)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${binary} did not answer on ${bind}:${o.port}: ${output.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { host: bind, port: o.port, pid: child.pid ?? -1, stop };
}

/** An error printed as its message only: the one line is the whole story. */
class SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisSetupError';
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * Makes sure Redis answers at `url`; resolves with the teardown (a no-op unless a private
 * `redis-server` was started). `pathEnv` is searched for `redis-server`.
 */
export async function ensureRedis(
  url: string,
  pathEnv = process.env.PATH ?? '',
): Promise<{ started: RedisServer | null; teardown: () => Promise<void> }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SetupError(`REDIS_URL is not a URL: set it to redis://HOST:PORT`);
  }
  const host = parsed.hostname === '' ? '127.0.0.1' : parsed.hostname;
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  const bind = host === 'localhost' ? '127.0.0.1' : host.replace(/^\[(.*)\]$/, '$1');
  if (await redisAnswers(bind, port)) return { started: null, teardown: () => Promise.resolve() };
  const shown = `${parsed.protocol}//${host}:${port}`;
  const binary = await findOnPath('redis-server', pathEnv);
  if (binary === null) {
    throw new SetupError(
      `no Redis answers at ${shown} (REDIS_URL) and redis-server is not on PATH: install Redis (apt-get install redis-server, brew install redis) or set REDIS_URL to a running Redis`,
    );
  }
  if (!LOOPBACK.has(host)) {
    throw new SetupError(
      `no Redis answers at ${shown} (REDIS_URL), which is not a loopback address to start a private redis-server on: start that Redis or set REDIS_URL to redis://127.0.0.1:PORT`,
    );
  }
  const password = parsed.password === '' ? undefined : decodeURIComponent(parsed.password);
  const started = await startRedisServer({
    host,
    port,
    binary,
    ...(password === undefined ? {} : { password }),
  });
  return { started, teardown: () => started.stop() };
}

/** Vitest globalSetup: the returned function is the teardown. */
export default async function setup(): Promise<() => Promise<void>> {
  const url = process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
  const { started, teardown } = await ensureRedis(url);
  if (started !== null) {
    console.log(
      `no Redis answered at REDIS_URL; started a private redis-server (pid ${started.pid}) on ${started.host}:${started.port} for this run`,
    );
  }
  return teardown;
}
