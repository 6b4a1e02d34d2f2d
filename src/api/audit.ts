/**
 * The audit log: every change made through the API (and so through the CLI) is one entry in a
 * bounded Redis stream, `{prefix}:api:audit` (XADD MAXLEN ~), appended in the same MULTI as the
 * change itself. Who (token id and the token's team), what (object kind, name, owning team, a
 * field diff with secret values masked), when and from which client address.
 */
import { createHash } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis.js';
import { z } from 'zod';
import { isPlainObject } from '../config/env.js';
import { formatPath } from '../config/path.js';
import { decode, encode, zodShape, countCorrupt } from '../redis/stored.js';

/** Entries kept (approximately: Redis trims whole macro nodes). */
export const AUDIT_MAX_ENTRIES = 10_000;

export type AuditAction =
  'create' | 'update' | 'delete' | 'revoke' | 'rotate' | 'expire' | 'acknowledge';
/** `ack`: an episode acknowledged (src/noise/acks.ts), named `subscription/feedId|subject`. */
export type AuditKind = 'channel' | 'subscription' | 'token' | 'secrets' | 'silence' | 'ack';

/** One changed field: absent `from` = added, absent `to` = removed. Secrets read `<set>` / `<changed>`. */
export interface DiffEntry {
  field: string;
  from?: unknown;
  to?: unknown;
}

export interface AuditEntry {
  /** Stream id (set when read). */
  id?: string;
  at: number;
  /** Token id of the actor (`config:adminToken` for the config file's admin token). */
  tokenId: string;
  /** The actor token's team (null for the config admin token). */
  actorTeam: string | null;
  /** The team that owns the object changed (for tokens: the token's team; `*` for all). */
  team: string;
  action: AuditAction;
  kind: AuditKind;
  name: string;
  address: string;
  diff: DiffEntry[];
}

const entrySchema = z.object({
  at: z.number(),
  tokenId: z.string(),
  actorTeam: z.string().nullable(),
  team: z.string(),
  action: z.enum(['create', 'update', 'delete', 'revoke', 'rotate', 'expire', 'acknowledge']),
  kind: z.enum(['channel', 'subscription', 'token', 'secrets', 'silence', 'ack']),
  name: z.string(),
  address: z.string(),
  diff: z.array(
    z.object({ field: z.string(), from: z.unknown().optional(), to: z.unknown().optional() }),
  ),
});

export const AUDIT_ENTRY = zodShape<AuditEntry>('api:audit', entrySchema);

/** Leaves of a JSON value by formatted path; arrays are compared whole. */
function leaves(
  value: unknown,
  path: (string | number)[] = [],
  out = new Map<string, unknown>(),
): Map<string, unknown> {
  if (isPlainObject(value)) {
    for (const [key, child] of Object.entries(value)) leaves(child, [...path, key], out);
    if (Object.keys(value).length === 0 && path.length > 0) out.set(formatPath(path), {});
  } else if (path.length > 0) {
    out.set(formatPath(path), value);
  }
  return out;
}

/** A value kept in an audit entry as it is up to this many bytes of JSON; larger, as a summary. */
export const AUDIT_VALUE_MAX_BYTES = 256;
/** An entry's diff up to this many bytes of JSON; larger, its fields are listed without values. */
export const AUDIT_DIFF_MAX_BYTES = 4096;
/** Fields listed in one entry at most (the rest are counted). */
export const AUDIT_DIFF_MAX_FIELDS = 64;

/** A large value as the audit log keeps it: its size and a digest, not the value. */
function summary(value: unknown): unknown {
  const text = JSON.stringify(value);
  if (text.length <= AUDIT_VALUE_MAX_BYTES) return value;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return `<${String(text.length)} bytes, sha256 ${digest}…>`;
}

/**
 * The field diff of two (already masked) objects, bounded: a value over
 * AUDIT_VALUE_MAX_BYTES is kept as a summary, a diff over AUDIT_DIFF_MAX_BYTES lists its fields
 * without values, and at most AUDIT_DIFF_MAX_FIELDS fields are listed. Every team writes to the
 * one stream the Redis shared by all keeps, so no write may append much to it.
 */
export function diffOf(before: unknown, after: unknown): DiffEntry[] {
  const a = leaves(before ?? {});
  const b = leaves(after ?? {});
  const out: DiffEntry[] = [];
  for (const field of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const from = a.get(field);
    const to = b.get(field);
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    out.push({
      field,
      ...(a.has(field) ? { from: summary(from) } : {}),
      ...(b.has(field) ? { to: summary(to) } : {}),
    });
  }
  const listed =
    out.length > AUDIT_DIFF_MAX_FIELDS
      ? [
          ...out.slice(0, AUDIT_DIFF_MAX_FIELDS),
          { field: `(and ${String(out.length - AUDIT_DIFF_MAX_FIELDS)} more fields)` },
        ]
      : out;
  if (JSON.stringify(listed).length <= AUDIT_DIFF_MAX_BYTES) return listed;
  return listed.map(({ field }) => ({ field }));
}

/** The audit stream: appends inside a caller's MULTI; reads newest first. */
export class AuditLog {
  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
    private readonly maxEntries = AUDIT_MAX_ENTRIES,
  ) {}

  append(m: ChainableCommander, entry: AuditEntry): void {
    const { id: _id, ...rest } = entry;
    m.xadd(this.key, 'MAXLEN', '~', String(this.maxEntries), '*', 'e', encode(AUDIT_ENTRY, rest));
  }

  /**
   * Up to `limit` entries, newest first, that `visible` lets through, older than `before` (a
   * stream id) when given. Reads pages of the stream until enough are found or it is exhausted.
   */
  async read(options: {
    limit: number;
    before?: string;
    visible: (e: AuditEntry) => boolean;
  }): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    let end = options.before === undefined ? '+' : `(${options.before}`;
    const page = Math.max(options.limit, 200);
    for (let pages = 0; pages < 50 && out.length < options.limit; pages += 1) {
      const rows = await this.redis.xrevrange(this.key, end, '-', 'COUNT', page);
      for (const [id, fields] of rows) {
        const text = fields[fields.indexOf('e') + 1];
        const entry = text === undefined ? undefined : decode(AUDIT_ENTRY, text);
        if (entry === undefined) {
          countCorrupt(AUDIT_ENTRY.kind);
          continue;
        }
        if (options.visible(entry) && out.length < options.limit) out.push({ id, ...entry });
      }
      const last = rows[rows.length - 1];
      if (rows.length < page || last === undefined) break;
      end = `(${last[0]}`;
    }
    return out;
  }
}
