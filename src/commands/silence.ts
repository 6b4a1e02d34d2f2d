/**
 * `statuswatch silence add | list | expire`: a client of the daemon's `/api/v1/silences` through
 * the one API client (src/api/client.ts). The server comes from `--server` (default: the config's `server.host` and
 * `server.port`, `localDaemonUrl`), the bearer token from `--token`, `$STATUSWATCH_ADMIN_TOKEN`
 * or the config's `server.adminToken`. The token is never printed, not even in errors.
 */
import { userInfo } from 'node:os';
import { printable, resolveDaemonTarget } from './daemon-http.js';
import { ApiClient, ApiCommandError, type ErrorDetail } from '../api/client.js';
import { Command, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { StatuswatchError, toError } from '../errors.js';
import type { Config } from '../config/schema.js';
import { EVENT_KINDS, isEventKind, type EventKind } from '../config/events.js';
import { parseDuration } from '../config/duration.js';
import { silenceSchema, type Silence } from '../silences/model.js';
import type { SilenceState } from '../silences/match.js';

/** Exit codes, as in cli.ts: 0 ok, 1 invalid input (arguments, token, unknown id), 2 failure. */
const EXIT_OK = 0;
const EXIT_INVALID = 1;
const EXIT_FAILURE = 2;

export class SilenceCommandError extends StatuswatchError {
  constructor(
    code: string,
    message: string,
    readonly exitCode: number,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** Where the admin API is and how to authenticate; `tokenSource` names where the token came from. */
export interface AdminTarget {
  baseUrl: string;
  token: string;
  tokenSource: string;
}

/** Output and environment of a command (tests pass their own). */
export interface SilenceIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  /** Called with a non-zero exit code; the default sets `process.exitCode`. */
  exit: (code: number) => void;
}

export const processIo: SilenceIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  exit: (code) => {
    process.exitCode = code;
  },
};

export interface TargetFlags {
  server?: string;
  token?: string;
  config?: string;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** Resolves the server URL and token; the config is loaded only when a flag or variable is missing. */
export function resolveAdminTarget(
  flags: TargetFlags,
  env: SilenceIo['env'],
  loadConfig: (explicit?: string) => Promise<Config>,
): Promise<AdminTarget> {
  return resolveDaemonTarget({
    urls: [flags.server],
    tokens: [
      [flags.token, '--token'],
      [env.STATUSWATCH_ADMIN_TOKEN, '$STATUSWATCH_ADMIN_TOKEN'],
    ],
    loadConfig: () => loadConfig(flags.config),
    invalidUrl: () =>
      new SilenceCommandError(
        'silence_server_invalid',
        '--server must be an http:// or https:// URL',
        EXIT_INVALID,
      ),
    missingToken: () =>
      new SilenceCommandError(
        'admin_token_missing',
        'no admin token: pass --token, set STATUSWATCH_ADMIN_TOKEN, or set server.adminToken in the config',
        EXIT_INVALID,
      ),
  });
}

const silenceViewSchema = silenceSchema.extend({
  state: z.enum(['pending', 'active', 'expired']),
});

/** A silence as the API returns it. */
export type SilenceView = Silence & { state: SilenceState };

/** Where the silences are (`/admin/silences` is its deprecated alias). */
const SILENCES_PATH = '/api/v1/silences';

/** CLI flag for each request field, so 400 issues point at what the user typed. */
const FLAG_OF_PATH: readonly [RegExp, string][] = [
  [/^matchers\.services/, '--service'],
  [/^matchers\.events/, '--event'],
  [/^matchers\.subscriptions/, '--subscription'],
  [/^matchers\.channels/, '--channel'],
  [/^matchers/, '--service/--event/--subscription/--channel'],
  [/^startsAt/, '--start'],
  [/^endsAt/, '--until'],
  [/^duration/, '--duration'],
  [/^author/, '--author'],
  [/^comment/, '--comment'],
];

function describeIssue(issue: { path: string; message: string }): string {
  const flag = FLAG_OF_PATH.find(([pattern]) => pattern.test(issue.path))?.[1];
  return flag === undefined
    ? `  ${issue.path}: ${issue.message}`
    : `  ${flag} (${issue.path}): ${issue.message}`;
}

/** Every field issue of an error answer: its list, else the one field's. */
function issuesOf(e: ErrorDetail | null): { path: string; message: string }[] {
  if (e === null) return [];
  if (e.issues !== undefined && e.issues.length > 0)
    return e.issues.map((i) => ({ path: i.field, message: i.message }));
  if (typeof e.field !== 'string' || typeof e.message !== 'string') return [];
  const prefix = `${e.field}: `;
  const message = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  return [{ path: e.field, message }];
}

/** The silences client: the one API client against `/api/v1/silences`, with this command's errors. */
export class SilenceClient {
  private readonly api: ApiClient;

  constructor(private readonly target: AdminTarget) {
    this.api = new ApiClient(target, { urlFlag: '--server' });
  }

  async create(body: Record<string, unknown>): Promise<SilenceView> {
    const res = await this.call(() => this.api.call('POST', SILENCES_PATH, body));
    return this.parse(res, silenceViewSchema);
  }

  /** Every page of the list (`next` followed as `cursor`). */
  async list(all: boolean): Promise<SilenceView[]> {
    const path = all ? `${SILENCES_PATH}?all=1` : SILENCES_PATH;
    const items = await this.call(() => this.api.listAll<unknown>(path, 'silences'));
    return this.parse({ status: 200, body: items }, z.array(silenceViewSchema));
  }

  async expire(id: string): Promise<SilenceView> {
    const res = await this.call(() =>
      this.api.call('POST', `${SILENCES_PATH}/${encodeURIComponent(id)}/expire`),
    );
    return this.parse(res, silenceViewSchema);
  }

  async close(): Promise<void> {
    await this.api.close();
  }

  private parse<T>(res: { status: number; body: unknown }, schema: z.ZodType<T>): T {
    const result = schema.safeParse(res.body);
    if (!result.success) {
      throw new SilenceCommandError(
        'admin_response_invalid',
        `unexpected response from ${this.target.baseUrl} (HTTP ${res.status}); is it a statuswatch of the same version?`,
        EXIT_FAILURE,
      );
    }
    return result.data;
  }

  /** Runs a request; the API client's errors become this command's (same words as ever). */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (caught) {
      if (!(caught instanceof ApiCommandError)) throw caught;
      throw this.failure(caught);
    }
  }

  private failure(caught: ApiCommandError): SilenceCommandError {
    const { status } = caught;
    if (status === null) {
      return new SilenceCommandError('admin_unreachable', caught.message, EXIT_FAILURE, {
        cause: caught.cause ?? caught,
      });
    }
    if (status === 401) {
      return new SilenceCommandError(
        'admin_unauthorized',
        `the server refused the admin token from ${this.target.tokenSource} (HTTP 401)`,
        EXIT_INVALID,
      );
    }
    const issues = caught.error?.code === 'invalid' ? issuesOf(caught.error) : [];
    if (status === 400 && issues.length > 0) {
      return new SilenceCommandError(
        'silence_invalid',
        `the server rejected the silence:\n${issues.map(describeIssue).join('\n')}`,
        EXIT_INVALID,
      );
    }
    const detail = caught.error?.message ?? 'no details';
    return new SilenceCommandError(
      status === 404 ? 'admin_not_found' : 'admin_failed',
      `HTTP ${status} from ${this.target.baseUrl}: ${detail}`,
      status >= 500 ? EXIT_FAILURE : EXIT_INVALID,
    );
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function describeMatchers(m: Silence['matchers']): string {
  const parts: string[] = [];
  const add = (label: string, values: readonly string[] | undefined): void => {
    if (values !== undefined) parts.push(`${label}=${values.join(',')}`);
  };
  add('service', m.services);
  add('event', m.events);
  add('subscription', m.subscriptions);
  add('channel', m.channels);
  return printable(parts.join(' '));
}

const COMMENT_WIDTH = 60;

/** The `silence list` table (header + one line a silence, columns padded). */
export function formatSilenceTable(list: readonly SilenceView[]): string {
  const rows = [
    ['ID', 'STATE', 'STARTS', 'ENDS', 'MATCHERS', 'AUTHOR', 'COMMENT'],
    ...list.map((s) => [
      s.id,
      s.state,
      formatTime(s.startsAt),
      formatTime(s.endsAt),
      describeMatchers(s.matchers),
      printable(s.author),
      truncate(printable(s.comment), COMMENT_WIDTH),
    ]),
  ];
  const widths = rows[0]?.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths?.[col] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

export interface AddOptions {
  service?: string[];
  event?: EventKind[];
  subscription?: string[];
  channel?: string[];
  duration?: string;
  until?: number;
  start?: number;
  author?: string;
  comment?: string;
  json?: boolean;
}

async function withClient<T>(
  target: AdminTarget,
  run: (client: SilenceClient) => Promise<T>,
): Promise<T> {
  const client = new SilenceClient(target);
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}

/** Runs a command body; a `SilenceCommandError` becomes a message on stderr and an exit code. */
async function guarded(io: SilenceIo, run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return EXIT_OK;
  } catch (caught) {
    if (!(caught instanceof SilenceCommandError)) throw caught;
    io.err(`statuswatch: ${caught.message}\n`);
    return caught.exitCode;
  }
}

function defaultAuthor(env: SilenceIo['env']): string | undefined {
  try {
    return nonEmpty(userInfo().username) ?? nonEmpty(env.USER);
  } catch {
    return nonEmpty(env.USER);
  }
}

/** The create request `silence add` sends for its options. */
export function addRequest(o: AddOptions, env: SilenceIo['env']): Record<string, unknown> {
  const matchers: Record<string, string[]> = {};
  if (o.service !== undefined) matchers.services = o.service;
  if (o.event !== undefined) matchers.events = o.event;
  if (o.subscription !== undefined) matchers.subscriptions = o.subscription;
  if (o.channel !== undefined) matchers.channels = o.channel;
  if (Object.keys(matchers).length === 0) {
    throw new SilenceCommandError(
      'silence_matchers_missing',
      'give at least one of --service, --event, --subscription, --channel (a silence without matchers would silence everything)',
      EXIT_INVALID,
    );
  }
  if (o.duration === undefined && o.until === undefined) {
    throw new SilenceCommandError(
      'silence_end_missing',
      'give --duration (such as 2h) or --until TIME',
      EXIT_INVALID,
    );
  }
  const author = nonEmpty(o.author?.trim()) ?? defaultAuthor(env);
  if (author === undefined) {
    throw new SilenceCommandError('silence_author_missing', 'give --author NAME', EXIT_INVALID);
  }
  return {
    matchers,
    author,
    comment: o.comment ?? '',
    ...(o.start === undefined ? {} : { startsAt: o.start }),
    ...(o.until === undefined ? {} : { endsAt: o.until }),
    ...(o.duration === undefined ? {} : { duration: o.duration }),
  };
}

/** `silence add`: creates a silence and prints its id, window and matchers. */
export async function silenceAdd(
  target: AdminTarget,
  o: AddOptions,
  io: SilenceIo,
): Promise<number> {
  return guarded(io, async () => {
    const body = addRequest(o, io.env);
    const created = await withClient(target, (client) => client.create(body));
    if (o.json === true) {
      io.out(`${JSON.stringify(created, null, 2)}\n`);
      return;
    }
    io.out(
      `silence ${created.id} created (${created.state}): ${formatTime(created.startsAt)} → ${formatTime(created.endsAt)}, ${describeMatchers(created.matchers)}\n`,
    );
  });
}

/** `silence list`: a table of active and pending silences (`all`: expired ones too). */
export async function silenceList(
  target: AdminTarget,
  o: { all?: boolean; json?: boolean },
  io: SilenceIo,
): Promise<number> {
  return guarded(io, async () => {
    const list = await withClient(target, (client) => client.list(o.all === true));
    if (o.json === true) {
      io.out(`${JSON.stringify(list, null, 2)}\n`);
      return;
    }
    if (list.length === 0) {
      io.out(
        o.all === true
          ? 'no silences\n'
          : 'no active or pending silences (--all includes expired ones)\n',
      );
      return;
    }
    io.out(formatSilenceTable(list));
  });
}

/** `silence expire ID`: ends a silence now. */
export async function silenceExpire(
  target: AdminTarget,
  id: string,
  io: SilenceIo,
): Promise<number> {
  return guarded(io, async () => {
    const expired = await withClient(target, (client) => client.expire(id));
    io.out(`silence ${expired.id} expired at ${formatTime(expired.endsAt)}\n`);
  });
}

function listOf(label: string, check?: (value: string) => void) {
  return (value: string, previous: string[] | undefined): string[] => {
    const parts = value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
    if (parts.length === 0) throw new InvalidArgumentError(`${label} needs a value`);
    for (const part of parts) check?.(part);
    return [...(previous ?? []), ...parts];
  };
}

function timeArg(flag: string) {
  return (value: string): number => {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) {
      throw new InvalidArgumentError(
        `${flag} expects an ISO 8601 time such as 2026-05-01T18:00:00Z (without a zone it is local time)`,
      );
    }
    return ms;
  };
}

function durationArg(value: string): string {
  try {
    parseDuration(value);
  } catch (caught) {
    throw new InvalidArgumentError(toError(caught).message);
  }
  return value;
}

function addTargetOptions(command: Command): Command {
  return command
    .option(
      '--server <url>',
      "statuswatch base URL (default: the config's server.host and server.port)",
    )
    .option(
      '--token <token>',
      'admin token (default $STATUSWATCH_ADMIN_TOKEN, then server.adminToken; prefer the variable: flags show in ps)',
    )
    .addOption(
      new Option(
        '-c, --config <file>',
        'config file for the defaults (default $STATUSWATCH_CONFIG, then config/statuswatch.yaml)',
      ),
    );
}

/**
 * Adds `silence add | list | expire` to the program. `loadConfig` is called only when
 * `--server` or the token is not given otherwise.
 */
export function registerSilenceCommands(
  program: Command,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: SilenceIo = processIo,
): Command {
  const silence = program
    .command('silence')
    .description('manage ad-hoc silences through the admin API (add, list, expire)');

  const run = async (flags: TargetFlags, body: (target: AdminTarget) => Promise<number>) => {
    let code: number;
    try {
      code = await body(await resolveAdminTarget(flags, io.env, loadConfig));
    } catch (caught) {
      if (!(caught instanceof SilenceCommandError)) throw caught;
      io.err(`statuswatch: ${caught.message}\n`);
      code = caught.exitCode;
    }
    if (code !== EXIT_OK) io.exit(code);
  };

  const kinds = `one of: ${EVENT_KINDS.join(', ')}`;
  addTargetOptions(
    silence
      .command('add')
      .description(
        'silence matching notifications for a while; each matcher takes several values (repeat it or separate by commas), an absent one matches anything',
      )
      .option('--service <feedId>', 'service feedId(s)', listOf('--service'))
      .option(
        '--event <kind>',
        `event kind(s), ${kinds}`,
        listOf('--event', (value) => {
          if (!isEventKind(value)) {
            throw new InvalidArgumentError(`unknown event kind "${value}"; expected ${kinds}`);
          }
        }),
      )
      .option('--subscription <name>', 'subscription name(s)', listOf('--subscription'))
      .option('--channel <name>', 'channel name(s)', listOf('--channel'))
      .addOption(
        new Option('--duration <duration>', 'how long, from the start (30m, 2h, 1d)')
          .argParser(durationArg)
          .conflicts('until'),
      )
      .addOption(new Option('--until <time>', 'end time (ISO 8601)').argParser(timeArg('--until')))
      .addOption(
        new Option('--start <time>', 'start time (ISO 8601; default now)').argParser(
          timeArg('--start'),
        ),
      )
      .option('--author <name>', 'who is silencing (default: the OS user)')
      .option('--comment <text>', 'why (at most 1000 characters)')
      .option('--json', 'print the created silence as JSON'),
  ).action(async (o: AddOptions & TargetFlags) => {
    await run(o, (target) => silenceAdd(target, o, io));
  });

  addTargetOptions(
    silence
      .command('list')
      .description('list active and pending silences')
      .option('--all', 'include expired silences (kept 7 days)')
      .option('--json', 'print JSON instead of a table'),
  ).action(async (o: { all?: boolean; json?: boolean } & TargetFlags) => {
    await run(o, (target) => silenceList(target, o, io));
  });

  addTargetOptions(
    silence.command('expire').description('end a silence now').argument('<id>', 'silence id'),
  ).action(async (id: string, o: TargetFlags) => {
    await run(o, (target) => silenceExpire(target, id, io));
  });

  return silence;
}
