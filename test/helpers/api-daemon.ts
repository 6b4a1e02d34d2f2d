/**
 * `/api/v1` as the daemon serves it, in process on real Redis and real HTTP on 127.0.0.1: the API
 * tests' set-up (test/api-templates.test.ts, test/api-quotas.test.ts).
 */
import { createServer, type Server } from 'node:http';
import { TenancyApi, type TenancyApiOptions } from '../../src/api/index.js';
import { listen } from '../../src/demo/sinks.js';
import { silentLogger } from '../../src/log.js';
import { SilenceStore } from '../../src/silences/store.js';
import type { TestRedis } from './redis.js';

export interface ApiDaemon {
  api: TenancyApi;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  server: Server;
  /** Stops the server (its open connections too), then the API's store. */
  close(): Promise<void>;
}

/**
 * A TenancyApi on `t`'s Redis and key prefix (its silences uncached, no log), answering on an
 * ephemeral port of 127.0.0.1. The caller closes it (and `t`, after it).
 */
export async function startApi(
  t: TestRedis,
  options: Pick<TenancyApiOptions, 'config' | 'env'>,
): Promise<ApiDaemon> {
  const silences = new SilenceStore(t.redis, t.keys, Date.now, { cacheMs: 0 });
  const api = new TenancyApi({
    redis: t.redis,
    keys: t.keys,
    log: silentLogger(),
    silences,
    ...options,
    onChannels: () => undefined,
  });
  const server = createServer((req, res) => {
    void api.http.handle(req, res, new URL(req.url ?? '/', 'http://127.0.0.1'));
  });
  const url = await listen(server);
  return {
    api,
    url,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      await api.store.close();
    },
  };
}
