/**
 * The web console (issue #14): server-rendered pages at `/` of the ops server, JSON for scripts,
 * Atom feeds. `createAppConsole` assembles it from the daemon's parts; `Console` (server.ts)
 * answers the requests.
 */
import type { Logger } from 'pino';
import type { Keys, RedisClient } from '../redis.js';
import type { HistoryStore } from '../history/store.js';
import type { CatalogStore } from '../pipeline/catalog.js';
import type { PollKind } from '../pipeline/cycle.js';
import type { CategoryStore } from '../routing/categories.js';
import { NoiseStore } from '../noise/store.js';
import type { DeadLetterRetry, DeliveryQueue } from '../delivery/queue.js';
import type { SilenceStore } from '../silences/store.js';
import type { TenancyApi } from '../api/index.js';
import { consoleConfigOf, type ConsoleConfig } from './config.js';
import { Console } from './server.js';
import { tenancyAuth, tenancySelfService, tenancySubscriptions } from './tenancy-api.js';

export { Console, CSP, isConsolePath } from './server.js';
export { consoleConfigSchema, consoleConfigOf, type ConsoleConfig } from './config.js';
export type { ConsoleAuth, Viewer } from './auth.js';
export type { SelfService } from './selfservice.js';

export interface AppConsoleParts {
  redis: RedisClient;
  keys: Keys;
  history: HistoryStore;
  catalog: CatalogStore;
  categories: CategoryStore;
  deliveries: DeliveryQueue;
  /** Retries a dead letter (not an opening whose lifecycle closed since: `Stages`). */
  retryDeadLetter: (id: string) => Promise<DeadLetterRetry>;
  silences: SilenceStore;
  api: TenancyApi;
  /** The config file's `server` section, parsed (`adminToken`, `console`). */
  server: () => { adminToken?: string | undefined; console?: ConsoleConfig | undefined };
  pollKinds: () => readonly PollKind[];
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  now: () => number;
}

/** The console of a daemon: the API's tokens log in, its stores back self-service. */
export function createAppConsole(p: AppConsoleParts): Console {
  return new Console({
    sources: {
      redis: p.redis,
      keys: p.keys,
      history: p.history,
      catalog: p.catalog,
      categories: p.categories,
      noise: new NoiseStore(p.redis, p.keys),
      deliveries: p.deliveries,
      retryDeadLetter: p.retryDeadLetter,
      silences: p.silences,
      subscriptionsFor: tenancySubscriptions(p.api),
      pollKinds: p.pollKinds,
      now: p.now,
    },
    auth: tenancyAuth(p.api, () => p.server().adminToken),
    config: consoleConfigOf(p.server()),
    selfService: tenancySelfService(p.api, p.redis, p.keys),
    log: p.log,
  });
}
