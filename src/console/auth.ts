/**
 * Who is looking at the console, and the login sessions.
 *
 * A request is authenticated, in this order, by
 * 1. `Authorization: Bearer <token>` (scripts; no cookie, so no CSRF token needed);
 * 2. the trusted proxy's user header (`proxyAuth`, only from a `trustedProxies` address), mapped
 *    to a team; its CSRF token is an HMAC of the user under a per-installation secret;
 * 3. the session cookie: a login exchanged a token for a random session id (HttpOnly,
 *    SameSite=Strict, Secure over TLS). Sessions live in Redis
 *    (`console:session:<sha256 of the id>` → viewer, CSRF token; expiring with the session), so
 *    every replica knows them; only the hash of the id is stored.
 *
 * The token check itself is the seam (`ConsoleAuth`): today's admin token, and #13's team tokens.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sameSecret, sha256 } from '../server/secret-compare.js';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { decode, encode, zodShape } from '../redis/stored.js';
import type { ConsoleConfig } from './config.js';
import { ownValue } from '../config/fields.js';
import { clientAddress, socketAddress } from '../server/client-address.js';
import type { Attempt } from '../api/tokens.js';
import { httpError } from '../server/http-error.js';

/** Who is looking: `team` null means an admin (sees everything). */
export interface Viewer {
  id: string;
  team: string | null;
  /** A name to show and to sign silences with (default: the id). */
  label?: string;
  /**
   * What ties a session to the secret it was opened with, when the token has no id of its own
   * (the config file's admin token: a digest of it), so that a rotated secret ends the sessions
   * opened with the old one.
   */
  proof?: string;
}

/** The seam an API with tokens plugs into. */
export interface ConsoleAuth {
  /** The viewer a bearer token stands for, or null. */
  authenticate(token: string, address: string): Promise<Viewer | null>;
  /** Whether a session's viewer still holds (its token not revoked or expired); default yes. */
  stillValid?(viewer: Viewer): Promise<boolean>;
  /**
   * `check` of a presented token under the failed-attempt limit of `address`, in one atomic
   * step with the count (`TokenStore.attempt`: over the limit the token is never checked);
   * default: no limit.
   */
  limit?(
    address: string,
    presented: string,
    check: (token: string) => Promise<Viewer | null>,
  ): Promise<Attempt<Viewer>>;
}

/** A token's viewer, by `auth` under its failed-attempt limit (the bearer header and the login). */
export function tryToken(
  auth: ConsoleAuth,
  token: string,
  address: string,
): Promise<Attempt<Viewer>> {
  const check = (t: string): Promise<Viewer | null> => auth.authenticate(t, address);
  if (auth.limit !== undefined) return auth.limit(address, token, check);
  return check(token).then((viewer) =>
    viewer === null ? { outcome: 'failed' } : { outcome: 'ok', value: viewer },
  );
}

export type AuthMethod = 'bearer' | 'proxy' | 'session';

export interface Identity {
  viewer: Viewer;
  method: AuthMethod;
  /** The CSRF token forms must carry (absent for bearer requests, which carry no cookie). */
  csrf: string | null;
  /** The session id (session logins only). */
  sessionId: string | null;
}

export const SESSION_COOKIE = 'sw_session';

interface Session {
  viewer: Viewer;
  csrf: string;
  createdAt: number;
  expiresAt: number;
}

const SESSION = zodShape<Session>(
  'console:session',
  z.object({
    viewer: z.object({
      id: z.string(),
      team: z.string().nullable(),
      label: z.string().optional(),
      proof: z.string().optional(),
    }),
    csrf: z.string(),
    createdAt: z.number(),
    expiresAt: z.number(),
  }) as z.ZodType<Session>,
);

/** Constant-time string equality (hashed to equal length first): the ops server's one helper. */
export { sameSecret };

/** Cookies of a request (first value of each name). */
export function cookiesOf(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    if (!out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

export function bearerToken(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization?.trim() ?? '');
  return match?.[1];
}

function fromTrustedProxy(req: IncomingMessage, config: ConsoleConfig): boolean {
  return config.trustedProxies.includes(socketAddress(req));
}

/** Did the request reach us over TLS (directly, or through a trusted proxy that says so)? */
export function overTls(req: IncomingMessage, config: ConsoleConfig): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return true;
  const proto = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https' && fromTrustedProxy(req, config);
}

/** The `Set-Cookie` value of a session (or of its removal, `maxAgeS` 0). */
export function sessionCookie(value: string, maxAgeS: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${String(Math.max(0, Math.floor(maxAgeS)))}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export class SessionStore {
  private secret: Buffer | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private key(id: string): string {
    return this.keys.key('console', 'session', sha256(id).toString('hex'));
  }

  async create(viewer: Viewer): Promise<{ id: string; csrf: string; ttlMs: number }> {
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    const now = this.now();
    const session: Session = { viewer, csrf, createdAt: now, expiresAt: now + this.ttlMs };
    await this.redis.set(this.key(id), encode(SESSION, session), 'PX', this.ttlMs);
    return { id, csrf, ttlMs: this.ttlMs };
  }

  async get(id: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const text = await this.redis.get(this.key(id));
    const session = text === null ? undefined : decode(SESSION, text);
    if (session === undefined || session.expiresAt <= this.now()) return null;
    return session;
  }

  async destroy(id: string): Promise<void> {
    await this.redis.del(this.key(id));
  }

  /** A per-installation secret (shared by replicas through Redis) for stateless CSRF tokens. */
  async hmacSecret(): Promise<Buffer> {
    if (this.secret !== null) return this.secret;
    const key = this.keys.key('console', 'secret');
    await this.redis.set(key, randomBytes(32).toString('base64'), 'NX');
    const text = await this.redis.get(key);
    this.secret = Buffer.from(text ?? randomBytes(32).toString('base64'), 'base64');
    return this.secret;
  }

  async proxyCsrf(user: string): Promise<string> {
    return createHmac('sha256', await this.hmacSecret())
      .update(`csrf:proxy:${user}`)
      .digest('base64url');
  }
}

/**
 * Resolves the identity of a request (null: not logged in). A bearer token from an address over
 * the failed-attempt limit throws a 429 `HttpError` carrying `retry-after` (never checked).
 */
export async function identify(
  req: IncomingMessage,
  o: { auth: ConsoleAuth; sessions: SessionStore; config: ConsoleConfig },
): Promise<Identity | null> {
  const address = clientAddress(req, o.config.trustedProxies);
  const token = bearerToken(req);
  if (token !== undefined) {
    const attempt = await tryToken(o.auth, token, address);
    if (attempt.outcome === 'limited') {
      // Over the failed-attempt limit: refused unchecked, as /api/v1 and /admin/* answer it.
      const seconds = String(Math.ceil(attempt.retryAfterMs / 1000));
      throw httpError(
        429,
        `too many failed attempts from this address; try again in ${seconds} s`,
        {
          'retry-after': seconds,
        },
      );
    }
    if (attempt.outcome !== 'ok') return null;
    return { viewer: attempt.value, method: 'bearer', csrf: null, sessionId: null };
  }
  const proxy = o.config.proxyAuth;
  if (proxy !== undefined && fromTrustedProxy(req, o.config)) {
    const raw = ownValue(req.headers, proxy.header.toLowerCase());
    const user = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (user !== undefined && user !== '') {
      const admin = proxy.admins.includes(user);
      const team = ownValue(proxy.teams, user);
      if (!admin && team === undefined) return null;
      return {
        viewer: { id: `proxy:${user}`, team: admin ? null : (team ?? null), label: user },
        method: 'proxy',
        csrf: await o.sessions.proxyCsrf(user),
        sessionId: null,
      };
    }
  }
  const sid = cookiesOf(req).get(SESSION_COOKIE);
  if (sid === undefined) return null;
  const session = await o.sessions.get(sid);
  if (session === null) return null;
  if (o.auth.stillValid !== undefined && !(await o.auth.stillValid(session.viewer))) {
    await o.sessions.destroy(sid);
    return null;
  }
  return { viewer: session.viewer, method: 'session', csrf: session.csrf, sessionId: sid };
}
