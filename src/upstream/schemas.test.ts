import { describe, expect, it } from 'vitest';
import { readStatusRowA, statusRowASchema } from './schemas.js';

const FIELDS = [
  'feedId',
  'name',
  'status',
  'canonicalUrl',
  'officialStatusUrl',
  'sourceKind',
  'sourceLabel',
  'displayStatus',
  'statusLabel',
  'availabilityStatus',
  'availabilityLabel',
  'incidentScope',
  'incidentScopeLabel',
  'summary',
  'verificationState',
  'verifiedAt',
  'activeIncidentCount',
  'lastChanged',
  'lastSuccessfulCheck',
  'endpointReachabilityStatus',
  'incidents',
  'maintenances',
  'details',
  'extraField',
];
const VALUES: unknown[] = [
  'operational',
  '',
  'svc-1',
  0,
  3,
  -1,
  2.5,
  1_790_000_000,
  null,
  true,
  [],
  [{ id: 'x' }],
  {},
  { a: 1 },
];

/** A deterministic pseudo-random generator (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const defined = (o: object): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

describe('readStatusRowA (the status hot path) equals statusRowASchema', () => {
  it('on 5,000 generated rows with every field absent, of its type or of another type', () => {
    const random = rng(7);
    let fast = 0;
    for (let i = 0; i < 5000; i++) {
      const row: Record<string, unknown> = {};
      for (const field of FIELDS) {
        const r = random();
        if (r < 0.25) continue;
        row[field] = VALUES[Math.floor(random() * VALUES.length)];
      }
      if (random() < 0.7) row.feedId = `svc-${i}`;
      const zod = statusRowASchema.safeParse(row);
      const mine = readStatusRowA(row);
      if (mine === undefined) {
        expect(zod.success).toBe(false);
        continue;
      }
      fast += 1;
      expect(zod.success).toBe(true);
      if (zod.success) expect(defined(mine)).toEqual(defined(zod.data));
    }
    expect(fast).toBeGreaterThan(3000);
  });
});
