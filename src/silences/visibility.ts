/**
 * Which silences a viewer may see and change, shared by the web console (src/console) and the
 * tenancy API (src/api/http.ts): an admin (team null) all of them; a team only those limited to
 * its own subscriptions (a non-empty `subscriptions` matcher naming nothing but them).
 */
import type { Silence } from './model.js';

/** Silences a viewer may see: admins all; a team those limited to its own subscriptions. */
export function visibleSilence(
  s: Silence,
  viewer: { team: string | null },
  own: ReadonlySet<string>,
): boolean {
  if (viewer.team === null) return true;
  const subs = s.matchers.subscriptions;
  return subs !== undefined && subs.length > 0 && subs.every((x) => own.has(x));
}
