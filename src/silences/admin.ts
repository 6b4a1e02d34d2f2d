import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { SilenceValidationError, type Silence } from './model.js';
import { stateOf, type SilenceState } from './match.js';
import type { SilenceStore } from './store.js';
import { ApiError } from '../api/errors.js';
import { pageParams, silencePage } from '../api/pages.js';
import { BodyError, readJsonBody } from '../server/body.js';

/** Largest accepted `POST /admin/silences` body. */
export const MAX_BODY_BYTES = 64 * 1024;

/** A silence as the admin API returns it: the stored fields plus its state at the server's clock. */
export type SilenceView = Silence & { state: SilenceState };

function send(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(JSON.stringify(body));
}

type Body =
  | { ok: true; value: unknown }
  | { ok: false; status: number; error: string; headers?: Record<string, string> };

/**
 * Reads a JSON body of at most `MAX_BODY_BYTES` and `MAX_JSON_DEPTH` levels with the shared
 * reader (src/server/body.ts): past the size a 413 that closes the connection; empty, malformed
 * or too deep a 400.
 */
async function readJson(req: IncomingMessage): Promise<Body> {
  try {
    return { ok: true, value: await readJsonBody(req, MAX_BODY_BYTES) };
  } catch (caught) {
    if (!(caught instanceof BodyError)) throw caught;
    return { ok: false, status: caught.status, error: caught.message, headers: caught.headers };
  }
}

function view(silence: Silence, now: number): SilenceView {
  return { ...silence, state: stateOf(silence, now) };
}

function decodeId(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/**
 * The `/admin/silences` routes (the bearer check has already passed):
 * - `GET /admin/silences` active and pending ones; `?all=1` includes expired ones;
 * - `POST /admin/silences` JSON create request → 201 with the silence, 400 with `issues`;
 * - `GET /admin/silences/{id}` → 200 / 404;
 * - `DELETE /admin/silences/{id}` or `POST /admin/silences/{id}/expire` → 200 / 404.
 * Returns false for any other path, so the caller can go on matching.
 */
export async function handleSilences(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  method: string,
  store: SilenceStore,
  log?: Pick<Logger, 'info'>,
): Promise<boolean> {
  const now = store.now;
  if (path === '/admin/silences' || path === '/admin/silences/') {
    if (method === 'GET') {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const query = url.searchParams.get('all');
      const includeExpired = query === '1' || query === 'true';
      // Paged as /api/v1/silences is (`limit`, `cursor`; the answer's `next`).
      let params: ReturnType<typeof pageParams>;
      try {
        params = pageParams(url);
      } catch (caught) {
        if (!(caught instanceof ApiError)) throw caught;
        send(res, 400, { error: caught.message });
        return true;
      }
      const at = now();
      const page = silencePage(await store.list({ includeExpired }), params, at);
      send(res, 200, { silences: page.items.map((s) => view(s, at)), next: page.next });
      return true;
    }
    if (method === 'POST') {
      const body = await readJson(req);
      if (!body.ok) {
        send(res, body.status, { error: body.error }, body.headers);
        return true;
      }
      let silence: Silence;
      try {
        silence = await store.add(body.value);
      } catch (err) {
        if (err instanceof SilenceValidationError) {
          send(res, 400, { error: 'invalid silence', issues: err.issues });
          return true;
        }
        throw err;
      }
      log?.info(
        {
          event: 'silence:created',
          silenceId: silence.id,
          author: silence.author,
          startsAt: silence.startsAt,
          endsAt: silence.endsAt,
          matchers: silence.matchers,
        },
        `silence ${silence.id} created by ${silence.author}`,
      );
      send(res, 201, view(silence, now()), {
        location: `/admin/silences/${encodeURIComponent(silence.id)}`,
      });
      return true;
    }
    send(res, 405, { error: `method ${method} not allowed here` }, { allow: 'GET, POST' });
    return true;
  }

  const one = /^\/admin\/silences\/([^/]+)(\/expire)?\/?$/.exec(path);
  if (one === null) return false;
  const id = decodeId(one[1] ?? '');
  if (id === undefined) {
    send(res, 400, { error: 'bad silence id encoding' });
    return true;
  }
  const expireRoute = one[2] !== undefined;
  if (expireRoute ? method === 'POST' : method === 'DELETE') {
    const expired = await store.expire(id);
    if (expired === undefined) {
      send(res, 404, { error: `no silence ${id}` });
      return true;
    }
    log?.info(
      { event: 'silence:expired', silenceId: id },
      `silence ${id} expired through the admin API`,
    );
    send(res, 200, view(expired, now()));
    return true;
  }
  if (!expireRoute && method === 'GET') {
    const silence = await store.get(id);
    if (silence === undefined) send(res, 404, { error: `no silence ${id}` });
    else send(res, 200, view(silence, now()));
    return true;
  }
  send(
    res,
    405,
    { error: `method ${method} not allowed here` },
    { allow: expireRoute ? 'POST' : 'GET, DELETE' },
  );
  return true;
}
