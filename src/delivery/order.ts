/**
 * Order within one lifecycle on one route. A delivery handed to a job of its own (its first
 * attempt failed or stalled, or its channel made it wait) is sent later; meanwhile a later
 * delivery of its lifecycle may go out first — for PagerDuty, a `trigger` after the `resolve`
 * opens an incident nothing resolves, and a `resolve` retried after a reopening's `trigger`
 * closes the reopened incident. So such a delivery is listed in its lifecycle's index on its
 * route (score: its rank), and a delivery waits while one listed there with a lower rank is not
 * yet sent or dead (`DeliveryWorker.behind`).
 *
 * The rank is the delivery's `createdAt` (the routing time of its cycle; cycles are routed one
 * at a time, in order; for a group's batch or a catch-up, the tick's time on that same clock)
 * doubled, plus one for a closing (`rankOf`, `rules.ts`): an opening and its closing routed in one
 * cycle share `createdAt`, and the closing ranks after it. A batch or catch-up carries several
 * lifecycles and is listed in each, with one rank. Each delivery has one rank and waits only for strictly lower ones, so no two deliveries
 * ever wait for each other.
 */
import type { Notification } from '../notify/types.js';
import { lifecycleKey, roleOf } from '../noise/policy.js';
import { ledgerField } from '../routing/route.js';
import { rankOf } from './rules.js';

/** The routing clocks' skew rule, defined in `rules.ts` (exported here as before). */
export { CLOCK_SKEW_MS } from './rules.js';

/**
 * How long a listed delivery holds the later ones back at most (and how long the index lives),
 * from the time its cycle was routed: longer than a retry job's retries last (at most an hour
 * after its first failure, `MAX_RETRY_SPAN_MS`, plus one last `Retry-After` of up to an hour),
 * bounded because nothing must wait for ever.
 */
export const ORDER_HORIZON_MS = 3 * 3600_000;

/** How long a delivery that has to wait waits before it looks again (±50% jitter). */
export const ORDER_WAIT_MS = 5000;

export interface Ordered {
  /** The route and lifecycle (`<subscription>|<channel>|<lifecycle key>`). */
  field: string;
  /** Its place in the lifecycle's order on the route (see the file comment). */
  rank: number;
  /**
   * Nothing of its lifecycle comes before it (`incident.opened`: an incident back after its
   * resolution is `incident.updated`), so it never has to wait: not looked up, which keeps a
   * storm of new incidents free of the lookups.
   */
  first: boolean;
}

/**
 * Where a delivery stands in the order of each lifecycle it carries: one place for an event, one
 * per lifecycle for a group's batch or a quiet-hours catch-up (a closing sent after a catch-up
 * waits while that catch-up, carrying its opening, is being retried); none for reminders,
 * digests and tests, which report rather than change what the receiver holds open.
 */
export function ordersOf(n: Notification): Ordered[] {
  if (n.type !== 'event' && n.type !== 'batch' && n.type !== 'catchup') return [];
  const route = { subscription: n.subscription, channel: n.channel };
  const [only, ...more] = n.transitions;
  // An event (a storm is thousands of them): its one transition, without the grouping below.
  if (only !== undefined && more.length === 0)
    return [
      {
        field: ledgerField(route, lifecycleKey(only)),
        rank: rankOf(n.createdAt, roleOf(only) === 'closing'),
        first: only.kind === 'incident.opened',
      },
    ];
  // Several: one rank in every lifecycle's order (as if each were a closing), so that each
  // delivery still has a single rank and waits only for lower ones: two of them can never wait
  // for each other through two lifecycles.
  const first = new Map<string, boolean>();
  for (const t of n.transitions) {
    const key = lifecycleKey(t);
    first.set(key, (first.get(key) ?? true) && t.kind === 'incident.opened');
  }
  return [...first].map(([key, isFirst]) => ({
    field: ledgerField(route, key),
    rank: rankOf(n.createdAt, true),
    first: isFirst,
  }));
}

/** The rank a listing older than the horizon has (at `now`): lower ones are dropped. */
export function horizonRank(now: number): number {
  return rankOf(now - ORDER_HORIZON_MS, false);
}

export function orderWaitMs(random: () => number = Math.random): number {
  return Math.round(ORDER_WAIT_MS * (0.5 + random()));
}
