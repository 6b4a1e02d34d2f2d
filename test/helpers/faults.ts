/**
 * Fault injection for the outage tests:
 * - `persistentRedis`: a private `redis-server` with an append-only file fsynced on every write
 *   (`--appendonly yes --appendfsync always`) in a temporary directory, on a free loopback port,
 *   that a test pauses (SIGSTOP/SIGCONT), kills (SIGKILL) and restarts on the same dir and port,
 *   with its data or empty;
 * - `faultServer`: a raw `node:net` HTTP/1.1 server whose mode a test switches at any time:
 *   `ok` (answers), `slow` (answers after `slowMs`), `hang` (accepts, reads, never answers),
 *   `dribble` (answers one byte per second), `reset` (answers a 200 status, headers and part of
 *   the body, then resets the connection) or `reset-request` (resets it as soon as a request's
 *   head is in, mid-body); `proxy` pipes the connection to another address (an upstream
 *   simulator behind a faulty link).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { redisAnswers } from './global-setup.js';
import { freePort } from './process.js';

// ---------------------------------------------------------------------------------------------
// Redis

export interface PersistentRedis {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** The running server's pid (changes on restart). */
  pid(): number;
  /** SIGSTOP: the server keeps its connections but answers nothing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL (no shutdown save); resolves once it has exited. */
  kill(): Promise<void>;
  /** Starts it again on the same port and dir (`empty`: its data files removed first). */
  restart(o?: { empty?: boolean }): Promise<void>;
  /** Stops it (SIGCONT + SIGKILL) and removes its dir. */
  cleanup(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A persistent private redis-server (see the file comment); started and answering on return. */
export async function persistentRedis(): Promise<PersistentRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'statuswatch-redis-aof-'));
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  let output = '';

  const killOnExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const start = async (): Promise<void> => {
    const proc = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    const state = { gone: false };
    exited = new Promise<void>((resolve) => {
      proc.once('exit', () => {
        state.gone = true;
        resolve();
      });
    });
    proc.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
    proc.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers('127.0.0.1', port, 250))) {
      if (state.gone || Date.now() > deadline)
        throw new Error(`redis-server on ${port} did not start: ${output.trim()}`);
      await sleep(25);
    }
  };

  const kill = async (): Promise<void> => {
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
    }
    await exited;
  };

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    pid: () => child?.pid ?? -1,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    kill,
    async restart(o = {}) {
      await kill();
      if (o.empty === true) {
        await rm(dir, { recursive: true, force: true });
        await mkdir(dir, { recursive: true });
      }
      await start();
    },
    async cleanup() {
      process.off('exit', killOnExit);
      child?.kill('SIGCONT');
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP faults over raw sockets

export type FaultMode = 'ok' | 'slow' | 'hang' | 'dribble' | 'reset' | 'reset-request' | 'proxy';

export interface FaultRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The mode the request met. */
  mode: FaultMode;
  at: number;
  /** A 200 answer was written in full (`ok` and `slow` modes). */
  answered: boolean;
  /** When its connection closed (the client gave up, or the server reset it); null while open. */
  closedAt: number | null;
}

export interface FaultServer {
  readonly url: string;
  readonly port: number;
  /**
   * The mode new requests meet (new connections, in `proxy` mode). Leaving `proxy` drops the
   * proxied connections, so kept-alive ones meet the new mode too.
   */
  mode: FaultMode;
  /** Every request read in full (all modes but `proxy`), in order. */
  readonly requests: FaultRequest[];
  /** Connections accepted so far, and those still open. */
  connections(): { accepted: number; open: number };
  /** Webhook ids (`webhook-id` header) of requests answered 200 (`ok`, `slow`), in order. */
  okIds(): string[];
  close(): Promise<void>;
}

export interface FaultServerOptions {
  mode?: FaultMode;
  /** `proxy` mode's target. */
  target?: { host: string; port: number };
  /** The `ok` answer (default 200 `ok`). */
  okResponse?: (req: FaultRequest) => {
    status: number;
    headers?: Record<string, string>;
    body: string;
  };
  /** The answer `dribble` sends a byte a second and `reset` cuts short (default a 200 JSON body). */
  faultResponse?: string;
  /** How long `slow` mode waits before it answers as `ok` does (default 3000). */
  slowMs?: number;
  /** Milliseconds between dribbled bytes (default 1000). */
  dribbleEveryMs?: number;
}

const DEFAULT_FAULT_RESPONSE =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n' +
  `{"success":true,"data":[${' '.repeat(64 - 26)}]}\n`;

function reason(status: number): string {
  return status === 200 ? 'OK' : status >= 500 ? 'Server Error' : 'Status';
}

/**
 * Parses one HTTP/1.1 request off `buffer`: the request and the bytes after it, or null. With
 * `headOnly`, as soon as its head is in (the body is what came of it so far).
 */
function parseRequest(
  buffer: Buffer,
  headOnly = false,
): {
  head: { method: string; path: string; headers: Record<string, string> };
  body: Buffer;
  rest: Buffer;
} | null {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const [method = '', path = ''] = (lines[0] ?? '').split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buffer.length < end + 4 + length && !headOnly) return null;
  return {
    head: { method, path, headers },
    body: buffer.subarray(end + 4, end + 4 + length),
    rest: buffer.subarray(end + 4 + length),
  };
}

/** A raw HTTP/1.1 server with switchable faults (see the file comment). */
export async function faultServer(o: FaultServerOptions = {}): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  const proxied = new Set<Socket>();
  let mode: FaultMode = o.mode ?? 'ok';
  const timers = new Set<NodeJS.Timeout>();
  const requests: FaultRequest[] = [];
  let accepted = 0;
  const faultResponse = Buffer.from(o.faultResponse ?? DEFAULT_FAULT_RESPONSE, 'latin1');
  const dribbleEveryMs = o.dribbleEveryMs ?? 1000;

  const answerOk = (socket: Socket, req: FaultRequest): void => {
    const answer = o.okResponse?.(req) ?? { status: 200, body: 'ok' };
    const body = Buffer.from(answer.body, 'utf8');
    const headers = {
      'content-type': 'text/plain',
      ...answer.headers,
      'content-length': String(body.length),
    };
    const head =
      `HTTP/1.1 ${answer.status} ${reason(answer.status)}\r\n` +
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      '\r\n';
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]), (err) => {
      if (err === undefined || err === null) req.answered = answer.status === 200;
    });
  };

  const handle = (socket: Socket, req: FaultRequest): void => {
    switch (req.mode) {
      case 'ok':
        answerOk(socket, req);
        return;
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!socket.destroyed) answerOk(socket, req);
        }, o.slowMs ?? 3000);
        timers.add(timer);
        return;
      }
      case 'hang':
        return; // read, never answered
      case 'dribble': {
        let i = 0;
        const timer = setInterval(() => {
          if (socket.destroyed || i >= faultResponse.length) {
            clearInterval(timer);
            timers.delete(timer);
            return;
          }
          socket.write(faultResponse.subarray(i, i + 1));
          i += 1;
        }, dribbleEveryMs);
        timers.add(timer);
        socket.once('close', () => {
          clearInterval(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'reset': {
        // The status line, the headers and part of the body, then a TCP RST.
        const cut = faultResponse.indexOf('\r\n\r\n') + 4 + 10;
        socket.write(faultResponse.subarray(0, cut), () => {
          setImmediate(() => socket.resetAndDestroy());
        });
        return;
      }
      case 'reset-request':
        socket.resetAndDestroy();
        return;
      case 'proxy':
        return;
    }
  };

  const server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (mode === 'proxy') {
      const target = o.target;
      if (target === undefined) {
        socket.destroy();
        return;
      }
      const upstream = connect(target);
      sockets.add(upstream);
      proxied.add(socket);
      socket.on('close', () => proxied.delete(socket));
      upstream.on('close', () => {
        sockets.delete(upstream);
        socket.destroy();
      });
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      socket.pipe(upstream).pipe(socket);
      return;
    }
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const parsed = parseRequest(buffer, mode === 'reset-request');
        if (parsed === null) return;
        buffer = parsed.rest;
        const req: FaultRequest = {
          method: parsed.head.method,
          path: parsed.head.path,
          headers: parsed.head.headers,
          body: parsed.body.toString('utf8'),
          mode,
          at: Date.now(),
          answered: false,
          closedAt: null,
        };
        requests.push(req);
        socket.once('close', () => {
          req.closedAt = Date.now();
        });
        handle(socket, req);
        // After a fault (or while slow) the connection is not reused: ignore anything more on it.
        if (req.mode !== 'ok') {
          socket.removeAllListeners('data');
          socket.resume();
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const result: FaultServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    get mode() {
      return mode;
    },
    set mode(next: FaultMode) {
      if (mode === 'proxy' && next !== 'proxy') for (const s of proxied) s.destroy();
      mode = next;
    },
    requests,
    connections: () => ({ accepted, open: sockets.size }),
    okIds: () => requests.filter((r) => r.answered).map((r) => r.headers['webhook-id'] ?? ''),
    async close() {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
  return result;
}

/** A webhook the sink answered 200 and that verified under the secret: its id, type and feedId. */
export interface VerifiedDelivery {
  id: string;
  type: string;
  feedId: string;
}

/** The webhook requests `hook` answered 200, verified with `secret` (Standard Webhooks), in order. */
export function verifiedDeliveries(hook: FaultServer, secret: string): VerifiedDelivery[] {
  const wh = new Webhook(secret);
  return hook.requests
    .filter((r) => r.mode === 'ok' && r.answered)
    .map((r) => {
      const payload = wh.verify(r.body, {
        'webhook-id': r.headers['webhook-id'] ?? '',
        'webhook-timestamp': r.headers['webhook-timestamp'] ?? '',
        'webhook-signature': r.headers['webhook-signature'] ?? '',
      }) as { type: string; data: { service: { feedId: string } } };
      return {
        id: r.headers['webhook-id'] ?? '',
        type: payload.type,
        feedId: payload.data.service.feedId,
      };
    });
}

/** CPU seconds (user + system) process `pid` has used, from /proc. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
