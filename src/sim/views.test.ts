import { describe, expect, it } from 'vitest';
import { buildCatalog } from './catalog.js';
import { SimState } from './state.js';
import { statusRowA, statusRowAJson } from './views.js';

describe('statusRowAJson', () => {
  it('is exactly JSON.stringify(statusRowA(...)) for every kind of row', () => {
    let clock = Date.UTC(2025, 3, 1, 10, 0, 0);
    const state = new SimState({
      catalog: buildCatalog(600, 3),
      seed: 3,
      variant: 'A',
      now: () => clock,
    });
    state.openIncident('stripe', { title: 'Quotes "and" \\ backslashes\n<b>' });
    state.setStatus('github', 'major_outage');
    state.openIncident('github', { title: 'Down' });
    state.setEvidence('slack', 'stale');
    clock += 90_000;
    state.setEvidence('okta', 'unverified');
    state.setStatus('pagerduty', 'maintenance');
    const mismatches = state.services.filter(
      (s) => statusRowAJson(state, s, clock) !== JSON.stringify(statusRowA(state, s, clock, null)),
    );
    expect(mismatches.map((s) => s.entry.feedId)).toEqual([]);
    const kinds = new Set(
      state.services.map((s) => `${s.entry.sourceKind}/${s.evidence}/${s.status}`),
    );
    expect(kinds.size).toBeGreaterThan(8);
  });
});
