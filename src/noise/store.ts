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

  /** Closes `key` for every route that was told of it or had it suppressed. */
  async closeEverywhere(key: string): Promise<void> {
    const suffix = `|${key}`;
    for (const hash of [this.k('told'), this.k('suppressed')]) {
      const fields = (await this.redis.hkeys(hash)).filter((f) => f.endsWith(suffix));
      if (fields.length > 0) await this.redis.hdel(hash, ...fields);
    }
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

  /** Replaces a told entry only if it is still the one read (a closing may have removed it meanwhile). */
  async updateTold(field: string, before: ToldEntry, after: ToldEntry): Promise<void> {
    const script = `
      if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
        redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
        return 1
      end
      return 0`;
    await this.redis.eval(
      script,
      1,
      this.k('told'),
      field,
      JSON.stringify(before),
      JSON.stringify(after),
    );
  }

  /**
   * Appends to a route's buffer once per transition id (a retried routing job adds nothing):
   * KEYS list, seen-set, marker hash; ARGV transition id, json, route, marker value, nx ('1' = only if unset).
   */
  private static readonly BUFFER_SCRIPT = `
    if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
    redis.call('EXPIRE', KEYS[2], 172800)
    redis.call('RPUSH', KEYS[1], ARGV[2])
    if ARGV[5] == '1' then redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4])
    else redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
    return 1`;

  async addToGroup(route: string, t: Transition, now: number): Promise<void> {
    await this.redis.eval(
      NoiseStore.BUFFER_SCRIPT,
      3,
      this.k('group', route),
      this.k('seen', route),
      this.k('group-since'),
      t.id,
      JSON.stringify(t),
      route,
      String(now),
      '1',
    );
  }

  async hold(route: string, t: Transition, until: number): Promise<void> {
    await this.redis.eval(
      NoiseStore.BUFFER_SCRIPT,
      3,
      this.k('held', route),
      this.k('seen', route),
      this.k('held-until'),
      t.id,
      JSON.stringify(t),
      route,
      String(until),
      '0',
    );
  }

  async groupsSince(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.k('group-since'));
    return new Map(Object.entries(all).map(([route, since]) => [route, Number(since)]));
  }

  async heldUntil(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.k('held-until'));
    return new Map(Object.entries(all).map(([route, until]) => [route, Number(until)]));
  }

  /**
   * Takes a route's buffer for flushing, atomically: the list is renamed to a claimed list, so
   * transitions routed meanwhile start a new buffer. An earlier claim that was never finished (a
   * crash between enqueue and finish) is returned as it was, so its batch gets the same id.
   */
  async claim(kind: 'group' | 'held', route: string): Promise<Transition[]> {
    const script = `
      if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
        redis.call('RENAME', KEYS[1], KEYS[2])
      end
      return redis.call('LRANGE', KEYS[2], 0, -1)`;
    const items = (await this.redis.eval(
      script,
      2,
      this.k(kind, route),
      this.k(kind, route, 'claimed'),
    )) as string[];
    return items.map((item) => JSON.parse(item) as Transition);
  }

  /** Ends a claim once its notification is enqueued; a group that refilled meanwhile restarts its window now. */
  async finish(kind: 'group' | 'held', route: string, now: number): Promise<void> {
    const marker = kind === 'group' ? this.k('group-since') : this.k('held-until');
    const script = `
      redis.call('DEL', KEYS[2])
      if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HDEL', KEYS[3], ARGV[1])
      elseif ARGV[2] ~= '' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
      return 1`;
    await this.redis.eval(
      script,
      3,
      this.k(kind, route),
      this.k(kind, route, 'claimed'),
      marker,
      route,
      kind === 'group' ? String(now) : '',
    );
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
