/**
 * What the CLI commands that talk to a running daemon share (`statuswatch silence`, and the
 * `/api/v1` commands: channel, subscription, token, secrets): one JSON request with a bearer
 * token, and terminal-safe text for what the server sent.
 */
import { request, type Agent } from 'undici';

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
