/**
 * The CLI's client of `/api/v1` (`statuswatch subscription | channel | token | secrets`). The
 * daemon's URL comes from `--url`, `$STATUSWATCH_URL`, else the config's `server.host` and
 * `server.port` (`localDaemonUrl`); the token from `--token`, `$STATUSWATCH_TOKEN`,
 * `$STATUSWATCH_ADMIN_TOKEN`, else the config's `server.adminToken`. The token is never printed, not even in errors.
 */
import { Agent } from 'undici';
import { printable, requestJson, resolveDaemonTarget } from '../commands/daemon-http.js';
import { StatuswatchError, errorCode, toError } from '../errors.js';
import type { Config } from '../config/schema.js';

export const EXIT_OK = 0;
export const EXIT_INVALID = 1;
export const EXIT_FAILURE = 2;

const REQUEST_TIMEOUT_MS = 30_000;

/** The `error` of an answer (`{error: {code, message, field, issues?}}`, src/server/http-error.ts). */
export interface ErrorDetail {
  code?: string;
  message?: string;
  field?: string | null;
  issues?: { field: string; message: string }[];
}

export class ApiCommandError extends StatuswatchError {
  constructor(
    code: string,
    message: string,
    readonly exitCode: number,
    readonly status: number | null = null,
    /** What the server said, when it answered with an error. */
    readonly error: ErrorDetail | null = null,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

export interface ApiTarget {
  baseUrl: string;
  token: string;
  tokenSource: string;
}

export interface TargetFlags {
  url?: string;
  token?: string;
  config?: string;
}

/** Output and environment of a command (tests pass their own). */
export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  /** Called with a non-zero exit code; the default sets `process.exitCode`. */
  exit: (code: number) => void;
  /** Standard input, for `apply -f -`. */
  stdin: () => Promise<string>;
}

export const processIo: CommandIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  exit: (code) => {
    process.exitCode = code;
  },
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

/** Resolves the URL and token; the config is loaded only when something is missing. */
export function resolveApiTarget(
  flags: TargetFlags,
  env: CommandIo['env'],
  loadConfig: (explicit?: string) => Promise<Config>,
): Promise<ApiTarget> {
  return resolveDaemonTarget({
    urls: [flags.url, env.STATUSWATCH_URL],
    tokens: [
      [flags.token, '--token'],
      [env.STATUSWATCH_TOKEN, '$STATUSWATCH_TOKEN'],
      [env.STATUSWATCH_ADMIN_TOKEN, '$STATUSWATCH_ADMIN_TOKEN'],
    ],
    loadConfig: () => loadConfig(flags.config),
    invalidUrl: () =>
      new ApiCommandError(
        'api_url_invalid',
        '--url (or STATUSWATCH_URL) must be an http:// or https:// URL',
        EXIT_INVALID,
      ),
    missingToken: () =>
      new ApiCommandError(
        'api_token_missing',
        'no token: pass --token, set STATUSWATCH_TOKEN, or set server.adminToken in the config',
        EXIT_INVALID,
      ),
  });
}

interface ErrorBody {
  error?: ErrorDetail;
}

export interface ApiClientOptions {
  /** The flag that sets the URL, named when the daemon cannot be reached (default `--url`). */
  urlFlag?: string;
}

export class ApiClient {
  private readonly agent = new Agent({
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
    connectTimeout: REQUEST_TIMEOUT_MS,
  });

  constructor(
    private readonly target: ApiTarget,
    private readonly o: ApiClientOptions = {},
  ) {}

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the answer's shape
  async call<T = Record<string, unknown>>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }> {
    const { status, body: parsed } = await requestJson(
      this.agent,
      this.target,
      method,
      path,
      body,
      (caught) =>
        new ApiCommandError(
          'api_unreachable',
          `cannot reach statuswatch at ${this.target.baseUrl} (${errorCode(caught)}: ${toError(caught).message}); is the daemon running, and is ${this.o.urlFlag ?? '--url'} right?`,
          EXIT_FAILURE,
          null,
          null,
          { cause: caught },
        ),
    );
    if (status >= 200 && status < 300) return { status, body: parsed as T };
    throw this.failure(status, parsed as ErrorBody | undefined);
  }

  /**
   * Every item of a paged list (`{[key]: [...], next}`): follows `next` as `cursor` page after
   * page, at the largest page size. An older server without `next` answers in one page.
   */

  async listAll<T>(path: string, key: string): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100_000; page += 1) {
      const query = new URLSearchParams({ limit: '500' });
      if (cursor !== null) query.set('cursor', cursor);
      const sep = path.includes('?') ? '&' : '?';
      const { body } = await this.call('GET', `${path}${sep}${query.toString()}`);
      const got = body[key];
      if (Array.isArray(got)) items.push(...(got as T[]));
      const next = body.next;
      if (typeof next !== 'string' || next === '') break;
      cursor = next;
    }
    return items;
  }

  private failure(status: number, body: ErrorBody | undefined): ApiCommandError {
    if (status === 401) {
      return new ApiCommandError(
        'api_unauthorized',
        `the server refused the token from ${this.target.tokenSource} (HTTP 401: missing, wrong, expired or revoked)`,
        EXIT_INVALID,
        status,
      );
    }
    const e = typeof body?.error === 'object' ? body.error : undefined;
    const issues = e?.issues ?? [];
    let detail = e?.message ?? 'no details';
    if (issues.length > 1) detail = issues.map((i) => `\n  ${i.field}: ${i.message}`).join('');
    return new ApiCommandError(
      e?.code ?? 'api_failed',
      `HTTP ${status}: ${detail}`,
      status >= 500 ? EXIT_FAILURE : EXIT_INVALID,
      status,
      e ?? null,
    );
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Runs a command body with a client; an `ApiCommandError` becomes stderr and an exit code. */
export async function withApi(
  io: CommandIo,
  resolve: () => Promise<ApiTarget>,
  run: (client: ApiClient) => Promise<void>,
): Promise<void> {
  let code = EXIT_OK;
  try {
    const client = new ApiClient(await resolve());
    try {
      await run(client);
    } finally {
      await client.close();
    }
  } catch (caught) {
    if (!(caught instanceof ApiCommandError)) throw caught;
    io.err(`statuswatch: ${caught.message}\n`);
    code = caught.exitCode;
  }
  if (code !== EXIT_OK) io.exit(code);
}

export { printable };

/** A table: header + rows, columns padded. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths =
    rows[0]?.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths[col] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${printable(line)}\n`)
    .join('');
}
