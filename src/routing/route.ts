/**
 * A route — where a transition goes: one channel of one subscription — and its one text form,
 * as Redis stores it in the noise state's keys and hash fields:
 * - the route key `subscription|channel` (group and quiet-hours buffers, the told entries);
 * - the ledger field `subscription|channel|<lifecycle key>` (told and suppressed openings),
 *   where the lifecycle key (`feedId|subject`) may itself hold `|`.
 * Subscription and channel names never hold a `|` (the config and API schemas allow letters,
 * digits, `_` and `-`), so the first two `|` always end the names.
 */
export interface Route {
  subscription: string;
  channel: string;
}

export function routeKey(route: Route): string {
  return `${route.subscription}|${route.channel}`;
}

/** The route of a route key; null when it holds no `|`. */
export function parseRouteKey(key: string): Route | null {
  const i = key.indexOf('|');
  if (i < 0) return null;
  return { subscription: key.slice(0, i), channel: key.slice(i + 1) };
}

/** The field of a (route, lifecycle key) pair in the told and suppressed hashes. */
export function ledgerField(route: Route, lifecycleKey: string): string {
  return `${route.subscription}|${route.channel}|${lifecycleKey}`;
}

/** The route and lifecycle key of a ledger field; null when it is not one. */
export function parseLedgerField(field: string): { route: Route; key: string } | null {
  const first = field.indexOf('|');
  const second = first < 0 ? -1 : field.indexOf('|', first + 1);
  if (second < 0) return null;
  return {
    route: { subscription: field.slice(0, first), channel: field.slice(first + 1, second) },
    key: field.slice(second + 1),
  };
}

/** The lifecycle key of a ledger field (what follows `subscription|channel|`). */
export function keyOfField(field: string): string {
  return parseLedgerField(field)?.key ?? '';
}
