import type { EventKind } from '../config/events.js';
import type { Silence } from './model.js';

/** What a silence is matched against: one delivery route of one transition. */
export interface SilenceTarget {
  feedId: string;
  kind: EventKind;
  subscription: string;
  channel: string;
  /** The transition's subject; a silence with a `subjects` matcher matches none without it. */
  subject?: string | undefined;
}

export type SilenceState = 'pending' | 'active' | 'expired';

/** `startsAt` inclusive, `endsAt` exclusive. */
export function isActive(s: Pick<Silence, 'startsAt' | 'endsAt'>, now: number): boolean {
  return s.startsAt <= now && now < s.endsAt;
}

export function stateOf(s: Pick<Silence, 'startsAt' | 'endsAt'>, now: number): SilenceState {
  if (now >= s.endsAt) return 'expired';
  if (now < s.startsAt) return 'pending';
  return 'active';
}

function matches(values: readonly string[] | undefined, value: string): boolean {
  return values === undefined || values.includes(value);
}

/** Does silence `s` silence `target` at `now`? Absent matchers match anything; values are exact. */
export function silences(s: Silence, target: SilenceTarget, now: number): boolean {
  if (!isActive(s, now)) return false;
  const m = s.matchers;
  return (
    matches(m.services, target.feedId) &&
    matches(m.events, target.kind) &&
    matches(m.subscriptions, target.subscription) &&
    matches(m.channels, target.channel) &&
    (m.subjects === undefined ||
      (target.subject !== undefined && m.subjects.includes(target.subject)))
  );
}

/** The first of `list` that silences `target` at `now`, if any (for logs: which silence). */
export function silencedBy(
  list: readonly Silence[],
  target: SilenceTarget,
  now: number,
): Silence | undefined {
  return list.find((s) => silences(s, target, now));
}
