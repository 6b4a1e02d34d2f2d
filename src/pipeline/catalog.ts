import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { StatuswatchError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode, encode, zodShape } from '../redis/stored.js';
import type { ServiceInfo } from '../upstream/model.js';
import type { ServiceRef } from '../diff/transition.js';

interface StoredService {
  name: string;
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
}

/** A catalog service's identity as stored in `catalog:services` (versioned JSON). */
export const STORED_SERVICE = zodShape<StoredService>(
  'catalog:service',
  z.object({
    name: z.string(),
    canonicalUrl: z.string().nullable(),
    officialStatusUrl: z.string().nullable(),
  }),
);

/** Services per staging write of `replace`. */
export const REPLACE_BATCH = 2_000;
/** Staging hashes of an interrupted `replace` expire after this. */
const STAGING_TTL_MS = 10 * 60 * 1000;

/** Throws the first error of a pipeline's or MULTI's replies. */
async function checked(
  replies: Promise<[error: Error | null, result: unknown][] | null>,
): Promise<void> {
  const results = await replies;
  if (results === null)
    throw new StatuswatchError('catalog_replace_aborted', 'catalog replace: transaction aborted');
  for (const [error] of results) if (error !== null) throw error;
}

/**
 * A name that several services share is stored as this mark and their feedIds, each after
 * one: Variant B names an incident's service only, so such a name identifies none of them (no
 * feedId, a path segment, holds the control character).
 */
const SHARED = '\u001f';

/** The feedIds of each name more than one service has. */
function sharedNames(services: readonly ServiceInfo[]): Map<string, string[]> {
  const first = new Map<string, string>();
  const shared = new Map<string, string[]>();
  for (const s of services) {
    const one = first.get(s.name);
    if (one === undefined) first.set(s.name, s.feedId);
    else shared.set(s.name, [...(shared.get(s.name) ?? [one]), s.feedId]);
  }
  return shared;
}

/**
 * The upstream catalog, cached in Redis: feedId → identity (to enrich transitions with names and
 * links) and display name → feedId (Variant B incidents name their service but carry no feedId).
 * Replaced atomically; read with one HMGET per cycle, only for the feeds that changed.
 */
export class CatalogStore {
  private readonly servicesKey: string;
  private readonly namesKey: string;
  private readonly metaKey: string;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
  ) {
    this.servicesKey = keys.key('catalog', 'services');
    this.namesKey = keys.key('catalog', 'names');
    this.metaKey = keys.key('catalog', 'meta');
  }

  /**
   * Replaces the catalog atomically. Written in batches of REPLACE_BATCH services into two
   * temporary hashes (same hash tag; they expire if this process dies meanwhile), which one
   * MULTI then renames over the live ones: one huge HSET of 100,000 services would build
   * ~120 MB of short-lived command text and arguments in this process.
   */
  async replace(services: readonly ServiceInfo[], now: number): Promise<void> {
    const meta = ['updatedAt', String(now), 'size', String(services.length)];
    if (services.length === 0) {
      await checked(
        this.redis
          .multi()
          .del(this.servicesKey, this.namesKey)
          .hset(this.metaKey, ...meta)
          .exec(),
      );
      return;
    }
    const shared = sharedNames(services);
    const suffix = randomBytes(6).toString('hex');
    const tmpServices = `${this.servicesKey}:tmp:${suffix}`;
    const tmpNames = `${this.namesKey}:tmp:${suffix}`;
    try {
      for (let i = 0; i < services.length; i += REPLACE_BATCH) {
        // Maps: a feedId or name from upstream (`__proto__`) is a key like any other.
        const byId = new Map<string, string>();
        const byName = new Map<string, string>();
        const end = Math.min(services.length, i + REPLACE_BATCH);
        for (let j = i; j < end; j++) {
          const s = services[j] as ServiceInfo;
          const stored: StoredService = {
            name: s.name,
            canonicalUrl: s.canonicalUrl,
            officialStatusUrl: s.officialStatusUrl,
          };
          byId.set(s.feedId, encode(STORED_SERVICE, stored));
          const sharers = shared.get(s.name);
          byName.set(s.name, sharers === undefined ? s.feedId : SHARED + sharers.join(SHARED));
        }
        await checked(
          this.redis
            .pipeline()
            .hset(tmpServices, byId)
            .hset(tmpNames, byName)
            .pexpire(tmpServices, STAGING_TTL_MS)
            .pexpire(tmpNames, STAGING_TTL_MS)
            .exec(),
        );
      }
      await checked(
        this.redis
          .multi()
          .rename(tmpServices, this.servicesKey)
          .rename(tmpNames, this.namesKey)
          .persist(this.servicesKey)
          .persist(this.namesKey)
          .hset(this.metaKey, ...meta)
          .exec(),
      );
    } catch (err) {
      await this.redis.del(tmpServices, tmpNames).catch(() => undefined);
      throw err;
    }
  }

  /** Unix ms of the last replace, or null when there is no catalog (first start, flush). */
  async updatedAt(): Promise<number | null> {
    const value = await this.redis.hget(this.metaKey, 'updatedAt');
    return value === null ? null : Number(value);
  }

  /** Every feedId of the catalog (one HKEYS). */
  async feedIds(): Promise<string[]> {
    return this.redis.hkeys(this.servicesKey);
  }

  /** Every service of the catalog (one HGETALL); a corrupt entry is left out (counted). */
  async services(): Promise<(StoredService & { feedId: string })[]> {
    const raw = await this.redis.hgetall(this.servicesKey);
    const out: (StoredService & { feedId: string })[] = [];
    for (const [feedId, text] of Object.entries(raw)) {
      const s = decode(STORED_SERVICE, text);
      if (s === undefined) countCorrupt(STORED_SERVICE.kind);
      else out.push({ feedId, ...s });
    }
    return out;
  }

  async refs(feedIds: readonly string[]): Promise<Map<string, ServiceRef>> {
    const out = new Map<string, ServiceRef>();
    if (feedIds.length === 0) return out;
    const values = await this.redis.hmget(this.servicesKey, ...feedIds);
    feedIds.forEach((feedId, i) => {
      const value = values[i];
      if (value === null || value === undefined) return;
      // A corrupt entry reads as a service not in the catalog (no name, no links).
      const stored = decode(STORED_SERVICE, value);
      if (stored === undefined) countCorrupt(STORED_SERVICE.kind);
      else out.set(feedId, { feedId, ...stored });
    });
    return out;
  }

  /** The feedId of each known name; a name several services share maps to all of theirs. */
  async feedIdsByName(names: readonly string[]): Promise<Map<string, string | string[]>> {
    const out = new Map<string, string | string[]>();
    if (names.length === 0) return out;
    const values = await this.redis.hmget(this.namesKey, ...names);
    names.forEach((name, i) => {
      const value = values[i];
      if (value === null || value === undefined) return;
      out.set(name, value.startsWith(SHARED) ? value.slice(1).split(SHARED) : value);
    });
    return out;
  }
}
