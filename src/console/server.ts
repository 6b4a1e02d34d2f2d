/**
 * The web console, served by the ops server at `/` (docs/console.md). `Console.handle`
 * answers the console's paths and returns false for any other, so the ops server can go on
 * matching. Every page is server-rendered HTML and also JSON (`?format=json` or
 * `Accept: application/json`); every response carries a strict Content-Security-Policy; every
 * POST needs the session's CSRF token (bearer requests carry no cookie and need none).
 */
import { ownValue } from '../config/fields.js';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { isEventKind } from '../config/events.js';
import type { Transition } from '../diff/transition.js';
import { SilenceValidationError, parseSilenceRequest, type Silence } from '../silences/model.js';
import { ServiceSearch } from '../api/services.js';
import { DEFAULT_PAGE_SIZE, pageParams, silencePage } from '../api/pages.js';
import { toError } from '../errors.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import {
  SessionStore,
  cookiesOf,
  identify,
  overTls,
  sameSecret,
  sessionCookie,
  tryToken,
  type ConsoleAuth,
  type Identity,
  type Viewer,
} from './auth.js';
import { clientAddress } from '../server/client-address.js';
import { BodyError, parseJsonText, readFormBody, type FormBody } from '../server/body.js';
import {
  bodyRefused,
  HttpError,
  httpError,
  httpErrorOf,
  invalid,
  type FieldIssue,
} from '../server/http-error.js';
import type { ConsoleConfig } from './config.js';
import {
  loadNotifications,
  loadOverview,
  loadService,
  previewSilence,
  visibleSilence,
  type ConsoleSources,
  type DeliveryFilters,
} from './data.js';
import { FeedStore, atomFeed } from './feeds.js';
import type { Html } from './html.js';
import {
  EMPTY_SILENCE_FORM,
  errorPage,
  loginPage,
  notificationsPage,
  overviewPage,
  servicePage,
  silencesPage,
  prefilledSilenceForm,
  type Frame,
  type NavKey,
  type SilenceForm,
} from './pages.js';
import {
  auditPage,
  channelFormOf,
  channelsPage,
  feedsPage,
  subscriptionFormOf,
  subscriptionsPage,
  unavailablePage,
  type ChannelFormValues,
  type SubscriptionFormValues,
} from './pages-self.js';
import type { SelfService } from './selfservice.js';
import { deadLetterClosed } from '../delivery/queue.js';

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

/** Largest accepted form body. */
export const MAX_FORM_BYTES = 64 * 1024;
const LOGIN_COOKIE = 'sw_login';

const NOTICES: Record<string, { kind: 'ok' | 'error' | 'info'; text: string }> = {
  retried: { kind: 'ok', text: 'The dead letter is queued for another try.' },
  'retry-missing': { kind: 'error', text: 'No such dead letter (already retried, or sent since).' },
  'retry-closed': {
    kind: 'error',
    text: 'Not retried: it opens something that has closed since, and sent now it would leave an alert open that nothing resolves.',
  },
  silenced: { kind: 'ok', text: 'Silence created.' },
  expired: { kind: 'ok', text: 'Silence expired.' },
  saved: { kind: 'ok', text: 'Saved.' },
  deleted: { kind: 'ok', text: 'Deleted.' },
  revoked: { kind: 'ok', text: 'Feed URL revoked.' },
  acknowledged: {
    kind: 'ok',
    text: 'Acknowledged: no more reminders of it for that subscription.',
  },
  'ack-kept': { kind: 'info', text: 'Acknowledged already: the first acknowledgement is kept.' },
  'ack-not-open': {
    kind: 'error',
    text: 'Not acknowledged: it is no longer open (or was never sent to that subscription).',
  },
};

export interface ConsoleOptions {
  sources: ConsoleSources;
  auth: ConsoleAuth;
  config: ConsoleConfig;
  selfService?: SelfService | undefined;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** A parsed form (or JSON) body: first value and all values of a field. */
interface Form {
  get(name: string): string | undefined;
  getAll(name: string): string[];
}

function formOf(params: URLSearchParams): Form {
  return {
    get: (n) => params.get(n) ?? undefined,
    getAll: (n) => params.getAll(n),
  };
}

function jsonForm(body: Record<string, unknown>): Form {
  const values = (n: string): string[] => {
    const v = body[n];
    if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
    if (v === undefined || v === null) return [];
    return [typeof v === 'string' ? v : JSON.stringify(v)];
  };
  return { get: (n) => values(n)[0], getAll: values };
}

/** A form or JSON body, read and bounded by the shared reader (src/server/body.ts). */
async function readForm(req: IncomingMessage): Promise<Form> {
  let body: FormBody;
  try {
    body = await readFormBody(req, MAX_FORM_BYTES);
  } catch (caught) {
    if (caught instanceof BodyError) throw bodyRefused(caught);
    throw caught;
  }
  if (body.type === 'form') return formOf(body.params);
  const parsed = body.value;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw httpError(400, 'expected a JSON object');
  return jsonForm(parsed as Record<string, unknown>);
}

function splitList(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function decodeSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw httpError(400, 'bad percent-encoding in the path');
  }
}

/**
 * A local path to go back to after the login (never another origin): printable ASCII only (a
 * browser drops tabs and line breaks from a Location, so `/\t/evil.example` would become
 * `//evil.example`), starting with one slash, no backslash.
 */
function localPath(next: string | undefined): string {
  if (
    next === undefined ||
    !/^\/[\x21-\x7e]*$/.test(next) ||
    next.startsWith('//') ||
    next.includes('\\')
  )
    return '/';
  return next;
}

const PAGE_PATHS = new Set([
  '/',
  '/login',
  '/logout',
  '/notifications',
  '/notifications/retry',
  '/acks',
  '/silences',
  '/silences/preview',
  '/subscriptions',
  '/channels',
  '/catalog',
  '/feeds',
  '/audit',
]);
const PAGE_PATTERNS = [
  /^\/services\/[^/]+$/,
  /^\/silences\/[^/]+\/expire$/,
  /^\/subscriptions\/[^/]+\/delete$/,
  /^\/channels\/[^/]+\/(delete|test)$/,
  /^\/feeds\/[^/]+\/(rotate|revoke)$/,
];

export function isConsolePath(path: string): boolean {
  return (
    PAGE_PATHS.has(path) ||
    path.startsWith('/static/') ||
    /^\/feeds\/[^/]+\.atom$/.test(path) ||
    PAGE_PATTERNS.some((p) => p.test(path))
  );
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  method: string;
  json: boolean;
  identity: Identity;
  viewer: Viewer;
}

export class Console {
  readonly sessions: SessionStore;
  readonly feeds: FeedStore;
  private readonly search: ServiceSearch;

  constructor(private readonly o: ConsoleOptions) {
    const { redis, keys } = o.sources;
    this.sessions = new SessionStore(redis, keys, o.config.sessionTtl, () => o.sources.now());
    this.feeds = new FeedStore(redis, keys, () => o.sources.now());
    this.search = new ServiceSearch(redis, keys);
  }

  /** Answers a console path (true), or leaves the request alone (false). */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    if (!this.o.config.enabled || !isConsolePath(path)) return false;
    const method = (req.method ?? 'GET').toUpperCase();
    const json = wantsJson(req, url);
    try {
      await this.route(req, res, url, method, json);
    } catch (caught) {
      // One error shape (src/server/http-error.ts); anything unexpected is a 500 `internal`.
      const err = httpErrorOf(caught);
      const { status, message } = err;
      if (status === 500)
        this.o.log.error(
          { event: 'console:error', path, err: toError(caught).message },
          'console request failed',
        );
      if (!res.headersSent) {
        // An oversized body may still be arriving: the connection is not kept for another request.
        if (status === 413) res.setHeader('connection', 'close');
        // The error's own headers: a limited bearer token's 429 carries `retry-after`.
        for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
        if (json) this.sendJson(res, status, err.body());
        else
          this.sendHtml(res, status, errorPage(this.frame(null, 'none', 'Error'), status, message));
      } else res.end();
    }
    return true;
  }

  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    method: string,
    json: boolean,
  ): Promise<void> {
    const path = url.pathname;
    if (path === '/static/console.css' || path === '/static/console.js') {
      const css = path.endsWith('.css');
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': css ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
        'cache-control': 'public, max-age=300',
      });
      res.end(method === 'HEAD' ? undefined : css ? CONSOLE_CSS : CONSOLE_JS);
      return;
    }
    if (path.startsWith('/static/')) throw httpError(404, `no such file: ${path}`);
    const atom = /^\/feeds\/([^/]+)\.atom$/.exec(path);
    if (atom !== null && (method === 'GET' || method === 'HEAD')) {
      await this.atom(req, res, decodeSegment(atom[1] ?? ''));
      return;
    }
    if (path === '/login') {
      await this.login(req, res, url, method, json);
      return;
    }
    const identity = await identify(req, {
      auth: this.o.auth,
      sessions: this.sessions,
      config: this.o.config,
    });
    if (identity === null) {
      if (json || method !== 'GET') {
        res.setHeader('www-authenticate', 'Bearer');
        this.sendJson(
          res,
          401,
          httpError(401, 'log in first (session cookie or bearer token)').body(),
        );
      } else {
        this.redirect(res, `/login?next=${encodeURIComponent(path + url.search)}`);
      }
      return;
    }
    const ctx: Ctx = { req, res, url, method, json, identity, viewer: identity.viewer };
    if (method === 'POST') {
      const form = await readForm(req);
      if (identity.method !== 'bearer') {
        const presented = form.get('csrf') ?? '';
        if (identity.csrf === null || !sameSecret(presented, identity.csrf)) {
          this.o.log.warn(
            { event: 'console:csrf_refused', path, viewer: identity.viewer.id },
            'console POST without a valid CSRF token refused',
          );
          throw httpError(403, 'missing or wrong CSRF token: reload the page and try again');
        }
      }
      await this.post(ctx, form);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('allow', 'GET, POST');
      throw httpError(405, `method ${method} not allowed here`);
    }
    await this.get(ctx);
  }

  // -------------------------------------------------------------------------------------------
  // Responses

  private sendHtml(
    res: ServerResponse,
    status: number,
    body: Html,
    headers: Record<string, string> = {},
  ): void {
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      ...headers,
    });
    res.end(body.text);
  }

  private sendJson(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      'content-type': 'application/json',
      'cache-control': 'no-store',
    });
    res.end(JSON.stringify(body));
  }

  private redirect(
    res: ServerResponse,
    location: string,
    headers: Record<string, string | string[]> = {},
  ): void {
    res.writeHead(303, { ...SECURITY_HEADERS, location, 'cache-control': 'no-store', ...headers });
    res.end();
  }

  private frame(identity: Identity | null, nav: NavKey, title: string, url?: URL): Frame {
    const notice =
      url === undefined ? undefined : ownValue(NOTICES, url.searchParams.get('notice') ?? '');
    return { identity, nav, title, ...(notice === undefined ? {} : { notice }) };
  }

  /** JSON for scripts, the page for browsers. */
  private page(ctx: Ctx, data: unknown, render: () => Html, status = 200): void {
    if (ctx.json) this.sendJson(ctx.res, status, data);
    else this.sendHtml(ctx.res, status, render());
  }

  /** After a POST: JSON for scripts, a redirect (with a notice) for browsers. */
  private done(ctx: Ctx, location: string, notice: string, data: unknown): void {
    if (ctx.json) this.sendJson(ctx.res, 200, data);
    else this.redirect(ctx.res, `${location}${location.includes('?') ? '&' : '?'}notice=${notice}`);
  }

  // -------------------------------------------------------------------------------------------
  // Login

  private async login(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    method: string,
    json: boolean,
  ): Promise<void> {
    const address = clientAddress(req, this.o.config.trustedProxies);
    if (method === 'GET' || method === 'HEAD') {
      const next = localPath(url.searchParams.get('next') ?? undefined);
      const token = randomBytes(24).toString('base64url');
      this.sendHtml(
        res,
        200,
        loginPage(this.frame(null, 'none', 'Log in'), { loginCsrf: token, next }),
        { 'set-cookie': this.loginCookie(req, token) },
      );
      return;
    }
    if (method !== 'POST') throw httpError(405, `method ${method} not allowed here`);
    const form = await readForm(req);
    const next = localPath(form.get('next'));
    const expected = cookiesOf(req).get(LOGIN_COOKIE);
    if (expected === undefined || !sameSecret(form.get('csrf') ?? '', expected))
      throw httpError(403, 'missing or wrong CSRF token: reload the login page and try again');
    const fresh = randomBytes(24).toString('base64url');
    const again = (status: number, error: string): void => {
      if (json) {
        this.sendJson(res, status, httpError(status, error).body());
        return;
      }
      this.sendHtml(
        res,
        status,
        loginPage(this.frame(null, 'none', 'Log in'), { loginCsrf: fresh, next, error }),
        { 'set-cookie': this.loginCookie(req, fresh) },
      );
    };
    const attempt = await tryToken(this.o.auth, (form.get('token') ?? '').trim(), address);
    if (attempt.outcome === 'limited') {
      const seconds = String(Math.ceil(attempt.retryAfterMs / 1000));
      res.setHeader('retry-after', seconds);
      again(429, `Too many failed attempts from this address; try again in ${seconds} s.`);
      return;
    }
    if (attempt.outcome === 'failed') {
      this.o.log.warn({ event: 'console:login_failed', address }, 'console login refused');
      again(401, 'That token is not valid (wrong, expired or revoked).');
      return;
    }
    const viewer = attempt.value;
    const session = await this.sessions.create(viewer);
    this.o.log.info(
      { event: 'console:login', viewer: viewer.id, team: viewer.team, address },
      'console login',
    );
    const cookies = [
      sessionCookie(session.id, session.ttlMs / 1000, overTls(req, this.o.config)),
      `${LOGIN_COOKIE}=; Path=/login; HttpOnly; SameSite=Strict; Max-Age=0`,
    ];
    if (json) {
      res.setHeader('set-cookie', cookies);
      this.sendJson(res, 200, { viewer, csrf: session.csrf });
      return;
    }
    this.redirect(res, next, { 'set-cookie': cookies });
  }

  private loginCookie(req: IncomingMessage, value: string): string {
    const secure = overTls(req, this.o.config) ? '; Secure' : '';
    return `${LOGIN_COOKIE}=${value}; Path=/login; HttpOnly; SameSite=Strict; Max-Age=3600${secure}`;
  }

  // -------------------------------------------------------------------------------------------
  // GET pages

  private async get(ctx: Ctx): Promise<void> {
    const { url, viewer } = ctx;
    const path = url.pathname;
    const q = (name: string): string | undefined => {
      const v = url.searchParams.get(name);
      return v === null || v === '' ? undefined : v;
    };
    const src = this.o.sources;
    if (path === '/') {
      const limit = Math.min(5000, Math.max(1, Number(q('limit') ?? 100) || 100));
      const data = await loadOverview(src, viewer, { subscription: q('subscription'), limit });
      this.page(ctx, { viewer, ...data }, () =>
        overviewPage(
          { ...this.frame(ctx.identity, 'overview', 'Overview', url), refresh: 5 },
          data,
        ),
      );
      return;
    }
    const service = /^\/services\/([^/]+)$/.exec(path);
    if (service !== null) {
      const feedId = decodeSegment(service[1] ?? '');
      const data = await loadService(src, viewer, feedId);
      if (data === null) throw httpError(404, `no service ${feedId} among the services you watch`);
      this.page(ctx, data, () =>
        servicePage({ ...this.frame(ctx.identity, 'overview', data.name, url), refresh: 5 }, data),
      );
      return;
    }
    if (path === '/notifications') {
      const filters: DeliveryFilters = {
        subscription: q('subscription'),
        channel: q('channel'),
        outcome: q('outcome'),
        kind: q('kind'),
        service: q('service'),
      };
      const data = await loadNotifications(src, viewer, filters);
      this.page(ctx, data, () =>
        notificationsPage(
          { ...this.frame(ctx.identity, 'notifications', 'Notifications', url), refresh: 5 },
          data,
        ),
      );
      return;
    }
    if (path === '/silences') {
      // A notification's "silence…" link prefills the form; the POST confirms (and re-checks).
      const form = prefilledSilenceForm(url.searchParams) ?? EMPTY_SILENCE_FORM;
      await this.silencesPage(ctx, form, null, [], 200);
      return;
    }
    if (path === '/catalog') {
      const query = q('query') ?? q('q') ?? '';
      const found = await this.search.search(query, 20);
      const data = {
        services: found.services.map((s) => ({ feedId: s.feedId, name: s.name })),
        total: found.total,
      };
      if (ctx.json) this.sendJson(ctx.res, 200, data);
      else this.redirect(ctx.res, `/subscriptions?q=${encodeURIComponent(query)}`);
      return;
    }
    if (path === '/subscriptions') {
      await this.subscriptionsPage(ctx, null, [], 200);
      return;
    }
    if (path === '/channels') {
      await this.channelsPage(ctx, null, [], null, 200);
      return;
    }
    if (path === '/feeds') {
      await this.feedsPage(ctx, null);
      return;
    }
    if (path === '/audit') {
      const self = this.o.selfService;
      const before = q('before');
      const entries = self === undefined ? null : await self.audit(viewer, { limit: 100, before });
      const last = entries?.[entries.length - 1];
      const next = entries !== null && entries.length === 100 ? (last?.id ?? null) : null;
      this.page(ctx, { entries: entries ?? [], available: entries !== null, next }, () =>
        auditPage(this.frame(ctx.identity, 'audit', 'Audit log', url), { entries, next }),
      );
      return;
    }
    throw httpError(405, `use POST for ${path}`);
  }

  // -------------------------------------------------------------------------------------------
  // POST actions

  private async post(ctx: Ctx, form: Form): Promise<void> {
    const path = ctx.url.pathname;
    const { viewer } = ctx;
    const src = this.o.sources;
    if (path === '/logout') {
      if (ctx.identity.sessionId !== null) await this.sessions.destroy(ctx.identity.sessionId);
      this.redirect(ctx.res, '/login', {
        'set-cookie': sessionCookie('', 0, overTls(ctx.req, this.o.config)),
      });
      return;
    }
    if (path === '/notifications/retry') {
      const id = form.get('id') ?? '';
      const visible = new Set((await src.subscriptionsFor(viewer)).map((s) => s.name));
      const dead = (await src.deliveries.deadLetters(1000)).find((d) => d.id === id);
      if (dead === undefined || !visible.has(dead.subscription)) {
        if (ctx.json) throw httpError(404, `no dead letter ${id}`);
        this.done(ctx, '/notifications', 'retry-missing', {});
        return;
      }
      const result = await src.retryDeadLetter(id);
      const ok = result.outcome === 'retried';
      this.o.log.info(
        {
          event: 'console:dead_letter_retried',
          deliveryId: id,
          viewer: viewer.id,
          ok,
          outcome: result.outcome,
        },
        `dead letter ${id} retried from the console: ${result.outcome}`,
      );
      if (result.outcome === 'closed' && ctx.json) throw httpError(409, deadLetterClosed(id));
      if (!ok && ctx.json) throw httpError(404, `no dead letter ${id}`);
      this.done(
        ctx,
        '/notifications',
        ok ? 'retried' : result.outcome === 'closed' ? 'retry-closed' : 'retry-missing',
        { retried: id },
      );
      return;
    }
    if (path === '/silences' || path === '/silences/preview') {
      await this.silence(ctx, form, path === '/silences/preview');
      return;
    }
    if (path === '/acks') {
      await this.acknowledge(ctx, form);
      return;
    }
    const expire = /^\/silences\/([^/]+)\/expire$/.exec(path);
    if (expire !== null) {
      const id = decodeSegment(expire[1] ?? '');
      const own = new Set((await src.subscriptionsFor(viewer)).map((s) => s.name));
      const silence = await src.silences.get(id);
      if (silence === undefined || !visibleSilence(silence, viewer, own))
        throw httpError(404, `no silence ${id}`);
      const expired = await src.silences.expire(id);
      this.o.log.info(
        { event: 'silence:expired', silenceId: id, viewer: viewer.id },
        `silence ${id} expired from the console`,
      );
      this.done(ctx, '/silences', 'expired', { silence: expired });
      return;
    }
    if (path === '/subscriptions') {
      await this.saveSubscription(ctx, form);
      return;
    }
    const subDelete = /^\/subscriptions\/([^/]+)\/delete$/.exec(path);
    if (subDelete !== null) {
      const self = this.selfService();
      const name = decodeSegment(subDelete[1] ?? '');
      await self.deleteSubscription(viewer, name);
      this.done(ctx, '/subscriptions', 'deleted', { deleted: name });
      return;
    }
    if (path === '/channels') {
      await this.saveChannel(ctx, form);
      return;
    }
    const channelAction = /^\/channels\/([^/]+)\/(delete|test)$/.exec(path);
    if (channelAction !== null) {
      const self = this.selfService();
      const name = decodeSegment(channelAction[1] ?? '');
      if (channelAction[2] === 'delete') {
        await self.deleteChannel(viewer, name);
        this.done(ctx, '/channels', 'deleted', { deleted: name });
        return;
      }
      const result = await self.testChannel(viewer, name);
      if (ctx.json) this.sendJson(ctx.res, 200, result);
      else await this.channelsPage(ctx, null, [], result, 200);
      return;
    }
    const feed = /^\/feeds\/([^/]+)\/(rotate|revoke)$/.exec(path);
    if (feed !== null) {
      const sub = decodeSegment(feed[1] ?? '');
      const visible = (await src.subscriptionsFor(viewer)).map((s) => s.name);
      if (!visible.includes(sub)) throw httpError(404, `no subscription ${sub}`);
      if (feed[2] === 'revoke') {
        await this.feeds.revoke(sub);
        this.done(ctx, '/feeds', 'revoked', { revoked: sub });
        return;
      }
      const secret = await this.feeds.rotate(sub);
      this.o.log.info(
        { event: 'console:feed_rotated', subscription: sub, viewer: viewer.id },
        `feed URL of ${sub} rotated`,
      );
      const feedUrl = `${this.origin(ctx.req)}/feeds/${secret}.atom`;
      if (ctx.json) this.sendJson(ctx.res, 200, { subscription: sub, url: feedUrl });
      else await this.feedsPage(ctx, { subscription: sub, url: feedUrl });
      return;
    }
    throw httpError(405, `GET only: ${path}`);
  }

  /**
   * Acknowledges an episode from the service page's button: the API's own path (the viewer's
   * tenancy, "only while open and told", the audit entry), then back to the service page.
   */
  private async acknowledge(ctx: Ctx, form: Form): Promise<void> {
    const self = this.o.selfService;
    if (self?.acknowledge === undefined)
      throw httpError(404, 'acknowledgements are not available here');
    const subscription = form.get('subscription') ?? '';
    const service = form.get('service') ?? '';
    const back = `/services/${encodeURIComponent(service)}`;
    let view: Awaited<ReturnType<NonNullable<SelfService['acknowledge']>>>;
    try {
      view = await self.acknowledge(ctx.viewer, subscription, {
        service,
        subject: form.get('subject') ?? '',
      });
    } catch (err) {
      // Closed meanwhile (or never told): back to the page, which no longer offers the button.
      if (err instanceof HttpError && err.status === 409 && !ctx.json) {
        this.done(ctx, back, 'ack-not-open', {});
        return;
      }
      throw err;
    }
    this.done(ctx, back, view.created ? 'acknowledged' : 'ack-kept', view);
  }

  private selfService(): SelfService {
    const self = this.o.selfService;
    if (self === undefined) throw httpError(404, 'the subscriptions API is not available');
    return self;
  }

  private origin(req: IncomingMessage): string {
    const host = req.headers.host ?? 'localhost';
    const safeHost = /^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : 'localhost';
    return `${overTls(req, this.o.config) ? 'https' : 'http'}://${safeHost}`;
  }

  // -------------------------------------------------------------------------------------------
  // Silences

  private silenceForm(form: Form): SilenceForm {
    return {
      services: form.get('services') ?? '',
      events: form.getAll('events'),
      subscriptions: form.getAll('subscriptions'),
      channels: form.getAll('channels'),
      duration: form.get('duration') ?? '',
      comment: form.get('comment') ?? '',
    };
  }

  private async silence(ctx: Ctx, form: Form, previewOnly: boolean): Promise<void> {
    const src = this.o.sources;
    const { viewer } = ctx;
    const visible = await src.subscriptionsFor(viewer);
    const own = visible.map((s) => s.name);
    const values = this.silenceForm(form);
    const services = splitList(values.services);
    let subscriptions = values.subscriptions;
    const issues: FieldIssue[] = [];
    if (viewer.team !== null) {
      if (subscriptions.length === 0) subscriptions = own;
      const foreign = subscriptions.filter((s) => !own.includes(s));
      if (foreign.length > 0)
        issues.push({
          field: 'matchers.subscriptions',
          message: `not your team's: ${foreign.join(', ')}`,
        });
      if (subscriptions.length === 0)
        issues.push({
          field: 'matchers.subscriptions',
          message: 'your team has no subscriptions',
        });
    }
    const matchers: Record<string, string[]> = {};
    if (services.length > 0) matchers.services = services;
    if (values.events.length > 0) matchers.events = values.events;
    if (subscriptions.length > 0) matchers.subscriptions = subscriptions;
    if (values.channels.length > 0) matchers.channels = values.channels;
    const request = {
      matchers,
      duration: values.duration.trim(),
      author: viewer.label ?? viewer.id,
      comment: values.comment,
    };
    let draft: ReturnType<typeof parseSilenceRequest> | null = null;
    try {
      draft = parseSilenceRequest(request, src.now());
    } catch (err) {
      if (!(err instanceof SilenceValidationError)) throw err;
      issues.push(...err.issues.map((i) => ({ field: i.path, message: i.message })));
    }
    if (issues.length > 0 || draft === null) {
      if (ctx.json) {
        this.sendJson(ctx.res, 400, invalid(issues).body());
        return;
      }
      const lines = issues.map((i) => `${i.field}: ${i.message}`);
      await this.silencesPage(ctx, values, null, lines, 400);
      return;
    }
    const preview = await previewSilence(src, visible, draft.matchers);
    if (previewOnly) {
      if (ctx.json) this.sendJson(ctx.res, 200, { matchers: draft.matchers, routes: preview });
      else await this.silencesPage(ctx, values, preview, [], 200);
      return;
    }
    // Through the API's store when there is one: the team's silence quota is checked there.
    const self = this.o.selfService;
    let silence: Silence;
    try {
      silence =
        self?.createSilence === undefined
          ? await src.silences.add(request)
          : await self.createSilence(ctx.viewer, draft);
    } catch (err) {
      if (!(err instanceof HttpError) || err.status >= 500) throw err;
      if (ctx.json) this.sendJson(ctx.res, err.status, err.body());
      else await this.silencesPage(ctx, values, null, [err.message], err.status);
      return;
    }
    this.o.log.info(
      {
        event: 'silence:created',
        silenceId: silence.id,
        author: silence.author,
        matchers: silence.matchers,
        viewer: viewer.id,
      },
      `silence ${silence.id} created from the console`,
    );
    this.done(ctx, '/silences', 'silenced', { silence, routes: preview });
  }

  private async silencesPage(
    ctx: Ctx,
    form: SilenceForm,
    preview: Awaited<ReturnType<typeof previewSilence>> | null,
    issues: string[],
    status: number,
  ): Promise<void> {
    const src = this.o.sources;
    const visible = await src.subscriptionsFor(ctx.viewer);
    const own = new Set(visible.map((s) => s.name));
    const now = src.now();
    // One page (`?cursor=` from the page's "Next page" link), as /api/v1/silences pages.
    let params: ReturnType<typeof pageParams>;
    try {
      params = pageParams(ctx.url);
    } catch {
      params = { limit: DEFAULT_PAGE_SIZE, after: undefined };
    }
    const page = silencePage(
      (await src.silences.list({ includeExpired: true })).filter((s) =>
        visibleSilence(s, ctx.viewer, own),
      ),
      params,
      now,
    );
    const silences: Silence[] = page.items;
    const next = page.next;
    this.page(
      ctx,
      { silences, preview, issues },
      () =>
        silencesPage(this.frame(ctx.identity, 'silences', 'Silences', ctx.url), {
          silences,
          now,
          subscriptions: [...own],
          channels: [...new Set(visible.flatMap((s) => s.channels))].sort(),
          form,
          preview,
          issues,
          team: ctx.viewer.team !== null,
          next,
        }),
      status,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Subscriptions and channels (through the API's stores)

  private async subscriptionsPage(
    ctx: Ctx,
    form: SubscriptionFormValues | null,
    issues: string[],
    status: number,
  ): Promise<void> {
    const self = this.o.selfService;
    const frame = this.frame(ctx.identity, 'subscriptions', 'Subscriptions', ctx.url);
    if (self === undefined) {
      this.page(ctx, { available: false }, () => unavailablePage(frame, 'Subscriptions'));
      return;
    }
    const [subscriptions, channels] = await Promise.all([
      self.listSubscriptions(ctx.viewer),
      self.listChannels(ctx.viewer),
    ]);
    const query = ctx.url.searchParams.get('q');
    const search =
      query === null || query.trim() === ''
        ? null
        : { query, services: (await self.searchServices(query, 20)).services };
    const edit = ctx.url.searchParams.get('edit');
    const editing =
      edit === null
        ? null
        : (subscriptions.find((s) => s.name === edit && s.source === 'api') ?? null);
    this.page(
      ctx,
      { subscriptions, issues },
      () =>
        subscriptionsPage(frame, {
          subscriptions,
          channels: channels.map((c) => c.name),
          form: form ?? subscriptionFormOf(editing),
          issues,
          search,
          team: ctx.viewer.team,
        }),
      status,
    );
  }

  /**
   * Runs a form's save. A refusal (an HttpError below 500) answers with the form again and its
   * issues (a JSON client gets them as JSON); anything else is thrown on. True when it saved.
   */
  private async saveForm(
    ctx: Ctx,
    save: () => Promise<void>,
    again: (issues: string[], status: number) => Promise<void>,
  ): Promise<boolean> {
    try {
      await save();
      return true;
    } catch (err) {
      if (!(err instanceof HttpError) || err.status >= 500) throw err;
      if (ctx.json) {
        this.sendJson(ctx.res, err.status, err.body());
      } else {
        const found = err.fieldIssues();
        const issues =
          found.length > 0 ? found.map((i) => `${i.field}: ${i.message}`) : [err.message];
        await again(issues, err.status);
      }
      return false;
    }
  }

  private async saveSubscription(ctx: Ctx, form: Form): Promise<void> {
    const self = this.selfService();
    const values: SubscriptionFormValues = {
      mode: form.get('mode') === 'put' ? 'put' : 'create',
      name: (form.get('name') ?? '').trim(),
      services: form.get('services') ?? '',
      categories: form.get('categories') ?? '',
      events: form.getAll('events'),
      channels: form.getAll('channels'),
      group: (form.get('group') ?? '').trim(),
      repeat: (form.get('repeat') ?? '').trim(),
      team: (form.get('team') ?? '').trim(),
    };
    const body: Record<string, unknown> = {
      name: values.name,
      services: splitList(values.services),
      categories: splitList(values.categories),
      channels: values.channels,
    };
    if (values.events.length > 0) body.events = values.events;
    if (values.group !== '') body.group = values.group;
    if (values.repeat !== '') body.repeat = values.repeat;
    if (values.team !== '' && ctx.viewer.team === null) body.team = values.team;
    const saved = await this.saveForm(
      ctx,
      async () => {
        await self.putSubscription(ctx.viewer, body, values.mode);
      },
      (issues, status) => this.subscriptionsPage(ctx, values, issues, status),
    );
    if (!saved) return;
    this.o.log.info(
      { event: 'console:subscription_saved', name: values.name, viewer: ctx.viewer.id },
      `subscription ${values.name} saved from the console`,
    );
    this.done(ctx, '/subscriptions', 'saved', { saved: values.name });
  }

  private async channelsPage(
    ctx: Ctx,
    form: ChannelFormValues | null,
    issues: string[],
    result: { ok: boolean; message: string } | null,
    status: number,
  ): Promise<void> {
    const self = this.o.selfService;
    const frame = this.frame(ctx.identity, 'channels', 'Channels', ctx.url);
    if (self === undefined) {
      this.page(ctx, { available: false }, () => unavailablePage(frame, 'Channels'));
      return;
    }
    const channels = await self.listChannels(ctx.viewer);
    const previewName = ctx.url.searchParams.get('preview');
    const event = ctx.url.searchParams.get('event') ?? 'incident.opened';
    let preview: { name: string; event: string; text: string } | null = null;
    if (previewName !== null && ctx.method === 'GET') {
      if (!isEventKind(event)) throw httpError(400, 'event: unknown event kind');
      preview = {
        name: previewName,
        event,
        text: await self.previewChannel(ctx.viewer, previewName, event),
      };
    }
    const edit = ctx.url.searchParams.get('edit');
    const editing =
      edit === null ? null : (channels.find((c) => c.name === edit && c.source === 'api') ?? null);
    this.page(
      ctx,
      { channels, issues, preview, result },
      () =>
        channelsPage(frame, {
          channels,
          types: self.channelTypes(),
          form: form ?? channelFormOf(editing),
          issues,
          preview,
          result,
          admin: ctx.viewer.team === null,
        }),
      status,
    );
  }

  private async saveChannel(ctx: Ctx, form: Form): Promise<void> {
    const self = this.selfService();
    const values: ChannelFormValues = {
      mode: form.get('mode') === 'put' ? 'put' : 'create',
      name: (form.get('name') ?? '').trim(),
      type: form.get('type') ?? '',
      fields: form.get('fields') ?? '{}',
      team: (form.get('team') ?? '').trim(),
    };
    let fields: unknown;
    try {
      // Bounded like a body: a value nested too deep is never built.
      fields = parseJsonText(values.fields.trim() === '' ? '{}' : values.fields);
    } catch (caught) {
      if (caught instanceof BodyError && caught.problem === 'too_deep')
        throw httpError(400, `fields: ${caught.message}`);
      fields = null;
    }
    const saved = await this.saveForm(
      ctx,
      async () => {
        if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
          throw invalid([
            { field: 'fields', message: 'expected a JSON object of the channel’s fields' },
          ]);
        await self.putChannel(
          ctx.viewer,
          {
            ...(fields as Record<string, unknown>),
            name: values.name,
            type: values.type,
            ...(values.team !== '' && ctx.viewer.team === null ? { team: values.team } : {}),
          },
          values.mode,
        );
      },
      (issues, status) => this.channelsPage(ctx, values, issues, null, status),
    );
    if (!saved) return;
    this.o.log.info(
      { event: 'console:channel_saved', name: values.name, viewer: ctx.viewer.id },
      `channel ${values.name} saved from the console`,
    );
    this.done(ctx, '/channels', 'saved', { saved: values.name });
  }

  // -------------------------------------------------------------------------------------------
  // Feeds

  private async feedsPage(
    ctx: Ctx,
    created: { subscription: string; url: string } | null,
  ): Promise<void> {
    const subscriptions = (await this.o.sources.subscriptionsFor(ctx.viewer)).map((s) => s.name);
    const all = await this.feeds.list();
    const feeds = new Map([...all].filter(([s]) => subscriptions.includes(s)));
    this.page(ctx, { subscriptions, feeds: Object.fromEntries(feeds), created }, () =>
      feedsPage(this.frame(ctx.identity, 'feeds', 'Feeds', ctx.url), {
        subscriptions,
        feeds,
        created,
      }),
    );
  }

  private async atom(req: IncomingMessage, res: ServerResponse, secret: string): Promise<void> {
    const sub = await this.feeds.lookup(secret);
    if (sub === null) throw httpError(404, 'no such feed');
    const src = this.o.sources;
    const now = src.now();
    const items = await src.noise.recentRoutedLog(now - 40 * 86_400_000, 5000);
    const transitions: Transition[] = [];
    for (const item of items) {
      if (item.subscriptions.includes(sub)) transitions.push(item.t);
      if (transitions.length >= 50) break;
    }
    const origin = this.origin(req);
    const body = atomFeed({
      subscription: sub,
      selfUrl: `${origin}/feeds/${secret}.atom`,
      consoleUrl: `${origin}/`,
      transitions,
      now,
    });
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'application/atom+xml; charset=utf-8',
      'cache-control': 'private, max-age=60',
    });
    res.end(body);
  }
}

function wantsJson(req: IncomingMessage, url: URL): boolean {
  const format = url.searchParams.get('format');
  if (format === 'json') return true;
  if (format === 'html') return false;
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}
