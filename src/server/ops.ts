import { AggregatorRegistry } from 'prom-client';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { StatuswatchError, toError } from '../errors.js';
import type { Metrics } from './metrics.js';
import { HttpError, sendError } from './http-error.js';
import { sameSecret } from './secret-compare.js';
import { deadLetterClosed, type DeadLetterRetry } from '../delivery/queue.js';
import { LOOP_HEADER, type OwnSockets } from './own-sockets.js';
import { pageOf, pageParams } from '../api/pages.js';

export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
  /** Why Redis refuses work, when it does (src/redis/refusals.ts): reason, hint, since when. */
  redis?: { refusing: string[]; hint: string; since: string; commands?: string[] };
}

/** What the admin API lists of a dead letter (`DeadLetter` of src/delivery/queue.ts). */
export interface DeadLetterView {
  id: string;
  failedAt: number | null;
}

export interface AdminApi {
  /** Every dead letter (the admin API pages them). */
  deadLetters(): Promise<DeadLetterView[]>;
  retryDeadLetter(id: string): Promise<DeadLetterRetry>;
  /** What is known about one service; null when nothing is (answered 404). */
  serviceState(feedId: string): Promise<Record<string, unknown> | null>;
  /** What the upstream's enumerated-looking fields were seen to hold, and how each word is read. */
  vocabulary(): Promise<unknown>;
}

/** Where the ops server listens unless told otherwise (`server.host`): every IPv4 address. */
export const DEFAULT_HOST = '0.0.0.0';

export interface OpsServerOptions {
  port: number;
  /** Listen address; default {@link DEFAULT_HOST}. */
  host?: string | undefined;
  metrics: Metrics;
  /**
   * The other threads' metrics (`registry.getMetricsAsJSON()` of each), merged with this
   * registry's into one scrape by each metric's `aggregator` (sum unless it says otherwise).
   */
  peerMetrics?: () => Promise<unknown[][]>;
  /** Called before each scrape to sample queue depths. */
  beforeScrape?: () => Promise<void>;
  readiness: () => Promise<Readiness>;
  adminToken: () => string | undefined;
  admin: AdminApi;
  /**
   * The tenancy API under /api/v1 (src/api/http.ts); it also decides who may use /admin/*, and
   * serves `/admin/silences`, the deprecated alias of `/api/v1/silences`.
   */
  api?: {
    handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
    handleAdminAlias(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
    adminAccess(
      req: IncomingMessage,
    ): Promise<'ok' | 'unauthorized' | 'forbidden' | { limited: true; retryAfterMs: number }>;
  };
  /**
   * This process's own outbound connections (src/server/own-sockets.ts): a request on one is
   * refused before any token is checked or counted. Default none.
   */
  ownSockets?: OwnSockets;
  /**
   * The Slack app buttons' interactions at their path (`src/notify/slack/interactions.ts`): the
   * request is verified there, by the Slack app's signature, not by a token.
   */
  slack?: {
    path(): string;
    handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
    close(): Promise<void>;
  };
  /** The web console at `/` and `/feeds/` (src/console); answers false for paths not its own. */
  console?: { handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> };
  log: Logger;
}

/** A path segment percent-decoded; undefined for a malformed encoding (`%`, `%ZZ`). */
function decodeSegment(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** Constant-time bearer check (src/server/secret-compare.ts). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (header === undefined) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return sameSecret(match?.[1] ?? '', token);
}

/** Answers an error in the ops server's one JSON shape, `{error: {code, message, field}}`. */
function fail(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendError(res, new HttpError(status, code, message, null, [], headers));
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/json',
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(text);
}

/**
 * The ops HTTP server: /healthz (alive), /readyz (Redis answers, workers running, config loaded),
 * /metrics (Prometheus text), /admin/* (bearer adminToken; off when no token is configured).
 */
export class OpsServer {
  private server: Server | null = null;

  constructor(private readonly options: OpsServerOptions) {}

  async start(): Promise<number> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.options.log.error(
          { event: 'ops:error', err: toError(err).message },
          'ops request failed',
        );
        if (!res.headersSent) fail(res, 500, 'internal', 'internal error');
        else res.end();
      });
    });
    this.server = server;
    const host = this.options.host ?? DEFAULT_HOST;
    await new Promise<void>((resolve, reject) => {
      const failed = (err: Error): void => {
        // Named by the config paths that chose the address (EADDRINUSE, ENOTFOUND…).
        reject(
          new StatuswatchError(
            'ops_listen_failed',
            `server.host ${host}, server.port ${String(this.options.port)}: cannot listen: ${err.message}`,
            { cause: err },
          ),
        );
      };
      server.once('error', failed);
      server.listen(this.options.port, host, () => {
        server.off('error', failed);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (path === '/healthz') {
      send(res, 200, { status: 'ok' });
      return;
    }
    if (path === '/readyz') {
      const r = await this.options.readiness();
      send(res, r.ready ? 200 : 503, {
        status: r.ready ? 'ready' : 'not ready',
        checks: r.checks,
        ...(r.redis === undefined ? {} : { redis: r.redis }),
      });
      return;
    }
    if (path === '/metrics') {
      // The queue samples read Redis: while it is down or paused they would wait, and a scrape
      // must still answer (with the last samples) before Prometheus gives up on it.
      const sampled = this.options.beforeScrape?.().catch(() => undefined);
      if (sampled !== undefined) await settledWithin(sampled, SCRAPE_SAMPLE_MS);
      const { registry } = this.options.metrics;
      const peers = await this.options.peerMetrics?.();
      const text =
        peers === undefined || peers.length === 0
          ? await registry.metrics()
          : await AggregatorRegistry.aggregate([
              await registry.getMetricsAsJSON(),
              ...peers,
            ]).metrics();
      send(res, 200, text, registry.contentType);
      return;
    }
    if (req.headers[LOOP_HEADER] !== undefined || this.options.ownSockets?.has(req) === true) {
      // A notifier's request (this process's on its own socket, or any replica's through the
      // ingress, marked by the loop header): never a token check, so never a failed attempt
      // counted against the address it comes from.
      fail(
        res,
        403,
        'own_request',
        'statuswatch does not answer its own outbound requests (a channel pointing here?)',
      );
      return;
    }
    if (this.options.slack !== undefined && path === this.options.slack.path())
      return this.options.slack.handle(req, res);
    if (path.startsWith('/admin/')) return this.admin(req, res, url);
    if (this.options.api !== undefined && (path === '/api/v1' || path.startsWith('/api/v1/')))
      return this.options.api.handle(req, res, url);
    if (this.options.console !== undefined && (await this.options.console.handle(req, res, url)))
      return;
    fail(res, 404, 'no_route', `no such path: ${path}`);
  }

  private async admin(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    const token = this.options.adminToken();
    if (token === undefined || token === '') {
      fail(res, 404, 'admin_disabled', 'admin API disabled (no server.adminToken)');
      return;
    }
    // `/admin/silences…`: the API's silences handlers, which check the token themselves.
    if (this.options.api !== undefined && (await this.options.api.handleAdminAlias(req, res, url)))
      return;
    const access =
      this.options.api === undefined
        ? bearerMatches(req.headers.authorization, token)
          ? 'ok'
          : 'unauthorized'
        : await this.options.api.adminAccess(req);
    if (typeof access === 'object') {
      const seconds = String(Math.ceil(access.retryAfterMs / 1000));
      fail(
        res,
        429,
        'rate_limited',
        `too many failed attempts from this address; try again in ${seconds} s`,
        { 'retry-after': seconds },
      );
      return;
    }
    if (access === 'forbidden') {
      fail(res, 403, 'forbidden', 'team tokens cannot use the admin API');
      return;
    }
    if (access !== 'ok') {
      fail(res, 401, 'unauthorized', 'missing or wrong bearer token', {
        'www-authenticate': 'Bearer',
      });
      return;
    }
    const method = req.method ?? 'GET';
    if (path === '/admin/dead-letters' && method === 'GET') {
      // Paged as the API's lists are (src/api/pages.ts): newest first, `?limit=&cursor=`, `next`.
      let params: ReturnType<typeof pageParams>;
      try {
        params = pageParams(url);
      } catch (caught) {
        if (!(caught instanceof HttpError)) throw caught;
        sendError(res, caught);
        return;
      }
      const page = pageOf(
        await this.options.admin.deadLetters(),
        (d) => [-(d.failedAt ?? 0), d.id],
        params,
      );
      send(res, 200, { deadLetters: page.items, next: page.next });
      return;
    }
    const retry = /^\/admin\/dead-letters\/([^/]+)\/retry$/.exec(path);
    if (retry !== null && method === 'POST') {
      const id = decodeSegment(retry[1] ?? '');
      if (id === undefined) {
        fail(res, 400, 'invalid', 'bad dead letter id encoding');
        return;
      }
      const result = await this.options.admin.retryDeadLetter(id);
      if (result.outcome === 'retried') send(res, 200, { retried: id });
      else if (result.outcome === 'closed') {
        const err = new HttpError(409, 'dead_letter_closed', deadLetterClosed(id));
        send(res, 409, { ...err.body(), lifecycle: result.lifecycle });
      } else fail(res, 404, 'not_found', `no dead letter ${id}`);
      return;
    }
    if (path === '/admin/upstream/vocabulary' && method === 'GET') {
      send(res, 200, { fields: await this.options.admin.vocabulary() });
      return;
    }
    const service = /^\/admin\/services\/([^/]+)$/.exec(path);
    if (service !== null && method === 'GET') {
      const feedId = decodeSegment(service[1] ?? '');
      if (feedId === undefined) {
        fail(res, 400, 'invalid', 'bad service id encoding');
        return;
      }
      const state = await this.options.admin.serviceState(feedId);
      if (state === null) fail(res, 404, 'not_found', `no service ${feedId} known`);
      else send(res, 200, state);
      return;
    }
    fail(res, 404, 'no_route', `no such admin route: ${method} ${path}`);
  }

  async stop(): Promise<void> {
    this.options.ownSockets?.stop();
    const server = this.server;
    this.server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
    // Button actions answered already finish (their Slack message edit included).
    await this.options.slack?.close();
  }
}

/** How long a scrape waits for the queue samples (`beforeScrape`). */
const SCRAPE_SAMPLE_MS = 1000;

/** Resolves when `p` settles or after `ms`, whichever comes first. */
function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void p.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
