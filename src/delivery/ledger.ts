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
 *
 * The values are plain strings, not JSON: nothing to version. They are spelled once, in
 * `LEDGER_VALUES` (`rules.ts`); the scripts that move them (src/redis/scripts/ledger-*.lua) take
 * them as ARGV.
 *
 * Beside it, `{prefix}:delivery-sending:<id>` (value `1`, short TTL renewed by its sender) says a
 * send of the delivery is still running somewhere after its batch handed it to its retry job (a
 * stalled send): that job waits while it is there, on every replica. And
 * `{prefix}:delivery-open:<subscription>|<channel>|<lifecycle>` (sorted set: delivery id by its
 * rank, `ORDER_HORIZON_MS`) lists the deliveries of a lifecycle on a route that were handed to
 * jobs of their own: the later ones wait for them (`order.ts`).
 */
import type { Keys, RedisClient } from '../redis.js';
import { scripts, type Scripts } from '../redis/scripts.js';
import { ORDER_HORIZON_MS, horizonRank, type Ordered } from './order.js';
import { LEDGER_VALUES, rankSpan } from './rules.js';

/** Where a delivery is listed, or looked up, in its lifecycle's order. */
type Listing = Pick<Ordered, 'field' | 'rank'>;

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

/** ledger-claim.lua's reply codes, by value. */
const CLAIMS: readonly Claim[] = ['other', 'new', 'mine', 'handed'];

export const BATCH_OWNER_PREFIX = LEDGER_VALUES.batchOwnerPrefix;
/** The ledger value of a delivery handed to its retry job (`ledger-hand-off.lua`). */
const RETRY_JOB = LEDGER_VALUES.retryJob;
/** The ledger value of a sent delivery (`ledger-mark-sent.lua`). */
const SENT = LEDGER_VALUES.sent;
/**
 * Sent marks are gathered this long before they are written together. Each write is a socket
 * write and a reply to read, which at fan-out rates cost more CPU than the marks themselves: at
 * a storm's 1,400 deliveries/s, 5 ms made one write per 7 marks, more of the delivery worker's
 * Redis calls than its batches' claims and job moves together; 20 ms makes one per 28. A crash
 * in between re-sends the marks not yet written, as before (at least once), for at most this
 * long of deliveries.
 */
export const MARK_FLUSH_MS = 20;
/** A flush goes at once when this many marks wait (one command stays a modest size). */
export const MARK_FLUSH_MAX = 200;

export function batchOwner(jobId: string): string {
  return `${BATCH_OWNER_PREFIX}${jobId}`;
}

export class DeliveryLedger {
  /** Keys waiting for the next mark flush, and the promise that flush settles. */
  private pendingMarks: string[] = [];
  private nextFlush: Promise<void> | null = null;
  /** Writes the waiting marks now (set while a flush is pending). */
  private flushNow: (() => void) | null = null;
  private readonly scripts: Scripts;
  /**
   * `{prefix}:delivery:` — a delivery's key is this plus its id. Built once: `Keys.key` joins an
   * array per call, and a storm asks for two keys per delivery (its claim and its sent mark).
   */
  private readonly entryPrefix: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** How long a claimed or sent entry is kept (the dedupe window). */
    private readonly sentTtlSeconds: number,
    /** How long a hand-off to a retry job is kept (at least as long as dead letters). */
    private readonly retryTtlSeconds: number,
  ) {
    this.scripts = scripts(redis);
    this.entryPrefix = keys.key('delivery', '');
  }

  private key(id: string): string {
    return this.entryPrefix + id;
  }

  private openKey(field: string): string {
    return this.keys.key('delivery-open', field);
  }

  private sendingKey(id: string): string {
    return this.keys.key('delivery-sending', id);
  }

  /** One round trip: what `owner` may do with each of `ids`. */
  async claim(ids: readonly string[], owner: string): Promise<Claim[]> {
    if (ids.length === 0) return [];
    const reply = await this.scripts.ledgerClaim(
      ids.map((id) => this.key(id)),
      [owner, String(this.sentTtlSeconds), RETRY_JOB],
    );
    return ids.map((_, i) => CLAIMS[reply[i] ?? 0] ?? 'other');
  }

  /**
   * Marks a delivery sent. Marks made within MARK_FLUSH_MS (at most MARK_FLUSH_MAX) travel in
   * one command (one socket write): at fan-out rates a write per delivery costs more CPU than
   * the send. The promise settles when the mark is in Redis (a crash before that re-sends it: at
   * least once).
   */
  markSent(id: string): Promise<void> {
    this.pendingMarks.push(this.key(id));
    const flush = (this.nextFlush ??= new Promise<void>((resolve, reject) => {
      this.flushNow = () => {
        clearTimeout(timer);
        this.flushNow = null;
        const keys = this.pendingMarks;
        this.pendingMarks = [];
        this.nextFlush = null;
        this.scripts.ledgerMarkSent(keys, [String(this.sentTtlSeconds), SENT]).then(() => {
          resolve();
        }, reject);
      };
      const timer = setTimeout(() => this.flushNow?.(), MARK_FLUSH_MS);
    }));
    if (this.pendingMarks.length >= MARK_FLUSH_MAX) this.flushNow?.();
    return flush;
  }

  /**
   * Hands a delivery to its retry job: true when `owner` held it (or nobody did), false when it
   * is someone else's now (sent, or held by another batch) and must be left alone. `orders`: it
   * is listed in the index of each of its lifecycles on its route (`order.ts`) in the same step.
   */
  async handOff(id: string, owner: string, orders: readonly Listing[] = []): Promise<boolean> {
    const keys = [this.key(id), ...orders.map((o) => this.openKey(o.field))];
    const argv = [owner, String(this.retryTtlSeconds), RETRY_JOB];
    if (orders.length > 0)
      argv.push(
        String(ORDER_HORIZON_MS),
        String(rankSpan(ORDER_HORIZON_MS)),
        id,
        ...orders.map((o) => String(o.rank)),
      );
    return (await this.scripts.ledgerHandOff(keys, argv)) === 1;
  }

  /**
   * For each of `orders`, the deliveries listed in its lifecycle's index with a lower rank,
   * leaving out listings past `ORDER_HORIZON_MS` at `now` (they go with the index, which expires
   * that long after its last listing). One round trip, one command per order.
   */
  async listedBefore(orders: readonly Listing[], now: number): Promise<string[][]> {
    if (orders.length === 0) return [];
    const p = this.redis.pipeline();
    const oldest = String(horizonRank(now));
    for (const { field, rank } of orders)
      p.zrangebyscore(this.openKey(field), oldest, `(${String(rank)}`);
    const replies = (await p.exec()) ?? [];
    return orders.map((_, i) => {
      const [err, ids] = replies[i] ?? [new Error('no reply'), null];
      if (err !== null) throw err;
      return ids as string[];
    });
  }

  /** Takes deliveries that are sent or dead out of a lifecycle's index. */
  async unlist(field: string, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.zrem(this.openKey(field), ...ids);
  }

  /** Undoes a hand-off whose retry job could not be added: the batch holds the delivery again. */
  async revertHandOff(id: string, owner: string): Promise<void> {
    await this.scripts.ledgerRevertHandOff(
      [this.key(id)],
      [owner, String(this.sentTtlSeconds), RETRY_JOB],
    );
  }

  /**
   * Keeps a retry job's hand-off as long as its dead letter, or takes it back for a dead letter
   * being retried: true while it is the retry job's (or nobody's), false when it was sent or a
   * batch holds it since (then the dead letter is stale and must not be sent again). `orders`:
   * where to list it again (a dead letter retried).
   */
  async renewHandOff(id: string, orders: readonly Listing[] = []): Promise<boolean> {
    // The hand-off whose owner is the retry job itself: kept while it is the retry job's or unset.
    return this.handOff(id, RETRY_JOB, orders);
  }

  /**
   * Marks sends of `ids` as running for `ttlMs` (again: renews the marks). One round trip; the
   * marks lapse by themselves if their process dies.
   */
  async holdSending(ids: readonly string[], ttlMs: number): Promise<void> {
    if (ids.length === 0) return;
    const batch = this.redis.multi();
    for (const id of ids) batch.set(this.sendingKey(id), '1', 'PX', ttlMs);
    const replies = await batch.exec();
    const failed = replies?.find(([err]) => err !== null);
    if (failed !== undefined) throw failed[0] ?? new Error('holdSending failed');
  }

  /** The send of `id` has ended (and what it did is recorded). */
  async releaseSending(id: string): Promise<void> {
    await this.redis.del(this.sendingKey(id));
  }

  /**
   * One delivery's entry and whether a send of it is running (`holdSending`), read together
   * (one MGET): a sender that records its outcome before it releases its mark is never seen as
   * neither running nor recorded.
   */
  async entryAndSending(id: string): Promise<{ entry: LedgerEntry; sending: boolean }> {
    const [value, sending] = await this.redis.mget(this.key(id), this.sendingKey(id));
    return { entry: parseEntry(value), sending: sending != null };
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
  if (value === SENT) return { state: 'sent' };
  if (value === RETRY_JOB) return { state: 'retry_job' };
  if (value?.startsWith(BATCH_OWNER_PREFIX) === true) return { state: 'claimed', owner: value };
  return { state: 'unknown' };
}
