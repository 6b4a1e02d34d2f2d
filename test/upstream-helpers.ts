/**
 * A real local HTTP server (127.0.0.1, port 0) that records every request and answers from a
 * route table of canned responses, or from a raw handler for misbehaving-server tests.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** Raw request target as sent (path + query, still encoded). */
  rawUrl: string;
  /** Path without query, still encoded. */
  rawPath: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
}

export interface Canned {
  status?: number;
  headers?: Record<string, string>;
  /** Serialized with JSON.stringify unless `raw` is given. */
  json?: unknown;
  raw?: string | Buffer;
}

/** Returns true when it handled the response itself. */
export type RawHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  received: ReceivedRequest,
) => boolean;

export interface TestUpstream {
  baseUrl: string;
  port: number;
  requests: ReceivedRequest[];
  /** Canned answers keyed by raw path (e.g. `/api/v1/status`). */
  routes: Map<string, Canned | ((r: ReceivedRequest) => Canned)>;
  setRaw(handler: RawHandler | null): void;
  close(): Promise<void>;
}

export const RATE_HEADERS = {
  'x-ratelimit-limit': '120',
  'x-ratelimit-remaining': '119',
  'x-ratelimit-reset': '1700000060',
};

export async function startTestUpstream(): Promise<TestUpstream> {
  const requests: ReceivedRequest[] = [];
  const routes = new Map<string, Canned | ((r: ReceivedRequest) => Canned)>();
  let raw: RawHandler | null = null;

  const server = http.createServer((req, res) => {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const rawPath = q === -1 ? rawUrl : rawUrl.slice(0, q);
    const query = Object.fromEntries(new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1)));
    const received: ReceivedRequest = {
      method: req.method ?? '',
      rawUrl,
      rawPath,
      query,
      headers: req.headers,
    };
    requests.push(received);
    if (raw?.(req, res, received) === true) return;
    const route = routes.get(rawPath);
    const canned: Canned =
      route === undefined
        ? { status: 404, json: { success: false, error: `no route ${rawPath}` } }
        : typeof route === 'function'
          ? route(received)
          : route;
    const body = canned.raw ?? (canned.json === undefined ? '' : JSON.stringify(canned.json));
    res.writeHead(canned.status ?? 200, {
      'content-type': 'application/json',
      ...RATE_HEADERS,
      ...canned.headers,
    });
    res.end(body);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    requests,
    routes,
    setRaw: (h) => {
      raw = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return port;
}
