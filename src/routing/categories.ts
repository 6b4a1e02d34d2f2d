import type { Logger } from 'pino';
import { CATEGORY_INTERVAL_MS } from '../budget/plan.js';
import { StatuswatchError, errorCode, toError } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import type { UpstreamClient } from '../upstream/index.js';

/** How long a category whose fetch failed is left alone before it is fetched again. */
export const CATEGORY_FAILED_RETRY_MS = 10 * 60 * 1000;

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

  /** Slug → when its last fetch failed (cleared by a fetch that succeeds). */
  private failedKey(): string {
    return this.keys.key('catalog', 'category-failed');
  }

  /**
   * Fetches the members of each slug whose cached copy is missing or older than `maxAgeMs`; a
   * slug whose fetch failed less than `CATEGORY_FAILED_RETRY_MS` ago waits. A failed fetch does
   * not keep the other slugs from theirs; the first failure is thrown after them.
   */
  async refresh(
    client: UpstreamClient,
    slugs: readonly string[],
    log: Logger,
    maxAgeMs = CATEGORY_INTERVAL_MS,
  ): Promise<number> {
    let fetched = 0;
    let failure: Error | undefined;
    if (slugs.length === 0) return 0;
    // One round trip for every slug's last refresh and last failure (a look every minute).
    const [updatedAll, failedAll] = await Promise.all([
      this.redis.hmget(this.metaKey(), ...slugs),
      this.redis.hmget(this.failedKey(), ...slugs),
    ]);
    for (const [i, slug] of slugs.entries()) {
      const updated = updatedAll[i] ?? null;
      const failedAt = failedAll[i] ?? null;
      if (updated !== null && this.now() - Number(updated) < maxAgeMs) continue;
      if (failedAt !== null && this.now() - Number(failedAt) < CATEGORY_FAILED_RETRY_MS) continue;
      let members: string[];
      try {
        const res = await client.services({ category: slug });
        members = res.data.services.map((s) => s.feedId);
      } catch (err) {
        // A 429 stops the look (the poll queue pauses for it); other failures wait 10 minutes.
        if (errorCode(err) === 'upstream_rate_limited') throw err;
        await this.redis.hset(this.failedKey(), slug, String(this.now()));
        failure ??= toError(err);
        continue;
      }
      const key = this.setKey(slug);
      const tx = this.redis.multi().del(key);
      if (members.length > 0) tx.sadd(key, ...members);
      tx.hset(this.metaKey(), slug, String(this.now()));
      tx.hdel(this.failedKey(), slug);
      await tx.exec();
      this.memory.delete(slug);
      fetched += 1;
      log.info(
        { event: 'category:refreshed', category: slug, services: members.length },
        `category ${slug} resolved`,
      );
    }
    if (failure !== undefined) throw failure;
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
    // A reply that is not a set of members (an error) is not an empty category: routing that
    // read it as one would route that category's services to nobody, and mark them routed.
    const read = stale.map((slug, i) => {
      const [err, members] = results[i] ?? [new Error('no reply'), null];
      if (err !== null || !Array.isArray(members))
        throw new StatuswatchError(
          'category_unreadable',
          `category ${slug}: its members could not be read from Redis: ${err?.message ?? 'not a set'}`,
          { cause: err },
        );
      return new Set(members as string[]);
    });
    stale.forEach((slug, i) => {
      this.memory.set(slug, { loadedAt: this.now(), members: read[i] ?? new Set() });
    });
  }

  has(slug: string, feedId: string): boolean {
    return this.memory.get(slug)?.members.has(feedId) === true;
  }

  members(slug: string): string[] {
    return [...(this.memory.get(slug)?.members ?? [])].sort();
  }
}
