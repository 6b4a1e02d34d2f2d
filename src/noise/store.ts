import type { Redis } from 'ioredis';
import type { Keys } from '../redis.js';
import type { Transition } from '../diff/transition.js';

/** What the ledger keeps for an opening the team was told about. */
export interface ToldEntry {
  subscription: string;
  channel: string;
  opening: Transition;
  toldAt: number;
  /** Last time a notification (the opening or a reminder) went out about it. */
  lastSentAt: number;
  reminders: number;
}

/** Route = (subscription, channel); a lifecycle key = feedId|subject. */
export function routeKey(subscription: string, channel: string): string {
  return `${subscription}|${channel}`;
}

const HISTORY_RETENTION_MS = 40 * 24 * 3600 * 1000;

/**
 * Noise-control state in Redis, shared by replicas:
 * - `noise:told` (hash) route|key → ToldEntry: openings the team heard of (for resolution and reminders);
 * - `noise:suppressed` (hash) route|key → transition id: openings a silence swallowed;
 * - `noise:group:<route>` (list) + `noise:group-since` (hash): transitions waiting for a group flush;
 * - `noise:held:<route>` (list) + `noise:held-until` (hash): transitions held during quiet hours;
 * - `noise:digest` (hash) subscription → the last digest boundary sent;
 * - `history` (sorted set by observedAt): every routed transition with its subscriptions, for digests.
 */
export class NoiseStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  private k(...parts: string[]): string {
    return this.keys.key('noise', ...parts);
  }

  async lookup(
    route: string,
    key: string,
  ): Promise<{ told: ToldEntry | null; suppressed: boolean }> {
    const field = `${route}|${key}`;
    const [told, suppressed] = await Promise.all([
      this.redis.hget(this.k('told'), field),
      this.redis.hexists(this.k('suppressed'), field),
    ]);
    return {
      told: told === null ? null : (JSON.parse(told) as ToldEntry),
      suppressed: suppressed === 1,
    };
  }

  async tell(
    subscription: string,
    channel: string,
    key: string,
    opening: Transition,
    now: number,
  ): Promise<void> {
    const route = routeKey(subscription, channel);
    const entry: ToldEntry = {
      subscription,
      channel,
      opening,
      toldAt: now,
      lastSentAt: now,
      reminders: 0,
    };
    await this.redis
      .multi()
      .hset(this.k('told'), `${route}|${key}`, JSON.stringify(entry))
      .hdel(this.k('suppressed'), `${route}|${key}`)
      .exec();
  }

  async suppress(route: string, key: string, transitionId: string): Promise<void> {
    await this.redis.hset(this.k('suppressed'), `${route}|${key}`, transitionId);
  }

  async close(route: string, key: string): Promise<void> {
    await this.redis
      .multi()
      .hdel(this.k('told'), `${route}|${key}`)
      .hdel(this.k('suppressed'), `${route}|${key}`)
      .exec();
  }

  /** Every told entry, by `route|key` (open things only: bounded by what is broken now). */
  async allTold(): Promise<Map<string, ToldEntry>> {
    const all = await this.redis.hgetall(this.k('told'));
    return new Map(
      Object.entries(all).map(([field, value]) => [field, JSON.parse(value) as ToldEntry]),
    );
  }

  async updateTold(field: string, entry: ToldEntry): Promise<void> {
    await this.redis.hset(this.k('told'), field, JSON.stringify(entry));
  }

  async addToGroup(route: string, t: Transition, now: number): Promise<void> {
    await this.redis
      .multi()
      .rpush(this.k('group', route), JSON.stringify(t))
      .hsetnx(this.k('group-since'), route, String(now))
      .exec();
  }

  async hold(route: string, t: Transition, until: number): Promise<void> {
    await this.redis
      .multi()
      .rpush(this.k('held', route), JSON.stringify(t))
      .hset(this.k('held-until'), route, String(until))
      .exec();
  }

  async groupsSince(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.k('group-since'));
    return new Map(Object.entries(all).map(([route, since]) => [route, Number(since)]));
  }

  async heldUntil(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.k('held-until'));
    return new Map(Object.entries(all).map(([route, until]) => [route, Number(until)]));
  }

  /** The transitions buffered for a route (group or held), oldest first. */
  async buffered(kind: 'group' | 'held', route: string): Promise<Transition[]> {
    const items = await this.redis.lrange(this.k(kind, route), 0, -1);
    return items.map((s) => JSON.parse(s) as Transition);
  }

  /** Drops the first `count` buffered transitions (those just flushed) and the route's marker when empty. */
  async drain(kind: 'group' | 'held', route: string, count: number): Promise<void> {
    const marker = kind === 'group' ? this.k('group-since') : this.k('held-until');
    const script = `
      redis.call('LTRIM', KEYS[1], tonumber(ARGV[1]), -1)
      if redis.call('LLEN', KEYS[1]) == 0 then redis.call('HDEL', KEYS[2], ARGV[2]) end
      return 1`;
    await this.redis.eval(script, 2, this.k(kind, route), marker, String(count), route);
  }

  async recordHistory(t: Transition, subscriptions: readonly string[], now: number): Promise<void> {
    const key = this.keys.key('history');
    await this.redis
      .multi()
      .zadd(key, String(t.observedAt), JSON.stringify({ t, subscriptions }))
      .zremrangebyscore(key, '-inf', String(now - HISTORY_RETENTION_MS))
      .exec();
  }

  async history(from: number, to: number): Promise<{ t: Transition; subscriptions: string[] }[]> {
    const items = await this.redis.zrangebyscore(this.keys.key('history'), String(from), `(${to}`);
    return items.map((s) => JSON.parse(s) as { t: Transition; subscriptions: string[] });
  }

  async digestMarker(subscription: string): Promise<number | null> {
    const v = await this.redis.hget(this.k('digest'), subscription);
    return v === null ? null : Number(v);
  }

  async setDigestMarker(subscription: string, at: number): Promise<void> {
    await this.redis.hset(this.k('digest'), subscription, String(at));
  }
}
