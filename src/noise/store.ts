import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { scripts, type Scripts } from '../redis/scripts.js';
import { CLOCK_SKEW_MS } from '../delivery/rules.js';
import { countCorrupt, decode, encode, zodShape, type StoredShape } from '../redis/stored.js';
import { transitionSchema, type Transition } from '../diff/transition.js';
import type { GateEffect, GateState } from './gate.js';
import { ledgerField, parseLedgerField } from '../routing/route.js';
import { SilenceStore } from '../silences/store.js';
import { lifecycleKey } from './policy.js';
import { ACK_NAME_MAX, ACK_TTL_MS, AckStore, type Ack, type AckVia } from './acks.js';

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

/** An item of the routed log: a routed transition with the subscriptions it was routed to. */
export interface RoutedLogItem {
  t: Transition;
  subscriptions: string[];
}

/** A transition waiting in a group or quiet-hours buffer. */
export const BUFFERED_TRANSITION = zodShape<Transition>('noise:buffered', transitionSchema);

export const TOLD_ENTRY = zodShape<ToldEntry>(
  'noise:told',
  z.object({
    subscription: z.string(),
    channel: z.string(),
    opening: transitionSchema,
    toldAt: z.number(),
    lastSentAt: z.number(),
    reminders: z.number(),
  }),
);

// The kind stays 'history': it labels the corruption metric.
export const ROUTED_LOG_ITEM = zodShape<RoutedLogItem>(
  'history',
  z.object({ t: transitionSchema, subscriptions: z.array(z.string()) }),
);

/**
 * The JSON of each transition a commit writes, stringified once: a told entry and a routed-log
 * item both carry the whole transition (a storm's 5,000 openings were 10,000 stringifies of it).
 */
class TransitionTexts {
  private readonly texts = new Map<Transition, string>();

  of(t: Transition): string {
    let text = this.texts.get(t);
    if (text === undefined) {
      text = JSON.stringify(t);
      this.texts.set(t, text);
    }
    return text;
  }
}

/**
 * `encode(TOLD_ENTRY, entry)`, with the opening's JSON given: the same text, character for
 * character (the keys in `ToldEntry`'s literal order; `toldUnchanged` and `updateTold` compare
 * stored texts).
 */
export function encodeToldEntry(entry: ToldEntry, openingJson: string): string {
  return (
    `{"v":${String(TOLD_ENTRY.version)},"d":{"subscription":${JSON.stringify(entry.subscription)}` +
    `,"channel":${JSON.stringify(entry.channel)},"opening":${openingJson}` +
    `,"toldAt":${JSON.stringify(entry.toldAt)},"lastSentAt":${JSON.stringify(entry.lastSentAt)}` +
    `,"reminders":${JSON.stringify(entry.reminders)}}}`
  );
}

/** `encode(ROUTED_LOG_ITEM, item)`, with the transition's JSON given: the same text. */
export function encodeRoutedLogItem(item: RoutedLogItem, transitionJson: string): string {
  return (
    `{"v":${String(ROUTED_LOG_ITEM.version)},"d":{"t":${transitionJson}` +
    `,"subscriptions":${JSON.stringify(item.subscriptions)}}}`
  );
}

/** The values of `texts` that decode; the others are counted as corrupt and left out. */
function decodeAll<T>(shape: StoredShape<T>, texts: readonly string[]): T[] {
  const out: T[] = [];
  for (const text of texts) {
    const value = decode(shape, text);
    if (value === undefined) countCorrupt(shape.kind);
    else out.push(value);
  }
  return out;
}

const ROUTED_LOG_RETENTION_MS = 40 * 24 * 3600 * 1000;
/** How long a transition id stays marked as routed: a re-derived transition within it is a no-op. */
export const ROUTED_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * Noise-control state in Redis, shared by replicas:
 * - `noise:told` (hash) route|key → ToldEntry: openings the team heard of (for resolution and reminders);
 * - `noise:suppressed` (hash) route|key → transition id: openings a silence swallowed;
 * - `noise:group:<route>` (list) + `noise:group-since` (hash): transitions waiting for a group flush;
 * - `noise:held:<route>` (list) + `noise:held-until` (hash): transitions held during quiet hours;
 * - `noise:held:<route>:closed` (hash) lifecycle key → how many transitions were held when a
 *   closing of it went out through the route's quiet hours, and its observedAt: those of its
 *   lifecycle held before it and observed no later are stale;
 * - `noise:digest` (hash) subscription → the last digest boundary sent;
 * - `history` (sorted set by observedAt), the routed log: every routed transition with its
 *   subscriptions, for digests and the console;
 * - `noise:ack:<hash>` and `noise:until-resolved:<hash>`: acknowledgements and "silence until
 *   resolved" silences (`acks.ts`), ended by the closing.
 */
export class NoiseStore {
  /** Acknowledgements of episodes (src/noise/acks.ts). */
  readonly acks: AckStore;
  private readonly scripts: Scripts;
  /** The stored text of each told entry `allTold` returned: `updateTold` compares against it. */
  private readonly toldText = new WeakMap<ToldEntry, string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    this.scripts = scripts(redis);
    this.acks = new AckStore(redis, keys);
  }

  private k(...parts: string[]): string {
    return this.keys.key('noise', ...parts);
  }

  /**
   * The state one routed batch needs, in one round trip: which of `fields` are in the told and
   * suppressed hashes (every field of both when `all`, for a batch that closes something),
   * which of `transitionIds` were routed already, and which routes have a quiet-hours catch-up
   * still to go out.
   */
  async loadGate(
    fields: readonly string[],
    all: boolean,
    transitionIds: readonly string[],
  ): Promise<{ state: GateState; routed: Set<string> }> {
    const p = this.redis.pipeline();
    const uniqueFields = [...new Set(fields)];
    // The routes with a catch-up still to go out: a hold sets the route's marker, and only the
    // tick's `finish` of a claim that left no held list behind removes it.
    p.hkeys(this.k('held-until'));
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
    const catchUpPending = new Set(value(0) as string[]);
    const state: GateState = { told: new Set(), suppressed: new Set(), catchUpPending };
    let next = 1;
    if (all) {
      for (const f of value(next) as string[]) state.told.add(f);
      for (const f of value(next + 1) as string[]) state.suppressed.add(f);
      next += 2;
    } else if (uniqueFields.length > 0) {
      const told = value(next) as (string | null)[];
      const suppressed = value(next + 1) as (string | null)[];
      uniqueFields.forEach((f, i) => {
        if (told[i] !== null && told[i] !== undefined) state.told.add(f);
        if (suppressed[i] !== null && suppressed[i] !== undefined) state.suppressed.add(f);
      });
      next += 2;
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
    const queued = this.scripts.queue(m);
    const routedLog: string[] = [];
    const texts = new TransitionTexts();
    // The ledger's net result per field (a later effect on a field wins): one HSET and one HDEL
    // per hash, whatever the batch's size.
    const told = new Map<string, string | null>();
    const suppressed = new Map<string, string | null>();
    // What closings end besides the ledger: the acks of the routes told, the until-resolved
    // silences of the lifecycles.
    const closedAcks = new Map<string, { subscription: string; lifecycle: string }>();
    const closedLifecycles = new Set<string>();
    for (const e of effects) {
      switch (e.type) {
        case 'tell': {
          const field = ledgerField(e, e.key);
          const entry: ToldEntry = {
            subscription: e.subscription,
            channel: e.channel,
            opening: e.opening,
            toldAt: now,
            lastSentAt: now,
            reminders: 0,
          };
          told.set(field, encodeToldEntry(entry, texts.of(e.opening)));
          suppressed.set(field, null);
          break;
        }
        case 'suppress':
          suppressed.set(e.field, e.transitionId);
          break;
        case 'close':
          for (const f of e.told) {
            told.set(f, null);
            const parsed = parseLedgerField(f);
            if (parsed === null) continue;
            const pair = { subscription: parsed.route.subscription, lifecycle: parsed.key };
            closedAcks.set(`${pair.subscription}|${pair.lifecycle}`, pair);
            closedLifecycles.add(parsed.key);
          }
          for (const f of e.suppressed) {
            suppressed.set(f, null);
            const parsed = parseLedgerField(f);
            if (parsed !== null) closedLifecycles.add(parsed.key);
          }
          break;
        case 'group':
          queued.noiseBufferAppend(
            [this.k('group', e.route), this.k('seen', e.route), this.k('group-since')],
            [e.transition.id, encode(BUFFERED_TRANSITION, e.transition), e.route, String(now), '1'],
          );
          break;
        case 'hold':
          queued.noiseBufferAppend(
            [this.k('held', e.route), this.k('seen', e.route), this.k('held-until')],
            [
              e.transition.id,
              encode(BUFFERED_TRANSITION, e.transition),
              e.route,
              String(e.until),
              '0',
            ],
          );
          break;
        case 'closed-in-quiet':
          // At its place among the effects: a later hold of the batch comes after the mark.
          queued.noiseClosedInQuiet(
            [this.k('held', e.route), this.k('held', e.route, 'closed')],
            [String(e.at), e.key],
          );
          break;
        case 'routed-log':
          routedLog.push(
            String(e.transition.observedAt),
            encodeRoutedLogItem(
              { t: e.transition, subscriptions: e.subscriptions },
              texts.of(e.transition),
            ),
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
    if (routedLog.length > 0) {
      const key = this.keys.key('history');
      m.zadd(key, ...routedLog);
      m.zremrangebyscore(key, '-inf', String(now - ROUTED_LOG_RETENTION_MS));
    }
    if (routedIds.length > 0) {
      const key = this.keys.key('routed');
      m.zadd(key, ...routedIds.flatMap((id) => [String(now), id]));
      m.zremrangebyscore(key, '-inf', String(now - ROUTED_RETENTION_MS));
    }
    this.acks.queueClear(m, [...closedAcks.values()]);
    const replies = await m.exec();
    for (const [err] of replies ?? []) if (err !== null) throw err;
    if (closedLifecycles.size > 0) await this.endUntilResolved([...closedLifecycles], now);
  }

  /**
   * Ends the "silence until resolved" silences of closed lifecycles. After the closing's MULTI:
   * a crash in between leaves them to end at their own `endsAt` (bounded); a re-run of the batch
   * finds nothing left to take. Other replicas' silence caches see the end within 2 s.
   */
  private async endUntilResolved(lifecycles: readonly string[], now: number): Promise<void> {
    const ids = await this.acks.takeUntilResolved(lifecycles);
    if (ids.length === 0) return;
    // On the routing clock (`now`), through the silences' owner.
    const silences = new SilenceStore(this.redis, this.keys, () => now);
    for (const id of ids) await silences.expire(id);
  }

  /**
   * Acknowledges the episode `lifecycle` for `subscription`: the openings its routes (`channels`)
   * were told of are recorded with who and how. Null when none of them holds an open, told
   * opening (nothing to acknowledge: resolved, or never sent). The first ack stays.
   */
  async acknowledge(
    input: {
      subscription: string;
      channels: readonly string[];
      lifecycle: string;
      by: string;
      name: string | null;
      via: AckVia;
    },
    now: number,
  ): Promise<{ ack: Ack; created: boolean } | null> {
    const channels = [...new Set(input.channels)];
    if (channels.length === 0) return null;
    const texts = await this.redis.hmget(
      this.k('told'),
      ...channels.map((channel) =>
        ledgerField({ subscription: input.subscription, channel }, input.lifecycle),
      ),
    );
    const openings = new Set<string>();
    for (const text of texts) {
      if (text === null) continue;
      const entry = decode(TOLD_ENTRY, text);
      if (entry === undefined) countCorrupt(TOLD_ENTRY.kind);
      else openings.add(entry.opening.id);
    }
    if (openings.size === 0) return null;
    return this.acks.put({
      subscription: input.subscription,
      lifecycle: input.lifecycle,
      openings: [...openings],
      by: input.by,
      name: input.name === null ? null : input.name.slice(0, ACK_NAME_MAX),
      via: input.via,
      at: now,
      expiresAt: now + ACK_TTL_MS,
    });
  }

  /**
   * The told entries of one route (HSCAN over its fields: a button press, not a hot path). A
   * corrupt entry is left out (counted).
   */
  async toldOfRoute(route: { subscription: string; channel: string }): Promise<ToldEntry[]> {
    const glob = (text: string): string => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
    const match = `${glob(route.subscription)}|${glob(route.channel)}|*`;
    const out: ToldEntry[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(
        this.k('told'),
        cursor,
        'MATCH',
        match,
        'COUNT',
        500,
      );
      cursor = next;
      for (let i = 1; i < flat.length; i += 2) {
        const entry = decode(TOLD_ENTRY, flat[i] ?? '');
        if (entry === undefined) countCorrupt(TOLD_ENTRY.kind);
        else out.push(entry);
      }
    } while (cursor !== '0');
    return out;
  }

  /**
   * The acks in force over told `entries`, by ledger field: an entry is acknowledged when the
   * ack of its (subscription, lifecycle) names its opening. One MGET.
   */
  async acknowledged(
    entries: readonly [field: string, entry: ToldEntry][],
    now: number,
  ): Promise<Map<string, Ack>> {
    const out = new Map<string, Ack>();
    const pairs = new Map<string, { subscription: string; lifecycle: string }>();
    const pairOf = (e: ToldEntry) => ({
      subscription: e.subscription,
      lifecycle: lifecycleKey(e.opening),
    });
    for (const [, e] of entries) {
      const p = pairOf(e);
      pairs.set(`${p.subscription}|${p.lifecycle}`, p);
    }
    const list = [...pairs.values()];
    const acks = await this.acks.getMany(list, now);
    const byPair = new Map<string, Ack>();
    list.forEach((p, i) => {
      const ack = acks[i];
      if (ack !== null && ack !== undefined) byPair.set(`${p.subscription}|${p.lifecycle}`, ack);
    });
    for (const [field, e] of entries) {
      const p = pairOf(e);
      const ack = byPair.get(`${p.subscription}|${p.lifecycle}`);
      if (ack !== undefined && ack.openings.includes(e.opening.id)) out.set(field, ack);
    }
    return out;
  }

  /**
   * For the console's service page: per (subscription, lifecycle), whether the subscription's
   * routes (`channels`) hold a told opening of it (so `acknowledge` would act) and the ack in
   * force over those openings (an ack naming no told opening is an earlier episode's). One HMGET,
   * one MGET, in the order of `episodes`.
   */
  async episodeAcks(
    episodes: readonly { subscription: string; channels: readonly string[]; lifecycle: string }[],
    now: number,
  ): Promise<{ told: boolean; ack: Ack | null }[]> {
    const fields = episodes.map((e) =>
      [...new Set(e.channels)].map((channel) =>
        ledgerField({ subscription: e.subscription, channel }, e.lifecycle),
      ),
    );
    const flat = fields.flat();
    if (flat.length === 0) return episodes.map(() => ({ told: false, ack: null }));
    const [texts, acks] = await Promise.all([
      this.redis.hmget(this.k('told'), ...flat),
      this.acks.getMany(episodes, now),
    ]);
    let at = 0;
    return episodes.map((_, i) => {
      const openings = new Set<string>();
      for (let n = 0; n < (fields[i]?.length ?? 0); n++) {
        const text = texts[at++] ?? null;
        if (text === null) continue;
        const entry = decode(TOLD_ENTRY, text);
        if (entry === undefined) countCorrupt(TOLD_ENTRY.kind);
        else openings.add(entry.opening.id);
      }
      const ack = acks[i] ?? null;
      return {
        told: openings.size > 0,
        ack: ack !== null && ack.openings.some((id) => openings.has(id)) ? ack : null,
      };
    });
  }

  /** The subscriptions the told ledger holds openings of (one HKEYS: open things only). */
  async toldSubscriptions(): Promise<Set<string>> {
    const out = new Set<string>();
    for (const field of await this.redis.hkeys(this.k('told'))) {
      const parsed = parseLedgerField(field);
      if (parsed !== null) out.add(parsed.route.subscription);
    }
    return out;
  }

  /** Whether the told ledger holds a route's opening of a lifecycle (readable or not). */
  async isTold(route: string, key: string): Promise<boolean> {
    return (await this.redis.hexists(this.k('told'), `${route}|${key}`)) === 1;
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
    let entry: ToldEntry | null = null;
    if (told !== null) {
      // A corrupt entry reads as never told.
      entry = decode(TOLD_ENTRY, told) ?? null;
      if (entry === null) countCorrupt(TOLD_ENTRY.kind);
    }
    return { told: entry, suppressed: suppressed === 1 };
  }

  /**
   * Every told entry, by `route|key` (open things only: bounded by what is broken now). A
   * corrupt entry is left out (and left alone): nothing reminds of it, a closing still deletes it.
   */
  async allTold(): Promise<Map<string, ToldEntry>> {
    const all = await this.redis.hgetall(this.k('told'));
    const out = new Map<string, ToldEntry>();
    for (const [field, text] of Object.entries(all)) {
      const entry = decode(TOLD_ENTRY, text);
      if (entry === undefined) {
        countCorrupt(TOLD_ENTRY.kind);
        continue;
      }
      this.toldText.set(entry, text);
      out.set(field, entry);
    }
    return out;
  }

  /**
   * Which of `entries` (as `allTold` read them) the ledger still holds unchanged: a closing
   * routed since removes its lifecycle's fields. One round trip.
   */
  async toldUnchanged(entries: readonly [field: string, entry: ToldEntry][]): Promise<boolean[]> {
    if (entries.length === 0) return [];
    const now = await this.redis.hmget(this.k('told'), ...entries.map(([field]) => field));
    return entries.map(
      ([, entry], i) => now[i] === (this.toldText.get(entry) ?? encode(TOLD_ENTRY, entry)),
    );
  }

  /**
   * Replaces a told entry only if it is still the one read (a closing may have removed it
   * meanwhile). `before` is compared as stored: the text `allTold` read it from (an entry in the
   * previous format too), else its current encoding.
   */
  async updateTold(field: string, before: ToldEntry, after: ToldEntry): Promise<void> {
    await this.scripts.hashFieldCas(
      [this.k('told')],
      [field, this.toldText.get(before) ?? encode(TOLD_ENTRY, before), encode(TOLD_ENTRY, after)],
    );
  }

  /** One transition into a route's group buffer (what a routed batch's `group` effect does). */
  async addToGroup(route: string, t: Transition, now: number): Promise<void> {
    await this.commitGate([{ type: 'group', route, transition: t }], [], now);
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
   * crash between enqueue and finish) is returned as it was, so its batch gets the same id. A
   * corrupt item is left out (counted); `finish` drops it with the claim.
   */
  async claim(kind: 'group' | 'held', route: string): Promise<Transition[]> {
    return (await this.claimPositions(kind, route)).map((c) => c.t);
  }

  /** `claim`, each transition with its position in the claimed list (corrupt items left out). */
  async claimPositions(
    kind: 'group' | 'held',
    route: string,
  ): Promise<{ t: Transition; position: number }[]> {
    const items = await this.scripts.noiseBufferClaim(
      [
        this.k(kind, route),
        this.k(kind, route, 'claimed'),
        this.k(kind, route, 'closed'),
        this.k(kind, route, 'closed', 'claimed'),
      ],
      [],
    );
    const out: { t: Transition; position: number }[] = [];
    items.forEach((text, position) => {
      const t = decode(BUFFERED_TRANSITION, text);
      if (t === undefined) countCorrupt(BUFFERED_TRANSITION.kind);
      else out.push({ t, position });
    });
    return out;
  }

  /**
   * The claimed held list's marks: lifecycle key → how many of its items were held when a
   * closing of that lifecycle last went out through the quiet hours, and that closing's
   * observedAt. An unreadable mark is left out (nothing is taken for stale on it).
   */
  async claimedHeldMarks(route: string): Promise<Map<string, { held: number; at: number }>> {
    const all = await this.redis.hgetall(this.k('held', route, 'closed', 'claimed'));
    const out = new Map<string, { held: number; at: number }>();
    for (const [key, value] of Object.entries(all)) {
      const [held, at] = value.split(':').map(Number);
      if (Number.isFinite(held) && Number.isFinite(at))
        out.set(key, { held: held as number, at: at as number });
    }
    return out;
  }

  /**
   * The time of a tick's batches and catch-ups on the routing clock (`routing-decided-at.lua`,
   * without a job): after every cycle routed before, and before every cycle routed after, for
   * replica clocks up to `CLOCK_SKEW_MS` (a minute) apart. Their `createdAt`, so their rank in
   * the lifecycles they carry follows routing order.
   */
  async orderTime(now: number): Promise<number> {
    const t = Number(
      await this.scripts.routingDecidedAt(
        [this.keys.key('routing', 'last-decided-at')],
        [String(now), String(CLOCK_SKEW_MS)],
      ),
    );
    return Number.isFinite(t) && t > 0 ? t : now;
  }

  /** Ends a claim once its notification is enqueued; a group that refilled meanwhile restarts its window now. */
  async finish(kind: 'group' | 'held', route: string, now: number): Promise<void> {
    await this.scripts.noiseBufferFinish(...this.finishArgs(kind, route, now));
  }

  /** `finish` of a route's held and group claims at once (a catch-up that carried both). */
  async finishHeldAndGroup(route: string, now: number): Promise<void> {
    const m = this.redis.multi();
    const queued = this.scripts.queue(m);
    queued.noiseBufferFinish(...this.finishArgs('held', route, now));
    queued.noiseBufferFinish(...this.finishArgs('group', route, now));
    const replies = (await m.exec()) ?? [];
    const failed = replies.find(([err]) => err !== null);
    if (failed?.[0] != null) throw failed[0];
  }

  private finishArgs(
    kind: 'group' | 'held',
    route: string,
    now: number,
  ): [[string, string, string, string], [string, string]] {
    const marker = kind === 'group' ? this.k('group-since') : this.k('held-until');
    return [
      [
        this.k(kind, route),
        this.k(kind, route, 'claimed'),
        marker,
        this.k(kind, route, 'closed', 'claimed'),
      ],
      [route, kind === 'group' ? String(now) : ''],
    ];
  }

  /** One routed transition into the routed log (what a routed batch's `routed-log` effect does). */
  async logRouted(t: Transition, subscriptions: readonly string[], now: number): Promise<void> {
    await this.commitGate(
      [{ type: 'routed-log', transition: t, subscriptions: [...subscriptions] }],
      [],
      now,
    );
  }

  /** The routed log's transitions observed in [from, to); a corrupt item is left out (counted). */
  async routedLog(from: number, to: number): Promise<RoutedLogItem[]> {
    const items = await this.redis.zrangebyscore(this.keys.key('history'), String(from), `(${to}`);
    return decodeAll(ROUTED_LOG_ITEM, items);
  }

  /**
   * The routed log's transitions observed at each of `times` (one pipeline, a ZRANGEBYSCORE per time);
   * a corrupt item is left out (counted).
   */
  async routedLogAt(times: readonly number[]): Promise<RoutedLogItem[]> {
    if (times.length === 0) return [];
    const key = this.keys.key('history');
    const p = this.redis.pipeline();
    for (const at of new Set(times)) p.zrangebyscore(key, String(at), String(at));
    const out: RoutedLogItem[] = [];
    for (const [err, value] of (await p.exec()) ?? []) {
      if (err !== null) throw err;
      out.push(...decodeAll(ROUTED_LOG_ITEM, value as string[]));
    }
    return out;
  }

  /**
   * The routed log's newest transitions observed at or after `from`, newest first: the last `count`
   * items stored, of which a corrupt one is left out (not counted).
   */
  async recentRoutedLog(from: number, count: number): Promise<RoutedLogItem[]> {
    const texts = await this.redis.zrevrangebyscore(
      this.keys.key('history'),
      '+inf',
      String(from),
      'LIMIT',
      0,
      count,
    );
    const out: RoutedLogItem[] = [];
    for (const text of texts) {
      const item = decode(ROUTED_LOG_ITEM, text);
      if (item !== undefined) out.push(item);
    }
    return out;
  }

  /** When each of `transitionIds` was routed (Unix ms; one ZMSCORE); unrouted ids are absent. */
  async routedAt(transitionIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (transitionIds.length === 0) return out;
    const scores = await this.redis.zmscore(this.keys.key('routed'), ...transitionIds);
    transitionIds.forEach((id, i) => {
      const s = scores[i];
      if (s !== null && s !== undefined) out.set(id, Number(s));
    });
    return out;
  }

  async digestMarker(subscription: string): Promise<number | null> {
    const v = await this.redis.hget(this.k('digest'), subscription);
    return v === null ? null : Number(v);
  }

  async setDigestMarker(subscription: string, at: number): Promise<void> {
    await this.redis.hset(this.k('digest'), subscription, String(at));
  }
}
