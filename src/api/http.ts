/**
 * `/api/v1` on the ops server: JSON in and out, bodies of at most 1 MB, errors as
 * `{error: {code, message, field, issues?}}` (src/server/http-error.ts). `/admin/silences` is a
 * deprecated alias of `/api/v1/silences` served here too (admin tokens only). Every route but `/api/v1/openapi.json` needs a bearer token
 * (tokens.ts); failed attempts are rate-limited per client address. The routes are the list in
 * openapi.ts; a handler per operation lives here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import { isEventKind } from '../config/events.js';
import { redactText } from '../config/secret-text.js';
import { channelSecrets } from '../notify/kinds.js';
import { renderForChannel } from '../commands/render.js';
import { notifyTest, type NotifyTestResult } from '../commands/notify-test.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { NotifierDeps } from '../notify/kind.js';
import type { ChannelConfig } from '../config/schema.js';
import { stateOf } from '../silences/match.js';
import {
  parseSilenceRequest,
  SilenceValidationError,
  type Silence,
  type SilenceDraft,
} from '../silences/model.js';
import { pageOf, pageParams, silencePage, type SortKey } from './pages.js';
import type { SilenceStore } from '../silences/store.js';
import { visibleSilence } from '../silences/visibility.js';
import { diffOf } from './audit.js';
import { SecretKeyError } from './crypto.js';
import { ApiError, invalid, notFound, type FieldIssue } from './errors.js';
import { checkName } from './model.js';
import {
  openApiDocument,
  ROUTES,
  type Method,
  type OperationId,
  type RouteSpec,
} from './openapi.js';
import { DEFAULT_SERVICE_LIMIT, MAX_SERVICE_LIMIT, type ServiceSearch } from './services.js';
import type { ApiStore } from './store.js';
import type { AckService } from './acks.js';
import { bearerOf, type Actor, type TokenStore } from './tokens.js';
import { clientAddress } from '../server/client-address.js';
import { BodyError, readJsonBody } from '../server/body.js';
import { bodyRefused, httpErrorOf, sendError } from '../server/http-error.js';

/** Largest accepted request body. */
export const API_MAX_BODY_BYTES = 1024 * 1024;

export interface ApiHttpOptions {
  store: ApiStore;
  /** Acknowledgements (`acknowledge`); null: answered 503. */
  acks?: AckService | null;
  tokens: TokenStore;
  services: ServiceSearch;
  /** The daemon's silences (the store routing reads). */
  silences: SilenceStore;
  adminToken: () => string | undefined;
  /**
   * Socket addresses of reverse proxies whose X-Forwarded-For names the client (failed-attempt
   * limits and the audit log count by client; `src/server/client-address.ts`). Default none.
   */
  trustedProxies?: () => readonly string[];
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Sends a test notification (default: what `notify-test` does). */
  notifyTest?: (
    name: string,
    config: ChannelConfig,
    now?: number,
    deps?: NotifierDeps,
  ) => Promise<NotifyTestResult>;
  /** The egress policy of a config-file or stored channel (a test follows it as a send does). */
  egressFor?: (source: 'config' | 'api') => EgressPolicy | undefined;
  now?: () => number;
}

interface Call {
  req: IncomingMessage;
  url: URL;
  actor: Actor;
  params: Record<string, string>;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

type Handler = (call: Call) => Promise<Reply>;

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(JSON.stringify(body));
}

/**
 * Reads a JSON body of at most `API_MAX_BODY_BYTES` and `MAX_JSON_DEPTH` levels (the shared
 * reader, src/server/body.ts): 413 past the size, 400 when empty, not JSON or too deep.
 */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  try {
    return await readJsonBody(req, API_MAX_BODY_BYTES);
  } catch (caught) {
    if (!(caught instanceof BodyError)) throw caught;
    throw bodyRefused(caught);
  }
}

function intParam(url: URL, name: string, min: number, max: number, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw invalid([{ field: name, message: `expected an integer from ${min} to ${max}` }]);
  return n;
}

interface CompiledRoute {
  spec: RouteSpec;
  pattern: RegExp;
  names: string[];
}

const COMPILED: CompiledRoute[] = (ROUTES as readonly RouteSpec[]).map((spec) => {
  const names: string[] = [];
  const source = spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { spec, names, pattern: new RegExp(`^${source}/?$`) };
});

/** Whether a request may use `/admin/*`; 'limited' with the ms until the address may try again. */
export type AdminAccess =
  'ok' | 'unauthorized' | 'forbidden' | { limited: true; retryAfterMs: number };

export class ApiHttp {
  private readonly handlers: Record<OperationId, Handler>;
  private readonly now: () => number;

  constructor(private readonly o: ApiHttpOptions) {
    this.now = o.now ?? Date.now;
    const { store, tokens } = o;
    this.handlers = {
      listSubscriptions: async ({ actor, url }) => {
        const page = pageOf(await store.listSubscriptions(actor), objectKey, pageParams(url));
        return { status: 200, body: { subscriptions: page.items, next: page.next } };
      },
      createSubscription: async ({ actor, req }) => {
        const { view } = await store.putSubscription(actor, await readJson(req), 'create');
        return {
          status: 201,
          body: view,
          headers: { location: `/api/v1/subscriptions/${view.name}` },
        };
      },
      getSubscription: async ({ actor, params }) => ({
        status: 200,
        body: await store.getSubscription(actor, params.name ?? ''),
      }),
      putSubscription: async ({ actor, req, params }) => {
        const { view, created } = await store.putSubscription(
          actor,
          await readJson(req),
          'put',
          params.name,
        );
        return { status: created ? 201 : 200, body: view };
      },
      acknowledge: async ({ actor, req, params }) => {
        if (o.acks === undefined || o.acks === null)
          throw new ApiError(503, 'unavailable', 'acknowledgements are not available here');
        const view = await o.acks.acknowledgeAs(
          actor,
          params.name ?? '',
          await readJson(req),
          'api',
        );
        return { status: view.created ? 201 : 200, body: view };
      },
      deleteSubscription: async ({ actor, params }) => ({
        status: 200,
        body: await store.deleteSubscription(actor, params.name ?? ''),
      }),
      listChannels: async ({ actor, url }) => {
        const page = pageOf(await store.listChannels(actor), objectKey, pageParams(url));
        return { status: 200, body: { channels: page.items, next: page.next } };
      },
      createChannel: async ({ actor, req }) => {
        const { view } = await store.putChannel(actor, await readJson(req), 'create');
        return { status: 201, body: view, headers: { location: `/api/v1/channels/${view.name}` } };
      },
      getChannel: async ({ actor, params }) => ({
        status: 200,
        body: await store.getChannel(actor, params.name ?? ''),
      }),
      putChannel: async ({ actor, req, params }) => {
        const { view, created } = await store.putChannel(
          actor,
          await readJson(req),
          'put',
          params.name,
        );
        return { status: created ? 201 : 200, body: view };
      },
      deleteChannel: async ({ actor, params }) => ({
        status: 200,
        body: await store.deleteChannel(actor, params.name ?? ''),
      }),
      testChannel: async ({ actor, params }) => {
        const name = params.name ?? '';
        const { config, source } = await store.resolveChannel(actor, name);
        if (source === 'config' && !actor.admin) {
          throw new ApiError(
            403,
            'forbidden',
            "a team token can test its own team's channels only; config-file channels are tested by an admin",
            'name',
          );
        }
        const egress = this.o.egressFor?.(source);
        const result = await (this.o.notifyTest ?? notifyTest)(
          name,
          config,
          this.now(),
          egress === undefined ? {} : { egress },
        );
        // The team reads the team-safe text only; the receiver's words (`detail`) are logged.
        const message = redactText(result.text, channelSecrets(config)).trim();
        this.o.log.info(
          {
            event: 'api:channel_tested',
            channel: name,
            ok: result.ok,
            tokenId: actor.tokenId,
            ...(result.detail === null
              ? {}
              : { detail: redactText(result.detail, channelSecrets(config)) }),
          },
          `channel ${name} tested through the API`,
        );
        return { status: 200, body: { ok: result.ok, message } };
      },
      previewChannel: async ({ actor, params, url }) => {
        const name = params.name ?? '';
        const event = url.searchParams.get('event');
        if (!isEventKind(event)) {
          throw invalid([
            {
              field: 'event',
              message:
                event === null
                  ? 'required (an event kind, e.g. incident.opened)'
                  : 'unknown event kind',
            },
          ]);
        }
        const { config, source } = await store.resolveChannel(actor, name);
        if (source === 'config' && !actor.admin) {
          // A config-file channel's preview shows its headers, addresses, endpoints: the operator's.
          throw new ApiError(
            403,
            'forbidden',
            "a team token can preview its own team's channels only; config-file channels are previewed by an admin",
            'name',
          );
        }
        const preview = redactText(
          renderForChannel(event, name, config, this.now(), store.publicUrl()),
          channelSecrets(config),
        );
        return { status: 200, body: { channel: name, event, preview } };
      },
      searchServices: async ({ url }) => {
        const limit = intParam(url, 'limit', 1, MAX_SERVICE_LIMIT, DEFAULT_SERVICE_LIMIT);
        return {
          status: 200,
          body: await o.services.search(url.searchParams.get('query') ?? '', limit),
        };
      },
      readAudit: async ({ actor, url }) => {
        const limit = intParam(url, 'limit', 1, 1000, 100);
        const before = url.searchParams.get('before') ?? undefined;
        if (before !== undefined && !/^\d+-\d+$/.test(before))
          throw invalid([
            { field: 'before', message: 'expected an audit entry id (such as 1700000000000-0)' },
          ]);
        const entries = await store.audit.read({
          limit,
          ...(before === undefined ? {} : { before }),
          visible: (e) => actor.admin || (actor.team !== null && e.team === actor.team),
        });
        const last = entries[entries.length - 1];
        return {
          status: 200,
          body: {
            entries: entries.map((e) => ({ ...e, at: new Date(e.at).toISOString() })),
            // The id to pass as `before` for the next page (null: no more).
            next: entries.length === limit && last?.id !== undefined ? last.id : null,
          },
        };
      },
      listSilences: async ({ actor, url }) => {
        const all = url.searchParams.get('all');
        const list = await o.silences.list({ includeExpired: all === '1' || all === 'true' });
        const own = await this.ownSubscriptions(actor);
        const at = o.silences.now();
        const page = silencePage(
          list.filter((s) => visibleSilence(s, viewerOf(actor), own)),
          pageParams(url),
          at,
        );
        return {
          status: 200,
          body: { silences: page.items.map((s) => silenceView(s, at)), next: page.next },
        };
      },
      createSilence: async ({ actor, req }) => {
        const body = await readJson(req);
        const draft = await this.checkSilenceRequest(actor, body);
        // Stored, quota-checked and audited in one transaction (store.ts `createSilence`).
        const silence = await store.createSilence(actor, draft);
        o.silences.changed();
        const { id } = silence;
        this.o.log.info(
          {
            event: 'silence:created',
            silenceId: id,
            author: silence.author,
            matchers: silence.matchers,
            tokenId: actor.tokenId,
          },
          `silence ${id} created through the API`,
        );
        return {
          status: 201,
          body: silenceView(silence, o.silences.now()),
          headers: { location: `/api/v1/silences/${encodeURIComponent(id)}` },
        };
      },
      getSilence: async ({ actor, params }) => ({
        status: 200,
        body: silenceView(await this.visibleSilence(actor, params.id ?? ''), o.silences.now()),
      }),
      deleteSilence: ({ actor, params }) => this.expireSilence(actor, params.id ?? ''),
      expireSilence: ({ actor, params }) => this.expireSilence(actor, params.id ?? ''),
      listTokens: async ({ url }) => {
        const page = pageOf(
          await tokens.list(),
          (t) => [Date.parse(t.createdAt), t.id],
          pageParams(url),
        );
        return { status: 200, body: { tokens: page.items, next: page.next } };
      },
      createToken: async ({ actor, req }) => {
        const created = await tokens.create(actor, await readJson(req));
        this.o.log.info(
          {
            event: 'api:token_created',
            id: created.id,
            team: created.team,
            admin: created.admin,
            tokenId: actor.tokenId,
          },
          `token ${created.id} created for team ${created.team}`,
        );
        return { status: 201, body: created };
      },
      revokeToken: async ({ actor, params }) => {
        const revoked = await tokens.revoke(actor, params.id ?? '');
        this.o.log.info(
          { event: 'api:token_revoked', id: revoked.id, tokenId: actor.tokenId },
          `token ${revoked.id} revoked`,
        );
        return { status: 200, body: revoked };
      },
      rotateSecrets: async ({ actor }) => {
        const result = await store.rotateSecrets(actor);
        this.o.log.info(
          { event: 'api:secrets_rotated', ...result },
          `stored secrets re-encrypted under key ${result.keyId}`,
        );
        return { status: 200, body: result };
      },
      openapi: () => Promise.resolve({ status: 200, body: openApiDocument() }),
    };
  }

  /** The actor's own subscriptions: a team's stored ones (an admin's matter not: it sees all). */
  private async ownSubscriptions(actor: Actor): Promise<Set<string>> {
    if (actor.admin) return new Set();
    return new Set((await this.o.store.listSubscriptions(actor)).map((s) => s.name));
  }

  /** A silence the actor may see and change; another team's (or none) is a 404. */
  private async visibleSilence(actor: Actor, id: string): Promise<Silence> {
    const silence = await this.o.silences.get(id);
    if (silence === undefined) throw notFound('silence', id);
    if (!actor.admin) {
      const own = await this.ownSubscriptions(actor);
      if (!visibleSilence(silence, viewerOf(actor), own)) throw notFound('silence', id);
    }
    return silence;
  }

  private async expireSilence(actor: Actor, id: string): Promise<Reply> {
    const before = await this.visibleSilence(actor, id);
    const after = await this.silenceWrite(() => this.o.silences.expire(id));
    if (after === undefined) throw notFound('silence', id);
    const diff = diffOf(before, after);
    if (diff.length > 0) {
      await this.o.store.recordChange(actor, {
        action: 'expire',
        kind: 'silence',
        name: id,
        team: await this.silenceTeam(actor, after),
        diff,
      });
      this.o.log.info(
        { event: 'silence:expired', silenceId: id, tokenId: actor.tokenId },
        `silence ${id} expired through the API`,
      );
    }
    return { status: 200, body: silenceView(after, this.o.silences.now()) };
  }

  /**
   * A create request validated as the admin API does (`parseSilenceRequest`), then, for a team
   * token, limited to its own subscriptions: a `subscriptions` matcher is required and may name
   * only the team's stored subscriptions (not another team's, not the config file's).
   */
  private async checkSilenceRequest(actor: Actor, body: unknown): Promise<SilenceDraft> {
    const draft = silenceDraftOf(body, this.o.silences.now());
    if (actor.admin) return draft;
    const names = draft.matchers.subscriptions ?? [];
    if (names.length === 0) {
      throw invalid([
        {
          field: 'matchers.subscriptions',
          message: "required for a team token: the team's own subscriptions to silence",
        },
      ]);
    }
    const own = await this.ownSubscriptions(actor);
    const issues: FieldIssue[] = names.flatMap((name, i) =>
      own.has(name)
        ? []
        : [
            {
              field: `matchers.subscriptions[${i}]`,
              message: "no such subscription of this token's team",
            },
          ],
    );
    if (issues.length > 0) throw invalid(issues);
    return draft;
  }

  /** The team an audit entry of a silence belongs to: the team's, or the one all its subscriptions share. */
  private async silenceTeam(actor: Actor, silence: Silence): Promise<string> {
    if (!actor.admin && actor.team !== null) return actor.team;
    const names = silence.matchers.subscriptions ?? [];
    if (names.length === 0) return '*';
    const { subscriptions } = await this.o.store.snapshot();
    const teams = new Set(names.map((n) => subscriptions.get(n)?.team ?? '*'));
    const [only] = teams;
    return teams.size === 1 && only !== undefined ? only : '*';
  }

  /** A silence store write; its validation errors (a clock edge since the check) are a 400. */
  private async silenceWrite<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (caught) {
      if (caught instanceof SilenceValidationError) throw invalidSilence(caught);
      throw caught;
    }
  }

  /**
   * Whether a request may use `/admin/*`: the config file's admin token or an admin token from
   * the API; team tokens never. Checked under the address's failed-attempt limit, as the API's
   * and the console's tokens are (`TokenStore.attempt`).
   */
  async adminAccess(req: IncomingMessage): Promise<AdminAccess> {
    const attempt = await this.o.tokens.authenticateLimited(
      bearerOf(req),
      this.o.adminToken(),
      this.address(req),
    );
    if (attempt.outcome === 'limited') return { limited: true, retryAfterMs: attempt.retryAfterMs };
    if (attempt.outcome === 'failed') return 'unauthorized';
    return attempt.value.admin ? 'ok' : 'forbidden';
  }

  /**
   * `/admin/silences…`, the deprecated alias of `/api/v1/silences…`: the same handlers, validation
   * and answers, for admin tokens only (a team token is a 403, as everywhere under `/admin/*`),
   * with `Deprecation: true` and a `Link` to the successor. False for any other path.
   */
  async handleAdminAlias(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const target = apiPathOfAdminAlias(url.pathname);
    if (target === null) return false;
    const aliased = new URL(url.href);
    aliased.pathname = target;
    res.setHeader('deprecation', 'true');
    res.setHeader('link', `<${target}>; rel="successor-version"`);
    await this.handle(req, res, aliased, { adminOnly: true });
    return true;
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    o: { adminOnly?: boolean } = {},
  ): Promise<void> {
    try {
      const reply = await this.dispatch(req, url, o.adminOnly === true);
      send(res, reply.status, reply.body, reply.headers);
    } catch (caught) {
      const err = this.asApiError(caught);
      if (err.status >= 500) {
        this.o.log.error(
          { event: 'api:error', code: err.code, err: toError(caught).message, path: url.pathname },
          'API request failed',
        );
      }
      if (err.status === 413) req.resume();
      sendError(res, err);
    }
  }

  private asApiError(caught: unknown): ApiError {
    if (caught instanceof SecretKeyError) {
      return new ApiError(503, caught.code, `stored secrets cannot be opened: ${caught.message}`);
    }
    return httpErrorOf(caught);
  }

  private async dispatch(req: IncomingMessage, url: URL, adminOnly = false): Promise<Reply> {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname;
    const matching = COMPILED.map((route) => ({ route, match: route.pattern.exec(path) })).filter(
      (m): m is { route: CompiledRoute; match: RegExpExecArray } => m.match !== null,
    );
    const hit = matching.find((m) => m.route.spec.method === (method === 'HEAD' ? 'GET' : method));
    if (hit?.route.spec.public === true)
      return this.handlers[hit.route.spec.operationId as OperationId]({
        req,
        url,
        actor: anonymous(this.address(req)),
        params: {},
      });

    const actor = await this.authenticate(req);
    if (adminOnly && !actor.admin)
      throw new ApiError(403, 'forbidden', 'team tokens cannot use the admin API');
    if (matching.length === 0) throw new ApiError(404, 'no_route', `no such path: ${path}`);
    if (hit === undefined) {
      const allow = [...new Set(matching.map((m) => m.route.spec.method))].join(', ');
      throw new ApiError(
        405,
        'method_not_allowed',
        `method ${method} not allowed here (allowed: ${allow})`,
        null,
        [],
        { allow },
      );
    }
    const { spec, names } = hit.route;
    if (spec.admin === true && !actor.admin)
      throw new ApiError(403, 'forbidden', 'this route needs an admin token');
    const params: Record<string, string> = {};
    names.forEach((name, i) => {
      const raw = hit.match[i + 1] ?? '';
      let decoded: string;
      try {
        decoded = decodeURIComponent(raw);
      } catch {
        throw invalid([{ field: name, message: 'bad percent-encoding in the path' }]);
      }
      params[name] = name === 'name' ? checkName(decoded, 'name') : decoded;
    });
    return this.handlers[spec.operationId as OperationId]({ req, url, actor, params });
  }

  /** The client's address (through a trusted proxy: the one it names). */
  private address(req: IncomingMessage): string {
    return clientAddress(req, this.o.trustedProxies?.() ?? []);
  }

  private async authenticate(req: IncomingMessage): Promise<Actor> {
    const attempt = await this.o.tokens.authenticateLimited(
      bearerOf(req),
      this.o.adminToken(),
      this.address(req),
    );
    if (attempt.outcome === 'limited') {
      const seconds = String(Math.ceil(attempt.retryAfterMs / 1000));
      throw new ApiError(
        429,
        'rate_limited',
        `too many failed attempts from this address; try again in ${seconds} s`,
        null,
        [],
        { 'retry-after': seconds },
      );
    }
    if (attempt.outcome === 'failed') {
      throw new ApiError(
        401,
        'unauthorized',
        'missing, wrong, expired or revoked bearer token',
        null,
        [],
        { 'www-authenticate': 'Bearer' },
      );
    }
    return attempt.value;
  }
}

/** The actor as `visibleSilence` sees it: an admin token (whatever its team) sees everything. */
function viewerOf(actor: Actor): { team: string | null } {
  return { team: actor.admin ? null : (actor.team ?? '') };
}

/** The order of channel and subscription lists: the config file's, then stored ones; by name. */
function objectKey(o: { name: string; source: 'config' | 'api' }): SortKey {
  return [o.source === 'config' ? 0 : 1, o.name];
}

function silenceView(silence: Silence, now: number): Silence & { state: string } {
  return { ...silence, state: stateOf(silence, now) };
}

function invalidSilence(err: SilenceValidationError): ApiError {
  return invalid(err.issues.map((i) => ({ field: i.path, message: i.message })));
}

/** `parseSilenceRequest` with its validation errors as the API's 400. */
function silenceDraftOf(body: unknown, now: number): ReturnType<typeof parseSilenceRequest> {
  try {
    return parseSilenceRequest(body, now);
  } catch (caught) {
    if (caught instanceof SilenceValidationError) throw invalidSilence(caught);
    throw caught;
  }
}

/** The `/api/v1` path an `/admin/silences…` path stands for; null for any other path. */
export function apiPathOfAdminAlias(path: string): string | null {
  return /^\/admin\/silences(?:\/.*)?$/.test(path) ? `/api/v1${path.slice('/admin'.length)}` : null;
}

function anonymous(address: string): Actor {
  return { tokenId: 'anonymous', team: null, admin: false, address };
}

export type { Method };
