/**
 * The Vitest globalSetup (test/helpers/global-setup.ts, registered in vitest.config.ts): with no
 * Redis at REDIS_URL it starts a private redis-server there and stops it in teardown; with no
 * redis-server either, a run fails at once with one line saying what to install or set.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import setup, { redisAnswers } from './helpers/global-setup.js';
import { REDIS_URL } from './helpers/redis.js';
import { freePort, ROOT } from './helpers/process.js';

/** Runs `setup` (vitest's globalSetup function) with REDIS_URL and PATH set as given. */
async function runSetup(env: { REDIS_URL: string; PATH?: string }): Promise<() => Promise<void>> {
  const saved = { REDIS_URL: process.env.REDIS_URL, PATH: process.env.PATH };
  process.env.REDIS_URL = env.REDIS_URL;
  if (env.PATH !== undefined) process.env.PATH = env.PATH;
  try {
    return await setup();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) Reflect.deleteProperty(process.env, key);
      else process.env[key] = value;
    }
  }
}

/** `vitest run FILTER` as a child process, with `env` on top of a clean copy of the environment. */
function vitest(
  filter: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('VITEST') && key !== 'NODE_OPTIONS' && key !== 'TEST')
      childEnv[key] = value;
  Object.assign(childEnv, env, { NO_COLOR: '1', FORCE_COLOR: '0' });
  const child = spawn(
    process.execPath,
    [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', filter],
    { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
  return new Promise((resolve) => {
    child.once('close', (code) => {
      resolve({ code, output });
    });
  });
}

describe('vitest globalSetup: a Redis for the run', () => {
  it('no Redis at REDIS_URL: starts a private redis-server there; teardown stops it', async () => {
    const port = await freePort();
    expect(await redisAnswers('127.0.0.1', port)).toBe(false);
    const teardown = await runSetup({ REDIS_URL: `redis://127.0.0.1:${port}` });
    let stopped = false;
    try {
      const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1 });
      try {
        expect(await redis.set('global-setup', 'ok')).toBe('OK');
        expect(await redis.get('global-setup')).toBe('ok');
        // No persistence: nothing saved, no append-only file.
        expect(await redis.config('GET', 'save')).toEqual(['save', '']);
        expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
      } finally {
        redis.disconnect();
      }
      await teardown();
      stopped = true;
      expect(await redisAnswers('127.0.0.1', port)).toBe(false);
    } finally {
      if (!stopped) await teardown();
    }
  });

  it('a Redis answers at REDIS_URL: nothing is started, teardown leaves it alone', async () => {
    const emptyBin = await mkdtemp(join(tmpdir(), 'statuswatch-nobin-'));
    try {
      // No redis-server on PATH: it must not be needed when a Redis answers.
      const teardown = await runSetup({ REDIS_URL, PATH: emptyBin });
      await teardown();
      const url = new URL(REDIS_URL);
      expect(await redisAnswers(url.hostname, Number(url.port || 6379))).toBe(true);
    } finally {
      await rm(emptyBin, { recursive: true, force: true });
    }
  });

  it('no Redis and no redis-server: `vitest run` fails at once with one clear line', async () => {
    const port = await freePort();
    const emptyBin = await mkdtemp(join(tmpdir(), 'statuswatch-nobin-'));
    try {
      const started = Date.now();
      const r = await vitest('src/config/duration.test.ts', {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        PATH: emptyBin,
      });
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(r.code, r.output).not.toBe(0);
      const line = `no Redis answers at redis://127.0.0.1:${port} (REDIS_URL) and redis-server is not on PATH: install Redis (apt-get install redis-server, brew install redis) or set REDIS_URL to a running Redis`;
      const lines = r.output.split('\n');
      expect(
        lines.filter((l) => l.includes(line)),
        r.output,
      ).toHaveLength(1);
      expect(r.output).not.toContain('ECONNREFUSED');
      expect(
        lines.filter((l) => /^\s+at /.test(l)),
        'no stack trace',
      ).toEqual([]);
      expect(r.output).not.toMatch(/Tests\s+\d+ (passed|failed)/);
    } finally {
      await rm(emptyBin, { recursive: true, force: true });
    }
  }, 30_000);

  it('no Redis but redis-server on PATH: `vitest run` passes against a private one, stopped after', async () => {
    const port = await freePort();
    const r = await vitest('src/config/duration.test.ts', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
    });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain(`started a private redis-server (pid `);
    expect(r.output).toContain(`on 127.0.0.1:${port} for this run`);
    expect(r.output).toMatch(/Tests\s+\d+ passed/);
    expect(await redisAnswers('127.0.0.1', port)).toBe(false);
  }, 30_000);
});
