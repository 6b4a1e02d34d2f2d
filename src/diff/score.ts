import type { ScoreReport } from '../upstream/model.js';
import type { ScoreEntry } from './state.js';
import { transitionId, type Transition } from './transition.js';
import type { DiffResult } from './result.js';

export interface ScoreDiffInput {
  previous: ReadonlyMap<string, ScoreEntry>;
  report: ScoreReport;
  /** Points below the reference that make a drop (rules.scoreDrop). */
  threshold: number;
  now: number;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * score.dropped, measured from the last *notified* score (raised by any rise since), so a slow
 * drift alerts once it has fallen `threshold` points in total, and then not again until it has
 * fallen another `threshold`. First sight is a silent baseline.
 */
export function diffScores(input: ScoreDiffInput): DiffResult<ScoreEntry> {
  const transitions: Transition[] = [];
  const changed = new Map<string, ScoreEntry>();
  for (const record of input.report.scores) {
    const score = round2(record.score);
    const prev = input.previous.get(record.feedId);
    if (prev === undefined) {
      changed.set(record.feedId, { reference: score, grade: record.grade, seq: 0 });
      continue;
    }
    let next: ScoreEntry = prev;
    if (score > prev.reference) {
      next = { ...prev, reference: score, grade: record.grade };
    } else if (round2(prev.reference - score) >= input.threshold) {
      transitions.push({
        id: transitionId([record.feedId, 'score.dropped', 'score', prev.seq, prev.reference]),
        kind: 'score.dropped',
        feedId: record.feedId,
        subject: 'score',
        service: {
          feedId: record.feedId,
          name: record.name,
          canonicalUrl: null,
          officialStatusUrl: null,
        },
        previous: { score: prev.reference, grade: prev.grade },
        current: {
          score,
          grade: record.grade,
          tier: record.tier,
          drop: round2(prev.reference - score),
        },
        incident: null,
        observedAt: input.now,
      });
      next = { reference: score, grade: record.grade, seq: prev.seq + 1 };
    } else if (record.grade !== prev.grade) {
      next = { ...prev, grade: record.grade };
    }
    if (next !== prev) changed.set(record.feedId, next);
  }
  return { transitions, changed };
}
