/**
 * Paged lists (`?limit=&cursor=`): a list is sorted by a key tuple, a page is the first `limit`
 * items after the cursor's key, and `next` is the last item's key (an opaque base64url text), or
 * null on the last page. A key names a position, not an index, so a page never repeats or skips
 * an item because another one was created or deleted meanwhile.
 */
import { invalid } from './errors.js';
import { stateOf, type SilenceState } from '../silences/match.js';
import type { Silence } from '../silences/model.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

export type SortKey = readonly (string | number)[];

export interface Page<T> {
  items: T[];
  next: string | null;
}

export function compareKeys(a: SortKey, b: SortKey): number {
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    const sx = String(x);
    const sy = String(y);
    return sx < sy ? -1 : 1;
  }
  return 0;
}

export function encodeCursor(key: SortKey): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

const BAD_CURSOR = 'not a cursor this list returned (pass its "next" as it is)';

/** A cursor's key; a 400 naming `cursor` for anything this module did not write. */
export function decodeCursor(text: string): SortKey {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid([{ field: 'cursor', message: BAD_CURSOR }]);
  }
  if (
    !Array.isArray(key) ||
    key.length === 0 ||
    key.length > 8 ||
    !key.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))
  )
    throw invalid([{ field: 'cursor', message: BAD_CURSOR }]);
  return key as SortKey;
}

/** `limit` (1-`MAX_PAGE_SIZE`, default `DEFAULT_PAGE_SIZE`) and `cursor` of a request. */
export function pageParams(url: URL): { limit: number; after: SortKey | undefined } {
  const raw = url.searchParams.get('limit');
  let limit = DEFAULT_PAGE_SIZE;
  if (raw !== null && raw !== '') {
    limit = Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE)
      throw invalid([
        { field: 'limit', message: `expected an integer from 1 to ${String(MAX_PAGE_SIZE)}` },
      ]);
  }
  const cursor = url.searchParams.get('cursor');
  return { limit, after: cursor === null || cursor === '' ? undefined : decodeCursor(cursor) };
}

/** The page of `items` after `after` (sorted here by `keyOf`). */
export function pageOf<T>(
  items: readonly T[],
  keyOf: (item: T) => SortKey,
  o: { limit: number; after: SortKey | undefined },
): Page<T> {
  const keyed = items.map((item) => ({ item, key: keyOf(item) }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  const after = o.after;
  const rest = after === undefined ? keyed : keyed.filter((k) => compareKeys(k.key, after) > 0);
  const page = rest.slice(0, o.limit);
  const last = page[page.length - 1];
  return {
    items: page.map((k) => k.item),
    next: rest.length > o.limit && last !== undefined ? encodeCursor(last.key) : null,
  };
}

const STATE_RANK: Record<SilenceState, number> = { active: 0, pending: 1, expired: 2 };

/**
 * A page of silences in the order lists show them (active, pending, expired; each by `endsAt`),
 * with the states taken at the first page's time, which the cursor carries: a silence starting
 * or ending while one pages through does not move between pages.
 */
export function silencePage<T extends Silence>(
  silences: readonly T[],
  o: { limit: number; after: SortKey | undefined },
  now: number,
): Page<T> {
  const first = o.after?.[0];
  const at = typeof first === 'number' ? first : now;
  return pageOf(silences, (s) => [at, STATE_RANK[stateOf(s, at)], s.endsAt, s.id], o);
}
