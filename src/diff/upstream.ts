import type { UpstreamEntry } from './state.js';
import { transitionId, UPSTREAM_FEED_ID, type Transition } from './transition.js';

/** What one poll of an endpoint told us about the upstream itself. */
export type PollOutcome =
  | { ok: true; ageSeconds: number | null }
  | { ok: false; code: string; httpStatus: number | null; auth: boolean };

export interface UpstreamDiffInput {
  endpoint: string;
  previous: UpstreamEntry | undefined;
  outcome: PollOutcome;
  /** Consecutive failures before `upstream.degraded` (auth failures degrade at once). */
  failureThreshold: number;
  /** Data older than this (meta.age_seconds) counts as stale: degraded. */
  staleAfterSeconds: number;
  now: number;
}

export interface UpstreamDiffResult {
  transition: Transition | null;
  next: UpstreamEntry;
}

const HEALTHY: UpstreamEntry = { health: 'ok', failures: 0, reason: null, seq: 0 };

/**
 * upstream.degraded / upstream.recovered for one endpoint: auth failures (401/403) at once,
 * errors and timeouts after `failureThreshold` in a row, stale data (age over the limit) at once;
 * recovered on the first fresh success after that.
 */
export function diffUpstream(input: UpstreamDiffInput): UpstreamDiffResult {
  const prev = input.previous ?? HEALTHY;
  const { outcome } = input;
  let failed: { reason: string; immediate: boolean } | null = null;
  if (!outcome.ok) failed = { reason: outcome.code, immediate: outcome.auth };
  else if (outcome.ageSeconds !== null && outcome.ageSeconds > input.staleAfterSeconds) {
    failed = { reason: 'stale_data', immediate: true };
  }

  const make = (
    kind: 'upstream.degraded' | 'upstream.recovered',
    reason: string | null,
  ): Transition => ({
    id: transitionId([UPSTREAM_FEED_ID, kind, `upstream:${input.endpoint}`, prev.seq]),
    kind,
    feedId: UPSTREAM_FEED_ID,
    subject: `upstream:${input.endpoint}`,
    service: {
      feedId: UPSTREAM_FEED_ID,
      name: 'Status API',
      canonicalUrl: null,
      officialStatusUrl: null,
    },
    previous: { health: prev.health, reason: prev.reason },
    current: {
      health: kind === 'upstream.degraded' ? 'degraded' : 'ok',
      reason,
      endpoint: input.endpoint,
      httpStatus: outcome.ok ? null : outcome.httpStatus,
      ageSeconds: outcome.ok ? outcome.ageSeconds : null,
      failures: failed === null ? 0 : prev.failures + 1,
    },
    incident: null,
    observedAt: input.now,
  });

  if (failed !== null) {
    const failures = prev.failures + 1;
    if (prev.health === 'ok' && (failed.immediate || failures >= input.failureThreshold)) {
      return {
        transition: make('upstream.degraded', failed.reason),
        next: { health: 'degraded', failures, reason: failed.reason, seq: prev.seq + 1 },
      };
    }
    return { transition: null, next: { ...prev, failures, reason: failed.reason } };
  }
  if (prev.health === 'degraded') {
    return {
      transition: make('upstream.recovered', null),
      next: { health: 'ok', failures: 0, reason: null, seq: prev.seq + 1 },
    };
  }
  return {
    transition: null,
    next:
      prev.failures === 0 && prev.reason === null ? prev : { ...prev, failures: 0, reason: null },
  };
}
