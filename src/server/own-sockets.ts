/**
 * The daemon's own outbound connections, so that the ops server can tell a request the daemon
 * made to itself (a channel pointed at `http://127.0.0.1:<ops port>/admin/…`, tested or sent to)
 * from a client's, and refuse it unchecked: its token is never compared (no guessing oracle
 * through channel tests) and it never counts toward the failed-attempt limit of the address it
 * comes from (it cannot lock the real admin on loopback out).
 *
 * Every TCP connection this process opens (undici, node:http, SMTP, Redis…) is announced on the
 * `net.client.socket` diagnostics channel; once connected, its local end (address and port) is
 * kept until it closes. A request arriving on a socket whose remote end is one of them came from
 * this process. This cannot be forged: a TCP connection is one (local, remote) pair, so while our
 * socket holds that local port towards the ops server no other client's connection can arrive
 * from it. It knows this process only: another replica calling this one is a client like any
 * other (the egress policy keeps team channels off such addresses).
 *
 * Off unless the daemon turns it on (`AppDeps.ownOutbound`): tests drive an in-process App from
 * their own sockets, which would all look like the daemon's.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { plainAddress } from './client-address.js';

/**
 * The header every request a notifier sends carries (`egressAgent`): a request that reaches an
 * ops server with it came from a statuswatch notifier (this replica, another, or through the
 * installation's public ingress) and is refused unchecked and uncounted, like one on an own
 * socket. Knowing it helps no one: sending it only gets one's own requests refused.
 */
export const LOOP_HEADER = 'statuswatch-loop';

export interface OwnSockets {
  /** Whether `req` arrived on a connection this process opened. */
  has(req: IncomingMessage): boolean;
  /** Stops tracking. */
  stop(): void;
}

const endOf = (address: string | undefined, port: number | undefined): string =>
  `${plainAddress(address ?? '')}|${String(port ?? 0)}`;

export function trackOwnSockets(): OwnSockets {
  const ends = new Set<string>();
  const onSocket = (message: unknown): void => {
    const socket = (message as { socket?: Socket }).socket;
    if (socket === undefined) return;
    socket.once('connect', () => {
      // Both ends: the same local port may serve connections to other places at once (Linux
      // reuses an ephemeral port for another destination), so a client's connection from that
      // port to the ops server is not ours unless ours went to the ops server too.
      const pair = `${endOf(socket.localAddress, socket.localPort)}>${endOf(socket.remoteAddress, socket.remotePort)}`;
      ends.add(pair);
      socket.once('close', () => ends.delete(pair));
    });
  };
  subscribe('net.client.socket', onSocket);
  return {
    has: (req) =>
      ends.has(
        `${endOf(req.socket.remoteAddress, req.socket.remotePort)}>${endOf(req.socket.localAddress, req.socket.localPort)}`,
      ),
    stop: () => {
      unsubscribe('net.client.socket', onSocket);
      ends.clear();
    },
  };
}
