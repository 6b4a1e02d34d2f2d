/**
 * `GET /api/v1/services?query=`: a search of the upstream catalog as the pipeline caches it in
 * Redis (read through `CatalogStore`, src/pipeline/catalog.ts), never a request upstream. The
 * catalog is read into memory once per catalog update (`CatalogStore.updatedAt`).
 */
import type { Keys, RedisClient } from '../redis.js';
import { CatalogStore } from '../pipeline/catalog.js';

export interface ServiceHit {
  feedId: string;
  name: string;
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
}

export const DEFAULT_SERVICE_LIMIT = 50;
export const MAX_SERVICE_LIMIT = 500;

export class ServiceSearch {
  private readonly catalog: CatalogStore;
  private cache: { updatedAt: number; services: ServiceHit[] } | null = null;

  constructor(redis: RedisClient, keys: Keys) {
    this.catalog = new CatalogStore(redis, keys);
  }

  private async all(): Promise<{ updatedAt: number | null; services: ServiceHit[] }> {
    const updatedAt = await this.catalog.updatedAt();
    if (updatedAt === null) return { updatedAt, services: [] };
    if (this.cache?.updatedAt === updatedAt) return this.cache;
    const services: ServiceHit[] = await this.catalog.services();
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
      catalogUpdatedAt: updatedAt === null ? null : new Date(updatedAt).toISOString(),
    };
  }
}
