/**
 * Test receivers listen on loopback, which the egress policy refuses to channels stored through
 * the API by default: the daemons under test allow it, as an operator allows an internal relay.
 * (test/egress.test.ts runs with the default policy.)
 */
import { createServer, type Server, type Socket } from 'node:net';

export const LOOPBACK_RECEIVERS = { allow: ['127.0.0.0/8', '::1'] };

/** A TCP listener that counts the connections that reach it. */
export interface CountingListener {
  port: number;
  connections: number;
  /** What reached it, as text (only when it answers HTTP). */
  received: string[];
  close(): Promise<void>;
}

/**
 * A listener on `host:port` (0: any free port) that counts connections; with `answerHttp` it
 * keeps what arrives and answers HTTP 200 to it, else it stays silent.
 */
export async function countingListener(
  host: string,
  port = 0,
  o: { answerHttp?: boolean } = {},
): Promise<CountingListener> {
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  const received: string[] = [];
  const server: Server = createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    if (o.answerHttp !== true) return;
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk.toString('latin1'));
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    received,
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}
