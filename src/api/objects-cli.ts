/**
 * `statuswatch subscription | channel  list | get NAME | apply -f FILE | delete NAME`, over the
 * API (client.ts). `apply` reads YAML (or JSON) like `kubectl apply`: one object per document, a
 * list of objects, or the config file's own form (`subscriptions: [...]`, `channels: {name: …}`),
 * and PUTs each object (created or replaced; secrets sent as "<set>" are kept).
 */
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { parseAllDocuments, stringify } from 'yaml';
import { isPlainObject } from '../config/env.js';
import type { Config } from '../config/schema.js';
import {
  ApiCommandError,
  EXIT_INVALID,
  printable,
  resolveApiTarget,
  table,
  withApi,
  type ApiClient,
  type CommandIo,
  type TargetFlags,
} from './client.js';

export type ObjectKind = 'subscription' | 'channel';

type Obj = Record<string, unknown>;

const plural = (kind: ObjectKind): string => `${kind}s`;

/** The objects of an `apply` file, each with its name. */
export function objectsOf(kind: ObjectKind, text: string): Obj[] {
  const docs = parseAllDocuments(text);
  const out: Obj[] = [];
  const add = (value: unknown, where: string): void => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        add(item, `${where}[${i}]`);
      });
      return;
    }
    if (!isPlainObject(value)) {
      throw new ApiCommandError(
        'apply_invalid',
        `${where}: expected a ${kind} (a map)`,
        EXIT_INVALID,
      );
    }
    if (kind === 'subscription' && value.name === undefined && Array.isArray(value.subscriptions)) {
      add(value.subscriptions, `${where}.subscriptions`);
      return;
    }
    if (kind === 'channel' && value.name === undefined) {
      const map = isPlainObject(value.channels) ? value.channels : value;
      const entries = Object.entries(map);
      if (entries.length > 0 && entries.every(([, v]) => isPlainObject(v) && 'type' in v)) {
        for (const [name, v] of entries) out.push({ name, ...(v as Obj) });
        return;
      }
    }
    if (typeof value.name !== 'string' || value.name === '') {
      throw new ApiCommandError('apply_invalid', `${where}: a ${kind} needs a name`, EXIT_INVALID);
    }
    out.push(value);
  };
  docs.forEach((doc, i) => {
    if (doc.errors.length > 0) {
      throw new ApiCommandError(
        'apply_yaml',
        `document ${i + 1}: ${doc.errors[0]?.message ?? 'invalid YAML'}`,
        EXIT_INVALID,
      );
    }
    add(doc.toJS() as unknown, `document ${i + 1}`);
  });
  if (out.length === 0)
    throw new ApiCommandError('apply_empty', `no ${plural(kind)} in the input`, EXIT_INVALID);
  return out;
}

function formatOutput(value: unknown, output: string): string {
  return output === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

function listTable(kind: ObjectKind, items: readonly Obj[]): string {
  const str = (v: unknown): string =>
    typeof v === 'string' ? v : v === null || v === undefined ? '-' : JSON.stringify(v);
  const list = (v: unknown): string => (Array.isArray(v) ? v.map(str).join(',') : str(v));
  if (kind === 'channel') {
    return table([
      ['NAME', 'TYPE', 'TEAM', 'SOURCE'],
      ...items.map((c) => [str(c.name), str(c.type), str(c.team), str(c.source)]),
    ]);
  }
  return table([
    ['NAME', 'TEAM', 'SOURCE', 'CHANNELS', 'SERVICES', 'EVENTS'],
    ...items.map((s) => [
      str(s.name),
      str(s.team),
      str(s.source),
      list(s.channels),
      list([
        ...(Array.isArray(s.services) ? (s.services as unknown[]) : []),
        ...(Array.isArray(s.categories)
          ? (s.categories as unknown[]).map((c) => `category:${str(c)}`)
          : []),
      ]),
      Array.isArray(s.events) ? String(s.events.length) : 'all',
    ]),
  ]);
}

function addTargetOptions(command: Command): Command {
  return command
    .option(
      '--url <url>',
      "statuswatch base URL (default $STATUSWATCH_URL, then the config's server.host and server.port)",
    )
    .option(
      '--token <token>',
      'API token (default $STATUSWATCH_TOKEN, $STATUSWATCH_ADMIN_TOKEN, then server.adminToken; prefer the variable: flags show in ps)',
    )
    .addOption(
      new Option(
        '-c, --config <file>',
        'config file for the defaults (default $STATUSWATCH_CONFIG, then config/statuswatch.yaml)',
      ),
    );
}

const outputOption = (fallback: string) =>
  new Option('-o, --output <format>', 'output format')
    .choices(['table', 'yaml', 'json'])
    .default(fallback);

export interface ObjectCommandExtras {
  (
    group: Command,
    run: (flags: TargetFlags, body: (client: ApiClient) => Promise<void>) => Promise<void>,
    addTarget: (c: Command) => Command,
  ): void;
}

/** Adds `<kind> list | get | apply | delete` (and `extras`) to the program. */
export function registerObjectCommands(
  program: Command,
  kind: ObjectKind,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: CommandIo,
  extras?: ObjectCommandExtras,
): Command {
  const group = program
    .command(kind)
    .description(`manage ${plural(kind)} through the API (list, get, apply -f FILE, delete)`);
  const base = `/api/v1/${plural(kind)}`;
  const run = (flags: TargetFlags, body: (client: ApiClient) => Promise<void>) =>
    withApi(io, () => resolveApiTarget(flags, io.env, loadConfig), body);

  addTargetOptions(
    group
      .command('list')
      .description(`list ${plural(kind)} (yours; admins: all)`)
      .addOption(outputOption('table')),
  ).action(async (o: TargetFlags & { output: string }) => {
    await run(o, async (client) => {
      const items = await client.listAll<Obj>(base, plural(kind));
      if (o.output === 'table')
        io.out(items.length === 0 ? `no ${plural(kind)}\n` : listTable(kind, items));
      else io.out(formatOutput(items, o.output));
    });
  });

  addTargetOptions(
    group
      .command('get')
      .description(`print one ${kind} (YAML; secrets read "<set>")`)
      .argument('<name>')
      .addOption(outputOption('yaml')),
  ).action(async (name: string, o: TargetFlags & { output: string }) => {
    await run(o, async (client) => {
      const { body } = await client.call('GET', `${base}/${encodeURIComponent(name)}`);
      io.out(o.output === 'table' ? listTable(kind, [body]) : formatOutput(body, o.output));
    });
  });

  addTargetOptions(
    group
      .command('apply')
      .description(
        `create or replace ${plural(kind)} from YAML or JSON (one per document, a list, or the config file's form)`,
      )
      .requiredOption('-f, --file <file>', 'file to read ("-" for standard input)'),
  ).action(async (o: TargetFlags & { file: string }) => {
    await run(o, async (client) => {
      let text: string;
      try {
        text = o.file === '-' ? await io.stdin() : await readFile(o.file, 'utf8');
      } catch (caught) {
        throw new ApiCommandError(
          'apply_unreadable',
          `cannot read ${o.file}: ${(caught as Error).message}`,
          EXIT_INVALID,
        );
      }
      let failed: ApiCommandError | null = null;
      for (const obj of objectsOf(kind, text)) {
        const name = String(obj.name);
        try {
          const { status } = await client.call('PUT', `${base}/${encodeURIComponent(name)}`, obj);
          io.out(`${kind}/${printable(name)} ${status === 201 ? 'created' : 'configured'}\n`);
        } catch (caught) {
          if (!(caught instanceof ApiCommandError)) throw caught;
          io.err(`statuswatch: ${kind}/${printable(name)}: ${caught.message}\n`);
          failed = caught;
        }
      }
      if (failed !== null)
        throw new ApiCommandError(
          failed.code,
          `some ${plural(kind)} were not applied`,
          failed.exitCode,
        );
    });
  });

  addTargetOptions(
    group.command('delete').description(`delete a ${kind}`).argument('<name>'),
  ).action(async (name: string, o: TargetFlags) => {
    await run(o, async (client) => {
      const { body } = await client.call('DELETE', `${base}/${encodeURIComponent(name)}`);
      const until =
        typeof body.closingsOwedUntil === 'string'
          ? ` (closings of what it was told are still delivered until ${body.closingsOwedUntil})`
          : '';
      io.out(`${kind}/${printable(name)} deleted${until}\n`);
    });
  });

  extras?.(group, run, addTargetOptions);
  return group;
}

export { addTargetOptions };
