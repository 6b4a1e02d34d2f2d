/**
 * `statuswatch simulate --wording` through the built CLI (`node dist/cli.js`, run `npm run build`
 * first): the flag reaches the simulator, and an invalid value exits 1 like `--variant`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, killAll, runCli, spawnCli } from './helpers/process.js';

afterEach(async () => {
  await killAll();
});

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('statuswatch simulate --wording', () => {
  it('serves the alternate words with --wording alternate (both variants)', async () => {
    const port = await freePort();
    const sim = spawnCli([
      'simulate',
      '--port',
      String(port),
      '--services',
      '2000',
      '--wording',
      'alternate',
      '--no-rate-limit',
    ]);
    await sim.waitForOutput(/at http:\/\/127\.0\.0\.1:\d+\/api\/v1/);
    expect(sim.stdout()).toContain('variant A, 2000 services, alternate wording');
    const api = `http://127.0.0.1:${String(port)}/api/v1`;
    const rows = (await getJson(`${api}/status`))['data'] as Record<string, unknown>[];
    expect(rows).toHaveLength(2000);
    const words = new Set(rows.map((r) => r['displayStatus']));
    expect(words).toContain('operational');
    expect([...words].some((w) => w !== 'operational')).toBe(true);
    for (const w of words) {
      expect([
        'operational',
        'performance_issues',
        'partially_unavailable',
        'unavailable',
        'scheduled_work',
      ]).toContain(w);
    }
    const verification = new Set(rows.map((r) => r['verificationState']));
    expect([...verification].sort()).toEqual(['outdated', 'unconfirmed', 'verified']);
    sim.signal('SIGTERM');
    expect(await sim.waitForExit(5000)).toEqual({ code: 0, signal: null });

    const portB = await freePort();
    const simB = spawnCli([
      'simulate',
      '--port',
      String(portB),
      '--services',
      '2000',
      '--variant',
      'B',
      '--wording',
      'alternate',
    ]);
    await simB.waitForOutput(/at http:\/\/127\.0\.0\.1:\d+\/api\/v1/);
    expect(simB.stdout()).toContain('variant B, 2000 services, alternate wording');
    const bRows = (await getJson(`http://127.0.0.1:${String(portB)}/api/v1/status`))[
      'data'
    ] as Record<string, unknown>[];
    const bStatus = new Set(bRows.map((r) => r['status']));
    expect(bStatus).toContain('up');
    expect(bStatus).toContain('impaired');
    for (const w of bStatus) expect(['up', 'impaired', 'offline', 'scheduled_work']).toContain(w);
    simB.signal('SIGTERM');
    expect(await simB.waitForExit(5000)).toEqual({ code: 0, signal: null });
  });

  it('defaults to the standard wording', async () => {
    const port = await freePort();
    const sim = spawnCli(['simulate', '--port', String(port), '--services', '2000']);
    await sim.waitForOutput(/at http:\/\/127\.0\.0\.1:\d+\/api\/v1/);
    expect(sim.stdout()).toContain('standard wording');
    const rows = (await getJson(`http://127.0.0.1:${String(port)}/api/v1/status`))[
      'data'
    ] as Record<string, unknown>[];
    expect([...new Set(rows.map((r) => r['verificationState']))].sort()).toEqual([
      'stale',
      'unverified',
      'verified',
    ]);
    sim.signal('SIGTERM');
    expect(await sim.waitForExit(5000)).toEqual({ code: 0, signal: null });
  });

  it('exits 1 naming the flag and the choices for an invalid --wording', async () => {
    const r = await runCli(['simulate', '--port', '0', '--wording', 'loud']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      "error: option '--wording <w>' argument 'loud' is invalid. Allowed choices are standard, alternate.",
    );
  });
});
