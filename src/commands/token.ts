/**
 * `statuswatch token create --team NAME [--admin] [--expires TIME] | list | revoke ID`: API
 * tokens, through the daemon's API with an admin token. `create` prints the new token alone on
 * standard output (it is shown once; only its hash is stored) and what it is on standard error.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { Config } from '../config/schema.js';
import {
  processIo,
  resolveApiTarget,
  table,
  withApi,
  type CommandIo,
  type TargetFlags,
} from '../api/client.js';
import { addTargetOptions } from '../api/objects-cli.js';

interface TokenView {
  id: string;
  team: string;
  admin: boolean;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  state: string;
}

function timeArg(value: string): string {
  if (Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError(
      '--expires expects a time such as 2026-12-31 or 2026-12-31T18:00:00Z',
    );
  }
  return new Date(Date.parse(value)).toISOString();
}

export function registerTokenCommands(
  program: Command,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: CommandIo = processIo,
): Command {
  const group = program
    .command('token')
    .description('manage API tokens (admins): create, list, revoke');
  const run = (flags: TargetFlags, body: Parameters<typeof withApi>[2]) =>
    withApi(io, () => resolveApiTarget(flags, io.env, loadConfig), body);

  addTargetOptions(
    group
      .command('create')
      .description('create a token for a team; it is printed once')
      .requiredOption('--team <name>', 'the team the token acts for')
      .option('--admin', 'an admin token (every team, tokens, /admin/*)')
      .option('--expires <time>', 'expiry time (ISO 8601); default: never', timeArg),
  ).action(async (o: TargetFlags & { team: string; admin?: boolean; expires?: string }) => {
    await run(o, async (client) => {
      const { body } = await client.call<{
        id: string;
        team: string;
        admin: boolean;
        expiresAt: string | null;
        token: string;
      }>('POST', '/api/v1/tokens', {
        team: o.team,
        ...(o.admin === true ? { admin: true } : {}),
        ...(o.expires === undefined ? {} : { expiresAt: o.expires }),
      });
      io.err(
        `${body.admin ? 'admin ' : ''}token ${body.id} created for team ${body.team} (expires ${body.expiresAt ?? 'never'}); store it now, it is not shown again:\n`,
      );
      io.out(`${body.token}\n`);
    });
  });

  addTargetOptions(
    group
      .command('list')
      .description('list tokens (never their text)')
      .option('--json', 'print JSON'),
  ).action(async (o: TargetFlags & { json?: boolean }) => {
    await run(o, async (client) => {
      const body = { tokens: await client.listAll<TokenView>('/api/v1/tokens', 'tokens') };
      if (o.json === true) {
        io.out(`${JSON.stringify(body.tokens, null, 2)}\n`);
        return;
      }
      io.out(
        body.tokens.length === 0
          ? 'no tokens\n'
          : table([
              ['ID', 'TEAM', 'ADMIN', 'STATE', 'CREATED', 'EXPIRES'],
              ...body.tokens.map((t) => [
                t.id,
                t.team,
                t.admin ? 'yes' : 'no',
                t.state,
                t.createdAt,
                t.expiresAt ?? 'never',
              ]),
            ]),
      );
    });
  });

  addTargetOptions(
    group.command('revoke').description('revoke a token at once').argument('<id>'),
  ).action(async (id: string, o: TargetFlags) => {
    await run(o, async (client) => {
      const { body } = await client.call<TokenView>(
        'DELETE',
        `/api/v1/tokens/${encodeURIComponent(id)}`,
      );
      io.out(`token ${body.id} revoked at ${body.revokedAt ?? '?'}\n`);
    });
  });
  return group;
}
