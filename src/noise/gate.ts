/**
 * The noise gate over one routed batch (the transitions of one poll cycle, in order), pure: no
 * Redis, no clock. The router loads the state the batch needs in one round trip, calls
 * `admitBatch`, enqueues the notifications, then commits the effects in one round trip, in order.
 * The state is updated as the batch is walked, so an opening admitted earlier in the batch is
 * "told" for its closing later in the same batch.
 */
import type { SubscriptionConfig } from '../config/schema.js';
import type { Transition } from '../diff/transition.js';
import type { Notification } from '../notify/types.js';
import { eventNotification } from '../routing/match.js';
import { keyOfField, ledgerField, routeKey, type Route } from '../routing/route.js';
import { silencedBy } from '../silences/match.js';
import type { Silence } from '../silences/model.js';
import { decide, lifecycleKey, roleOf } from './policy.js';
import { isExcepted, quietState } from './quiet.js';

export type GateSubscription = Pick<SubscriptionConfig, 'name'> &
  Partial<Pick<SubscriptionConfig, 'group' | 'quietHours'>>;

/** The ledger as far as the batch needs it: fields present in the told and suppressed hashes. */
export interface GateState {
  told: Set<string>;
  suppressed: Set<string>;
  /**
   * Routes (`routeKey`) whose quiet-hours catch-up is still to go out: held transitions, or a
   * catch-up claimed and not yet finished.
   */
  catchUpPending?: ReadonlySet<string>;
}

export type GateEffect =
  | { type: 'tell'; subscription: string; channel: string; key: string; opening: Transition }
  | { type: 'suppress'; field: string; transitionId: string }
  | { type: 'close'; told: string[]; suppressed: string[] }
  | { type: 'group'; route: string; transition: Transition }
  | { type: 'hold'; route: string; transition: Transition; until: number }
  /**
   * A closing delivered through the route's quiet hours (its kind is excepted): what the route
   * holds of the same lifecycle from before it is stale, left out of the catch-up.
   */
  | { type: 'closed-in-quiet'; route: string; key: string; at: number }
  | { type: 'routed-log'; transition: Transition; subscriptions: string[] }
  | {
      type: 'dropped';
      transition: Transition;
      route: Route;
      reason: 'silenced' | 'opening_never_sent';
    };

export interface GateInput {
  /** The batch in order, each transition with its routes. */
  items: readonly { transition: Transition; routes: readonly Route[] }[];
  subscriptions: ReadonlyMap<string, GateSubscription>;
  /** Must hold every told/suppressed field of the lifecycle keys the batch closes (all of them). */
  state: GateState;
  silences: readonly Silence[];
  now: number;
}

export interface GateResult {
  notifications: Notification[];
  /** In order; applied after the notifications are enqueued. */
  effects: GateEffect[];
}

/**
 * Noise control for every route of every transition of the batch (see `decide`): send now,
 * batch into the route's group, hold for the quiet-hours catch-up, or drop. A closing ends its
 * lifecycle for every route that heard of the opening, routed here or not.
 */
export function admitBatch(input: GateInput): GateResult {
  const { state, now } = input;
  const notifications: Notification[] = [];
  const effects: GateEffect[] = [];
  // The ledger's fields by lifecycle key, so a closing finds its routes without scanning the
  // whole ledger (a storm of closings stays linear).
  const byKey = new Map<string, { told: Set<string>; suppressed: Set<string> }>();
  const slot = (key: string): { told: Set<string>; suppressed: Set<string> } => {
    let s = byKey.get(key);
    if (s === undefined) {
      s = { told: new Set(), suppressed: new Set() };
      byKey.set(key, s);
    }
    return s;
  };
  for (const f of state.told) slot(keyOfField(f)).told.add(f);
  for (const f of state.suppressed) slot(keyOfField(f)).suppressed.add(f);
  for (const { transition: t, routes } of input.items) {
    const key = lifecycleKey(t);
    for (const r of routes) {
      const sub = input.subscriptions.get(r.subscription);
      const rk = routeKey(r);
      const field = ledgerField(r, key);
      const silenced =
        silencedBy(
          input.silences,
          {
            feedId: t.feedId,
            kind: t.kind,
            subject: t.subject,
            subscription: r.subscription,
            channel: r.channel,
          },
          now,
        ) !== undefined;
      let quietUntil: number | null = null;
      let quiet = false;
      if (sub?.quietHours !== undefined) {
        const q = quietState(sub.quietHours, now);
        quiet = q.quiet;
        if (q.quiet && !isExcepted(sub.quietHours, t.kind))
          quietUntil = q.endsAt ?? now + 24 * 3600 * 1000;
      }
      // Quiet hours are over but their catch-up has not gone out yet (the ticker sends it): what
      // comes meanwhile joins the next catch-up, behind what was held, so a closing cannot reach
      // the team before its held opening (for PagerDuty, a trigger after its resolve).
      if (!quiet && state.catchUpPending?.has(rk) === true) quietUntil = now;
      const d = decide({
        transition: t,
        silenced,
        told: state.told.has(field),
        suppressed: state.suppressed.has(field),
        quietUntil,
        grouped: sub?.group !== undefined,
      });
      // A closing that breaks through quiet hours ends its lifecycle before the catch-up: what
      // was held of it would arrive after its own resolution (for PagerDuty, a trigger after the
      // resolve opens a new incident).
      if (
        quiet &&
        (d.route.action === 'send' || d.route.action === 'group') &&
        roleOf(t) === 'closing'
      )
        effects.push({ type: 'closed-in-quiet', route: rk, key, at: t.observedAt });
      switch (d.route.action) {
        case 'send':
          notifications.push(eventNotification(t, r, now));
          break;
        case 'group':
          effects.push({ type: 'group', route: rk, transition: t });
          break;
        case 'hold':
          effects.push({ type: 'hold', route: rk, transition: t, until: d.route.until });
          break;
        case 'drop':
          effects.push({ type: 'dropped', transition: t, route: r, reason: d.route.reason });
          break;
      }
      switch (d.ledger) {
        case 'tell':
          effects.push({
            type: 'tell',
            subscription: r.subscription,
            channel: r.channel,
            key,
            opening: t,
          });
          state.told.add(field);
          state.suppressed.delete(field);
          slot(key).told.add(field);
          slot(key).suppressed.delete(field);
          break;
        case 'suppress':
          effects.push({ type: 'suppress', field, transitionId: t.id });
          state.suppressed.add(field);
          slot(key).suppressed.add(field);
          break;
        case 'close':
        case 'none':
          break;
      }
    }
    if (roleOf(t) === 'closing') {
      const fields = byKey.get(key);
      byKey.delete(key);
      const told = [...(fields?.told ?? [])];
      const suppressed = [...(fields?.suppressed ?? [])];
      for (const f of told) state.told.delete(f);
      for (const f of suppressed) state.suppressed.delete(f);
      if (told.length + suppressed.length > 0) effects.push({ type: 'close', told, suppressed });
    }
    if (routes.length > 0) {
      effects.push({
        type: 'routed-log',
        transition: t,
        subscriptions: [...new Set(routes.map((r) => r.subscription))],
      });
    }
  }
  return { notifications, effects };
}
