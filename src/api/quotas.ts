/**
 * Per-team quotas (`server.quotas`, quota-config.ts): how many channels, subscriptions, silences
 * (active and pending) and tokens (active) a team has, and how many bytes of stored JSON all of
 * its objects take, including what is kept after a delete (tombstones, expired silences, revoked
 * and expired tokens: 7 days each), since that is in Redis too.
 *
 * A team's usage is worked out from the stored objects themselves, inside the write's optimistic
 * transaction (store.ts `transact`: every hash read here is WATCHed), so two creates racing at
 * the limit cannot both pass: the second one's EXEC aborts and it is checked again.
 *
 * Who is limited: writes made with a team token. An admin's writes are never refused by a team
 * quota, but what an admin stores for a team counts toward that team's usage. Tokens, which only
 * admins create, are the exception: `tokens` bounds an admin's token creation too.
 * Config-file objects belong to no team and count nowhere.
 */
import { ApiError } from './errors.js';
import type { QuotasConfig } from './quota-config.js';

export type QuotaKind = 'channel' | 'subscription' | 'silence' | 'token';

/** A team's usage: live objects by kind, and stored bytes. */
export interface Usage {
  channel: number;
  subscription: number;
  silence: number;
  token: number;
  bytes: number;
}

/** One stored object as the quotas see it. */
export interface Counted {
  team: string;
  kind: QuotaKind;
  /** Unique per kind (a name, a silence or token id; a tombstone gets its own `key`). */
  key: string;
  /** Bytes of its stored JSON. */
  bytes: number;
  /** Whether it counts toward the number of its kind (live; not a tombstone, not expired). */
  live: boolean;
}

/** What a write stores: checked against the team's usage without the object it replaces. */
export interface QuotaCheck {
  team: string;
  kind: QuotaKind;
  key: string;
  bytes: number;
  /** Refused over the limit (team tokens; for tokens, everyone). */
  enforce: boolean;
  /** The object's name in messages (`channel "a-hook"`). */
  label: string;
}

const CONFIG_KEY: Record<QuotaKind, keyof QuotasConfig> = {
  channel: 'channels',
  subscription: 'subscriptions',
  silence: 'silences',
  token: 'tokens',
};

const PLURAL: Record<QuotaKind, string> = {
  channel: 'channels',
  subscription: 'subscriptions',
  silence: 'active or pending silences',
  token: 'active tokens',
};

export function emptyUsage(): Usage {
  return { channel: 0, subscription: 0, silence: 0, token: 0, bytes: 0 };
}

/** `team`'s usage over `objects`, leaving out the object `skip` (the one a write replaces). */
export function usageOf(
  objects: Iterable<Counted>,
  team: string,
  skip?: { kind: QuotaKind; key: string },
): { usage: Usage; replaced: Counted | undefined } {
  const usage = emptyUsage();
  let replaced: Counted | undefined;
  for (const o of objects) {
    if (o.team !== team) continue;
    if (skip !== undefined && o.kind === skip.kind && o.key === skip.key) {
      replaced = o;
      continue;
    }
    usage.bytes += o.bytes;
    if (o.live) usage[o.kind] += 1;
  }
  return { usage, replaced };
}

function quotaError(message: string): ApiError {
  return new ApiError(409, 'quota_exceeded', message, null);
}

/**
 * Throws a 409 `quota_exceeded` naming the limit when `write` would take `team` past one.
 * Replacing an object never fails the count, and never fails the size when it does not grow.
 */
export function checkQuota(
  objects: Iterable<Counted>,
  write: QuotaCheck,
  quotas: QuotasConfig,
): void {
  if (!write.enforce) return;
  const { usage, replaced } = usageOf(objects, write.team, write);
  const grows = write.bytes > (replaced?.bytes ?? 0);
  if (grows && write.bytes > quotas.objectBytes) {
    throw quotaError(
      `${write.label} would take ${write.bytes} bytes, the limit per object (server.quotas.objectBytes) is ${quotas.objectBytes}`,
    );
  }
  const key = CONFIG_KEY[write.kind];
  const limit = quotas[key];
  if (replaced?.live !== true && usage[write.kind] + 1 > limit) {
    throw quotaError(
      `team ${write.team} has ${usage[write.kind]} ${PLURAL[write.kind]}, the limit (server.quotas.${key}) is ${limit}`,
    );
  }
  if (grows && usage.bytes + write.bytes > quotas.bytes) {
    throw quotaError(
      `team ${write.team} stores ${usage.bytes + (replaced?.bytes ?? 0)} bytes, ${write.label} would make it ${usage.bytes + write.bytes}; the limit (server.quotas.bytes) is ${quotas.bytes} (deleted, expired and revoked objects count for the 7 days they are kept)`,
    );
  }
}

/** Bytes of a stored value (UTF-8). */
export function storedBytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
