/**
 * The event kinds statuswatch can notify about. `upstream.*` are about the upstream API itself
 * (auth failures, error storms, stale data), the others about the watched services;
 * `sla.forecast` and `score.trend` are early warnings computed from the history of the numbers.
 */
export const EVENT_KINDS = [
  'incident.opened',
  'incident.updated',
  'incident.resolved',
  'status.changed',
  'sla.at_risk',
  'sla.breached',
  'sla.recovered',
  'score.dropped',
  'sla.forecast',
  'score.trend',
  'upstream.degraded',
  'upstream.recovered',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

const KINDS: ReadonlySet<string> = new Set(EVENT_KINDS);

export function isEventKind(value: unknown): value is EventKind {
  return typeof value === 'string' && KINDS.has(value);
}
