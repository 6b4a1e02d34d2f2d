/**
 * `statuswatch secrets rotate | keygen`: the encryption key of the channel secrets stored through
 * the API (STATUSWATCH_SECRET_KEY, src/api/crypto.ts).
 *
 * Rotation: give every replica the new key as STATUSWATCH_SECRET_KEY and the old one in
 * STATUSWATCH_SECRET_KEY_PREVIOUS (comma-separated), restart them, then `secrets rotate`
 * re-encrypts every stored secret under the new key (through the API, with an admin token; or,
 * with `--offline`, directly in Redis with the keys from this environment), after which the old
 * key can be dropped.
 */
import type { Command } from 'commander';
import type { Config } from '../config/schema.js';
import { createKeys, createRedis } from '../redis.js';
import { SecretBox, SECRET_KEY_ENV, newKey } from '../api/crypto.js';
import { ApiStore } from '../api/store.js';
import { CONFIG_ADMIN_TOKEN_ID } from '../api/tokens.js';
import {
  ApiCommandError,
  EXIT_INVALID,
  processIo,
  resolveApiTarget,
  withApi,
  type CommandIo,
  type TargetFlags,
} from '../api/client.js';
import { addTargetOptions } from '../api/objects-cli.js';

interface RotateResult {
  keyId: string;
  rotated: number;
  current: number;
  unreadable: string[];
}

function report(io: CommandIo, r: RotateResult): void {
  io.out(`re-encrypted ${r.rotated} channel(s) under key ${r.keyId}; ${r.current} already were\n`);
  if (r.unreadable.length > 0) {
    io.err(
      `statuswatch: ${r.unreadable.length} channel(s) have secrets under no known key (${r.unreadable.join(', ')}); add their key to STATUSWATCH_SECRET_KEY_PREVIOUS and rotate again\n`,
    );
    io.exit(EXIT_INVALID);
  }
}

/** Rotation straight in Redis, with the keys of this environment (no daemon needed). */
async function rotateOffline(config: Config, io: CommandIo): Promise<void> {
  const box = SecretBox.fromEnv(io.env);
  if (box === null)
    throw new ApiCommandError(
      'secret_key_missing',
      `set ${SECRET_KEY_ENV} (the new key) and STATUSWATCH_SECRET_KEY_PREVIOUS (the old ones)`,
      EXIT_INVALID,
    );
  const redis = createRedis(config.redis, { connectionName: 'statuswatch-secrets-rotate' });
  const store = new ApiStore({
    redis,
    keys: createKeys(config.redis.prefix),
    box,
    config: () => config,
  });
  try {
    report(
      io,
      await store.rotateSecrets({
        tokenId: CONFIG_ADMIN_TOKEN_ID,
        team: null,
        admin: true,
        address: 'cli',
      }),
    );
  } finally {
    await store.close();
    await redis.quit().catch(() => undefined);
  }
}

export function registerSecretsCommands(
  program: Command,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: CommandIo = processIo,
): Command {
  const group = program
    .command('secrets')
    .description('the key that encrypts stored channel secrets (rotate, keygen)');

  addTargetOptions(
    group
      .command('rotate')
      .description(
        're-encrypt every stored channel secret under the current STATUSWATCH_SECRET_KEY',
      )
      .option(
        '--offline',
        "rotate directly in Redis (the config's redis) with STATUSWATCH_SECRET_KEY and STATUSWATCH_SECRET_KEY_PREVIOUS of this environment",
      ),
  ).action(async (o: TargetFlags & { offline?: boolean }) => {
    if (o.offline === true) {
      try {
        await rotateOffline(await loadConfig(o.config), io);
      } catch (caught) {
        if (!(caught instanceof ApiCommandError)) throw caught;
        io.err(`statuswatch: ${caught.message}\n`);
        io.exit(caught.exitCode);
      }
      return;
    }
    await withApi(
      io,
      () => resolveApiTarget(o, io.env, loadConfig),
      async (client) => {
        const { body } = await client.call<RotateResult>('POST', '/api/v1/secrets/rotate');
        report(io, body);
      },
    );
  });

  group
    .command('keygen')
    .description('print a new random key for STATUSWATCH_SECRET_KEY (32 bytes, base64)')
    .action(() => {
      io.out(`${newKey()}\n`);
    });
  return group;
}
