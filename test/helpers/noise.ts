import { stringify } from 'yaml';
import type { DeliveryOutcome } from '../../src/delivery/worker.js';
import { parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { ChannelRegistry } from '../../src/delivery/channels.js';
import { silentLogger } from '../../src/log.js';
import type { NoiseStore } from '../../src/noise/store.js';
import type { LastLook, NoiseTicker } from '../../src/noise/ticker.js';
import type { SilenceStore } from '../../src/silences/store.js';
import type { Handoff } from '../../src/pipeline/handoff.js';
import type { Router } from '../../src/routing/router.js';
import { composeStages, type Stages } from '../../src/stages.js';
import type { DeliveryQueue } from '../../src/delivery/queue.js';
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
  /** The channel registry the delivery worker sends through. */
  registry: ChannelRegistry;
  handoff: Handoff;
  /** The delivery queue routing enqueues to. */
  deliveries: DeliveryQueue;
  router: Router;
  ticker: NoiseTicker;
  store: NoiseStore;
  /** The real silence store (Redis), on the harness clock; routing and reminders consult it. */
  silences: SilenceStore;
  /** The daemon's dead-letter retry (`Stages.retryDeadLetter`). */
  retryDeadLetter: Stages['retryDeadLetter'];
  /** Hands transitions off and waits until routing has processed all of them. */
  route(...ts: Transition[]): Promise<void>;
  /** Webhook payloads received so far (parsed bodies). */
  hooks(): { type: string; data: Record<string, unknown> }[];
  /** Every delivery outcome the worker reported, in order. */
  outcomes: DeliveryOutcome[];
  close(): Promise<void>;
}

/**
 * Routing + noise control + delivery on a real Redis with real local receivers, an injected clock
 * and the noise tick driven by the test (`ticker.tick()`), so time-based behaviour is exact. The
 * stages are the daemon's own (`composeStages`), on the harness clock.
 */
export async function noiseHarness(
  subscriptions: Record<string, unknown>[],
  o: {
    start: number;
    apiKey?: string;
    monthly?: (month: string, feedIds: readonly string[]) => Promise<string[]>;
    /** What the last committed polls saw (default: no such gate on reminders). */
    lastLook?: () => Promise<LastLook>;
    /** BullMQ lock duration of routing jobs (default 30 s): how soon a stalled cycle is taken over. */
    routingLockMs?: number;
    /** How the webhook receiver answers (default 204 to everything). */
    hookReply?: Parameters<typeof startReceiver>[0];
    /** More channels (a Slack app's, say), next to `hook` and `chat`. */
    channels?: Record<string, unknown>;
    /** Notifiers get Redis state under the harness prefix (Slack app mode's living messages). */
    channelState?: boolean;
  },
): Promise<NoiseHarness> {
  const clock = { now: o.start };
  const tr = await testRedis('noise');
  const hook = await startReceiver(o.hookReply ?? (() => ({ status: 204 })), '/hook');
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
        ...o.channels,
      },
      subscriptions,
    }),
    {},
    'noise-test',
  );
  const log = silentLogger();
  const now = (): number => clock.now;
  const registry = new ChannelRegistry(
    config.channels,
    o.channelState === true
      ? { state: { redis: tr.redis, key: (...parts: string[]) => tr.keys.key(...parts) } }
      : {},
  );
  const stages = composeStages({
    connection: tr.redis,
    keys: tr.keys,
    log,
    now,
    subscriptions: () => config.subscriptions,
    channels: () => registry,
    silenceStore: { cacheMs: 0 },
    premium: () => o.apiKey !== undefined,
    ...(o.monthly === undefined ? {} : { monthly: o.monthly }),
    ...(o.lastLook === undefined ? {} : { lastLook: o.lastLook }),
    manualNoiseTick: true,
    ...(o.routingLockMs === undefined ? {} : { routingLockMs: o.routingLockMs }),
  });
  await stages.start();
  const { handoff } = stages;
  const outcomes: DeliveryOutcome[] = [];
  stages.deliveryWorker.on('delivery', (d) => outcomes.push(d));
  let routed = 0;
  return {
    outcomes,
    clock,
    tr,
    hook,
    slack,
    config,
    registry,
    handoff,
    deliveries: stages.deliveries,
    router: stages.router,
    ticker: stages.noise,
    store: stages.noiseStore,
    silences: stages.silences,
    retryDeadLetter: (id) => stages.retryDeadLetter(id),
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
      await stages.stop();
      await registry.close();
      await hook.close();
      await slack.close();
      await tr.cleanup();
    },
  };
}
