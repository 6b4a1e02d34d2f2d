import { singleFlight } from '../single-flight.js';
import { randomBytes } from 'node:crypto';
import { StatuswatchError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import { scripts, type Scripts } from '../redis/scripts.js';
import { countCorrupt, encode } from '../redis/stored.js';
import { parseSilenceRequest, parseStoredSilence, STORED_SILENCE, type Silence } from './model.js';
import { isActive, stateOf, type SilenceState } from './match.js';

/** How long `active()` serves from memory: another replica's change is seen within this. */
export const ACTIVE_CACHE_MS = 2_000;
/** Expired silences stay listable (`?all=1`) this long, then the next read deletes them. */
export const EXPIRED_RETENTION_MS = 7 * 24 * 3_600_000;

export class SilenceStoreError extends StatuswatchError {}

export interface SilenceStoreOptions {
  cacheMs?: number;
  retentionMs?: number;
}

const STATE_ORDER: Record<SilenceState, number> = { active: 0, pending: 1, expired: 2 };

/**
 * 16 URL-safe characters, 96 random bits, never starting with `-`: the id is an argument of
 * `statuswatch silence expire ID`, where a leading `-` reads as an option (1 id in 64 did).
 */
export function newSilenceId(): string {
  for (;;) {
    const id = randomBytes(12).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Silences in one Redis hash, `{prefix}:silences` (id → versioned JSON, `STORED_SILENCE`),
 * shared by every replica.
 * Nothing is deleted eagerly: a silence stops matching at its `endsAt` by itself, `expire` just
 * moves `endsAt` to now, and reads drop entries that ended more than `retentionMs` ago.
 * Entries that do not parse (a newer version's format during a rolling upgrade, say) are skipped
 * (counted as corrupt), never deleted.
 */
export class SilenceStore {
  private readonly key: string;
  private readonly cacheMs: number;
  private readonly retentionMs: number;
  private cache: { at: number; silences: Silence[] } | null = null;
  /** Concurrent callers share one Redis read. */
  private readonly refreshOnce = singleFlight(() => this.refresh());
  private generation = 0;
  private readonly scripts: Scripts;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    /** The store's clock (Unix ms); the admin API reports states against it. */
    readonly now: () => number = Date.now,
    options: SilenceStoreOptions = {},
  ) {
    this.key = keys.key('silences');
    this.scripts = scripts(redis);
    this.cacheMs = options.cacheMs ?? ACTIVE_CACHE_MS;
    this.retentionMs = options.retentionMs ?? EXPIRED_RETENTION_MS;
  }

  /** Validates a create request (throws `SilenceValidationError`) and stores the new silence. */
  async add(input: unknown): Promise<Silence> {
    const now = this.now();
    const draft = parseSilenceRequest(input, now);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const silence: Silence = { id: newSilenceId(), ...draft, createdAt: now };
      const created = await this.redis.hsetnx(
        this.key,
        silence.id,
        encode(STORED_SILENCE, silence),
      );
      if (created === 1) {
        this.invalidate();
        return silence;
      }
    }
    throw new SilenceStoreError('silence_id_collision', 'could not allocate a unique silence id');
  }

  /**
   * Active and pending silences (with `includeExpired`, also those that ended within the
   * retention), active first, then pending, then expired; each group by `endsAt`.
   */
  async list(options: { includeExpired?: boolean } = {}): Promise<Silence[]> {
    const now = this.now();
    const all = await this.readAll(now);
    const shown = options.includeExpired === true ? all : all.filter((s) => s.endsAt > now);
    return shown.sort(
      (a, b) =>
        STATE_ORDER[stateOf(a, now)] - STATE_ORDER[stateOf(b, now)] ||
        a.endsAt - b.endsAt ||
        a.id.localeCompare(b.id),
    );
  }

  async get(id: string): Promise<Silence | undefined> {
    const text = await this.redis.hget(this.key, id);
    if (text === null) return undefined;
    const silence = parseStoredSilence(text);
    if (silence === undefined) countCorrupt(STORED_SILENCE.kind);
    return silence;
  }

  /**
   * Ends a silence now (a pending one gets startsAt = endsAt = now). Returns the silence as
   * stored afterwards, `undefined` when there is no such silence. Expiring an expired silence
   * changes nothing.
   */
  async expire(id: string): Promise<Silence | undefined> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const text = await this.redis.hget(this.key, id);
      if (text === null) return undefined;
      const silence = parseStoredSilence(text);
      if (silence === undefined) {
        countCorrupt(STORED_SILENCE.kind);
        throw new SilenceStoreError('silence_corrupt', `silence ${id} is stored in a bad format`);
      }
      const now = this.now();
      if (silence.endsAt <= now) return silence;
      const next: Silence = { ...silence, startsAt: Math.min(silence.startsAt, now), endsAt: now };
      // Compared with the text read (the previous format too), replaced in the current one.
      const swapped = await this.scripts.hashFieldCas(
        [this.key],
        [id, text, encode(STORED_SILENCE, next)],
      );
      if (swapped === 1) {
        this.invalidate();
        return next;
      }
    }
    throw new SilenceStoreError('silence_conflict', `silence ${id} kept changing; try again`);
  }

  /**
   * The silences in force now. Served from memory for up to `cacheMs` (routing asks for every
   * transition); changes made through this instance are seen at once, other replicas' within
   * `cacheMs`. Concurrent callers share one Redis read.
   */
  async active(): Promise<Silence[]> {
    const now = this.now();
    const cached = this.cache;
    if (cached !== null && now >= cached.at && now - cached.at < this.cacheMs) {
      return cached.silences.filter((s) => isActive(s, now));
    }
    const fresh = await this.refreshOnce();
    const at = this.now();
    return fresh.filter((s) => isActive(s, at));
  }

  private async refresh(): Promise<Silence[]> {
    const generation = this.generation;
    const at = this.now();
    const current = (await this.readAll(at)).filter((s) => s.endsAt > at);
    // A write through this instance during the read makes the result possibly stale: serve it
    // to the callers waiting for it, but do not cache it.
    if (generation === this.generation) this.cache = { at, silences: current };
    return current;
  }

  /** Another writer (the tenancy API's store) wrote a silence to this store's hash: re-read. */
  changed(): void {
    this.invalidate();
  }

  private invalidate(): void {
    this.generation += 1;
    this.cache = null;
  }

  /** Every parseable silence; deletes those that ended more than `retentionMs` before `now`. */
  private async readAll(now: number): Promise<Silence[]> {
    const raw = await this.redis.hgetall(this.key);
    const kept: Silence[] = [];
    const stale: string[] = [];
    for (const [field, text] of Object.entries(raw)) {
      const silence = parseStoredSilence(text);
      if (silence === undefined) {
        countCorrupt(STORED_SILENCE.kind);
        continue;
      }
      if (silence.endsAt + this.retentionMs <= now) stale.push(field);
      else kept.push(silence);
    }
    if (stale.length > 0) await this.redis.hdel(this.key, ...stale);
    return kept;
  }
}
