/**
 * Acknowledgements (docs/acting-on-alerts.md): "someone is on it" for one episode (a lifecycle:
 * `feedId|subject`) of one subscription. An acknowledged episode gets no more reminders for that
 * subscription (any of its channels), and shows as acknowledged in the console, the Slack
 * message and digests; it never holds back an update or the closing, which are the news.
 *
 * - `noise:ack:<hash>` (string, versioned JSON) — the ack of one (subscription, lifecycle), with
 *   who, when, through what, and the ids of the openings it acknowledged (what the told ledger
 *   held for the subscription's routes at the time). The closing deletes it in the same MULTI
 *   that ends the lifecycle in the told ledger (`NoiseStore.commitGate`); an ack written just as
 *   a closing went by names openings that no longer exist, so it never covers the next opening.
 *   It expires after `ACK_TTL_MS` at the latest, so it is bounded by the episode and by time.
 * - `noise:until-resolved:<hash>` (set) — ids of "silence until resolved" silences of one
 *   lifecycle: the closing ends them (`NoiseStore.commitGate`), else they end by themselves at
 *   their `endsAt` (at most `UNTIL_RESOLVED_MAX_MS` after they start).
 *
 * Bounded: an ack needs an open, told episode of the subscription (the told ledger holds what is
 * broken now, which no team controls), one key per (subscription, lifecycle), each with a TTL.
 */
import { createHash } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode, encode, zodShape } from '../redis/stored.js';

/** An ack lasts until the closing, and at most this long (acknowledge again after). */
export const ACK_TTL_MS = 7 * 24 * 3600 * 1000;
/** "Silence until resolved" ends at the closing, and at most this long after it starts. */
export const UNTIL_RESOLVED_MAX_MS = 7 * 24 * 3600 * 1000;
/** Longest display name kept (a Slack user name, a token's team). */
export const ACK_NAME_MAX = 200;

export const ACK_VIA = ['slack', 'console', 'api'] as const;
export type AckVia = (typeof ACK_VIA)[number];

export interface Ack {
  subscription: string;
  /** The lifecycle key, `feedId|subject` (src/noise/policy.ts `lifecycleKey`). */
  lifecycle: string;
  /** The told openings acknowledged (transition ids; one per channel at most). */
  openings: string[];
  /** Who: `slack:<user id>`, `token:<token id>`, `console:<team>`. */
  by: string;
  /** A display name (the Slack user name, the team); null when none. */
  name: string | null;
  via: AckVia;
  /** Unix ms. */
  at: number;
  /** Unix ms: `at + ACK_TTL_MS`. */
  expiresAt: number;
}

export const STORED_ACK = zodShape<Ack>(
  'noise:ack',
  z.object({
    subscription: z.string(),
    lifecycle: z.string(),
    openings: z.array(z.string()),
    by: z.string(),
    name: z.string().nullable(),
    via: z.enum(ACK_VIA),
    at: z.number(),
    expiresAt: z.number(),
  }),
);

function hash(parts: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/** The ack keys and the until-resolved sets; `NoiseStore` is the one that uses them. */
export class AckStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  private ackKey(subscription: string, lifecycle: string): string {
    return this.keys.key('noise', 'ack', hash([subscription, lifecycle]));
  }

  private untilResolvedKey(lifecycle: string): string {
    return this.keys.key('noise', 'until-resolved', hash([lifecycle]));
  }

  /** The acks of `pairs`, in order (one MGET); null for none, expired or unreadable. */
  async getMany(
    pairs: readonly { subscription: string; lifecycle: string }[],
    now: number,
  ): Promise<(Ack | null)[]> {
    if (pairs.length === 0) return [];
    const texts = await this.redis.mget(
      ...pairs.map((p) => this.ackKey(p.subscription, p.lifecycle)),
    );
    return texts.map((text) => {
      if (text === null) return null;
      const ack = decode(STORED_ACK, text);
      if (ack === undefined) {
        countCorrupt(STORED_ACK.kind);
        return null;
      }
      return ack.expiresAt > now ? ack : null;
    });
  }

  async get(subscription: string, lifecycle: string, now: number): Promise<Ack | null> {
    const [ack] = await this.getMany([{ subscription, lifecycle }], now);
    return ack ?? null;
  }

  /** Stores `ack` unless one is there already (the first acknowledger stays); the one in force. */
  async put(ack: Ack): Promise<{ ack: Ack; created: boolean }> {
    const key = this.ackKey(ack.subscription, ack.lifecycle);
    const ttl = Math.max(1, ack.expiresAt - ack.at);
    const set = await this.redis.set(key, encode(STORED_ACK, ack), 'PX', ttl, 'NX');
    if (set === 'OK') return { ack, created: true };
    const existing = await this.get(ack.subscription, ack.lifecycle, ack.at);
    if (existing !== null) return { ack: existing, created: false };
    // Unreadable or expired meanwhile: replaced.
    await this.redis.set(key, encode(STORED_ACK, ack), 'PX', ttl);
    return { ack, created: true };
  }

  /** Queues the deletion of the acks of `pairs` (the closing's MULTI). */
  queueClear(
    m: ChainableCommander,
    pairs: readonly { subscription: string; lifecycle: string }[],
  ): void {
    if (pairs.length === 0) return;
    m.del(...pairs.map((p) => this.ackKey(p.subscription, p.lifecycle)));
  }

  /** Records a "silence until resolved" of `lifecycle`, kept as long as the silence at most. */
  async addUntilResolved(lifecycle: string, silenceId: string, ttlMs: number): Promise<void> {
    const key = this.untilResolvedKey(lifecycle);
    await this.redis
      .multi()
      .sadd(key, silenceId)
      .pexpire(key, Math.max(1, ttlMs), 'GT')
      .pexpire(key, Math.max(1, ttlMs), 'NX')
      .exec();
  }

  /**
   * Takes (reads and deletes, one MULTI) the until-resolved silence ids of `lifecycles`: the
   * closing's caller ends those silences.
   */
  async takeUntilResolved(lifecycles: readonly string[]): Promise<string[]> {
    if (lifecycles.length === 0) return [];
    const m = this.redis.multi();
    for (const lifecycle of new Set(lifecycles)) {
      const key = this.untilResolvedKey(lifecycle);
      m.smembers(key).del(key);
    }
    const ids = new Set<string>();
    for (const [err, value] of (await m.exec()) ?? []) {
      if (err !== null) throw err;
      if (Array.isArray(value)) for (const id of value) if (typeof id === 'string') ids.add(id);
    }
    return [...ids];
  }
}
