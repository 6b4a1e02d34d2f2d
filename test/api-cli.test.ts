/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * `statuswatch token | channel | subscription | secrets` (the built CLI, as child processes)
 * against a real daemon: tokens created and revoked, objects applied from YAML (the config
 * file's form too) and read back, field errors, key rotation (through the API and offline) and a
 * daemon without a key refusing to store secrets.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { keyIdOf, newKey } from '../src/api/crypto.js';
import { killAll, runCli, startDaemon, writeConfig, type Daemon } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';
import {
  ADMIN_TOKEN,
  baseConfig,
  client,
  dumpPrefix,
  receiver,
  secretForms,
  webhookSecret,
  world,
  type World,
} from './api-helpers.js';

const K1 = newKey();
const K2 = newKey();
const K3 = newKey();
const SECRET = webhookSecret('ops');
const PATH = '/hooks/OPS-PATHTOKEN-1a2b';

let w: World | undefined;

afterAll(async () => {
  await killAll();
  for (const c of (w?.cleanups ?? []).splice(0).reverse()) await c().catch(() => undefined);
});

const kids = (dump: string): string[] => [
  ...new Set([...dump.matchAll(/swenc1\.([0-9a-f]{12})\./g)].map((m) => m[1] ?? '')),
];

describe('statuswatch token | channel | subscription | secrets', () => {
  it('manages tokens and objects through the API, rotates the key, and refuses secrets without one', async () => {
    w = await world('api-c');
    const hook = await receiver({ [PATH]: SECRET });
    w.cleanups.push(() => hook.close());
    const file = await writeConfig(w.dir, baseConfig(w));
    const stop = async (d: Daemon) => {
      d.proc.signal('SIGTERM');
      await d.proc.waitForExit(15_000);
    };
    let d = await startDaemon(file, { STATUSWATCH_SECRET_KEY: K1 });
    const asAdmin = () => ({ STATUSWATCH_URL: d.url, STATUSWATCH_ADMIN_TOKEN: ADMIN_TOKEN });

    // A team token, printed once on stdout.
    const created = await runCli(
      ['token', 'create', '--team', 'ops', '--expires', '2099-01-01'],
      asAdmin(),
    );
    expect(created.code, created.stderr).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^swt_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(
      /token [0-9a-f]{16} created for team ops \(expires 2099-01-01T00:00:00.000Z\)/,
    );
    const asTeam = () => ({ STATUSWATCH_URL: d.url, STATUSWATCH_TOKEN: token });

    // Channels in the config file's form; subscriptions as two documents.
    const channels = join(w.dir, 'channels.yaml');
    await writeFile(
      channels,
      stringify({
        channels: { 'ops-hook': { type: 'webhook', url: `${hook.base}${PATH}`, secret: SECRET } },
      }),
    );
    const applied = await runCli(['channel', 'apply', '-f', channels], asTeam());
    expect(applied.stdout, applied.stderr).toBe('channel/ops-hook created\n');
    const subs = join(w.dir, 'subs.yaml');
    await writeFile(
      subs,
      `${stringify({ name: 'ops-sub', services: ['stripe', 'github'], channels: ['ops-hook'], group: '2m' })}---\n${stringify({ name: 'ops-all', categories: [], services: ['*'], events: ['incident.opened'], channels: ['ops-hook'] })}`,
    );
    const appliedSubs = await runCli(['subscription', 'apply', '-f', subs], asTeam());
    expect(appliedSubs.stdout, appliedSubs.stderr).toBe(
      'subscription/ops-sub created\nsubscription/ops-all created\n',
    );
    const again = await runCli(['subscription', 'apply', '-f', subs], asTeam());
    expect(again.stdout).toBe('subscription/ops-sub configured\nsubscription/ops-all configured\n');

    const list = await runCli(['subscription', 'list'], asTeam());
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(
      /^NAME\s+TEAM\s+SOURCE\s+CHANNELS\s+SERVICES\s+EVENTS$/,
    );
    expect(list.stdout).toMatch(/ops-all\s+ops\s+api\s+ops-hook\s+\*\s+1/);
    const got = await runCli(['subscription', 'get', 'ops-sub', '-o', 'json'], asTeam());
    expect(JSON.parse(got.stdout)).toMatchObject({
      name: 'ops-sub',
      group: '2m',
      team: 'ops',
      source: 'api',
    });

    // `get` output applies back as it is: "<set>" keeps the secret (the test is still signed).
    const chan = await runCli(['channel', 'get', 'ops-hook'], asTeam());
    expect(chan.stdout).toContain('url: <set>');
    expect(chan.stdout).toContain('secret: <set>');
    const roundTrip = join(w.dir, 'roundtrip.yaml');
    await writeFile(roundTrip, chan.stdout);
    expect((await runCli(['channel', 'apply', '-f', roundTrip], asTeam())).stdout).toBe(
      'channel/ops-hook configured\n',
    );
    const tested = await runCli(['channel', 'test', 'ops-hook'], asTeam());
    expect(tested.code, tested.stderr).toBe(0);
    expect(await waitFor(() => hook.of(PATH)[0])).toMatchObject({ verified: true });
    const preview = await runCli(
      ['channel', 'preview', 'ops-hook', '--event', 'incident.resolved'],
      asTeam(),
    );
    expect(preview.stdout).toContain('incident.resolved');

    // A field error: exit 1, the field named, nothing stored.
    const bad = join(w.dir, 'bad.yaml');
    await writeFile(
      bad,
      stringify({
        name: 'ops-bad',
        services: ['*'],
        channels: ['ops-hook'],
        events: ['incident.opend'],
      }),
    );
    const rejected = await runCli(['subscription', 'apply', '-f', bad], asTeam());
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toContain(
      'subscription/ops-bad: HTTP 400: events[0]: unknown event kind',
    );
    expect((await runCli(['subscription', 'get', 'ops-bad'], asTeam())).code).toBe(1);

    const deleted = await runCli(['subscription', 'delete', 'ops-all'], asTeam());
    expect(deleted.stdout).toMatch(
      /^subscription\/ops-all deleted \(closings of what it was told are still delivered until /,
    );

    // Token list and revoke (admins); a team token cannot list tokens.
    const tokens = await runCli(['token', 'list'], asAdmin());
    expect(tokens.stdout).toMatch(/ops\s+no\s+active/);
    expect((await runCli(['token', 'list'], asTeam())).stderr).toContain('HTTP 403');
    const id = token.split('_')[1] ?? '';

    // Rotation through the API: every replica gets the new key and the old one as previous.
    await stop(d);
    d = await startDaemon(file, {
      STATUSWATCH_SECRET_KEY: K2,
      STATUSWATCH_SECRET_KEY_PREVIOUS: K1,
    });
    expect(kids(await dumpPrefix(w.tr.redis, w.tr.prefix))).toEqual([
      keyIdOf(Buffer.from(K1, 'base64')),
    ]);
    const rotated = await runCli(['secrets', 'rotate'], asAdmin());
    expect(rotated.stdout, rotated.stderr).toBe(
      `re-encrypted 1 channel(s) under key ${keyIdOf(Buffer.from(K2, 'base64'))}; 0 already were\n`,
    );
    expect(kids(await dumpPrefix(w.tr.redis, w.tr.prefix))).toEqual([
      keyIdOf(Buffer.from(K2, 'base64')),
    ]);
    await stop(d);

    // And offline, straight in Redis (no daemon), K2 → K3.
    const offline = await runCli(['secrets', 'rotate', '--offline', '--config', file], {
      STATUSWATCH_SECRET_KEY: K3,
      STATUSWATCH_SECRET_KEY_PREVIOUS: K2,
    });
    expect(offline.stdout, offline.stderr).toContain('re-encrypted 1 channel(s)');
    expect(kids(await dumpPrefix(w.tr.redis, w.tr.prefix))).toEqual([
      keyIdOf(Buffer.from(K3, 'base64')),
    ]);

    // The new key alone opens them: the channel still sends, signed.
    d = await startDaemon(file, { STATUSWATCH_SECRET_KEY: K3 });
    expect((await runCli(['channel', 'test', 'ops-hook'], asTeam())).code).toBe(0);
    await waitFor(() => hook.of(PATH).length >= 2);
    expect(hook.hits.every((h) => h.verified)).toBe(true);

    const revoked = await runCli(['token', 'revoke', id], asAdmin());
    expect(revoked.stdout).toMatch(new RegExp(`^token ${id} revoked at `));
    const refused = await runCli(['subscription', 'list'], asTeam());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('refused the token from $STATUSWATCH_TOKEN (HTTP 401');
    await stop(d);

    // Without a key: secrets are refused, said so, nothing stored; the stored channel is skipped.
    d = await startDaemon(file, {});
    const noKey = await client(d.url, ADMIN_TOKEN)('POST', '/api/v1/channels', {
      name: 'ops-other',
      team: 'ops',
      type: 'webhook',
      url: `${hook.base}/other`,
      secret: SECRET,
    });
    expect(noKey.status).toBe(503);
    expect(noKey.body.error).toMatchObject({ code: 'secret_key_missing', field: 'url' });
    expect(noKey.body.error.message).toContain('STATUSWATCH_SECRET_KEY');
    expect((await client(d.url, ADMIN_TOKEN)('GET', '/api/v1/channels/ops-other')).status).toBe(
      404,
    );
    await waitFor(() => d.proc.output().includes('"event":"api:secret_unreadable"'));

    const dump = await dumpPrefix(w.tr.redis, w.tr.prefix);
    for (const s of [...secretForms(SECRET), PATH, token, K1, K2, K3])
      expect(dump.includes(s)).toBe(false);
  }, 120_000);
});
