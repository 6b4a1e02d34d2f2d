import type { ServiceState, StatusSnapshot } from '../upstream/model.js';
import type { Evidence, StatusEntry } from './state.js';
import { transitionId, type Transition } from './transition.js';
import type { DiffResult } from './result.js';

export interface StatusDiffInput {
  previous: ReadonlyMap<string, StatusEntry>;
  snapshot: StatusSnapshot;
  /** Distinct upstream snapshots needed before `status.changed` fires (≥ 1). */
  confirmations: number;
  /** Unix ms of the poll; used when the upstream gives no `generated`. */
  now: number;
  /**
   * Services whose stored entry could not be read (say, written by a newer release): seen again
   * silently, as on a first sight, with their sequence numbers starting at `now`, above any the
   * lost entry reached, so no transition id of theirs repeats one already routed (and dropped
   * as routed, a missed alert).
   */
  rebaseline?: ReadonlySet<string>;
}

/** Variant A official rows with verified evidence are the only ones whose silence means something. */
export function evidenceOf(row: ServiceState): Evidence {
  if (row.variant !== 'A' || row.sourceKind !== 'official') return 'none';
  return row.verificationState === 'verified' ? 'fresh' : 'stale';
}

function sameEntry(a: StatusEntry, b: StatusEntry): boolean {
  return (
    a.variant === b.variant &&
    a.status === b.status &&
    a.raw === b.raw &&
    a.sourceKind === b.sourceKind &&
    a.evidence === b.evidence &&
    a.seq === b.seq &&
    (a.pending === b.pending ||
      (a.pending !== null &&
        b.pending !== null &&
        a.pending.status === b.pending.status &&
        a.pending.raw === b.pending.raw &&
        a.pending.seen === b.pending.seen &&
        a.pending.lastSnapshot === b.pending.lastSnapshot))
  );
}

/**
 * status.changed with flap suppression: a new status must be seen in `confirmations` distinct
 * upstream snapshots (distinct `meta.generated`) before it fires; a flap back to the confirmed
 * status in between cancels it. First sight is a silent baseline. Rows absent from the snapshot
 * (skipped as malformed, or gone from the catalog) keep their stored entry untouched.
 * An `unknown` status carries no information and changes nothing.
 */
export function diffStatus(input: StatusDiffInput): DiffResult<StatusEntry> {
  const { previous, snapshot, now } = input;
  const confirmations = Math.max(1, Math.floor(input.confirmations));
  const snapshotKey = snapshot.generated ?? Math.floor(now / 1000);
  const observedAt = snapshot.generated !== null ? snapshot.generated * 1000 : now;
  const transitions: Transition[] = [];
  const changed = new Map<string, StatusEntry>();

  for (const row of snapshot.services) {
    const prev = previous.get(row.feedId);
    const evidence = evidenceOf(row);
    if (prev === undefined || (prev.variant !== row.variant && row.status !== 'unknown')) {
      // First sight — or the first row of another response variant, whose view of the same
      // service can differ (Variant A shows reachability for non-official sources, Variant B a
      // cached status): a silent baseline either way.
      if (row.status === 'unknown') continue;
      changed.set(row.feedId, {
        variant: row.variant,
        status: row.status,
        raw: row.statusRaw,
        sourceKind: row.sourceKind,
        evidence,
        seq: prev?.seq ?? (input.rebaseline?.has(row.feedId) === true ? now : 0),
        pending: null,
      });
      continue;
    }

    let next: StatusEntry;
    if (row.status === 'unknown') {
      next = { ...prev, sourceKind: row.sourceKind, evidence };
    } else if (row.status === prev.status) {
      next = { ...prev, sourceKind: row.sourceKind, evidence, pending: null };
    } else {
      const pending = prev.pending;
      let seen = 1;
      if (pending !== null && pending.status === row.status) {
        seen = pending.lastSnapshot === snapshotKey ? pending.seen : pending.seen + 1;
      }
      if (seen >= confirmations) {
        transitions.push({
          id: transitionId([
            row.feedId,
            'status.changed',
            'status',
            prev.seq,
            prev.status,
            row.status,
          ]),
          kind: 'status.changed',
          feedId: row.feedId,
          subject: 'status',
          service: {
            feedId: row.feedId,
            name: row.name,
            canonicalUrl: row.canonicalUrl,
            officialStatusUrl: row.officialStatusUrl,
          },
          previous: { status: prev.status, statusRaw: prev.raw },
          current: {
            status: row.status,
            statusRaw: row.statusRaw,
            summary: row.summary,
            activeIncidentCount: row.activeIncidentCount,
          },
          incident: null,
          observedAt,
        });
        next = {
          variant: row.variant,
          status: row.status,
          raw: row.statusRaw,
          sourceKind: row.sourceKind,
          evidence,
          seq: prev.seq + 1,
          pending: null,
        };
      } else {
        next = {
          ...prev,
          sourceKind: row.sourceKind,
          evidence,
          pending: { status: row.status, raw: row.statusRaw, seen, lastSnapshot: snapshotKey },
        };
      }
    }
    if (!sameEntry(prev, next)) changed.set(row.feedId, next);
  }
  return { transitions, changed };
}
