import type { Logger } from 'pino';
import type { Keys, RedisClient } from '../redis.js';
import type { UpstreamClient } from '../upstream/index.js';

export const CATEGORY_MAX_AGE_MS = 60 * 60 * 1000;

/**
 * Category membership, resolved upstream with GET /services?category=<slug> (services carry no
 * category field) and cached in Redis as one set per slug, shared by replicas. Each replica keeps
 * an in-memory copy for routing, reloaded when older than a minute.
 */
export class CategoryStore {
  private memory = new Map<string, { loadedAt: number; members: Set<string> }>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly now: () => number = Date.now,
  ) {}

  private setKey(slug: string): string {
    return this.keys.key('catalog', 'category', slug);
  }

  private metaKey(): string {
    return this.keys.key('catalog', 'category-meta');
  }

  /** Fetches the members of each slug whose cached copy is missing or older than `maxAgeMs`. */
  async refresh(
    client: UpstreamClient,
    slugs: readonly string[],
    log: Logger,
    maxAgeMs = CATEGORY_MAX_AGE_MS,
  ): Promise<number> {
    let fetched = 0;
    for (const slug of slugs) {
      const updated = await this.redis.hget(this.metaKey(), slug);
      if (updated !== null && this.now() - Number(updated) < maxAgeMs) continue;
      const res = await client.services({ category: slug });
      const members = res.data.services.map((s) => s.feedId);
      const key = this.setKey(slug);
      const tx = this.redis.multi().del(key);
      if (members.length > 0) tx.sadd(key, ...members);
      tx.hset(this.metaKey(), slug, String(this.now()));
      await tx.exec();
      this.memory.delete(slug);
      fetched += 1;
      log.info(
        { event: 'category:refreshed', category: slug, services: members.length },
        `category ${slug} resolved`,
      );
    }
    return fetched;
  }

  /** Loads the given slugs into memory (one round trip), so `has` can answer synchronously. */
  async load(slugs: readonly string[]): Promise<void> {
    const stale = slugs.filter((slug) => {
      const m = this.memory.get(slug);
      return m === undefined || this.now() - m.loadedAt > 60_000;
    });
    if (stale.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const slug of stale) pipeline.smembers(this.setKey(slug));
    const results = (await pipeline.exec()) ?? [];
    stale.forEach((slug, i) => {
      const members = results[i]?.[1];
      this.memory.set(slug, {
        loadedAt: this.now(),
        members: new Set(Array.isArray(members) ? (members as string[]) : []),
      });
    });
  }

  has(slug: string, feedId: string): boolean {
    return this.memory.get(slug)?.members.has(feedId) === true;
  }

  members(slug: string): string[] {
    return [...(this.memory.get(slug)?.members ?? [])].sort();
  }
}
