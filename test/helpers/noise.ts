import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { ChannelRegistry } from '../../src/delivery/channels.js';
import { DeliveryQueue } from '../../src/delivery/queue.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { silentLogger } from '../../src/log.js';
import { NoiseStore } from '../../src/noise/store.js';
import { NoiseTicker } from '../../src/noise/ticker.js';
import { SilenceStore } from '../../src/silences/store.js';
import { Handoff } from '../../src/pipeline/handoff.js';
import { CategoryStore } from '../../src/routing/categories.js';
import { Router } from '../../src/routing/router.js';
import type { Transition } from '../../src/diff/transition.js';
import { startReceiver, type Receiver } from '../notify-helpers.js';
import { WEBHOOK_SECRET } from './delivery.js';
import { testRedis, type TestRedis } from './redis.js';
import { waitFor } from './wait.js';

export interface NoiseHarness {
  clock: { now: number };
  tr: TestRedis;
  hook: Receiver;
  slack: Receiver;
  config: Config;
  handoff: Handoff;
  router: Router;
  ticker: NoiseTicker;
  store: NoiseStore;
  /** The real silence store (Redis), on the harness clock; routing and reminders consult it. */
  silences: SilenceStore;
  /** Hands transitions off and waits until routing has processed all of them. */
  route(...ts: Transition[]): Promise<void>;
  /** Webhook payloads received so far (parsed bodies). */
  hooks(): { type: string; data: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * Routing + noise control + delivery on a real Redis with real local receivers, an injected clock
 * and the noise tick driven by the test (`ticker.tick()`), so time-based behaviour is exact.
 */
export async function noiseHarness(
  subscriptions: Record<string, unknown>[],
  o: {
    start: number;
    apiKey?: string;
    monthly?: (month: string, feedIds: readonly string[]) => Promise<string[]>;
  },
): Promise<NoiseHarness> {
  const clock = { now: o.start };
  const tr = await testRedis('noise');
  const hook = await startReceiver(() => ({ status: 204 }), '/hook');
  const slack = await startReceiver(() => ({ status: 200, body: 'ok' }), '/services/T0/B0/x');
  const config = parseConfig(
    stringify({
      upstream: {
        baseUrl: 'http://127.0.0.1:9',
        ...(o.apiKey === undefined ? {} : { apiKey: o.apiKey }),
      },
      redis: { url: 'redis://127.0.0.1:6379', prefix: tr.prefix },
      channels: {
        hook: { type: 'webhook', url: hook.url, secret: WEBHOOK_SECRET },
        chat: { type: 'slack', webhookUrl: slack.url },
      },
      subscriptions,
    }),
    {},
    'noise-test',
  );
  const log = silentLogger();
  const now = (): number => clock.now;
  const handoff = new Handoff(tr.redis, tr.keys);
  const deliveries = new DeliveryQueue(tr.redis, tr.keys);
  const registry = new ChannelRegistry(config.channels);
  const worker = new DeliveryWorker({
    connection: tr.redis,
    keys: tr.keys,
    deliveries,
    channels: () => registry,
    log,
    now,
  });
  worker.start();
  const store = new NoiseStore(tr.redis, tr.keys);
  const silences = new SilenceStore(tr.redis, tr.keys, now, { cacheMs: 0 });
  const router = new Router({
    connection: tr.redis,
    keys: tr.keys,
    subscriptions: () => config.subscriptions,
    categories: new CategoryStore(tr.redis, tr.keys, now),
    deliveries,
    noise: { store, silences: () => silences.active() },
    log,
    now,
  });
  await router.start();
  const ticker = new NoiseTicker({
    connection: tr.redis,
    keys: tr.keys,
    store,
    deliveries,
    subscriptions: () => config.subscriptions,
    silences: () => silences.active(),
    premium: () => o.apiKey !== undefined,
    ...(o.monthly === undefined ? {} : { monthly: o.monthly }),
    log,
    now,
  });
  let routed = 0;
  return {
    clock,
    tr,
    hook,
    slack,
    config,
    handoff,
    router,
    ticker,
    store,
    silences,
    async route(...ts) {
      await handoff.enqueue(ts);
      routed += ts.length;
      await waitFor(async () => (await handoff.routedCount()) >= routed, {
        what: `${routed} transitions routed`,
      });
    },
    hooks() {
      return hook.received.map(
        (r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> },
      );
    },
    async close() {
      await router.stop();
      await ticker.stop();
      await worker.stop();
      await deliveries.close();
      await handoff.close();
      await registry.close();
      await hook.close();
      await slack.close();
      await tr.cleanup();
    },
  };
}
