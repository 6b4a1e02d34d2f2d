import type { Incident, IncidentList } from '../upstream/model.js';
import { ownValue } from '../config/fields.js';
import type { ClosedIncidentItem, IncidentEntryItem, IncidentsEntry } from './state.js';
import { transitionId, type IncidentRef, type Transition } from './transition.js';
import type { DiffResult } from './result.js';

export interface IncidentsDiffInput {
  previous: ReadonlyMap<string, IncidentsEntry>;
  /** The incident list, every incident carrying its feedId (Variant B rows resolved via the catalog). */
  list: IncidentList & { incidents: (Incident & { feedId: string })[] };
  /** False on the first cycle ever for this kind: everything seen is a silent baseline. */
  baselined: boolean;
  /**
   * Is what the list shows differently news? False right after a response-variant switch: the
   * other variant shows incidents the previous one hid (non-official sources), a recently
   * resolved incident it still lists, and more or fewer updates or another status word for the
   * open ones, which is a change of view, not of the world: stored silently. An incident the new
   * variant lists as `resolved` is news either way.
   */
  announceNew?: boolean;
  /**
   * May this open incident, absent from the list, be taken as resolved? Variant B: when the
   * list is complete. Variant A: only when one response observed at or after this list shows
   * the service's own evidence verified and official *and* the incident absent (a confirming
   * read of that service): absence from the bulk list alone may be evidence loss.
   */
  resolvable: (feedId: string, incidentId: string) => boolean;
  /**
   * Services whose stored entry could not be read (say, written by a newer release): seen again
   * silently, as on a first cycle, and their sequence starts at `now`, above any the lost entry
   * reached, so no transition id of theirs repeats one already routed.
   */
  rebaseline?: ReadonlySet<string>;
  now: number;
  /** `planIncidents` of this very input, when the caller built it already (else built here). */
  plan?: IncidentsPlan;
}

/** Resolved incidents remembered per service, for reopenings. */
export const CLOSED_PER_SERVICE = 20;
/** How long a resolved incident is remembered (ms). */
export const CLOSED_RETENTION_MS = 7 * 24 * 3600 * 1000;

function latestUpdateText(incident: Incident): string | null {
  for (let i = incident.updates.length - 1; i >= 0; i--) {
    const text = incident.updates[i]?.text;
    if (text !== null && text !== undefined && text !== '') return text;
  }
  return null;
}

/** The status an entry stores for an incident (the raw word when the vocabulary did not know it). */
function statusOf(incident: Incident): string {
  return incident.status === 'unknown' ? incident.statusRaw : incident.status;
}

function refOf(incident: Incident): IncidentRef {
  return {
    id: incident.id,
    title: incident.title,
    status: statusOf(incident),
    started: incident.started,
    updateCount: incident.updates.length,
    latestUpdate: latestUpdateText(incident),
  };
}

function closedOf(item: IncidentEntryItem, now: number): ClosedIncidentItem {
  return { title: item.title, started: item.started, updateCount: item.updateCount, at: now };
}

function itemOf(incident: Incident): IncidentEntryItem {
  return {
    title: incident.title,
    status: statusOf(incident),
    started: incident.started,
    updateCount: incident.updates.length,
  };
}

/**
 * The items by id, sorted, as a record. Incident ids come from upstream: an own property is
 * defined for each, so an id such as `__proto__` is stored as an id, not as the prototype.
 */
function sortedRecord<T>(items: Map<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const id of [...items.keys()].sort()) {
    const item = items.get(id);
    if (item === undefined) continue;
    // A plain assignment makes the same own property for every id but `__proto__` (a setter),
    // and keeps the object in fast mode (defining each one was a dictionary-mode object).
    if (id === '__proto__')
      Object.defineProperty(out, id, {
        value: item,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[id] = item;
  }
  return out;
}

/** The newest CLOSED_PER_SERVICE remembered resolved incidents. */
function boundedClosed(closed: Map<string, ClosedIncidentItem>): Map<string, ClosedIncidentItem> {
  // Within the bound nothing is dropped (the caller stores them sorted by id: order is moot).
  if (closed.size <= CLOSED_PER_SERVICE) return closed;
  const kept = [...closed];
  kept.sort((a, b) => b[1].at - a[1].at || (a[0] < b[0] ? -1 : 1));
  return new Map(kept.slice(0, CLOSED_PER_SERVICE));
}

/** Up to this many incidents, a service's are compared by scanning a list; more, through a Map. */
const SCAN_LIMIT = 8;

/** A service's stored open incidents: a list of [id, item] to scan, or a Map when there are many. */
type OpenIndex =
  readonly (readonly [string, IncidentEntryItem])[] | ReadonlyMap<string, IncidentEntryItem>;

/**
 * The open incidents of stored entries, indexed once per entry object: the snapshot store hands
 * the same entry objects to poll after poll until they change (entries are never edited in
 * place), and a record keyed by incident ids is slow to walk (every entry's keys differ, so no
 * two share a shape).
 */
const OPEN_INDEX = new WeakMap<object, OpenIndex>();

function openIndex(open: Readonly<Record<string, IncidentEntryItem>>): OpenIndex {
  let index = OPEN_INDEX.get(open);
  if (index === undefined) {
    const entries = Object.entries(open);
    index = entries.length > SCAN_LIMIT ? new Map(entries) : entries;
    OPEN_INDEX.set(open, index);
  }
  return index;
}

function sizeOf(index: OpenIndex): number {
  return isList(index) ? index.length : index.size;
}

function isList(index: OpenIndex): index is readonly (readonly [string, IncidentEntryItem])[] {
  return Array.isArray(index);
}

function lookup(index: OpenIndex, id: string): IncidentEntryItem | undefined {
  if (!isList(index)) return index.get(id);
  for (const [key, item] of index) if (key === id) return item;
  return undefined;
}

/** True when two incidents of the list share an id. */
function repeatsAnId(incidents: readonly Incident[]): boolean {
  if (incidents.length > SCAN_LIMIT)
    return new Set(incidents.map((i) => i.id)).size !== incidents.length;
  for (let i = 1; i < incidents.length; i++)
    for (let j = 0; j < i; j++)
      if ((incidents[j] as Incident).id === (incidents[i] as Incident).id) return true;
  return false;
}

/**
 * One row per incident id. A list that names an id twice (`7` and `"7"` read as one id) would
 * otherwise announce it twice, and when its rows disagree, alert on every poll. Kept: an open
 * row before a resolved one, then the one with more updates, then the first.
 */
function distinctById<I extends Incident>(incidents: readonly I[]): readonly I[] {
  if (!repeatsAnId(incidents)) return incidents;
  const kept = new Map<string, I>();
  for (const incident of incidents) {
    const other = kept.get(incident.id);
    if (other === undefined) {
      kept.set(incident.id, incident);
      continue;
    }
    const open = incident.status !== 'resolved';
    const otherOpen = other.status !== 'resolved';
    if (
      (open && !otherOpen) ||
      (open === otherOpen && incident.updates.length > other.updates.length)
    )
      kept.set(incident.id, incident);
  }
  return [...kept.values()];
}

/** True when the record has an own enumerable key (no array of keys built). */
function hasOwnKey(record: Readonly<Record<string, unknown>>): boolean {
  for (const key in record) if (Object.hasOwn(record, key)) return true;
  return false;
}

/**
 * True when the service's incidents are exactly its stored open ones (same ids, titles, starts,
 * statuses and update counts; none resolved, none gone) and no remembered resolution has
 * expired: the full diff would emit nothing and store the same entry. Allocates next to nothing
 * once the entry has been seen: it runs for every service with an open incident on every poll.
 */
function unchanged(prev: IncidentsEntry, current: readonly Incident[], now: number): boolean {
  const stored = openIndex(prev.open);
  if (sizeOf(stored) !== current.length) return false;
  for (const incident of current) {
    const before = lookup(stored, incident.id);
    if (
      before === undefined ||
      incident.status === 'resolved' ||
      statusOf(incident) !== before.status ||
      incident.updates.length !== before.updateCount ||
      incident.title !== before.title ||
      incident.started !== before.started
    )
      return false;
  }
  // The same id twice in the list (and so one stored id missing): the full diff sorts it out.
  if (repeatsAnId(current)) return false;
  const closed = prev.closed;
  if (closed !== undefined)
    for (const id in closed)
      if (
        Object.hasOwn(closed, id) &&
        now - (closed[id] as ClosedIncidentItem).at >= CLOSED_RETENTION_MS
      )
        return false;
  return true;
}

type ListedIncident = Incident & { feedId: string };

/**
 * A list's incidents by service, and the services a diff must look at: those whose listed
 * incidents are not exactly their stored open ones, plus unreadable entries (sorted). Built once
 * per list and shared by the diff and the search for vanished incidents (`vanishedFeeds`).
 */
export interface IncidentsPlan {
  readonly byFeed: ReadonlyMap<string, ListedIncident[]>;
  readonly feeds: readonly string[];
  /** What it was built from: a diff given another list or state builds its own. */
  readonly from: {
    readonly previous: ReadonlyMap<string, IncidentsEntry>;
    readonly incidents: readonly ListedIncident[];
    readonly baselined: boolean;
    readonly now: number;
    readonly rebaseline: ReadonlySet<string> | undefined;
  };
}

export function planIncidents(
  input: Pick<IncidentsDiffInput, 'previous' | 'list' | 'baselined' | 'rebaseline' | 'now'>,
): IncidentsPlan {
  const { previous, baselined, now } = input;
  const byFeed = new Map<string, ListedIncident[]>();
  for (const incident of input.list.incidents) {
    const group = byFeed.get(incident.feedId);
    if (group === undefined) byFeed.set(incident.feedId, [incident]);
    else group.push(incident);
  }
  // Most services with open incidents show exactly what they showed last cycle: nothing to
  // derive, nothing to write, and they are left out before the sort (this keeps a cycle with
  // thousands of open incidents cheap).
  const feeds: string[] = [];
  const stays = (feedId: string, prev: IncidentsEntry | undefined): boolean =>
    prev !== undefined && baselined && unchanged(prev, byFeed.get(feedId) ?? [], now);
  for (const feedId of byFeed.keys()) if (!stays(feedId, previous.get(feedId))) feeds.push(feedId);
  for (const [feedId, entry] of previous) {
    if (byFeed.has(feedId) || !hasOwnKey(entry.open)) continue;
    if (!stays(feedId, entry)) feeds.push(feedId);
  }
  // An unreadable entry with nothing listed is written again (empty), so it is read next time.
  for (const feedId of input.rebaseline ?? [])
    if (!byFeed.has(feedId) && !previous.has(feedId)) feeds.push(feedId);
  feeds.sort();
  return {
    byFeed,
    feeds,
    from: {
      previous,
      incidents: input.list.incidents,
      baselined,
      now,
      rebaseline: input.rebaseline,
    },
  };
}

/** Whether a service's listed incidents include an id (a Set for many, so many open ids stay linear). */
function listedIn(group: readonly Incident[]): (id: string) => boolean {
  if (group.length <= SCAN_LIMIT) return (id) => group.some((incident) => incident.id === id);
  const ids = new Set(group.map((incident) => incident.id));
  return (id) => ids.has(id);
}

/**
 * The open incidents a cycle did not see, by service: open in the previous entry or in the one
 * the diff leaves (`changed`), but neither listed open nor among the open incidents a confirming
 * read of their service listed (`shown`). So it also holds what the cycle resolves, until the
 * next cycle: a reminder is not sent between a resolution's poll and its routing. Only the
 * plan's services can have one.
 */
export function unseenIncidents(
  plan: IncidentsPlan,
  changed: ReadonlyMap<string, IncidentsEntry>,
  shown: ReadonlyMap<string, ReadonlySet<string>>,
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const feedId of plan.feeds) {
    const open = plan.byFeed.get(feedId)?.filter((incident) => incident.status !== 'resolved');
    const listed = listedIn(open ?? []);
    const read = shown.get(feedId);
    const ids = new Set<string>();
    for (const entry of [plan.from.previous.get(feedId), changed.get(feedId)]) {
      if (entry === undefined) continue;
      for (const id in entry.open)
        if (Object.hasOwn(entry.open, id) && read?.has(id) !== true && !listed(id)) ids.add(id);
    }
    if (ids.size > 0) out.set(feedId, ids);
  }
  return out;
}

/**
 * The services with a stored open incident the planned list does not show, in the order of
 * `previous`. Only the plan's services can have one: a service left out of it shows exactly its
 * stored open incidents.
 */
export function vanishedFeeds(plan: IncidentsPlan): string[] {
  const candidates = new Set(plan.feeds);
  const out: string[] = [];
  if (candidates.size === 0) return out;
  for (const [feedId, entry] of plan.from.previous) {
    if (!candidates.has(feedId)) continue;
    const listed = listedIn(plan.byFeed.get(feedId) ?? []);
    for (const id in entry.open) {
      if (!Object.hasOwn(entry.open, id)) continue;
      if (listed(id)) continue;
      out.push(feedId);
      break;
    }
  }
  return out;
}

function planFor(input: IncidentsDiffInput): IncidentsPlan {
  const plan = input.plan;
  if (
    plan !== undefined &&
    plan.from.previous === input.previous &&
    plan.from.incidents === input.list.incidents &&
    plan.from.baselined === input.baselined &&
    plan.from.now === input.now &&
    plan.from.rebaseline === input.rebaseline
  )
    return plan;
  return planIncidents(input);
}

/**
 * incident.opened / incident.updated / incident.resolved. An update is a new update entry or a
 * status change of the incident. Resolution happens when the upstream says `resolved`, or when an
 * open incident is absent and `resolvable(feedId, id)` allows it. An incident id that comes back
 * after statuswatch resolved it is `incident.updated` with `reopened: true` (the same lifecycle:
 * one `incident.opened` per incident id, so a resolution can never page twice). Nothing here
 * reads a clock.
 */
export function diffIncidents(input: IncidentsDiffInput): DiffResult<IncidentsEntry> {
  const { previous, baselined } = input;
  const transitions: Transition[] = [];
  const changed = new Map<string, IncidentsEntry>();
  const { byFeed, feeds } = planFor(input);

  for (const feedId of feeds) {
    const prev = previous.get(feedId);
    const prevOpen = prev?.open ?? {};
    const unreadable = prev === undefined && input.rebaseline?.has(feedId) === true;
    const announce = baselined && !unreadable;
    // Every transition of this cycle takes the feed's number from before it (`base`): each
    // incident emits at most one per cycle, and a re-run of the cycle whose other incidents
    // changed meanwhile still derives the same id for each (a count of this cycle's emissions
    // would shift it). The feed's number then moves past everything emitted.
    const base = prev?.seq ?? (unreadable ? input.now : 0);
    let seq = base;
    const open = new Map<string, IncidentEntryItem>();
    const closed = new Map<string, ClosedIncidentItem>(
      Object.entries(prev?.closed ?? {}).filter(([, c]) => input.now - c.at < CLOSED_RETENTION_MS),
    );
    const present = new Set<string>();
    const current = distinctById(byFeed.get(feedId) ?? []);

    const emit = (
      kind: 'incident.opened' | 'incident.updated' | 'incident.resolved',
      incident: IncidentRef,
      before: Pick<IncidentEntryItem, 'status' | 'updateCount'> | null,
      service: {
        name: string | null;
        canonicalUrl: string | null;
        officialStatusUrl: string | null;
      },
      reopened = false,
    ): void => {
      transitions.push({
        // From the previous state only (feed, kind, subject, the feed's sequence number): a
        // cycle re-run after a crash before its commit derives the same id even if the
        // incident has gained an update meanwhile, so it is not announced twice.
        id: transitionId([feedId, kind, `incident:${incident.id}`, base]),
        kind,
        feedId,
        subject: `incident:${incident.id}`,
        service: { feedId, ...service },
        previous:
          before === null ? null : { status: before.status, updateCount: before.updateCount },
        current: reopened
          ? { status: incident.status, updateCount: incident.updateCount, reopened: true }
          : { status: incident.status, updateCount: incident.updateCount },
        incident,
        observedAt: input.now,
      });
      seq += 1;
    };

    for (const incident of [...current].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
      present.add(incident.id);
      const before = ownValue(prevOpen, incident.id) ?? null;
      const service = {
        name: incident.serviceName,
        canonicalUrl: incident.canonicalServiceUrl,
        officialStatusUrl: incident.officialStatusUrl,
      };
      // Open here and remembered resolved: the first list of another variant still listed it
      // after its closing went out (kept as the baseline of that view). Nothing more is said of
      // it: neither its updates nor a second resolution.
      const closedBefore = before !== null && closed.has(incident.id);
      if (incident.status === 'resolved') {
        if (before !== null && baselined) {
          if (!closedBefore) emit('incident.resolved', refOf(incident), before, service);
          closed.set(incident.id, closedOf(itemOf(incident), input.now));
        }
        continue;
      }
      const item = itemOf(incident);
      open.set(incident.id, item);
      // A switch: what the new view shows differently is its baseline, announced by nothing.
      if (!announce || input.announceNew === false || closedBefore) continue;
      const wasClosed = before === null ? closed.get(incident.id) : undefined;
      if (wasClosed !== undefined) {
        // Back after statuswatch resolved it: the same incident again, on its own thread.
        closed.delete(incident.id);
        emit(
          'incident.updated',
          refOf(incident),
          { status: 'resolved', updateCount: wasClosed.updateCount },
          service,
          true,
        );
        if (item.updateCount < wasClosed.updateCount)
          open.set(incident.id, { ...item, updateCount: wasClosed.updateCount });
      } else if (before === null) {
        emit('incident.opened', refOf(incident), null, service);
      } else if (item.status !== before.status || item.updateCount > before.updateCount) {
        emit('incident.updated', refOf(incident), before, service);
      } else if (item.updateCount < before.updateCount) {
        // A shorter update list (e.g. another variant) is not news: keep the higher count.
        open.set(incident.id, { ...item, updateCount: before.updateCount });
      }
    }

    for (const [id, before] of Object.entries(prevOpen)) {
      if (present.has(id)) continue;
      if (input.resolvable(feedId, id)) {
        if (!closed.has(id))
          emit(
            'incident.resolved',
            {
              id,
              title: before.title,
              status: 'resolved',
              started: before.started,
              updateCount: before.updateCount,
              latestUpdate: null,
            },
            before,
            { name: null, canonicalUrl: null, officialStatusUrl: null },
          );
        closed.set(id, closedOf(before, input.now));
      } else {
        open.set(id, before);
      }
    }

    const keptClosed = boundedClosed(closed);
    const next: IncidentsEntry =
      keptClosed.size > 0
        ? { seq, open: sortedRecord(open), closed: sortedRecord(keptClosed) }
        : { seq, open: sortedRecord(open) };
    if (prev === undefined || JSON.stringify(prev) !== JSON.stringify(next)) {
      if (prev !== undefined || open.size > 0 || seq > 0) changed.set(feedId, next);
    }
  }
  return { transitions, changed };
}
