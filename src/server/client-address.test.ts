/**
 * `clientAddress` on real requests: a loopback HTTP server answers with the address it computed
 * for each request, sent from a chosen loopback address with a chosen X-Forwarded-For.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { listen } from '../demo/sinks.js';
import { clientAddress, plainAddress } from './client-address.js';

const PROXY = '127.0.0.30';
const INNER = '10.1.2.3';
let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    res.end(clientAddress(req, [PROXY, INNER]));
  });
  base = await listen(server);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function seenAs(from: string, forwarded?: string | string[]): Promise<string> {
  const dispatcher = new Agent({ localAddress: from });
  try {
    const res = await request(base, {
      dispatcher,
      headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
    });
    return await res.body.text();
  } finally {
    await dispatcher.close();
  }
}

describe('clientAddress', () => {
  it('is the socket address without a trusted proxy, whatever the header says', async () => {
    expect(await seenAs('127.0.0.31')).toBe('127.0.0.31');
    expect(await seenAs('127.0.0.31', '198.51.100.1')).toBe('127.0.0.31');
  });

  it('through a trusted proxy: the nearest hop that is not a trusted proxy', async () => {
    expect(await seenAs(PROXY, '198.51.100.1')).toBe('198.51.100.1');
    // The client wrote the left part itself: only what the proxies appended counts.
    expect(await seenAs(PROXY, '203.0.113.9, 198.51.100.1')).toBe('198.51.100.1');
    // Two trusted hops (an inner proxy behind the outer one).
    expect(await seenAs(PROXY, `198.51.100.1, ${INNER}`)).toBe('198.51.100.1');
    // Several header lines count as one list, in order.
    expect(await seenAs(PROXY, ['203.0.113.9', `198.51.100.2, ${INNER}`])).toBe('198.51.100.2');
    expect(await seenAs(PROXY, ' 2001:db8::7 ')).toBe('2001:db8::7');
    expect(await seenAs(PROXY, '::ffff:198.51.100.3')).toBe('198.51.100.3');
  });

  it('through a trusted proxy: no header, or garbage, is the last address that could be read', async () => {
    expect(await seenAs(PROXY)).toBe(PROXY);
    expect(await seenAs(PROXY, 'unknown')).toBe(PROXY);
    expect(await seenAs(PROXY, `198.51.100.1, garbage, ${INNER}`)).toBe(INNER);
    // Only trusted proxies in the chain: the leftmost of them.
    expect(await seenAs(PROXY, INNER)).toBe(INNER);
  });

  it('writes IPv4-mapped IPv6 addresses as IPv4, and leaves others alone', () => {
    expect(plainAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(plainAddress('::ffff:abcd')).toBe('::ffff:abcd');
    expect(plainAddress('2001:db8::1')).toBe('2001:db8::1');
  });
});
