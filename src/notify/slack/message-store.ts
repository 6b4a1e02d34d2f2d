/**
 * Slack app mode's state in Redis: which message is the living message of an episode, and what
 * each delivery already did.
 *
 * - `slack-app:ref:<h>` — the parent of one (subscription, channel, episode): `{channelId, ts,
 *   openedBy, openedAt, closed}`. After a closing it stays (closed) so a retried closing still
 *   finds it, and the next notification of the episode key starts a new parent.
 * - `slack-app:claim:<h>` — held (SET NX PX) by the one sender working on the episode. Every
 *   send of an episode runs under it, so two replicas never post two parents and the sends of one
 *   episode never interleave. A second sender polls the key (bounded) and then reads the state
 *   the first one left; when the wait runs out it fails retryably and BullMQ retries it.
 * - `slack-app:delivery:<h>` — one delivery's progress `{posted, updated, replied}`: a retry after
 *   a partial failure (edit done, reply failed) only does what is missing.
 *
 * Every key expires 30 days after its last write; values are versioned envelopes read through zod
 * (`src/redis/stored.ts`); an unreadable value counts as corrupt and reads as absent.
 */
import type { RedisClient } from '../../redis.js';
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { countCorrupt, decode, encode, zodShape } from '../../redis/stored.js';
import { DeliveryError } from '../types.js';

/** References and progress are kept 30 days after their last write. */
export const SLACK_MESSAGE_TTL_SECONDS = 30 * 24 * 60 * 60;

/** The living message of one episode. */
export interface SlackMessageRef {
  /** The conversation id Slack answered (also when the config names `#channel`). */
  channelId: string;
  ts: string;
  /** The transition whose notification posted the parent. */
  openedBy: string;
  /** When the episode opened (the opening's observedAt, Unix ms); null when first seen later. */
  openedAt: number | null;
  /** A closing was told: the next notification of this episode key starts a new parent. */
  closed: boolean;
  /**
   * Whose living message, for the buttons (`interactions.ts`): a button carries only the hash of
   * the scope (`scopeRef`), and the handler finds the episode here. Absent in older references.
   */
  scope?: SlackMessageScope | undefined;
  /** What was done from the buttons ("Acknowledged by <@U…> at …"), shown on every edit. */
  notes?: string[] | undefined;
  /** Acknowledged from Slack: the Acknowledge button is left out of later edits. */
  acked?: boolean | undefined;
}

/** A message: conversation id and ts. */
export interface SlackMessageAddress {
  channelId: string;
  ts: string;
}

/** What one delivery already did. */
export interface SlackDeliveryProgress {
  /** The ts of the message this delivery posted as a new parent (or as a plain post / list). */
  posted: string | null;
  /** The parent this delivery edited, once chat.update succeeded. */
  updated: SlackMessageAddress | null;
  /** The ts of its thread reply, once posted. */
  replied: string | null;
}

/** Whose living message: one per subscription, channel name and episode key. */
export interface SlackMessageScope {
  subscription: string;
  channel: string;
  episode: string;
}

const addressSchema = z.object({ channelId: z.string().min(1), ts: z.string().min(1) });

const refShape = zodShape<SlackMessageRef>(
  'slack-message-ref',
  addressSchema.extend({
    openedBy: z.string(),
    openedAt: z.number().nullable(),
    closed: z.boolean(),
    scope: z
      .object({
        subscription: z.string(),
        channel: z.string(),
        episode: z.string(),
      })
      .optional(),
    notes: z.array(z.string()).max(20).optional(),
    acked: z.boolean().optional(),
  }),
);

const progressShape = zodShape<SlackDeliveryProgress>(
  'slack-delivery-progress',
  z.object({
    posted: z.string().nullable(),
    updated: addressSchema.nullable(),
    replied: z.string().nullable(),
  }),
);

export const NO_PROGRESS: SlackDeliveryProgress = { posted: null, updated: null, replied: null };

export interface SlackMessageStoreOptions {
  /** How long a claim lives if its holder dies (longer than the holder's longest send). */
  claimTtlMs?: number;
  /** How long a second sender waits for the claim before failing retryably. */
  waitMs?: number;
  /** How often a waiting sender reads the claim key. */
  pollMs?: number;
}

export interface SlackMessageStore {
  /**
   * Runs `work` while holding the episode's claim. A sender that finds the claim held polls the
   * key until it is released (then takes it) or `waitMs` runs out (retryable DeliveryError).
   */
  withClaim<T>(scope: SlackMessageScope, work: () => Promise<T>): Promise<T>;
  getRef(scope: SlackMessageScope): Promise<SlackMessageRef | null>;
  getProgress(deliveryId: string): Promise<SlackDeliveryProgress>;
  /** Writes the delivery's progress and, in the same MULTI, the episode's reference. */
  commit(
    deliveryId: string,
    progress: SlackDeliveryProgress,
    ref?: { scope: SlackMessageScope; ref: SlackMessageRef },
  ): Promise<void>;
  /** Writes the episode's reference alone. */
  setRef(scope: SlackMessageScope, ref: SlackMessageRef): Promise<void>;
  /** The reference stored under a button's value (`scopeRef`); null for none or a malformed one. */
  getRefByHash(ref: string): Promise<SlackMessageRef | null>;
}

/** What a button carries: the hash that names the episode's reference (32 hex digits). */
export function scopeRef(scope: SlackMessageScope): string {
  return hash([scope.subscription, scope.channel, scope.episode]);
}

/** The reference as stored: with its scope, so a button's hash leads back to the episode. */
function withScope(scope: SlackMessageScope, ref: SlackMessageRef): SlackMessageRef {
  return {
    ...ref,
    scope: { subscription: scope.subscription, channel: scope.channel, episode: scope.episode },
  };
}

/** Whether a button value has the form of a `scopeRef`. */
export function isScopeRef(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{32}$/.test(value);
}

function hash(parts: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/** Redis trouble is statuswatch's own: retryable, named by its code, never by its text. */
function internal(what: string, caught: unknown): DeliveryError {
  if (caught instanceof DeliveryError) return caught;
  const code =
    caught !== null &&
    typeof caught === 'object' &&
    'code' in caught &&
    typeof caught.code === 'string'
      ? caught.code
      : caught instanceof Error
        ? caught.name
        : 'unknown error';
  return new DeliveryError({
    message: `Slack app state: Redis ${what} failed (${code})`,
    retryable: true,
    reason: 'internal',
    cause: caught,
  });
}

async function redisOp<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (caught) {
    throw internal(what, caught);
  }
}

export function createSlackMessageStore(
  state: { redis: RedisClient; key: (...parts: string[]) => string },
  options: SlackMessageStoreOptions = {},
): SlackMessageStore {
  const { redis } = state;
  const claimTtlMs = options.claimTtlMs ?? 60_000;
  const waitMs = options.waitMs ?? 15_000;
  const pollMs = options.pollMs ?? 50;
  const scopeHash = scopeRef;
  const refKey = (scope: SlackMessageScope): string =>
    state.key('slack-app', 'ref', scopeHash(scope));
  const claimKey = (scope: SlackMessageScope): string =>
    state.key('slack-app', 'claim', scopeHash(scope));
  const progressKey = (deliveryId: string): string =>
    state.key('slack-app', 'delivery', hash([deliveryId]));

  async function take(key: string, token: string): Promise<boolean> {
    const answer = await redisOp('claim', () => redis.set(key, token, 'PX', claimTtlMs, 'NX'));
    return answer === 'OK';
  }

  /**
   * Releases the claim if it is still ours. Two commands, not one script: the claim outlives the
   * holder's longest send (every Slack call is bounded by the timeout), so it cannot expire and
   * pass to another sender between the GET and the DEL.
   */
  async function release(key: string, token: string): Promise<void> {
    const holder = await redisOp('claim release', () => redis.get(key));
    if (holder === token) await redisOp('claim release', () => redis.del(key));
  }

  async function acquire(key: string, token: string): Promise<void> {
    if (await take(key, token)) return;
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      await delay(pollMs);
      const holder = await redisOp('claim poll', () => redis.get(key));
      if (holder === null && (await take(key, token))) return;
    }
    throw new DeliveryError({
      message: 'Slack app: another sender is still working on this episode (claim held)',
      retryable: true,
      reason: 'internal',
      retryAfterMs: Math.max(1000, pollMs),
    });
  }

  function readRef(text: string | null): SlackMessageRef | null {
    if (text === null) return null;
    const ref = decode(refShape, text);
    if (ref === undefined) {
      countCorrupt(refShape.kind);
      return null;
    }
    return ref;
  }

  return {
    async withClaim(scope, work) {
      const key = claimKey(scope);
      const token = randomUUID();
      await acquire(key, token);
      try {
        return await work();
      } finally {
        await release(key, token);
      }
    },

    async getRef(scope) {
      return readRef(await redisOp('read', () => redis.get(refKey(scope))));
    },

    async getProgress(deliveryId) {
      const text = await redisOp('read', () => redis.get(progressKey(deliveryId)));
      if (text === null) return NO_PROGRESS;
      const progress = decode(progressShape, text);
      if (progress === undefined) {
        countCorrupt(progressShape.kind);
        return NO_PROGRESS;
      }
      return progress;
    },

    async commit(deliveryId, progress, ref) {
      const multi = redis
        .multi()
        .set(
          progressKey(deliveryId),
          encode(progressShape, progress),
          'EX',
          SLACK_MESSAGE_TTL_SECONDS,
        );
      if (ref !== undefined) {
        multi.set(
          refKey(ref.scope),
          encode(refShape, withScope(ref.scope, ref.ref)),
          'EX',
          SLACK_MESSAGE_TTL_SECONDS,
        );
      }
      const results = await redisOp('write', () => multi.exec());
      const failed = results?.find(([error]) => error !== null)?.[0];
      if (results === null || failed !== undefined) {
        throw internal('write', failed ?? new Error('transaction aborted'));
      }
    },

    async getRefByHash(ref) {
      if (!isScopeRef(ref)) return null;
      return readRef(await redisOp('read', () => redis.get(state.key('slack-app', 'ref', ref))));
    },

    async setRef(scope, ref) {
      await redisOp('write', () =>
        redis.set(
          refKey(scope),
          encode(refShape, withScope(scope, ref)),
          'EX',
          SLACK_MESSAGE_TTL_SECONDS,
        ),
      );
    },
  };
}
