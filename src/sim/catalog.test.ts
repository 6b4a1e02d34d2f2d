import { describe, expect, it } from 'vitest';
import { CATEGORIES, WELL_KNOWN_FEED_IDS, buildCatalog } from './catalog.js';
import { SimulatorError } from './errors.js';

describe('buildCatalog', () => {
  it('is byte-identical for the same seed and differs for another seed', () => {
    const a = JSON.stringify(buildCatalog(2000, 42));
    const b = JSON.stringify(buildCatalog(2000, 42));
    const c = JSON.stringify(buildCatalog(2000, 7));
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });

  it('starts with the well-known providers and their categories', () => {
    const head = buildCatalog(12, 42).slice(0, 10);
    expect(head.map((e) => e.feedId)).toEqual([
      'stripe',
      'adyen',
      'github',
      'slack',
      'aws-s3',
      'cloudflare',
      'twilio',
      'datadog',
      'pagerduty',
      'okta',
    ]);
    expect(head.map((e) => e.category)).toEqual([
      'payments',
      'payments',
      'devtools',
      'communication',
      'cloud',
      'cloud',
      'communication',
      'observability',
      'observability',
      'identity',
    ]);
    expect(WELL_KNOWN_FEED_IDS).toEqual(head.map((e) => e.feedId));
    for (const e of head) {
      expect(e.sourceKind).toBe('official');
      expect(e.canonicalUrl).toBe(`https://status-directory.example/services/${e.feedId}`);
      expect(e.officialStatusUrl).toMatch(/^https:\/\//);
    }
  });

  it('generates svc-NNNNN entries with a 60/30/10 source mix and consistent fields', () => {
    const all = buildCatalog(2000, 42);
    expect(all[10]?.feedId).toBe('svc-00011');
    expect(all[1999]?.feedId).toBe('svc-02000');
    const kinds = { official: 0, reachability: 0, community: 0 };
    for (const e of all) {
      kinds[e.sourceKind]++;
      expect(CATEGORIES).toContain(e.category);
      const feedType = { official: 'statuspage', reachability: 'healthcheck', community: 'rss' }[
        e.sourceKind
      ];
      expect(e.feedType).toBe(feedType);
      if (e.sourceKind === 'official') expect(e.officialStatusUrl).toMatch(/^https:\/\//);
      else expect(e.officialStatusUrl).toBeNull();
    }
    expect(kinds.official / 2000).toBeGreaterThan(0.55);
    expect(kinds.official / 2000).toBeLessThan(0.65);
    expect(kinds.reachability / 2000).toBeGreaterThan(0.25);
    expect(kinds.reachability / 2000).toBeLessThan(0.35);
    expect(kinds.community / 2000).toBeGreaterThan(0.07);
    expect(kinds.community / 2000).toBeLessThan(0.13);
    expect(new Set(all.map((e) => e.name)).size).toBe(2000);
    expect(new Set(all.map((e) => e.category)).size).toBe(CATEGORIES.length);
  });

  it('builds 100,000 unique entries whose prefix is the smaller catalog', () => {
    const big = buildCatalog(100_000, 42);
    expect(big).toHaveLength(100_000);
    expect(new Set(big.map((e) => e.feedId)).size).toBe(100_000);
    expect(new Set(big.map((e) => e.name)).size).toBe(100_000);
    expect(JSON.stringify(big.slice(0, 2000))).toBe(JSON.stringify(buildCatalog(2000, 42)));
  });

  it('rejects sizes outside 1..100,000', () => {
    expect(() => buildCatalog(0)).toThrow(SimulatorError);
    expect(() => buildCatalog(100_001)).toThrow(/1 to 100000/);
    expect(() => buildCatalog(1.5)).toThrow(SimulatorError);
  });
});
