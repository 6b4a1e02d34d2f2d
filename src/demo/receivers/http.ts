/**
 * The HTTP scaffold the vendor stand-ins (`opsgenie.ts`, `pagerduty.ts`, `slack-api.ts`,
 * `teams.ts`) share: listen on a free port of 127.0.0.1, read each request's body with a bound,
 * hand it to the receiver's handler (which judges and records it), write the answer, and close
 * (open connections included). What a vendor accepts, records and answers stays in its module.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as a receiver's handler sees it, its body read. */
export interface ReceiverRequest {
  /** The request (its socket is still open: the answer is written once the handler returns). */
  req: IncomingMessage;
  method: string;
  /** `req.url` parsed against `http://127.0.0.1`. */
  url: URL;
  headers: IncomingHttpHeaders;
  /** The body's bytes, at most `maxBytes` of them (the rest is read and dropped, never held). */
  body: Buffer;
  /** The body's size as received, over `maxBytes` included. */
  bytes: number;
  /** The body was longer than `maxBytes`: `body` holds only its first bytes. */
  overLimit: boolean;
}

/** What to answer: status, headers as written (no defaults added) and the body ('' for none). */
export interface ReceiverAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export type ReceiverHandler = (
  request: ReceiverRequest,
) => ReceiverAnswer | Promise<ReceiverAnswer>;

export interface ReceiverServerOptions {
  /** Largest body held, in bytes (default: no bound). */
  maxBytes?: number;
}

export interface ReceiverServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Closes the server and every open connection. */
  close(): Promise<void>;
}

/**
 * The whole body: its first `maxBytes` bytes and its full size (the rest is read and dropped).
 * The demo's one body reader: the scaffold's, and `readBody` of `../sinks.ts`.
 */
export function readBounded(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; bytes: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= maxBytes) chunks.push(chunk);
    });
    req.on('end', () => {
      resolve({ body: Buffer.concat(chunks), bytes });
    });
    req.on('error', reject);
  });
}

/**
 * JSON.parse of a body, or undefined when it is not JSON (JSON.parse never returns undefined, so
 * a receiver tells "not JSON" from any parsed value).
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Starts a receiver's server on a free port of 127.0.0.1: each request's body is read (bounded by
 * `maxBytes`), `handle` answers it, and the answer is written. A request whose body cannot be read
 * or whose handler throws is dropped (its socket destroyed).
 */
export async function startReceiverServer(
  handle: ReceiverHandler,
  options: ReceiverServerOptions = {},
): Promise<ReceiverServer> {
  const maxBytes = options.maxBytes ?? Infinity;
  const server = createServer((req, res) => {
    void (async () => {
      const { body, bytes } = await readBounded(req, maxBytes);
      const result = handle({
        req,
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://127.0.0.1'),
        headers: req.headers,
        body,
        bytes,
        overLimit: bytes > maxBytes,
      });
      // A synchronous handler's answer is written at once, before anything it resolved runs.
      const answer = result instanceof Promise ? await result : result;
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    })().catch(() => {
      res.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${String(port)}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
