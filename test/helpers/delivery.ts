/**
 * Delivery test harness: a real Redis prefix, a DeliveryQueue, DeliveryWorkers that record their
 * outcome events, Standard Webhooks verification of what a receiver got, and a DeliveryWorker in
 * a child Node process (run against the built `dist/`) that a test can SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import type { ChannelConfig } from '../../src/config/schema.js';
import { ChannelRegistry } from '../../src/delivery/channels.js';
import { DeliveryQueue } from '../../src/delivery/queue.js';
import {
  DeliveryWorker,
  type DeliveryOutcome,
  type DeliveryWorkerOptions,
} from '../../src/delivery/worker.js';
import { silentLogger } from '../../src/log.js';
import type { ReceivedRequest } from '../notify-helpers.js';
import { REDIS_URL, testRedis, type TestRedis } from './redis.js';
import { waitFor } from './wait.js';

export const WEBHOOK_SECRET = `whsec_${Buffer.from('statuswatch-delivery-test-key-32b').toString('base64')}`;

export function webhookChannel(url: string): ChannelConfig {
  return { type: 'webhook', url, secret: WEBHOOK_SECRET, timeoutMs: 10_000 };
}

/** Verifies a received request with the official Standard Webhooks library; returns the payload. */
export function verifyWebhook(req: ReceivedRequest): unknown {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers[name] = value;
  }
  return new Webhook(WEBHOOK_SECRET).verify(req.body, headers);
}

export function webhookIdOf(req: ReceivedRequest): string | undefined {
  const id = req.headers['webhook-id'];
  return typeof id === 'string' ? id : undefined;
}

/** A started DeliveryWorker and every outcome event it emitted, in order. */
export interface RecordedWorker {
  worker: DeliveryWorker;
  outcomes: DeliveryOutcome[];
  /** Waits until an outcome matches, returns it. */
  waitForOutcome(
    match: (o: DeliveryOutcome) => boolean,
    timeoutMs?: number,
  ): Promise<DeliveryOutcome>;
}

export interface DeliveryHarness {
  tr: TestRedis;
  queue: DeliveryQueue;
  /** Starts a worker over `channels` (a function, so a test can "reload" the config). */
  startWorker(
    channels: () => ChannelRegistry,
    options?: Partial<
      Omit<DeliveryWorkerOptions, 'connection' | 'keys' | 'deliveries' | 'channels' | 'log'>
    >,
  ): RecordedWorker;
  /** Registers a registry to close in `close()`. */
  registry(configs: Readonly<Record<string, ChannelConfig>>): ChannelRegistry;
  close(): Promise<void>;
}

export async function deliveryHarness(attempts?: number): Promise<DeliveryHarness> {
  const tr = await testRedis('deliv');
  const queue = new DeliveryQueue(tr.redis, tr.keys, attempts);
  const workers: DeliveryWorker[] = [];
  const registries: ChannelRegistry[] = [];
  return {
    tr,
    queue,
    startWorker(channels, options = {}) {
      const worker = new DeliveryWorker({
        connection: tr.redis,
        keys: tr.keys,
        deliveries: queue,
        channels,
        log: silentLogger(),
        ...options,
      });
      const outcomes: DeliveryOutcome[] = [];
      worker.on('delivery', (o) => outcomes.push(o));
      worker.start();
      workers.push(worker);
      return {
        worker,
        outcomes,
        waitForOutcome: (match, timeoutMs = 10_000) =>
          waitFor(() => outcomes.find(match), { timeoutMs, what: 'a delivery outcome' }),
      };
    },
    registry(configs) {
      const registry = new ChannelRegistry(configs);
      registries.push(registry);
      return registry;
    },
    async close() {
      await Promise.allSettled(workers.map((w) => w.stop()));
      await Promise.allSettled(registries.map((r) => r.close()));
      await queue.close();
      await tr.cleanup();
    },
  };
}

// ---------------------------------------------------------------- child process worker

const ROOT = resolve(import.meta.dirname, '../..');

function distUrl(file: string): string {
  const path = resolve(ROOT, 'dist', file);
  if (!existsSync(path)) throw new Error(`${path} is missing: run "npm run build" first`);
  return pathToFileURL(path).href;
}

/** The child: one DeliveryWorker over one webhook channel, from the built dist/. */
function childScript(): string {
  return `
import { createRedis, createKeys } from ${JSON.stringify(distUrl('redis.js'))};
import { ChannelRegistry } from ${JSON.stringify(distUrl('delivery/channels.js'))};
import { DeliveryQueue } from ${JSON.stringify(distUrl('delivery/queue.js'))};
import { DeliveryWorker } from ${JSON.stringify(distUrl('delivery/worker.js'))};
import { silentLogger } from ${JSON.stringify(distUrl('log.js'))};
const cfg = JSON.parse(process.env.SW_CHILD_CONFIG);
const connection = createRedis(cfg.redisUrl);
const registry = new ChannelRegistry(cfg.channels);
const keys = createKeys(cfg.prefix);
const worker = new DeliveryWorker({
  connection,
  keys,
  deliveries: new DeliveryQueue(connection, keys),
  channels: () => registry,
  log: silentLogger(),
  lockDurationMs: cfg.lockDurationMs,
});
worker.on('delivery', (o) => process.stdout.write(JSON.stringify({ outcome: o.outcome, id: o.notification.id }) + '\\n'));
await connection.ping();
worker.start();
process.stdout.write('ready\\n');
`;
}

export interface ChildWorker {
  child: ChildProcess;
  /** Resolves with the exit signal once the child is gone. */
  exited: Promise<NodeJS.Signals | null>;
  kill(): Promise<NodeJS.Signals | null>;
}

/** Starts a DeliveryWorker in a child Node process; resolves once it is consuming. */
export async function spawnDeliveryWorker(init: {
  prefix: string;
  channels: Readonly<Record<string, ChannelConfig>>;
  lockDurationMs: number;
}): Promise<ChildWorker> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', childScript()], {
    env: {
      ...process.env,
      SW_CHILD_CONFIG: JSON.stringify({ redisUrl: REDIS_URL, ...init }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<NodeJS.Signals | null>((resolveExit) => {
    child.once('exit', (_code, signal) => {
      resolveExit(signal);
    });
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  await waitFor(
    () => {
      if (gone) throw new Error(`child worker exited before it was ready: ${stderr}`);
      return stdout.includes('ready\n');
    },
    { timeoutMs: 10_000, what: 'the child delivery worker' },
  );
  return {
    child,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}
