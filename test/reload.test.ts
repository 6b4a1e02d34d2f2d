/**
 * `App.reload` (what SIGHUP and a changed config file do): channels and subscriptions swap; a
 * section that needs a restart is named in a log line; subscriptions whose categories would take
 * the running polls over the request budget are refused as a start would refuse them, and
 * nothing changes. The daemon is not started: reload is checked on its own, against real Redis.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { App, BudgetError, planOf } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import type { Config } from '../src/config/schema.js';
import { captureLog } from './helpers/log.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';

const SECRET = `whsec_${Buffer.from('reload-test-signing-key!!').toString('base64')}`;
let tr: TestRedis | undefined;
let app: App | undefined;

afterEach(async () => {
  await app?.stop();
  app = undefined;
  await tr?.cleanup();
  tr = undefined;
});

function configOf(prefix: string, extra: { rules?: object; categories?: string[] } = {}): Config {
  return parseConfig(
    stringify({
      upstream: { baseUrl: 'http://127.0.0.1:9', requestsPerMinute: 30 },
      redis: { url: REDIS_URL, prefix },
      poll: { status: '10s', incidents: '10s' },
      ...(extra.rules === undefined ? {} : { rules: extra.rules }),
      channels: { hook: { type: 'webhook', url: 'http://127.0.0.1:9/hook', secret: SECRET } },
      subscriptions: [
        {
          name: 'ops',
          services: ['stripe'],
          categories: extra.categories ?? [],
          channels: ['hook'],
        },
      ],
    }),
    {},
  );
}

describe('reload', () => {
  it('names rules among the sections that need a restart', async () => {
    tr = await testRedis('reload');
    const { log, lines } = captureLog('info');
    app = new App(configOf(tr.prefix), { log, server: false });
    app.reload(configOf(tr.prefix, { rules: { scoreDrop: 9 } }));
    expect(lines.filter((l) => l.event === 'config:reloaded')).toHaveLength(1);
    const restart = lines.filter((l) => l.event === 'config:restart_needed');
    expect(restart.map((l) => l.sections)).toEqual([['rules']]);
  });

  it('refuses subscriptions whose categories take the polls over the budget, changing nothing', async () => {
    tr = await testRedis('reload');
    const prefix = tr.prefix;
    const { log, lines } = captureLog('info');
    app = new App(configOf(prefix), { log, server: false });
    // The fewest categories that no longer fit in 30 requests a minute with these polls.
    const over = Array.from({ length: 1000 }, (_, i) => `cat-${String(i)}`);
    const count = over.findIndex(
      (_, i) => !planOf(configOf(prefix, { categories: over.slice(0, i + 1) })).ok,
    );
    expect(count).toBeGreaterThan(0);
    const fits = configOf(prefix, { categories: over.slice(0, count) });
    const tooMany = configOf(prefix, { categories: over.slice(0, count + 1) });

    expect(() => app?.reload(tooMany)).toThrow(BudgetError);
    expect(lines.filter((l) => l.event === 'config:reloaded')).toEqual([]);
    app.reload(fits);
    expect(lines.filter((l) => l.event === 'config:reloaded')).toHaveLength(1);
  });
});
