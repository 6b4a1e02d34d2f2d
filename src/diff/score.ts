import type { ScoreReport } from '../upstream/model.js';
import type { ScoreEntry } from './state.js';
import { transitionId, type Transition } from './transition.js';
import type { DiffResult } from './result.js';
import { MAX_SAMPLES, appendSample, scoreTrend, withCurrent } from './trend.js';

export interface ScoreDiffInput {
  previous: ReadonlyMap<string, ScoreEntry>;
  report: ScoreReport;
  /** Points below the reference that make a drop (rules.scoreDrop). */
  threshold: number;
  /** rules.scoreTrend: score.trend on a sustained fall of `points` over `windowMs`; absent = off. */
  trend?: { points: number; windowMs: number };
  now: number;
  /**
   * Services whose stored entry could not be read (say, written by a newer release): seen again
   * silently, as on a first sight, with their sequence numbers starting at `now`, above any the
   * lost entry reached, so no transition id of theirs repeats one already routed (and dropped
   * as routed, a missed alert).
   */
  rebaseline?: ReadonlySet<string>;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * score.dropped, measured from the last *notified* score (raised by any rise since), so a slow
 * drift alerts once it has fallen `threshold` points in total, and then not again until it has
 * fallen another `threshold`. score.trend: a sustained fall over `trend.windowMs` (see
 * `scoreTrend`), once per fall, even when rises in between keep every drop below `threshold`.
 * First sight is a silent baseline.
 */
export function diffScores(input: ScoreDiffInput): DiffResult<ScoreEntry> {
  const transitions: Transition[] = [];
  const changed = new Map<string, ScoreEntry>();
  const nowSec = Math.floor(input.now / 1000);
  const windowSec = input.trend === undefined ? 0 : input.trend.windowMs / 1000;
  const spacingSec = Math.floor(windowSec / MAX_SAMPLES);
  for (const record of input.report.scores) {
    const score = round2(record.score);
    const prev = input.previous.get(record.feedId);
    const service = {
      feedId: record.feedId,
      name: record.name,
      canonicalUrl: null,
      officialStatusUrl: null,
    };
    const history =
      input.trend === undefined
        ? undefined
        : appendSample(prev?.history, nowSec, score, spacingSec, windowSec);
    if (prev === undefined) {
      const lost = input.rebaseline?.has(record.feedId) === true;
      const first: ScoreEntry = {
        reference: score,
        grade: record.grade,
        seq: lost ? input.now : 0,
      };
      if (history !== undefined && history.length > 0) first.history = [...history];
      if (lost) first.tseq = input.now;
      changed.set(record.feedId, first);
      continue;
    }
    let reference = prev.reference;
    let grade = prev.grade;
    let seq = prev.seq;
    if (score > prev.reference) {
      reference = score;
      grade = record.grade;
    } else if (round2(prev.reference - score) >= input.threshold) {
      transitions.push({
        id: transitionId([record.feedId, 'score.dropped', 'score', prev.seq, prev.reference]),
        kind: 'score.dropped',
        feedId: record.feedId,
        subject: 'score',
        service,
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
      reference = score;
      grade = record.grade;
      seq += 1;
    } else if (record.grade !== prev.grade) {
      grade = record.grade;
    }

    let trending = prev.trending === true;
    let tseq = prev.tseq ?? 0;
    if (input.trend !== undefined && history !== undefined) {
      const trend = scoreTrend(
        withCurrent(history, nowSec, score),
        { points: input.trend.points, windowSec },
        trending,
      );
      if (trend !== null && !trending) {
        transitions.push({
          id: transitionId([record.feedId, 'score.trend', 'score:trend', tseq]),
          kind: 'score.trend',
          feedId: record.feedId,
          subject: 'score:trend',
          service,
          previous: { score: round2(trend.from) },
          current: {
            score,
            grade: record.grade,
            tier: record.tier,
            fall: round2(trend.fall),
            windowSeconds: Math.round(trend.span),
          },
          incident: null,
          observedAt: input.now,
        });
        tseq += 1;
      }
      trending = trend !== null;
    }

    const next: ScoreEntry = { reference, grade, seq };
    if (history !== undefined && history.length > 0) next.history = [...history];
    if (trending) next.trending = true;
    if (tseq > 0) next.tseq = tseq;
    if (
      reference !== prev.reference ||
      grade !== prev.grade ||
      seq !== prev.seq ||
      (history !== prev.history && (history?.length ?? 0) + (prev.history?.length ?? 0) > 0) ||
      trending !== (prev.trending === true) ||
      tseq !== (prev.tseq ?? 0)
    )
      changed.set(record.feedId, next);
  }
  return { transitions, changed };
}
