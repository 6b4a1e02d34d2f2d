/**
 * `GET /api/v1/services?query=`: a search of the upstream catalog as the pipeline caches it in
 * Redis (`catalog:services`, see src/pipeline/catalog.ts), never a request upstream. The catalog
 * is read into memory once per catalog update (its `catalog:meta.updatedAt`).
 */
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode } from '../redis/stored.js';
import { STORED_SERVICE } from '../pipeline/catalog.js';

export interface ServiceHit {
  feedId: string;
  name: string;
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
}

export const DEFAULT_SERVICE_LIMIT = 50;
export const MAX_SERVICE_LIMIT = 500;

export class ServiceSearch {
  private readonly servicesKey: string;
  private readonly metaKey: string;
  private cache: { updatedAt: string; services: ServiceHit[] } | null = null;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
  ) {
    // The CatalogStore's keys.
    this.servicesKey = keys.key('catalog', 'services');
    this.metaKey = keys.key('catalog', 'meta');
  }

  private async all(): Promise<{ updatedAt: string | null; services: ServiceHit[] }> {
    const updatedAt = await this.redis.hget(this.metaKey, 'updatedAt');
    if (updatedAt === null) return { updatedAt, services: [] };
    if (this.cache?.updatedAt === updatedAt) return this.cache;
    const raw = await this.redis.hgetall(this.servicesKey);
    const services: ServiceHit[] = [];
    for (const [feedId, text] of Object.entries(raw)) {
      const s = decode(STORED_SERVICE, text);
      if (s === undefined) countCorrupt(STORED_SERVICE.kind);
      else services.push({ feedId, ...s });
    }
    services.sort((a, b) => a.feedId.localeCompare(b.feedId));
    this.cache = { updatedAt, services };
    return this.cache;
  }

  /**
   * Services whose feedId or name contains `query` (case-insensitive; empty: all): exact feedId
   * first, then prefixes, then the rest, each by feedId. `catalogUpdatedAt` is null before the
   * first catalog fetch.
   */
  async search(
    query: string,
    limit: number,
  ): Promise<{ services: ServiceHit[]; total: number; catalogUpdatedAt: string | null }> {
    const { updatedAt, services } = await this.all();
    const q = query.trim().toLowerCase();
    const rank = (s: ServiceHit): number => {
      const id = s.feedId.toLowerCase();
      const name = s.name.toLowerCase();
      if (q === '') return 3;
      if (id === q || name === q) return 0;
      if (id.startsWith(q) || name.startsWith(q)) return 1;
      if (id.includes(q) || name.includes(q)) return 2;
      return -1;
    };
    const hits = services
      .map((s) => ({ s, r: rank(s) }))
      .filter((h) => h.r >= 0)
      .sort((a, b) => a.r - b.r || a.s.feedId.localeCompare(b.s.feedId));
    return {
      services: hits.slice(0, limit).map((h) => h.s),
      total: hits.length,
      catalogUpdatedAt: updatedAt === null ? null : new Date(Number(updatedAt)).toISOString(),
    };
  }
}
