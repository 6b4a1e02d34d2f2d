/**
 * JSON that statuswatch stores in Redis and reads back, in a versioned envelope:
 *
 *     {"v":<version>,"d":<value>}
 *
 * A reader accepts the version its code writes and the previous format, the bare unversioned
 * value (what every store wrote before the envelope; none of those values has a `v` key), and
 * rejects anything else: text that is not JSON, a payload its shape refuses, and an unknown
 * version, e.g. one a newer replica writes during a rolling upgrade. A rejected value is never
 * misread and never throws: `decode` returns `undefined` and the caller treats it as corrupt
 * (a first sight, a skipped entry) and counts it with `countCorrupt`.
 *
 * To change a stored shape: bump its `version`, and teach its `parse` the previous version.
 */
import type { z } from 'zod';

export interface StoredShape<T> {
  /** Names the shape in corruption counts. */
  readonly kind: string;
  /** The envelope version this code writes (and reads). */
  readonly version: number;
  /**
   * Validates a payload; `undefined` rejects it. `version` is the envelope's (this shape's
   * `version`), or `undefined` for the previous, unversioned format. It may return the payload
   * itself (a cheap structural check) or a parsed copy (a zod schema).
   */
  readonly parse: (payload: unknown, version: number | undefined) => T | undefined;
}

/** A shape validated by a zod schema (every stored value but the snapshot's hot-path entries). */
export function zodShape<T>(kind: string, schema: z.ZodType<T>, version = 1): StoredShape<T> {
  return {
    kind,
    version,
    parse: (payload) => {
      const result = schema.safeParse(payload);
      return result.success ? result.data : undefined;
    },
  };
}

/** The envelope around `value`, as stored. Deterministic: the same value encodes to the same text. */
export function encode<T>(shape: StoredShape<T>, value: T): string {
  return `{"v":${shape.version},"d":${JSON.stringify(value)}}`;
}

/** What was stored, or `undefined` for anything malformed, refused or of another version. */
export function decode<T>(shape: StoredShape<T>, text: string): T | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  // The previous format: a bare object (no stored value had a `v` key).
  if (!isRecord(raw)) return undefined;
  if (!('v' in raw)) return shape.parse(raw, undefined);
  // The envelope: only the version this code writes.
  if (raw.v !== shape.version || !('d' in raw)) return undefined;
  return shape.parse(raw.d, shape.version);
}

/** True for a JSON object (not null, not an array): the base of the cheap structural checks. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const corrupt = new Map<string, number>();

/** Counts `n` stored values of `kind` that did not decode (for metrics and tests). */
export function countCorrupt(kind: string, n = 1): void {
  if (n > 0) corrupt.set(kind, (corrupt.get(kind) ?? 0) + n);
}

/** Stored values that did not decode since the process started, by shape kind. */
export function corruptCounts(): ReadonlyMap<string, number> {
  return corrupt;
}
