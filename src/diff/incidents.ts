import type { Incident, IncidentList } from '../upstream/model.js';
import type { IncidentEntryItem, IncidentsEntry } from './state.js';
import { transitionId, type IncidentRef, type Transition } from './transition.js';
import type { DiffResult } from './result.js';

export interface IncidentsDiffInput {
  previous: ReadonlyMap<string, IncidentsEntry>;
  /** The incident list, every incident carrying its feedId (Variant B rows resolved via the catalog). */
  list: IncidentList & { incidents: (Incident & { feedId: string })[] };
  /** False on the first cycle ever for this kind: everything seen is a silent baseline. */
  baselined: boolean;
  /**
   * Are incidents not seen before news? False right after a response-variant switch: the other
   * variant shows incidents the previous one hid (non-official sources), which is a change of
   * view, not of the world. Updates and resolutions of known incidents are news either way.
   */
  announceNew?: boolean;
  /**
   * May an incident of this service that is absent from the list be taken as resolved?
   * Variant B: the list is complete. Variant A: only when the list is verified and the
   * service's own evidence is fresh and official (absence may be evidence loss).
   */
  canResolve: (feedId: string) => boolean;
  now: number;
}

function latestUpdateText(incident: Incident): string | null {
  for (let i = incident.updates.length - 1; i >= 0; i--) {
    const text = incident.updates[i]?.text;
    if (text !== null && text !== undefined && text !== '') return text;
  }
  return null;
}

function refOf(incident: Incident): IncidentRef {
  return {
    id: incident.id,
    title: incident.title,
    status: incident.status === 'unknown' ? incident.statusRaw : incident.status,
    started: incident.started,
    updateCount: incident.updates.length,
    latestUpdate: latestUpdateText(incident),
  };
}

function itemOf(incident: Incident): IncidentEntryItem {
  return {
    title: incident.title,
    status: incident.status === 'unknown' ? incident.statusRaw : incident.status,
    started: incident.started,
    updateCount: incident.updates.length,
  };
}

function sortedRecord(items: Map<string, IncidentEntryItem>): Record<string, IncidentEntryItem> {
  const out: Record<string, IncidentEntryItem> = {};
  for (const id of [...items.keys()].sort()) {
    const item = items.get(id);
    if (item !== undefined) out[id] = item;
  }
  return out;
}

/**
 * incident.opened / incident.updated / incident.resolved. An update is a new update entry or a
 * status change of the incident. Resolution happens when the upstream says `resolved`, or when an
 * open incident is absent and `canResolve(feedId)` allows it. Nothing here reads a clock.
 */
export function diffIncidents(input: IncidentsDiffInput): DiffResult<IncidentsEntry> {
  const { previous, list, baselined } = input;
  const transitions: Transition[] = [];
  const changed = new Map<string, IncidentsEntry>();

  const byFeed = new Map<string, (Incident & { feedId: string })[]>();
  for (const incident of list.incidents) {
    const group = byFeed.get(incident.feedId);
    if (group === undefined) byFeed.set(incident.feedId, [incident]);
    else group.push(incident);
  }
  const feeds = new Set<string>(byFeed.keys());
  for (const [feedId, entry] of previous) {
    if (Object.keys(entry.open).length > 0) feeds.add(feedId);
  }

  for (const feedId of [...feeds].sort()) {
    const prev = previous.get(feedId);
    const prevOpen = prev?.open ?? {};
    let seq = prev?.seq ?? 0;
    const open = new Map<string, IncidentEntryItem>();
    const present = new Set<string>();
    const current = byFeed.get(feedId) ?? [];

    const emit = (
      kind: 'incident.opened' | 'incident.updated' | 'incident.resolved',
      incident: IncidentRef,
      before: IncidentEntryItem | null,
      service: {
        name: string | null;
        canonicalUrl: string | null;
        officialStatusUrl: string | null;
      },
    ): void => {
      transitions.push({
        // From the previous state only (feed, kind, subject, the feed's sequence number): a
        // cycle re-run after a crash before its commit derives the same id even if the
        // incident has gained an update meanwhile, so it is not announced twice.
        id: transitionId([feedId, kind, `incident:${incident.id}`, seq]),
        kind,
        feedId,
        subject: `incident:${incident.id}`,
        service: { feedId, ...service },
        previous:
          before === null ? null : { status: before.status, updateCount: before.updateCount },
        current: { status: incident.status, updateCount: incident.updateCount },
        incident,
        observedAt: input.now,
      });
      seq += 1;
    };

    for (const incident of [...current].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
      present.add(incident.id);
      const before = prevOpen[incident.id] ?? null;
      const service = {
        name: incident.serviceName,
        canonicalUrl: incident.canonicalServiceUrl,
        officialStatusUrl: incident.officialStatusUrl,
      };
      if (incident.status === 'resolved') {
        if (before !== null && baselined)
          emit('incident.resolved', refOf(incident), before, service);
        continue;
      }
      const item = itemOf(incident);
      open.set(incident.id, item);
      if (!baselined) continue;
      if (before === null) {
        if (input.announceNew !== false) emit('incident.opened', refOf(incident), null, service);
      } else if (item.status !== before.status || item.updateCount > before.updateCount) {
        emit('incident.updated', refOf(incident), before, service);
      } else if (item.updateCount < before.updateCount) {
        // A shorter update list (e.g. another variant) is not news: keep the higher count.
        open.set(incident.id, { ...item, updateCount: before.updateCount });
      }
    }

    for (const [id, before] of Object.entries(prevOpen)) {
      if (present.has(id)) continue;
      if (input.canResolve(feedId)) {
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
      } else {
        open.set(id, before);
      }
    }

    const next: IncidentsEntry = { seq, open: sortedRecord(open) };
    if (prev === undefined || JSON.stringify(prev) !== JSON.stringify(next)) {
      if (prev !== undefined || open.size > 0 || seq > 0) changed.set(feedId, next);
    }
  }
  return { transitions, changed };
}
