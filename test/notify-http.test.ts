/**
 * The HTTP client every HTTP channel kind shares (src/notify/http.ts), against real local
 * servers: what it reads of an answer (the final status and its headers, at most the bytes a kind
 * asks for), an informational answer before the real one, a long body left unread, and the loop
 * header on every request of the Agent it owns.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, httpTarget, type HttpClient } from '../src/notify/http.js';
import { LOOP_HEADER } from '../src/server/own-sockets.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Seen {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A server on 127.0.0.1 answering with `answer`, recording what it received. */
async function serve(
  answer: (res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[]; closed: Promise<void> }> {
  const seen: Seen[] = [];
  let onClose = (): void => undefined;
  const closed = new Promise<void>((resolve) => {
    onClose = resolve;
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.on('close', onClose);
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${String(port)}/hook?token=t`, seen, closed };
}

function client(timeoutMs = 2000): HttpClient {
  const http = createHttpClient(timeoutMs);
  cleanups.push(() => http.close());
  return http;
}

describe('createHttpClient', () => {
  it('answers the status, its headers and the bytes asked for; sends the body, the headers and the loop header', async () => {
    const s = await serve((res) => {
      res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' });
      res.end('{"error":"slow down, please"}');
    });
    const answer = await client().request(httpTarget(s.url), {
      headers: { 'content-type': 'application/json', 'x-test': 'one' },
      body: '{"hello":"world"}',
      read: (status) => (status === 429 ? 9 : 0),
    });
    expect(answer.status).toBe(429);
    expect(answer.headers['retry-after']).toBe('7');
    expect(answer.text).toBe('{"error":');
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]?.body).toBe('{"hello":"world"}');
    expect(s.seen[0]?.headers['x-test']).toBe('one');
    expect(s.seen[0]?.headers[LOOP_HEADER]).toBe('1');
  });

  it('reads nothing of the body unless asked', async () => {
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('receiver words');
    });
    const answer = await client().request(httpTarget(s.url), { headers: {}, body: 'x' });
    expect(answer).toMatchObject({ status: 200, text: '' });
  });

  it('an informational answer (103) is passed by: the final status and headers count', async () => {
    const s = await serve((res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(503, { 'retry-after': '30' });
      res.end('down');
    });
    const answer = await client().request(httpTarget(s.url), {
      headers: {},
      body: 'x',
      read: () => 100,
    });
    expect(answer).toMatchObject({ status: 503, text: 'down' });
    expect(answer.headers['retry-after']).toBe('30');
  });

  it('a long body is not read to its end: the answer comes with the bytes asked for and the connection is dropped', async () => {
    const chunk = 'a'.repeat(64 * 1024);
    let written = 0;
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // 64 MB at most, far beyond what the client reads: it drops the connection first.
      const more = (): void => {
        while (written < 1024 && !res.destroyed) {
          written += 1;
          if (!res.write(chunk)) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      more();
    });
    const answer = await client().request(httpTarget(s.url), {
      headers: {},
      body: 'x',
      read: () => 5,
    });
    expect(answer).toMatchObject({ status: 200, text: 'aaaaa' });
    await s.closed;
    expect(written).toBeLessThan(1024);
  });
});
