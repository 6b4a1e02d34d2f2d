import type { Transition } from '../diff/transition.js';

/**
 * What a transition means for the lifecycle of the thing it is about: an `opening` starts
 * something a team must hear the end of (an incident, a non-operational status, an SLA at risk
 * or breached, a degraded upstream); a `closing` ends it; an `update` is news in between.
 */
export type Role = 'opening' | 'closing' | 'update';

export function roleOf(t: Pick<Transition, 'kind' | 'current'>): Role {
  switch (t.kind) {
    case 'incident.opened':
    case 'sla.at_risk':
    case 'sla.breached':
    case 'upstream.degraded':
      return 'opening';
    case 'incident.resolved':
    case 'sla.recovered':
    case 'upstream.recovered':
      return 'closing';
    case 'status.changed':
      return t.current.status === 'operational' ? 'closing' : 'opening';
    case 'incident.updated':
      // An incident back after its resolution opens its lifecycle again: its next closing is
      // owed to whoever hears of it, and reminders run again.
      return t.current['reopened'] === true ? 'opening' : 'update';
    case 'score.dropped':
    case 'sla.forecast':
    case 'score.trend':
      // Early warnings and drops inform; nothing closes them (a forecast whose trend reverses
      // is released silently).
      return 'update';
  }
}

/** What an opening and its closing share: the service and the subject (`incident:<id>`, `status`, `sla`, `upstream:<endpoint>`). */
export function lifecycleKey(t: Pick<Transition, 'feedId' | 'subject'>): string {
  return `${t.feedId}|${t.subject}`;
}

export interface AdmitInput {
  transition: Transition;
  /** A silence matches (service, kind, subscription, channel) now. */
  silenced: boolean;
  /** The team was told (or will be, through a held catch-up or a group) that this thing opened. */
  told: boolean;
  /** Its opening was silenced: the team never heard of it. */
  suppressed: boolean;
  /**
   * Inside quiet hours for this kind, or after them while their catch-up is still to go out (null
   * when neither applies, or the kind breaks through).
   */
  quietUntil: number | null;
  /** The subscription batches bursts (`group:`). */
  grouped: boolean;
}

export type Action =
  | { action: 'send' }
  | { action: 'group' }
  | { action: 'hold'; until: number }
  | { action: 'drop'; reason: 'silenced' | 'opening_never_sent' };

/** How the ledger of told openings changes. */
export type LedgerEffect = 'tell' | 'suppress' | 'close' | 'none';

export interface Decision {
  route: Action;
  ledger: LedgerEffect;
}

function deliver(input: AdmitInput): Action {
  if (input.quietUntil !== null) return { action: 'hold', until: input.quietUntil };
  if (input.grouped) return { action: 'group' };
  return { action: 'send' };
}

/**
 * The noise-control decision for one (transition, subscription, channel), pure:
 * - a closing whose opening the team was told is never swallowed: silences do not apply to it
 *   (quiet hours only delay it into the catch-up);
 * - a closing whose opening was silenced is not sent either;
 * - otherwise a silence drops it, quiet hours hold it, grouping batches it, or it is sent.
 * Openings that are delivered (now, grouped or held) are recorded as told; silenced ones as
 * suppressed. An update delivered after a silenced opening is recorded as told too.
 */
export function decide(input: AdmitInput): Decision {
  const role = roleOf(input.transition);
  if (role === 'closing') {
    if (input.told) return { route: deliver(input), ledger: 'close' };
    if (input.suppressed)
      return { route: { action: 'drop', reason: 'opening_never_sent' }, ledger: 'close' };
    if (input.silenced) return { route: { action: 'drop', reason: 'silenced' }, ledger: 'close' };
    return { route: deliver(input), ledger: 'close' };
  }
  if (input.silenced) {
    return {
      route: { action: 'drop', reason: 'silenced' },
      ledger: role === 'opening' ? 'suppress' : 'none',
    };
  }
  // An update that reaches a team whose opening was silenced tells them the thing is open:
  // from then on its closing is owed (and reminders run), as for a delivered opening.
  const tells = role === 'opening' || (input.suppressed && !input.told);
  return { route: deliver(input), ledger: tells ? 'tell' : 'none' };
}
