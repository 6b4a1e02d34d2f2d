/**
 * What the CLI commands that talk to a running daemon share (`statuswatch silence`, and the
 * `/api/v1` commands: channel, subscription, token, secrets): one JSON request with a bearer
 * token, and terminal-safe text for what the server sent.
 */
import { isIP } from 'node:net';
import { request, type Agent } from 'undici';
import type { Config } from '../config/schema.js';

/** Where a command talks to the daemon: its base URL and a bearer token. */
export interface DaemonTarget {
  baseUrl: string;
  token: string;
}

/** The daemon's answer: its status and its body as JSON (undefined when it is not JSON). */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/**
 * One request to the daemon, `body` sent as JSON. Every HTTP status is answered; a transport
 * failure (refused, reset, timed out) is thrown as what `unreachable` makes of it.
 */
export async function requestJson(
  agent: Agent,
  target: DaemonTarget,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body: unknown,
  unreachable: (caught: unknown) => Error,
): Promise<JsonAnswer> {
  let status: number;
  let text: string;
  try {
    const res = await request(`${target.baseUrl}${path}`, {
      method,
      dispatcher: agent,
      headers: {
        authorization: `Bearer ${target.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (caught) {
    throw unreachable(caught);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    parsed = undefined;
  }
  return { status, body: parsed };
}

/** Terminal-safe text: control and bidi characters become spaces. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, ' ');
}

/** A daemon target with where its token came from (named in a 401 message). */
export interface ResolvedTarget extends DaemonTarget {
  tokenSource: string;
}

/** Where a command looks for the daemon's URL and token, in order, and its errors. */
export interface TargetSources {
  /** URL candidates in order; when none is set, 127.0.0.1 on the config's `server.port`. */
  urls: readonly (string | undefined)[];
  /** Token candidates in order, each with its name; then the config's `server.adminToken`. */
  tokens: readonly (readonly [string | undefined, string])[];
  /** Loads the config (called at most once, only when a URL or token is missing). */
  loadConfig: () => Promise<Config>;
  invalidUrl: () => Error;
  missingToken: () => Error;
}

function nonBlank(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * Where a command on the daemon's own machine reaches its ops server: the configured
 * `server.host` when it names one address, else loopback (unset, `0.0.0.0` and `::` listen on
 * every address, loopback included).
 */
export function localDaemonUrl(server: { host?: string | undefined; port: number }): string {
  const host = server.host?.trim() ?? '';
  const port = String(server.port);
  if (host === '' || host === '0.0.0.0' || host === '::') return `http://127.0.0.1:${port}`;
  return isIP(host) === 6 ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

/** Resolves the daemon's URL and token for a CLI command (`statuswatch silence`, `/api/v1` commands). */
export async function resolveDaemonTarget(s: TargetSources): Promise<ResolvedTarget> {
  let config: Config | undefined;
  const cfg = async (): Promise<Config> => (config ??= await s.loadConfig());
  let baseUrl = s.urls.map(nonBlank).find((u) => u !== undefined);
  baseUrl ??= localDaemonUrl((await cfg()).server);
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) throw s.invalidUrl();
  baseUrl = baseUrl.replace(/\/+$/, '');
  for (const [value, source] of s.tokens) {
    const token = nonBlank(value);
    if (token !== undefined) return { baseUrl, token, tokenSource: source };
  }
  const fromConfig = nonBlank((await cfg()).server.adminToken);
  if (fromConfig !== undefined) {
    return { baseUrl, token: fromConfig, tokenSource: 'server.adminToken in the config' };
  }
  throw s.missingToken();
}
