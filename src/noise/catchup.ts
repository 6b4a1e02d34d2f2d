/**
 * What a route's quiet-hours catch-up carries, pure. Besides what was held, it takes what the
 * route's group buffer holds when the catch-up goes out: during the quiet hours an excepted kind
 * (say `incident.opened`) goes to the group buffer while the rest of its lifecycle (its closing)
 * is held, and a catch-up sent before the group's window ends would bring the closing before its
 * opening (for PagerDuty, a `trigger` after its `resolve`: an incident nothing resolves).
 */
import type { Transition } from '../diff/transition.js';
import { roleOf } from './policy.js';

const ROLE_ORDER = { opening: 0, update: 1, closing: 2 } as const;

/**
 * The held and the grouped transitions of one route as one list, each list's own order kept: the
 * next of the two fronts is the one observed first, and at the same instant (one poll cycle) an
 * opening before an update before a closing, then the held one first.
 */
export function mergeHeldAndGrouped(
  held: readonly Transition[],
  grouped: readonly Transition[],
): Transition[] {
  if (grouped.length === 0) return [...held];
  if (held.length === 0) return [...grouped];
  const out: Transition[] = [];
  let i = 0;
  let j = 0;
  while (i < held.length && j < grouped.length) {
    const h = held[i] as Transition;
    const g = grouped[j] as Transition;
    const groupedFirst =
      g.observedAt < h.observedAt ||
      (g.observedAt === h.observedAt && ROLE_ORDER[roleOf(g)] < ROLE_ORDER[roleOf(h)]);
    if (groupedFirst) {
      out.push(g);
      j += 1;
    } else {
      out.push(h);
      i += 1;
    }
  }
  return out.concat(held.slice(i), grouped.slice(j));
}
