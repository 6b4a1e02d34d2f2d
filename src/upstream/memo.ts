/**
 * Keeps the status rows of the last response so that the next one, which repeats almost all of
 * them, allocates almost nothing that outlives it.
 *
 * Why: a status poll of 100,000 services builds 100,000 `ServiceState`s (about 40 MB with their
 * strings), and the poll takes long enough for several young-generation GCs to run meanwhile, so
 * nearly all of them are promoted to the old generation, become garbage one poll later, and make
 * the heap grow by that much every poll until a full GC. With the memo, a row equal to the one
 * last seen for its feedId is the very same object, and a changed row shares the strings
 * that did not change; a poll that changes nothing promotes next to nothing. The memo holds one
 * `ServiceState` per service of the last response (what the poll held anyway while it ran).
 */
import type { ServiceInfo, ServiceState } from './model.js';

/** Field names of `ServiceState` whose values are strings (or null). */
const STRING_FIELDS = [
  'feedId',
  'name',
  'statusRaw',
  'indicator',
  'sourceKindRaw',
  'canonicalUrl',
  'officialStatusUrl',
  'summary',
  'verificationState',
  'verifiedAt',
  'incidentScope',
] as const satisfies readonly (keyof ServiceState)[];

/** Equal field by field; `feedId` is known to be (the memo's key). Cheap comparisons first. */
function sameState(a: ServiceState, b: ServiceState): boolean {
  return (
    a.lastCheck === b.lastCheck &&
    a.lastChanged === b.lastChanged &&
    a.activeIncidentCount === b.activeIncidentCount &&
    a.variant === b.variant &&
    a.status === b.status &&
    a.sourceKind === b.sourceKind &&
    a.verifiedAt === b.verifiedAt &&
    a.statusRaw === b.statusRaw &&
    a.summary === b.summary &&
    a.name === b.name &&
    a.indicator === b.indicator &&
    a.sourceKindRaw === b.sourceKindRaw &&
    a.canonicalUrl === b.canonicalUrl &&
    a.officialStatusUrl === b.officialStatusUrl &&
    a.verificationState === b.verificationState &&
    a.incidentScope === b.incidentScope
  );
}

/**
 * A copy of `s` as one object literal: every copy shares one hidden class (a spread copy of an
 * object that is rewritten row after row, like the parser's draft, may get one of its own).
 */
export function copyState(s: ServiceState): ServiceState {
  return {
    feedId: s.feedId,
    name: s.name,
    variant: s.variant,
    status: s.status,
    statusRaw: s.statusRaw,
    indicator: s.indicator,
    sourceKind: s.sourceKind,
    sourceKindRaw: s.sourceKindRaw,
    canonicalUrl: s.canonicalUrl,
    officialStatusUrl: s.officialStatusUrl,
    summary: s.summary,
    verificationState: s.verificationState,
    verifiedAt: s.verifiedAt,
    activeIncidentCount: s.activeIncidentCount,
    incidentScope: s.incidentScope,
    lastChanged: s.lastChanged,
    lastCheck: s.lastCheck,
  };
}

interface Slot {
  state: ServiceState;
  /** The response that last saw the feed. */
  round: number;
}

/** Short strings repeated across rows (status words, source kinds, summaries), shared. */
export class Interner {
  private readonly words = new Map<string, string>();

  constructor(
    private readonly maxEntries = 4096,
    private readonly maxLength = 64,
  ) {}

  get<T extends string | null>(value: T): T {
    if (value === null || value.length > this.maxLength) return value;
    const known = this.words.get(value);
    if (known !== undefined) return known as T;
    // Bounded: a flood of distinct words (free text) starts the table over.
    if (this.words.size >= this.maxEntries) this.words.clear();
    this.words.set(value, value);
    return value;
  }
}

export class ServiceStateMemo {
  private readonly slots = new Map<string, Slot>();
  private round = 0;
  /** Feeds the current round has seen so far. */
  private touched = 0;
  private readonly words = new Interner();
  /** Check times repeat across services too (one per second of the check interval). */
  private readonly times = new Interner();

  /** Starts a response; pass the returned round to `settle` and `end`. */
  begin(): number {
    this.round += 1;
    this.touched = 0;
    return this.round;
  }

  /**
   * The state to keep for `draft` (only read, never kept): the remembered one when equal, else a
   * copy of `draft` sharing the unchanged strings of the remembered one, remembered. The states
   * are shared between polls: nobody may modify them.
   */
  settle(draft: ServiceState, round: number): ServiceState {
    const slot = this.slots.get(draft.feedId);
    if (round === this.round && (slot === undefined || slot.round !== round)) this.touched += 1;
    if (slot === undefined) {
      const state = this.keep(copyState(draft));
      this.slots.set(state.feedId, { state, round });
      return state;
    }
    slot.round = round;
    const prev = slot.state;
    if (sameState(prev, draft)) return prev;
    const next = copyState(draft);
    for (const field of STRING_FIELDS) {
      if (next[field] === prev[field])
        (next as unknown as Record<string, unknown>)[field] = prev[field];
    }
    slot.state = this.keep(next);
    return slot.state;
  }

  /** How many distinct feeds `round` has settled, or null once a later round began. */
  distinctIn(round: number): number | null {
    return round === this.round ? this.touched : null;
  }

  /** Ends a complete response: forgets the services it did not list. */
  end(round: number): void {
    if (round === this.round && this.slots.size <= this.touched) return;
    for (const [feedId, slot] of this.slots) if (slot.round < round) this.slots.delete(feedId);
  }

  /**
   * Shares the strings of a freshly built catalog entry (GET /services) with the remembered status
   * row of its service, and its repeated words: at 100,000 services, 20 MB less to hold while the
   * catalog is stored.
   */
  shareService(s: ServiceInfo): ServiceInfo {
    const prev = this.slots.get(s.feedId)?.state;
    if (prev !== undefined) {
      s.feedId = prev.feedId;
      if (prev.name !== null && s.name === prev.name) s.name = prev.name;
      if (s.canonicalUrl === prev.canonicalUrl) s.canonicalUrl = prev.canonicalUrl;
      if (s.officialStatusUrl === prev.officialStatusUrl)
        s.officialStatusUrl = prev.officialStatusUrl;
    }
    if (s.url !== null && s.url === s.officialStatusUrl) s.url = s.officialStatusUrl;
    s.feedType = this.words.get(s.feedType);
    s.sourceKindRaw = this.words.get(s.sourceKindRaw);
    s.sourceLabel = this.words.get(s.sourceLabel);
    return s;
  }

  /** `s` (a fresh copy) with its words shared. */
  private keep(s: ServiceState): ServiceState {
    s.verifiedAt = this.times.get(s.verifiedAt);
    s.statusRaw = this.words.get(s.statusRaw);
    s.indicator = this.words.get(s.indicator);
    s.sourceKindRaw = this.words.get(s.sourceKindRaw);
    s.summary = this.words.get(s.summary);
    s.verificationState = this.words.get(s.verificationState);
    s.incidentScope = this.words.get(s.incidentScope);
    return s;
  }
}
