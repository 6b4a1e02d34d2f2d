import { randomUUID } from 'node:crypto';
import { StatuswatchError } from '../errors.js';
import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { scripts, type Scripts } from '../redis/scripts.js';
import {
  countCorrupt,
  decode,
  encode,
  isRecord,
  zodShape,
  type StoredShape,
} from '../redis/stored.js';
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
  /** Stored entries that did not decode on the last full read (left out: first sights again). */
  corrupt: number;
  /** The feeds of those entries (until a commit writes them again). */
  corruptFeeds: ReadonlySet<string>;
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

/** Entries per script call of a commit (see `SnapshotStore.commit`). */
export const COMMIT_BATCH = 2_000;

/**
 * Stored shapes. Snapshot entries are the hot path (up to 100,000 per cycle, read and written in
 * one call), so they get no zod parse, only a cheap check: an entry in the current envelope must
 * be an object (this code wrote it from a typed value, and its version says so); an entry in the
 * previous, unversioned format must also pass its kind's structural check below (its sequence
 * counter and discriminating fields typed); any other version is rejected. The kind's upstream
 * entry, one per load, is parsed with zod.
 */
const LEGACY_ENTRY_CHECKS: Readonly<Record<string, (entry: Record<string, unknown>) => boolean>> = {
  status: (e) =>
    typeof e.seq === 'number' && typeof e.status === 'string' && typeof e.variant === 'string',
  incidents: (e) => typeof e.seq === 'number' && isRecord(e.open),
  sla: (e) => typeof e.seq === 'number' && typeof e.status === 'string',
  scores: (e) => typeof e.seq === 'number' && typeof e.reference === 'number',
};

/** The stored shape of a kind's entries (see LEGACY_ENTRY_CHECKS). */
export function snapshotEntryShape<E>(kind: string): StoredShape<E> {
  const legacy = LEGACY_ENTRY_CHECKS[kind];
  return {
    kind: `snap:${kind}`,
    version: 1,
    parse: (payload, version) =>
      isRecord(payload) && (version !== undefined || legacy === undefined || legacy(payload))
        ? (payload as E)
        : undefined,
  };
}

export const UPSTREAM_ENTRY = zodShape<UpstreamEntry>(
  'snap:upstream',
  z.object({
    health: z.enum(['ok', 'degraded']),
    failures: z.number(),
    reason: z.string().nullable(),
    seq: z.number(),
  }),
);

/**
 * Cached entries kept as the text Redis stores them, decoded when read (`compact`): a read is a
 * `JSON.parse` of one entry, and the text is about a third of the decoded object's heap (a
 * history sample `[t,v]` is 40 bytes decoded, 20 as text). Every text was decoded once when it
 * came in (a load checks it, a commit wrote it from a typed value), so it decodes again.
 */
class StoredEntries<E> implements ReadonlyMap<string, E> {
  readonly texts = new Map<string, string>();

  constructor(private readonly shape: StoredShape<E>) {}

  get size(): number {
    return this.texts.size;
  }

  get(feedId: string): E | undefined {
    const text = this.texts.get(feedId);
    return text === undefined ? undefined : this.decoded(text);
  }

  has(feedId: string): boolean {
    return this.texts.has(feedId);
  }

  keys(): MapIterator<string> {
    return this.texts.keys();
  }

  *entries(): MapIterator<[string, E]> {
    for (const [feedId, text] of this.texts) yield [feedId, this.decoded(text)];
  }

  *values(): MapIterator<E> {
    for (const text of this.texts.values()) yield this.decoded(text);
  }

  forEach(
    fn: (entry: E, feedId: string, map: ReadonlyMap<string, E>) => void,
    self?: unknown,
  ): void {
    for (const [feedId, text] of this.texts) fn.call(self, this.decoded(text), feedId, this);
  }

  [Symbol.iterator](): MapIterator<[string, E]> {
    return this.entries();
  }

  private decoded(text: string): E {
    const entry = decode(this.shape, text);
    if (entry === undefined)
      throw new SnapshotError(
        'snapshot_cache',
        `a cached ${this.shape.kind} entry does not decode`,
      );
    return entry;
  }
}

export interface SnapshotStoreOptions {
  /**
   * Keep the in-process copy's entries as their stored text (`StoredEntries`), decoded when
   * read: for kinds read once per poll whose entries are large (SLA and scores carry up to 48
   * samples of history each) and polled seldom (the decode is paid per entry per cycle).
   */
  compact?: boolean;
}

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
  private readonly scripts: Scripts;
  private readonly shape: StoredShape<E>;
  private cache: Snapshot<E> | null = null;
  private readonly compact: boolean;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    readonly kind: string,
    options: SnapshotStoreOptions = {},
  ) {
    this.compact = options.compact === true;
    this.entriesKey = keys.key('snap', kind);
    this.metaKey = keys.key('snap', kind, 'meta');
    this.scripts = scripts(redis);
    this.shape = snapshotEntryShape<E>(kind);
  }

  async load(): Promise<Snapshot<E>> {
    // NUL never equals a stored token (random UUIDs, or '' when nothing is stored): a full read.
    const cachedVersion = this.cache === null ? '\u0000' : this.cache.version;
    const reply = await this.scripts.snapshotLoad([this.entriesKey, this.metaKey], [cachedVersion]);
    const version = reply[0] ?? '';
    if (reply.length === 1 && this.cache !== null && this.cache.version === version)
      return this.cache;
    const baselined = reply[1] === '1';
    let upstream: UpstreamEntry | undefined;
    if (reply[2] !== undefined && reply[2] !== '') {
      // An unreadable health is a fresh one (no failures counted), never a crash.
      upstream = decode(UPSTREAM_ENTRY, reply[2]);
      if (upstream === undefined) countCorrupt(UPSTREAM_ENTRY.kind);
    }
    const variant = reply[3] ?? '';
    const stored = this.compact ? new StoredEntries(this.shape) : null;
    const entries = stored ?? new Map<string, E>();
    const corruptFeeds = new Set<string>();
    for (let i = 4; i + 1 < reply.length; i += 2) {
      const field = reply[i];
      const value = reply[i + 1];
      if (field === undefined || value === undefined) continue;
      const entry = decode(this.shape, value);
      // A corrupt entry is a first sight again (silent baseline), never a crash.
      if (entry === undefined) corruptFeeds.add(field);
      else if (stored !== null) stored.texts.set(field, value);
      else (entries as Map<string, E>).set(field, entry);
    }
    const corrupt = corruptFeeds.size;
    countCorrupt(this.shape.kind, corrupt);
    this.cache = { version, baselined, upstream, variant, entries, corrupt, corruptFeeds };
    return this.cache;
  }

  /** The response variant of the last committed cycle ('' when unknown), straight from Redis. */
  async storedVariant(): Promise<string> {
    return (await this.redis.hget(this.metaKey, 't')) ?? '';
  }

  /**
   * The endpoint's health as the last commit stored it, straight from Redis (one HGET); undefined
   * when none is stored or it is unreadable.
   */
  async upstream(): Promise<UpstreamEntry | undefined> {
    const text = await this.redis.hget(this.metaKey, 'u');
    return text === null || text === '' ? undefined : decode(UPSTREAM_ENTRY, text);
  }

  /** Entries of a few feeds, straight from Redis (one HMGET). */
  async get(feedIds: readonly string[]): Promise<Map<string, E>> {
    const out = new Map<string, E>();
    if (feedIds.length === 0) return out;
    const values = await this.redis.hmget(this.entriesKey, ...feedIds);
    feedIds.forEach((feedId, i) => {
      const value = values[i];
      if (value === null || value === undefined) return;
      const entry = decode(this.shape, value);
      // A corrupt entry reads as absent.
      if (entry === undefined) countCorrupt(this.shape.kind);
      else out.set(feedId, entry);
    });
    return out;
  }

  /**
   * Writes the changed entries and the meta if nobody committed since the load. Up to
   * COMMIT_BATCH entries go in one script call (one atomic compare-and-set). A bigger set (a
   * first sight of 100,000 services) goes in a chain of calls, each one's compare-and-set
   * expecting the version the previous one wrote, the meta with the last: one call with 200,000
   * arguments would build ~70 MB of short-lived command text and arguments here. A chain cut
   * short (a crash, or another writer that loaded a version of the chain and committed first)
   * leaves some entries written and the meta as it was, which is what a crash between the
   * hand-off and the commit leaves: every entry is a state whose transitions were handed off
   * (by id, idempotently), so the next cycle derives nothing twice and loses nothing.
   */
  async commit(input: CommitInput<E>): Promise<CommitResult> {
    const total = input.changed.size;
    const pending = input.changed.entries();
    let expected = input.expectedVersion;
    let version: string;
    let sent = 0;
    // Compact: the texts written, for the in-process copy.
    const texts: [string, string][] | null = this.compact ? [] : null;
    do {
      const last = total - sent <= COMMIT_BATCH;
      const newVersion = randomUUID();
      const args: string[] = [
        expected,
        newVersion,
        last && input.baselined ? '1' : '',
        !last || input.upstream === undefined ? '' : encode(UPSTREAM_ENTRY, input.upstream),
        last ? (input.variant ?? '') : '',
      ];
      for (let n = 0; n < COMMIT_BATCH; n++) {
        const next = pending.next();
        if (next.done === true) break;
        const [feedId, entry] = next.value;
        const text = encode(this.shape, entry);
        args.push(feedId, text);
        texts?.push([feedId, text]);
        sent += 1;
      }
      // One array, not a spread: 2,000 entries are 4,000 arguments.
      const reply = await this.scripts.snapshotCommit([this.entriesKey, this.metaKey], args);
      version = reply[1];
      if (reply[0] !== 1) {
        this.cache = null;
        return { ok: false, version };
      }
      expected = version;
    } while (sent < total);
    if (this.cache !== null && this.cache.version === input.expectedVersion) {
      const entries = this.cache.entries;
      if (entries instanceof StoredEntries)
        for (const [feedId, text] of texts ?? []) entries.texts.set(feedId, text);
      else
        for (const [feedId, entry] of input.changed) (entries as Map<string, E>).set(feedId, entry);
      let { corrupt, corruptFeeds } = this.cache;
      if (corruptFeeds.size > 0) {
        corruptFeeds = new Set([...corruptFeeds].filter((f) => !input.changed.has(f)));
        corrupt = corruptFeeds.size;
      }
      this.cache = {
        version,
        baselined: this.cache.baselined || input.baselined,
        upstream: input.upstream ?? this.cache.upstream,
        variant: input.variant ?? this.cache.variant,
        entries,
        corrupt,
        corruptFeeds,
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
