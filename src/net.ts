import { createServer, type AddressInfo } from 'node:net';

/**
 * A loopback port that was free a moment ago, for programs that cannot be told to listen on
 * port 0 (a child daemon, redis-server, Alertmanager). Rejects when nothing can listen.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return port;
}
