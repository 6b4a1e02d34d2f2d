import type { Redis } from 'ioredis';
import type { Keys } from '../redis.js';
import type { Transition } from '../diff/transition.js';
import { routeKey, type GateEffect, type GateState } from './gate.js';

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

export { routeKey };

const HISTORY_RETENTION_MS = 40 * 24 * 3600 * 1000;
/** How long a transition id stays marked as routed: a re-derived transition within it is a no-op. */
export const ROUTED_RETENTION_MS = 7 * 24 * 3600 * 1000;

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

  /**
   * The state one routed batch needs, in one round trip: which of `fields` are in the told and
   * suppressed hashes (every field of both when `all`, for a batch that closes something), and
   * which of `transitionIds` were routed already.
   */
  async loadGate(
    fields: readonly string[],
    all: boolean,
    transitionIds: readonly string[],
  ): Promise<{ state: GateState; routed: Set<string> }> {
    const p = this.redis.pipeline();
    const uniqueFields = [...new Set(fields)];
    if (all) {
      p.hkeys(this.k('told'));
      p.hkeys(this.k('suppressed'));
    } else if (uniqueFields.length > 0) {
      p.hmget(this.k('told'), ...uniqueFields);
      p.hmget(this.k('suppressed'), ...uniqueFields);
    }
    if (transitionIds.length > 0) p.zmscore(this.keys.key('routed'), ...transitionIds);
    const replies = (await p.exec()) ?? [];
    const value = (i: number): unknown => {
      const r = replies[i];
      if (r === undefined) return [];
      if (r[0] !== null) throw r[0];
      return r[1];
    };
    const state: GateState = { told: new Set(), suppressed: new Set() };
    let next = 0;
    if (all) {
      for (const f of value(0) as string[]) state.told.add(f);
      for (const f of value(1) as string[]) state.suppressed.add(f);
      next = 2;
    } else if (uniqueFields.length > 0) {
      const told = value(0) as (string | null)[];
      const suppressed = value(1) as (string | null)[];
      uniqueFields.forEach((f, i) => {
        if (told[i] !== null && told[i] !== undefined) state.told.add(f);
        if (suppressed[i] !== null && suppressed[i] !== undefined) state.suppressed.add(f);
      });
      next = 2;
    }
    const routed = new Set<string>();
    if (transitionIds.length > 0) {
      const scores = value(next) as (string | null)[];
      transitionIds.forEach((id, i) => {
        if (scores[i] !== null && scores[i] !== undefined) routed.add(id);
      });
    }
    return { state, routed };
  }

  /**
   * A routed batch's effects, in order, and its routed marks, in one round trip (MULTI). Every
   * effect is idempotent: a batch re-run after a crash changes nothing twice (buffers dedupe by
   * transition id, ledger writes set what they set).
   */
  async commitGate(
    effects: readonly GateEffect[],
    routedIds: readonly string[],
    now: number,
  ): Promise<void> {
    const m = this.redis.multi();
    const history: string[] = [];
    // The ledger's net result per field (a later effect on a field wins): one HSET and one HDEL
    // per hash, whatever the batch's size.
    const told = new Map<string, string | null>();
    const suppressed = new Map<string, string | null>();
    for (const e of effects) {
      switch (e.type) {
        case 'tell': {
          const field = `${routeKey(e.subscription, e.channel)}|${e.key}`;
          const entry: ToldEntry = {
            subscription: e.subscription,
            channel: e.channel,
            opening: e.opening,
            toldAt: now,
            lastSentAt: now,
            reminders: 0,
          };
          told.set(field, JSON.stringify(entry));
          suppressed.set(field, null);
          break;
        }
        case 'suppress':
          suppressed.set(e.field, e.transitionId);
          break;
        case 'close':
          for (const f of e.told) told.set(f, null);
          for (const f of e.suppressed) suppressed.set(f, null);
          break;
        case 'group':
          m.eval(
            NoiseStore.BUFFER_SCRIPT,
            3,
            this.k('group', e.route),
            this.k('seen', e.route),
            this.k('group-since'),
            e.transition.id,
            JSON.stringify(e.transition),
            e.route,
            String(now),
            '1',
          );
          break;
        case 'hold':
          m.eval(
            NoiseStore.BUFFER_SCRIPT,
            3,
            this.k('held', e.route),
            this.k('seen', e.route),
            this.k('held-until'),
            e.transition.id,
            JSON.stringify(e.transition),
            e.route,
            String(e.until),
            '0',
          );
          break;
        case 'history':
          history.push(
            String(e.transition.observedAt),
            JSON.stringify({ t: e.transition, subscriptions: e.subscriptions }),
          );
          break;
        case 'dropped':
          break;
      }
    }
    for (const [hash, net] of [
      [this.k('told'), told],
      [this.k('suppressed'), suppressed],
    ] as const) {
      const set = [...net].filter((e): e is [string, string] => e[1] !== null).flat();
      const del = [...net].filter(([, v]) => v === null).map(([f]) => f);
      if (set.length > 0) m.hset(hash, ...set);
      if (del.length > 0) m.hdel(hash, ...del);
    }
    if (history.length > 0) {
      const key = this.keys.key('history');
      m.zadd(key, ...history);
      m.zremrangebyscore(key, '-inf', String(now - HISTORY_RETENTION_MS));
    }
    if (routedIds.length > 0) {
      const key = this.keys.key('routed');
      m.zadd(key, ...routedIds.flatMap((id) => [String(now), id]));
      m.zremrangebyscore(key, '-inf', String(now - ROUTED_RETENTION_MS));
    }
    const replies = await m.exec();
    for (const [err] of replies ?? []) if (err !== null) throw err;
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
