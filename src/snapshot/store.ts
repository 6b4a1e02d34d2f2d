import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { StatuswatchError } from '../errors.js';
import type { Keys } from '../redis.js';
import type { UpstreamEntry } from '../diff/state.js';

/** One poll kind's stored state: entries per feedId plus the kind's meta. */
export interface Snapshot<E> {
  /** A fresh random token on every commit: the compare-and-set token. '' = nothing stored (first start or flushed). */
  version: string;
  /** True once a first cycle has been committed: later first sights of *incidents* are news. */
  baselined: boolean;
  /** Health of the upstream endpoint this kind polls. */
  upstream: UpstreamEntry | undefined;
  /** The response variant (A or B) of the last committed cycle, '' when unknown. */
  variant: string;
  entries: ReadonlyMap<string, E>;
}

export interface CommitInput<E> {
  expectedVersion: string;
  changed: ReadonlyMap<string, E>;
  upstream: UpstreamEntry | undefined;
  /** Mark the kind baselined (set by every successful cycle). */
  baselined: boolean;
  /** The variant the cycle saw; undefined leaves the stored one. */
  variant?: string | undefined;
}

export type CommitResult = { ok: true; version: string } | { ok: false; version: string };

export class SnapshotError extends StatuswatchError {}

// Returns {version} when the caller's cached version is current, else {version, baselined, upstream, variant, f1, v1, f2, v2, ...}.
const LOAD_SCRIPT = `
local v = redis.call('HGET', KEYS[2], 'v') or ''
if v == ARGV[1] then return {v} end
local b = redis.call('HGET', KEYS[2], 'b') or ''
local u = redis.call('HGET', KEYS[2], 'u') or ''
local t = redis.call('HGET', KEYS[2], 't') or ''
local all = redis.call('HGETALL', KEYS[1])
table.insert(all, 1, t)
table.insert(all, 1, u)
table.insert(all, 1, b)
table.insert(all, 1, v)
return all
`;

// ARGV: expectedVersion, newVersion, baselined ('1'|''), upstream json ('' = leave), variant ('' = leave), then field/value pairs.
const COMMIT_SCRIPT = `
local v = redis.call('HGET', KEYS[2], 'v') or ''
if v ~= ARGV[1] then return {0, v} end
for i = 6, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
if ARGV[3] == '1' then redis.call('HSET', KEYS[2], 'b', '1') end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'u', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], 't', ARGV[5]) end
redis.call('HSET', KEYS[2], 'v', ARGV[2])
return {1, ARGV[2]}
`;

/**
 * The previous state of one poll kind, in two Redis hashes (`snap:<kind>` entries and
 * `snap:<kind>:meta`). A load is one round trip (a Lua script that only ships the entries when
 * another writer changed them since this process's cached copy); a commit is one round trip
 * that writes only the changed entries, and only if nobody committed since the load
 * (compare-and-set on the meta version).
 */
export class SnapshotStore<E> {
  private readonly entriesKey: string;
  private readonly metaKey: string;
  private cache: Snapshot<E> | null = null;

  constructor(
    private readonly redis: Redis,
    keys: Keys,
    readonly kind: string,
  ) {
    this.entriesKey = keys.key('snap', kind);
    this.metaKey = keys.key('snap', kind, 'meta');
  }

  async load(): Promise<Snapshot<E>> {
    // NUL never equals a stored token (random UUIDs, or '' when nothing is stored): a full read.
    const cachedVersion = this.cache === null ? '\u0000' : this.cache.version;
    const reply = (await this.redis.eval(
      LOAD_SCRIPT,
      2,
      this.entriesKey,
      this.metaKey,
      cachedVersion,
    )) as string[];
    const version = reply[0] ?? '';
    if (reply.length === 1 && this.cache !== null && this.cache.version === version)
      return this.cache;
    const baselined = reply[1] === '1';
    const upstream =
      reply[2] !== undefined && reply[2] !== ''
        ? (JSON.parse(reply[2]) as UpstreamEntry)
        : undefined;
    const variant = reply[3] ?? '';
    const entries = new Map<string, E>();
    for (let i = 4; i + 1 < reply.length; i += 2) {
      const field = reply[i];
      const value = reply[i + 1];
      if (field === undefined || value === undefined) continue;
      try {
        entries.set(field, JSON.parse(value) as E);
      } catch {
        // A corrupt entry is a first sight again (silent baseline), never a crash.
      }
    }
    this.cache = { version, baselined, upstream, variant, entries };
    return this.cache;
  }

  /** Entries of a few feeds, straight from Redis (one HMGET). */
  async get(feedIds: readonly string[]): Promise<Map<string, E>> {
    const out = new Map<string, E>();
    if (feedIds.length === 0) return out;
    const values = await this.redis.hmget(this.entriesKey, ...feedIds);
    feedIds.forEach((feedId, i) => {
      const value = values[i];
      if (value === null || value === undefined) return;
      try {
        out.set(feedId, JSON.parse(value) as E);
      } catch {
        // ignore corrupt entries
      }
    });
    return out;
  }

  async commit(input: CommitInput<E>): Promise<CommitResult> {
    const newVersion = randomUUID();
    const args: string[] = [
      input.expectedVersion,
      newVersion,
      input.baselined ? '1' : '',
      input.upstream === undefined ? '' : JSON.stringify(input.upstream),
      input.variant ?? '',
    ];
    for (const [feedId, entry] of input.changed) args.push(feedId, JSON.stringify(entry));
    // One array, not a spread: 100,000 entries are 200,000 arguments, too many for a JS call.
    const reply = (await this.redis.call(
      'EVAL',
      [COMMIT_SCRIPT, '2', this.entriesKey, this.metaKey].concat(args),
    )) as [number, string];
    const version = reply[1];
    if (reply[0] !== 1) {
      this.cache = null;
      return { ok: false, version };
    }
    if (this.cache !== null && this.cache.version === input.expectedVersion) {
      const entries = this.cache.entries as Map<string, E>;
      for (const [feedId, entry] of input.changed) entries.set(feedId, entry);
      this.cache = {
        version,
        baselined: this.cache.baselined || input.baselined,
        upstream: input.upstream ?? this.cache.upstream,
        variant: input.variant ?? this.cache.variant,
        entries,
      };
    } else {
      this.cache = null;
    }
    return { ok: true, version };
  }

  /** Forget the in-process copy (tests, or after a detected flush). */
  invalidate(): void {
    this.cache = null;
  }
}
