/**
 * Contract (secrets never leave: README.md, "What it does"): every log line is scrubbed of every
 * secret the daemon holds, by value. The list grows while it runs: a channel stored through the
 * API and a reloaded config bring secrets that the config file the logger was made with did not
 * hold. Lines are checked as the logger wrote them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { App } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { addLogSecrets, createLogger, silentLogger } from '../src/log.js';
import { newKey } from '../src/api/crypto.js';
import type { Actor } from '../src/api/tokens.js';
import { captureLog } from './helpers/log.js';
import { REDIS_URL, testRedis, type TestRedis } from './helpers/redis.js';
import { LOOPBACK_RECEIVERS } from './helpers/egress.js';

const ADMIN_TOKEN = 'adm_logsecrets_ADMINTOKEN_0123456789';

function lines(): { text: string[]; log: ReturnType<typeof createLogger> } {
  const text: string[] = [];
  const log = createLogger({ level: 'info', destination: { write: (l: string) => text.push(l) } });
  return { text, log };
}

describe('log secrets added while running', () => {
  it('scrubs a secret from the lines written after it was added, through children too', () => {
    const { text, log } = lines();
    const child = log.child({ component: 'x' });
    log.info({ err: 'POST https://hooks.example/T0-sekrit-path failed' }, 'first');
    expect(addLogSecrets(child, ['T0-sekrit-path', 'abc'])).toBe(true);
    log.info({ err: 'POST https://hooks.example/T0-sekrit-path failed' }, 'second');
    child.warn('again T0-sekrit-path and abc');
    expect(text[0]).toContain('T0-sekrit-path');
    expect(text[1]).not.toContain('T0-sekrit-path');
    expect(text[1]).toContain('https://hooks.example/[REDACTED] failed');
    expect(text[2]).toContain('again [REDACTED] and abc'); // under 4 characters: not a secret
  });

  it('says so when the logger is not one it can scrub', () => {
    expect(addLogSecrets(silentLogger(), ['T0-sekrit-path'])).toBe(false);
  });
});

describe('the daemon adds the secrets it learns', () => {
  let tr: TestRedis | undefined;
  let app: App | undefined;
  const savedKey = process.env.STATUSWATCH_SECRET_KEY;

  afterEach(async () => {
    await app?.stop();
    await tr?.cleanup();
    if (savedKey === undefined) delete process.env.STATUSWATCH_SECRET_KEY;
    else process.env.STATUSWATCH_SECRET_KEY = savedKey;
  });

  it('scrubs a stored channel secret and a reloaded config secret from its lines', async () => {
    tr = await testRedis('logsec');
    process.env.STATUSWATCH_SECRET_KEY = newKey();
    const configOf = (channels: Record<string, unknown>) =>
      parseConfig(
        stringify({
          upstream: { baseUrl: 'http://127.0.0.1:9', requestsPerMinute: 600 },
          redis: { url: REDIS_URL, prefix: tr?.prefix },
          poll: { status: '1m', incidents: '1m' },
          server: {
            port: 0,
            host: '127.0.0.1',
            adminToken: ADMIN_TOKEN,
            egress: LOOPBACK_RECEIVERS,
          },
          channels,
          subscriptions: [],
        }),
        {},
      );
    const { log, lines: written } = captureLog('info');
    app = new App(configOf({}), { log, server: false });
    const stored = 'https://hooks.example/services/STORED-Path-Token-91';
    const team: Actor = { tokenId: 'test', team: 'payments', admin: false, address: 'test' };
    await app.api.store.putChannel(
      team,
      {
        name: 'pay-hook',
        type: 'webhook',
        url: stored,
        secret: `whsec_${Buffer.from('stored-channel-signing-key!!').toString('base64')}`,
      },
      'create',
    );
    await app.api.runtime.refresh();
    const reloaded = 'https://hooks.example/services/RELOADED-Path-Token-42';
    app.reload(configOf({ ops: { type: 'slack', webhookUrl: reloaded } }));

    // Whatever way a value reaches a line (a message, a nested field), it arrives scrubbed.
    log.warn({ detail: { target: stored } }, `could not reach ${reloaded}`);
    const last = JSON.stringify(written.at(-1));
    expect(last).toContain('could not reach ');
    expect(last).toContain('[REDACTED]');
    expect(last).not.toContain('STORED-Path-Token-91');
    expect(last).not.toContain('RELOADED-Path-Token-42');
    expect(written.some((l) => l.event === 'config:reloaded')).toBe(true);
  });
});
