/**
 * The delivery ledger: one small Redis string per delivery id (`{prefix}:delivery:<id>`) that says
 * who is responsible for it. It is what makes a delivery happen once although deliveries travel
 * in batches: a batch job claims each of its deliveries before sending, and only the first claim
 * wins, so a re-enqueued transition, a re-run router or two replicas racing cannot send twice.
 *
 * Values:
 * - `b:<batch job id>` — claimed by that batch job, being sent (a re-run of the same job may send it);
 * - `j` — handed to its own retry job (job id = delivery id): retrying, or a dead letter;
 * - `s` — sent.
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../redis.js';

export type LedgerEntry =
  | { state: 'claimed'; owner: string }
  | { state: 'retry_job' }
  | { state: 'sent' }
  | { state: 'unknown' };

/** What a claim found for one delivery id. */
export type Claim =
  /** Claimed now: send it. */
  | 'new'
  /** Already this owner's (a re-run of the batch): not marked sent, so send it (again). */
  | 'mine'
  /** Handed to its retry job (by this batch or another). */
  | 'handed'
  /** Sent, or held by another batch. */
  | 'other';

const CLAIMS: readonly Claim[] = ['other', 'new', 'mine', 'handed'];

/** Claims every unclaimed key for ARGV[1]: 1 new, 2 already ARGV[1]'s, 3 handed to a retry job, 0 other. */
const CLAIM_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, ARGV[1], 'NX', 'EX', ARGV[2]) then
    out[i] = 1
  else
    local v = redis.call('GET', key)
    if v == ARGV[1] then out[i] = 2 elseif v == 'j' then out[i] = 3 else out[i] = 0 end
  end
end
return out
`;

/** Marks every key sent (ARGV[1] = TTL seconds). */
const MARK_SENT_SCRIPT = `
for _, key in ipairs(KEYS) do
  redis.call('SET', key, 's', 'EX', ARGV[1])
end
return #KEYS
`;

/** Sets KEYS[1] to 'j' while ARGV[1] holds it or nobody does; 1 when it did. */
const HAND_OFF_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[2])
  return 1
end
return 0
`;

/** Sets KEYS[1] back to ARGV[1] (a batch's claim) while it is 'j': its retry job could not be added. */
const REVERT_HAND_OFF_SCRIPT = `
if redis.call('GET', KEYS[1]) == 'j' then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
`;

/** Sets KEYS[1] to 'j' while it is 'j' or unset (a dead letter retried, never beside a sender). */
const RECLAIM_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v == false or v == 'j' then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[1])
  return 1
end
return 0
`;

export const BATCH_OWNER_PREFIX = 'b:';
/** Sent marks are gathered this long before they are written together. */
export const MARK_FLUSH_MS = 5;

export function batchOwner(jobId: string): string {
  return `${BATCH_OWNER_PREFIX}${jobId}`;
}

export class DeliveryLedger {
  /** Keys waiting for the next mark flush, and the promise that flush settles. */
  private pendingMarks: string[] = [];
  private nextFlush: Promise<void> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    /** How long a claimed or sent entry is kept (the dedupe window). */
    private readonly sentTtlSeconds: number,
    /** How long a hand-off to a retry job is kept (at least as long as dead letters). */
    private readonly retryTtlSeconds: number,
  ) {}

  private key(id: string): string {
    return this.keys.key('delivery', id);
  }

  /** One round trip: what `owner` may do with each of `ids`. */
  async claim(ids: readonly string[], owner: string): Promise<Claim[]> {
    if (ids.length === 0) return [];
    const reply = (await this.redis.eval(
      CLAIM_SCRIPT,
      ids.length,
      ...ids.map((id) => this.key(id)),
      owner,
      String(this.sentTtlSeconds),
    )) as number[];
    return ids.map((_, i) => CLAIMS[reply[i] ?? 0] ?? 'other');
  }

  /**
   * Marks a delivery sent. Marks made within MARK_FLUSH_MS travel in one command (one socket
   * write): at fan-out rates a write per delivery costs more CPU than the send. The promise
   * settles when the mark is in Redis (a crash before that re-sends it: at least once).
   */
  markSent(id: string): Promise<void> {
    this.pendingMarks.push(this.key(id));
    this.nextFlush ??= new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        const keys = this.pendingMarks;
        this.pendingMarks = [];
        this.nextFlush = null;
        this.redis
          .eval(MARK_SENT_SCRIPT, keys.length, ...keys, String(this.sentTtlSeconds))
          .then(() => {
            resolve();
          }, reject);
      }, MARK_FLUSH_MS);
    });
    return this.nextFlush;
  }

  /**
   * Hands a delivery to its retry job: true when `owner` held it (or nobody did), false when it
   * is someone else's now (sent, or held by another batch) and must be left alone.
   */
  async handOff(id: string, owner: string): Promise<boolean> {
    const took = await this.redis.eval(
      HAND_OFF_SCRIPT,
      1,
      this.key(id),
      owner,
      String(this.retryTtlSeconds),
    );
    return took === 1;
  }

  /** Undoes a hand-off whose retry job could not be added: the batch holds the delivery again. */
  async revertHandOff(id: string, owner: string): Promise<void> {
    await this.redis.eval(
      REVERT_HAND_OFF_SCRIPT,
      1,
      this.key(id),
      owner,
      String(this.sentTtlSeconds),
    );
  }

  /**
   * Keeps a retry job's hand-off as long as its dead letter, or takes it back for a dead letter
   * being retried: true while it is the retry job's (or nobody's), false when it was sent or a
   * batch holds it since (then the dead letter is stale and must not be sent again).
   */
  async renewHandOff(id: string): Promise<boolean> {
    const took = await this.redis.eval(
      RECLAIM_SCRIPT,
      1,
      this.key(id),
      String(this.retryTtlSeconds),
    );
    return took === 1;
  }

  async entries(ids: readonly string[]): Promise<LedgerEntry[]> {
    if (ids.length === 0) return [];
    const values = await this.redis.mget(...ids.map((id) => this.key(id)));
    return values.map(parseEntry);
  }

  async entry(id: string): Promise<LedgerEntry> {
    return parseEntry(await this.redis.get(this.key(id)));
  }
}

function parseEntry(value: string | null | undefined): LedgerEntry {
  if (value === 's') return { state: 'sent' };
  if (value === 'j') return { state: 'retry_job' };
  if (value?.startsWith(BATCH_OWNER_PREFIX) === true) return { state: 'claimed', owner: value };
  return { state: 'unknown' };
}
