import { createHash } from 'node:crypto';
import { z } from 'zod';
import { EVENT_KINDS, type EventKind } from '../config/events.js';

/** The identity of the service a transition is about (enriched from the catalog when known). */
export interface ServiceRef {
  feedId: string;
  name: string | null;
  canonicalUrl: string | null;
  officialStatusUrl: string | null;
}

/** Flat, JSON-safe values describing one side of a transition. */
export type TransitionValues = Readonly<Record<string, string | number | boolean | null>>;

export interface IncidentRef {
  id: string;
  title: string;
  status: string;
  /** Unix seconds. */
  started: number;
  updateCount: number;
  latestUpdate: string | null;
}

/**
 * One observed change, ready to route. `id` is derived from content only (never from the clock),
 * so every replica, retry or re-run that sees the same previous state and upstream data derives
 * the same id, and BullMQ's job-id dedupe makes it notify once.
 */
export interface Transition {
  id: string;
  kind: EventKind;
  /** `upstream` for upstream.* kinds. */
  feedId: string;
  /** What the transition is about within the service: `incident:<id>`, `status`, `sla`, `score`, `upstream:<endpoint>`. */
  subject: string;
  service: ServiceRef;
  previous: TransitionValues | null;
  current: TransitionValues;
  incident: IncidentRef | null;
  /** Unix ms: when the upstream says the change was observed (its `generated`), else when we saw it. */
  observedAt: number;
}

export const UPSTREAM_FEED_ID = 'upstream';

const serviceRefSchema = z.object({
  feedId: z.string(),
  name: z.string().nullable(),
  canonicalUrl: z.string().nullable(),
  officialStatusUrl: z.string().nullable(),
});

const transitionValuesSchema = z.record(
  z.string(),
  z.union([z.string(), z.number(), z.boolean(), z.null()]),
);

/** A transition as stored in Redis (noise buffers, the told ledger, the routed log), read back. */
export const transitionSchema: z.ZodType<Transition> = z.object({
  id: z.string(),
  kind: z.enum(EVENT_KINDS),
  feedId: z.string(),
  subject: z.string(),
  service: serviceRefSchema,
  previous: transitionValuesSchema.nullable(),
  current: transitionValuesSchema,
  incident: z
    .object({
      id: z.string(),
      title: z.string(),
      status: z.string(),
      started: z.number(),
      updateCount: z.number(),
      latestUpdate: z.string().nullable(),
    })
    .nullable(),
  observedAt: z.number(),
});

/**
 * Deterministic transition id: a hash of the parts that make the change what it is
 * (feedId, kind, subject, the per-entry sequence number and kind-specific content).
 * 32 hex chars, no ':' (BullMQ job ids), never all digits.
 */
export function transitionId(parts: readonly (string | number | null)[]): string {
  const hash = createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  return `t${hash.slice(0, 31)}`;
}
