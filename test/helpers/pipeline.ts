import { createSimulator, type Simulator, type SimulatorOptions } from '../../src/sim/index.js';
import { createUpstreamClient, type UpstreamClient } from '../../src/upstream/index.js';
import {
  Pipeline,
  type PipelineDeps,
  type PipelineRules,
  type PollKind,
} from '../../src/pipeline/cycle.js';
import { Handoff } from '../../src/pipeline/handoff.js';
import { silentLogger } from '../../src/log.js';
import type { Transition } from '../../src/diff/transition.js';
import { testRedis, type TestRedis } from './redis.js';

export const PREMIUM_KEY = 'sk_test_premium_0123456789';

export interface PipelineHarness {
  sim: Simulator;
  clock: { now: number; advance(ms: number): void };
  tr: TestRedis;
  client: UpstreamClient;
  handoff: Handoff;
  pipeline: Pipeline;
  /** A second, independent pipeline instance (another replica, or the same one after a restart). */
  newPipeline(): Pipeline;
  /** Runs a cycle of each kind and advances the clock by a minute (a distinct upstream snapshot). */
  poll(...kinds: PollKind[]): Promise<Transition[]>;
  /** Every transition handed off so far (the durable queue), as sorted `kind feedId` strings. */
  handedOff(): Promise<string[]>;
  close(): Promise<void>;
}

export async function pipelineHarness(
  simOptions: SimulatorOptions = {},
  rules: PipelineRules = { statusConfirmations: 2, scoreDrop: 5 },
  extra: (
    tr: TestRedis,
  ) => Partial<Pick<PipelineDeps, 'vocabulary' | 'log' | 'committed'>> = () => ({}),
): Promise<PipelineHarness> {
  const clock = {
    now: Date.UTC(2026, 10, 2, 12, 0, 0),
    advance(ms: number) {
      clock.now += ms;
    },
  };
  const sim = createSimulator({
    services: 200,
    rateLimit: false,
    keys: {
      [PREMIUM_KEY]: { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] },
    },
    variantBRefreshMs: 60_000,
    now: () => clock.now,
    ...simOptions,
  });
  const baseUrl = await sim.listen(0, '127.0.0.1');
  const tr = await testRedis('pipe');
  const client = createUpstreamClient({ baseUrl, apiKey: PREMIUM_KEY, timeoutMs: 5000 });
  const handoff = new Handoff(tr.redis, tr.keys);
  const log = silentLogger();
  const deps = extra(tr);
  const newPipeline = (): Pipeline =>
    new Pipeline({
      client,
      redis: tr.redis,
      keys: tr.keys,
      handoff,
      log,
      rules,
      now: () => clock.now,
      ...deps,
    });
  const pipeline = newPipeline();
  const harness: PipelineHarness = {
    sim,
    clock,
    tr,
    client,
    handoff,
    pipeline,
    newPipeline,
    async poll(...kinds) {
      const out: Transition[] = [];
      for (const kind of kinds) out.push(...(await pipeline.runCycle(kind)).transitions);
      clock.advance(60_000);
      return out;
    },
    async handedOff() {
      return (await handoff.handedOff()).map((t) => `${t.kind} ${t.feedId}`).sort();
    },
    async close() {
      await handoff.close();
      await client.close();
      await sim.close();
      await tr.cleanup();
    },
  };
  return harness;
}

export const kindsOf = (ts: readonly Transition[]): string[] =>
  ts.map((t) => `${t.kind} ${t.feedId}`);
