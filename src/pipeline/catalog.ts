import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Keys } from '../redis.js';
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
    private readonly redis: Redis,
    keys: Keys,
  ) {
    this.servicesKey = keys.key('catalog', 'services');
    this.namesKey = keys.key('catalog', 'names');
    this.metaKey = keys.key('catalog', 'meta');
  }

  async replace(services: readonly ServiceInfo[], now: number): Promise<void> {
    const byId: Record<string, string> = {};
    const byName: Record<string, string> = {};
    for (const s of services) {
      const stored: StoredService = {
        name: s.name,
        canonicalUrl: s.canonicalUrl,
        officialStatusUrl: s.officialStatusUrl,
      };
      byId[s.feedId] = encode(STORED_SERVICE, stored);
      byName[s.name] = s.feedId;
    }
    const tx = this.redis.multi().del(this.servicesKey, this.namesKey);
    if (services.length > 0) tx.hset(this.servicesKey, byId).hset(this.namesKey, byName);
    tx.hset(this.metaKey, 'updatedAt', String(now), 'size', String(services.length));
    await tx.exec();
  }

  /** Unix ms of the last replace, or null when there is no catalog (first start, flush). */
  async updatedAt(): Promise<number | null> {
    const value = await this.redis.hget(this.metaKey, 'updatedAt');
    return value === null ? null : Number(value);
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

  async feedIdsByName(names: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (names.length === 0) return out;
    const values = await this.redis.hmget(this.namesKey, ...names);
    names.forEach((name, i) => {
      const value = values[i];
      if (value !== null && value !== undefined) out.set(name, value);
    });
    return out;
  }
}
