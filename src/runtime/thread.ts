/**
 * A worker thread of `statuswatch run` (src/runtime/supervisor.ts starts it): one `App` without
 * an ops server, running the roles it was given, as one more replica of the installation would.
 * It answers the main thread's questions (metrics, readiness), reloads the config file when told,
 * and drains on `stop` before it ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { App } from '../app.js';
import { loadConfig } from '../config/load.js';
import { toError } from '../errors.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../server/metrics.js';
import {
  fromThreadSchema,
  threadDataSchema,
  toThreadSchema,
  type FromThread,
  type ThreadData,
} from './protocol.js';

const port = parentPort;
if (port === null) throw new Error('src/runtime/thread.ts runs as a worker thread only');

function post(message: FromThread): void {
  port?.postMessage(fromThreadSchema.parse(message));
}

async function main(data: ThreadData): Promise<void> {
  const log = createLogger({
    pretty: data.pretty,
    ...(data.logLevel === undefined ? {} : { level: data.logLevel }),
  }).child({ thread: data.name });
  let app: App;
  try {
    const config = await loadConfig(data.configFile);
    app = new App(config, {
      log,
      server: false,
      logReadiness: false,
      roles: data.roles,
      metrics: createMetrics({ process: false, thread: data.name }),
      ...(data.deliveryLockMs === undefined ? {} : { deliveryLockMs: data.deliveryLockMs }),
    });
  } catch (err) {
    post({ type: 'failed', message: toError(err).message });
    process.exit(1);
  }
  const state: { stopping: Promise<void> | null } = { stopping: null };
  const stop = (): Promise<void> => {
    state.stopping ??= app.stop().finally(async () => {
      // Only a spare's are kept (its counters outlive it); the others end with the process.
      const metrics =
        data.spare === true
          ? await app.metrics.registry.getMetricsAsJSON().catch(() => undefined)
          : undefined;
      post(metrics === undefined ? { type: 'stopped' } : { type: 'stopped', metrics });
      port?.close();
      // Whatever still holds the loop open (a timer of a library) must not keep the drain waiting.
      setImmediate(() => process.exit(0));
    });
    return state.stopping;
  };
  port?.on('message', (raw: unknown) => {
    const parsed = toThreadSchema.safeParse(raw);
    if (!parsed.success) {
      log.warn({ event: 'thread:bad_message' }, 'ignored a message from the main thread');
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'metrics':
        void app.metrics.registry.getMetricsAsJSON().then(
          (value) => {
            post({ type: 'reply', id: message.id, value });
          },
          () => {
            post({ type: 'reply', id: message.id, value: [] });
          },
        );
        return;
      case 'readiness':
        void app.readiness().then(
          (r) => {
            post({ type: 'reply', id: message.id, value: r });
          },
          () => {
            post({ type: 'reply', id: message.id, value: null });
          },
        );
        return;
      case 'reload':
        // The main thread loaded the file just before and kept it: a file that no longer loads
        // here (changed again in between) keeps this thread's config, as a rejected reload does.
        void loadConfig(data.configFile)
          .then((next) => {
            app.reload(next);
            // The main thread counts the reload (`statuswatch_config_reloads_total`), once.
            app.metrics.configReloads.reset();
          })
          .catch((err: unknown) => {
            log.error(
              { event: 'config:rejected', err: toError(err).message },
              'new config rejected by this thread; the old one stays in force',
            );
          });
        return;
      case 'stop':
        void stop();
        return;
    }
  });
  try {
    await app.start();
  } catch (err) {
    post({ type: 'failed', message: toError(err).message });
    await app.stop().catch(() => undefined);
    process.exit(1);
  }
  if (state.stopping === null) post({ type: 'started' });
}

void main(threadDataSchema.parse(workerData));
