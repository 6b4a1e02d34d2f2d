/**
 * Whom a request comes from, for the failed-attempt limits (API, console) and the audit log.
 *
 * Behind a reverse proxy or an ingress every request arrives from the proxy's socket address, so
 * counting by socket would put all clients under one limit: one client's failed logins would lock
 * everyone out. From a trusted proxy (`server.console.trustedProxies`) the address is taken from
 * `X-Forwarded-For` instead, read from the right: each proxy appends the address it was reached
 * from, so the nearest hop that is not itself a trusted proxy is the client. Hops further left
 * are the client's own to write, and are never believed. From any other socket the header is
 * ignored.
 */
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** An address as written: IPv4-mapped IPv6 addresses as plain IPv4. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** The socket address of a request (IPv4-mapped IPv6 addresses as plain IPv4). */
export function socketAddress(req: IncomingMessage): string {
  return plainAddress(req.socket.remoteAddress ?? '');
}

/**
 * The client's address: the socket's, or, for a request from a trusted proxy, the nearest
 * `X-Forwarded-For` hop that is not a trusted proxy. A hop that is not an IP address ends the
 * walk (the proxy's own address is used): garbage is never a client.
 */
export function clientAddress(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const socket = socketAddress(req);
  if (trustedProxies.length === 0 || !trustedProxies.includes(socket)) return socket || 'unknown';
  const raw = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((hop) => plainAddress(hop.trim()))
    .filter((hop) => hop !== '');
  let client = socket;
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = hops[i] ?? '';
    if (isIP(hop) === 0) break;
    client = hop;
    if (!trustedProxies.includes(hop)) break;
  }
  return client;
}
