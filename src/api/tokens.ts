/**
 * API tokens. The config file's `server.adminToken` is the first admin token; with it an admin
 * creates team tokens (`POST /api/v1/tokens`), each shown once:
 *
 *     swt_<id: 16 hex>_<secret: 43 base64url>
 *
 * Only the SHA-256 of a whole token is stored, in `{prefix}:api:tokens` (id → versioned JSON);
 * a presented token is looked up by its id and compared hash to hash in constant time. Tokens may
 * expire (`expiresAt`) and be revoked (kept, marked, for the listing, then dropped after a week).
 * Failed attempts are counted per client address in Redis (shared by replicas), in one atomic
 * step with the check (`attempt`, script auth-attempt.lua): a slot is taken before a token is
 * checked, kept as a failure when the token is wrong and freed when it is right, so a right token
 * never counts, and however many requests arrive at once at most `AUTH_FAILURE_LIMIT` wrong
 * tokens are checked per address and window. Past the limit every attempt from that address,
 * right token or not, is refused unchecked with 429 until the window ends. A request presenting
 * no token checks nothing and is not counted.
 */
import { randomBytes } from 'node:crypto';
import { sameDigest, sha256 } from '../server/secret-compare.js';
import type { IncomingMessage } from 'node:http';
import type { Keys, RedisClient } from '../redis.js';
import type { ChainableCommander } from 'ioredis';
import { storedBytes, type QuotaCheck } from './quotas.js';
import { countCorrupt, decode, encode } from '../redis/stored.js';
import { scripts } from '../redis/scripts.js';
import { AuditLog, type AuditEntry } from './audit.js';
import { ApiError, invalid } from './errors.js';
import { nameSchema, STORED_TOKEN, type StoredToken } from './model.js';
import { LATEST_TIME_MS } from '../silences/model.js';

/** Who is calling: a token and what it may do. */
export interface Actor {
  tokenId: string;
  /** The token's team; null for the config file's admin token. */
  team: string | null;
  admin: boolean;
  /** The client address (audit, rate limits). */
  address: string;
}

export const CONFIG_ADMIN_TOKEN_ID = 'config:adminToken';
const TOKEN = /^swt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
/** Revoked and expired tokens stay listable this long. */
export const TOKEN_RETENTION_MS = 7 * 24 * 3_600_000;
const RETENTION_MS = TOKEN_RETENTION_MS;

export const AUTH_FAILURE_LIMIT = 10;
export const AUTH_FAILURE_WINDOW_MS = 60_000;
/**
 * While failures and checks in flight fill the limit (but failures alone do not), an attempt
 * waits this long at most for a slot to come free (a burst of right tokens from one address
 * waits rather than being refused), then is answered 429 with `Retry-After: 1`.
 */
const SLOT_WAIT_MS = 2_000;
/** How often a waiting attempt asks again when no check of this process frees a slot. */
const SLOT_POLL_MS = 100;
/**
 * Requests of one address that may wait for a slot in this process at once; more are a 429 at
 * once (each waiter asks Redis every SLOT_POLL_MS: a flood of valid tokens must not turn into a
 * flood of script calls).
 */
const MAX_SLOT_WAITERS = 256;

/**
 * What one attempt came to: the check's value, a wrong token (counted), or refused unchecked
 * (`retryAfterMs` until the address may try again).
 */
export type Attempt<T> =
  | { outcome: 'ok'; value: T }
  | { outcome: 'failed' }
  | { outcome: 'limited'; retryAfterMs: number };

/** The bearer token of a request, or undefined. */
export function bearerOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  return match?.[1];
}

/** What the API returns about a token (never its hash). */
export interface TokenView {
  id: string;
  team: string;
  admin: boolean;
  createdAt: string;
  createdBy: string;
  expiresAt: string | null;
  revokedAt: string | null;
  state: 'active' | 'expired' | 'revoked';
}

/** A stored time as ISO 8601 (one stored before later ones were refused: the latest allowed). */
const iso = (ms: number | null): string | null =>
  ms === null ? null : new Date(Math.min(ms, LATEST_TIME_MS)).toISOString();

export class TokenStore {
  private readonly key: string;
  private readonly attemptsKey: (address: string) => string;
  /** Attempts of this process waiting for a slot of an address, woken when one of its own frees. */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** A hash compared against when the id is unknown, so a miss costs what a hit does. */
  private readonly decoy = sha256(randomBytes(32).toString('hex'));

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    private readonly audit: AuditLog,
    private readonly now: () => number = Date.now,
    private readonly limits = { failures: AUTH_FAILURE_LIMIT, windowMs: AUTH_FAILURE_WINDOW_MS },
  ) {
    this.key = keys.key('api', 'tokens');
    this.attemptsKey = (address) => keys.key('api', 'auth-attempts', address);
  }

  stateOf(t: StoredToken, at = this.now()): TokenView['state'] {
    if (t.revokedAt !== null) return 'revoked';
    if (t.expiresAt !== null && t.expiresAt <= at) return 'expired';
    return 'active';
  }

  view(t: StoredToken): TokenView {
    return {
      id: t.id,
      team: t.team,
      admin: t.admin,
      createdAt: iso(t.createdAt) ?? '',
      createdBy: t.createdBy,
      expiresAt: iso(t.expiresAt),
      revokedAt: iso(t.revokedAt),
      state: this.stateOf(t),
    };
  }

  /**
   * One authentication attempt from `address` under the failed-attempt limit: `check` runs on
   * `presented` only in a slot taken first (auth-attempt.lua); a null from it is a failure and
   * keeps the slot as one, a value (or a throw) frees it. An address over the limit is refused
   * without `check` running. No token presented: a failure, nothing checked, nothing counted.
   * The one path of the API, `/admin/*` and the console.
   */
  async attempt<T>(
    address: string,
    presented: string | undefined,
    check: (token: string) => Promise<T | null>,
  ): Promise<Attempt<T>> {
    if (presented === undefined || presented === '') return { outcome: 'failed' };
    const taken = await this.takeSlot(address);
    if (taken !== 0) return { outcome: 'limited', retryAfterMs: taken };
    let value: T | null;
    try {
      value = await check(presented);
    } catch (err) {
      await this.giveBack(address, 'free');
      throw err;
    }
    await this.giveBack(address, value === null ? 'fail' : 'free');
    return value === null ? { outcome: 'failed' } : { outcome: 'ok', value };
  }

  /** `authenticate` under the failed-attempt limit (`attempt`). */
  authenticateLimited(
    presented: string | undefined,
    adminToken: string | undefined,
    address: string,
  ): Promise<Attempt<Actor>> {
    return this.attempt(address, presented, (token) =>
      this.authenticate(token, adminToken, address),
    );
  }

  /** Takes a check slot of `address`: 0 when taken, else ms until it may try again. */
  private async takeSlot(address: string): Promise<number> {
    // A real wait, timed by the wall clock (not the injected one, which tests may hold still).
    const deadline = Date.now() + SLOT_WAIT_MS;
    for (;;) {
      const reply = await scripts(this.redis).authAttempt(
        [this.attemptsKey(address)],
        ['take', String(this.limits.failures), String(this.limits.windowMs)],
      );
      const [code, ttl] = Array.isArray(reply) ? reply : [0, 1];
      if (code === 1) return 0;
      if (code === 0) return Math.max(ttl, 1);
      // Busy: checks in flight may free a slot (or become the failures that close the window).
      if (Date.now() >= deadline) return 1000;
      if ((this.waiting.get(address)?.size ?? 0) >= MAX_SLOT_WAITERS) return 1000;
      await this.slotFreed(address);
    }
  }

  private async giveBack(address: string, step: 'fail' | 'free'): Promise<void> {
    try {
      await scripts(this.redis).authAttempt(
        [this.attemptsKey(address)],
        [step, String(this.limits.failures), String(this.limits.windowMs)],
      );
    } finally {
      const waiters = this.waiting.get(address);
      this.waiting.delete(address);
      for (const wake of waiters ?? []) wake();
    }
  }

  /** Resolves when a check of this process from `address` ends, or after `SLOT_POLL_MS`. */
  private slotFreed(address: string): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.waiting.get(address) ?? new Set<() => void>();
      this.waiting.set(address, waiters);
      const wake = (): void => {
        clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, SLOT_POLL_MS);
      waiters.add(wake);
    });
  }

  /**
   * The actor a presented token stands for, or null (unknown, wrong, expired or revoked). Every
   * comparison is between SHA-256 digests in constant time (`sameDigest`).
   */
  async authenticate(
    presented: string | undefined,
    adminToken: string | undefined,
    address: string,
  ): Promise<Actor | null> {
    if (presented === undefined || presented === '') return null;
    const digest = sha256(presented);
    if (adminToken !== undefined && adminToken !== '') {
      if (sameDigest(digest, sha256(adminToken))) {
        return { tokenId: CONFIG_ADMIN_TOKEN_ID, team: null, admin: true, address };
      }
    }
    const match = TOKEN.exec(presented);
    const text = match?.[1] === undefined ? null : await this.redis.hget(this.key, match[1]);
    const stored = text === null ? undefined : decode(STORED_TOKEN, text);
    if (text !== null && stored === undefined) countCorrupt(STORED_TOKEN.kind);
    const expected = stored === undefined ? this.decoy : Buffer.from(stored.hash, 'hex');
    const equal = sameDigest(digest, expected);
    if (!equal || stored === undefined || this.stateOf(stored) !== 'active') return null;
    return { tokenId: stored.id, team: stored.team, admin: stored.admin, address };
  }

  /** Creates a token; the only time its text exists outside the caller. */
  async create(
    actor: Actor,
    body: unknown,
  ): Promise<{
    id: string;
    team: string;
    admin: boolean;
    expiresAt: string | null;
    token: string;
  }> {
    const request = parseTokenRequest(body, this.now());
    const id = randomBytes(8).toString('hex');
    const token = `swt_${id}_${randomBytes(32).toString('base64url')}`;
    const stored: StoredToken = {
      id,
      team: request.team,
      admin: request.admin,
      hash: sha256(token).toString('hex'),
      createdAt: this.now(),
      createdBy: actor.tokenId,
      expiresAt: request.expiresAt,
      revokedAt: null,
    };
    const text = encode(STORED_TOKEN, stored);
    const entry = this.entry(actor, stored, 'create', [
      { field: 'team', to: stored.team },
      { field: 'admin', to: stored.admin },
      { field: 'expiresAt', to: iso(stored.expiresAt) },
    ]);
    const apply = (m: ChainableCommander): void => {
      m.hset(this.key, id, text);
      this.audit.append(m, entry);
    };
    if (this.counted === undefined) {
      const m = this.redis.multi();
      apply(m);
      await exec(m);
    } else {
      // Only admins create tokens: the team's token quota bounds them too (quotas.ts).
      await this.counted(
        {
          team: stored.team,
          kind: 'token',
          key: id,
          bytes: storedBytes(text),
          enforce: true,
          label: 'this token',
        },
        apply,
      );
    }
    return { id, team: stored.team, admin: stored.admin, expiresAt: iso(stored.expiresAt), token };
  }

  /**
   * The quota-checked write token creation goes through (`ApiStore.countedWrite`, set by
   * TenancyApi); unset, tokens are written unchecked.
   */
  counted:
    ((check: QuotaCheck, apply: (m: ChainableCommander) => void) => Promise<void>) | undefined;

  /** Every token (revoked and expired ones for a week), oldest first. */
  async list(): Promise<TokenView[]> {
    const all = await this.redis.hgetall(this.key);
    const now = this.now();
    const out: StoredToken[] = [];
    const stale: string[] = [];
    for (const [id, text] of Object.entries(all)) {
      const t = decode(STORED_TOKEN, text);
      if (t === undefined) {
        countCorrupt(STORED_TOKEN.kind);
        continue;
      }
      const ended =
        t.revokedAt ?? (t.expiresAt !== null && t.expiresAt <= now ? t.expiresAt : null);
      if (ended !== null && ended + RETENTION_MS <= now) stale.push(id);
      else out.push(t);
    }
    if (stale.length > 0) await this.redis.hdel(this.key, ...stale);
    return out
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map((t) => this.view(t));
  }

  /** Revokes a token at once (every replica: the next request reads it). 404 for an unknown id. */
  async revoke(actor: Actor, id: string): Promise<TokenView> {
    const text = /^[0-9a-f]{16}$/.test(id) ? await this.redis.hget(this.key, id) : null;
    const stored = text === null ? undefined : decode(STORED_TOKEN, text);
    if (stored === undefined)
      throw new ApiError(404, 'not_found', `no token ${JSON.stringify(id)}`);
    if (stored.revokedAt !== null) return this.view(stored);
    const next: StoredToken = { ...stored, revokedAt: this.now() };
    const m = this.redis.multi().hset(this.key, id, encode(STORED_TOKEN, next));
    this.audit.append(
      m,
      this.entry(actor, next, 'revoke', [{ field: 'revokedAt', to: iso(next.revokedAt) }]),
    );
    await exec(m);
    return this.view(next);
  }

  private entry(
    actor: Actor,
    t: StoredToken,
    action: AuditEntry['action'],
    diff: AuditEntry['diff'],
  ): AuditEntry {
    return {
      at: this.now(),
      tokenId: actor.tokenId,
      actorTeam: actor.team,
      team: t.team,
      action,
      kind: 'token',
      name: t.id,
      address: actor.address,
      diff,
    };
  }
}

async function exec(m: ReturnType<RedisClient['multi']>): Promise<void> {
  const replies = await m.exec();
  for (const [err] of replies ?? []) if (err !== null) throw err;
}

export interface TokenRequest {
  team: string;
  admin: boolean;
  expiresAt: number | null;
}

/** `{team, admin?, expiresAt?}`; `expiresAt` an ISO 8601 time or Unix ms, in the future. */
export function parseTokenRequest(body: unknown, now: number): TokenRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid([{ field: '(root)', message: 'expected a JSON object' }]);
  }
  const input = body as Record<string, unknown>;
  const issues: { field: string; message: string }[] = [];
  for (const key of Object.keys(input)) {
    if (!['team', 'admin', 'expiresAt'].includes(key))
      issues.push({ field: key, message: 'unknown key' });
  }
  const team = nameSchema.safeParse(input.team);
  if (!team.success) {
    issues.push({
      field: 'team',
      message:
        input.team === undefined
          ? 'required'
          : 'invalid team name; use letters, digits, "-" and "_"',
    });
  }
  if (input.admin !== undefined && typeof input.admin !== 'boolean')
    issues.push({ field: 'admin', message: 'expected true or false' });
  let expiresAt: number | null = null;
  if (input.expiresAt !== undefined && input.expiresAt !== null) {
    const raw = input.expiresAt;
    const ms =
      typeof raw === 'number' ? raw : typeof raw === 'string' ? Date.parse(raw) : Number.NaN;
    if (!Number.isFinite(ms))
      issues.push({
        field: 'expiresAt',
        message: 'expected an ISO 8601 time or Unix milliseconds',
      });
    else if (ms <= now) issues.push({ field: 'expiresAt', message: 'must be in the future' });
    else if (ms > LATEST_TIME_MS)
      issues.push({
        field: 'expiresAt',
        message: 'is too far in the future (the latest is 9999-12-31)',
      });
    else expiresAt = Math.trunc(ms);
  }
  if (issues.length > 0 || !team.success) throw invalid(issues);
  return { team: team.data, admin: input.admin === true, expiresAt };
}
