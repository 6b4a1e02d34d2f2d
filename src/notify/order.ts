/**
 * The order in which the vendors that send one request per transition (PagerDuty, Opsgenie) send
 * the transitions of a batch or catch-up. Pure.
 */
import type { Transition } from '../diff/transition.js';

/** A transition's time for ordering: one without a finite time counts as later than any other. */
function orderingTime(t: Transition): number {
  return Number.isFinite(t.observedAt) ? t.observedAt : Number.POSITIVE_INFINITY;
}

/**
 * Oldest first, ties in the given order (the sort is stable): a burst or catch-up holding an
 * opening and its closing must open before it closes, whatever order the notification lists them
 * in. A transition whose `observedAt` is not a finite number (NaN, ±Infinity: never from a stored
 * transition, whose schema rejects them) goes after all the timed ones, in the given order — the
 * time PagerDuty is sent for it is the sending time, later than any other — and never throws nor
 * moves the timed ones (comparing by subtraction would: NaN compares equal to everything).
 */
export function chronological(transitions: readonly Transition[]): Transition[] {
  return [...transitions].sort((a, b) => {
    const x = orderingTime(a);
    const y = orderingTime(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
