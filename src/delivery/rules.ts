/**
 * The rules of delivery order and of the delivery ledger that the TypeScript code and the Lua
 * scripts (src/redis/scripts/) both apply, each defined once, here. The scripts carry no copy:
 * they take what they need as ARGV from these definitions (see each script's header), and
 * test/rules-one-home.test.ts fails if a script spells one of them again.
 *
 * Changing a value here changes what is stored in Redis (ranks, ledger values) or how replicas'
 * clocks are reconciled: stored values must still read (test/stored-format.test.ts).
 */

/**
 * How far behind one replica's routing clock may be another's: the routing clock
 * (`routing-decided-at.lua`) moves a time at or before the last one given to just after it,
 * unless the last one is more than this far ahead (a replica whose clock is that far off must not
 * hold every later time); and a retried dead letter is listed at least at the rank of a delivery
 * routed this long before the retry (`DeliveryQueue`).
 */
export const CLOCK_SKEW_MS = 60_000;

/**
 * A delivery's rank in its lifecycle's order on its route (`order.ts`): its `createdAt` (Unix
 * ms on the routing clock) doubled, plus one for a closing, so a closing ranks after an opening
 * routed in the same cycle (same `createdAt`) and before anything routed later.
 */
export function rankOf(createdAt: number, closing: boolean): number {
  return createdAt * 2 + (closing ? 1 : 0);
}

/** Whether `rank` is a closing's (`rankOf(…, true)`). */
export function isClosingRank(rank: number): boolean {
  return rank % 2 === 1;
}

/**
 * How far apart in rank two deliveries routed `ms` apart (in the same role) are: what a time
 * span, such as the order horizon, is in ranks.
 */
export function rankSpan(ms: number): number {
  return rankOf(ms, false) - rankOf(0, false);
}

/**
 * The values of a delivery's ledger entry (`{prefix}:delivery:<id>`, `ledger.ts`). Plain strings,
 * stored as they are: existing entries must keep reading.
 */
export const LEDGER_VALUES = {
  /** Followed by the batch job id: claimed by that batch job, being sent. */
  batchOwnerPrefix: 'b:',
  /** Handed to its own retry job (job id = delivery id): retrying, or a dead letter. */
  retryJob: 'j',
  /** Sent. */
  sent: 's',
} as const;
