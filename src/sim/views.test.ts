import { describe, expect, it } from 'vitest';
import { buildCatalog } from './catalog.js';
import { SimState } from './state.js';
import { statusRowA, statusRowAJson } from './views.js';
import { WORDINGS } from './wording.js';

describe('statusRowAJson', () => {
  it.each(WORDINGS)(
    'is exactly JSON.stringify(statusRowA(...)) for every kind of row (%s wording)',
    (wording) => {
      let clock = Date.UTC(2025, 3, 1, 10, 0, 0);
      const state = new SimState({
        catalog: buildCatalog(600, 3),
        seed: 3,
        variant: 'A',
        wording,
        now: () => clock,
      });
      state.openIncident('stripe', { title: 'Quotes "and" \\ backslashes\n<b>' });
      state.setStatus('github', 'major_outage');
      state.openIncident('github', { title: 'Down', status: 'identified' });
      state.setStatus('cloudflare', 'partial_outage');
      state.openIncident('cloudflare', { title: 'Some down', status: 'monitoring' });
      state.setEvidence('slack', 'stale');
      clock += 90_000;
      state.setEvidence('okta', 'unverified');
      state.setStatus('pagerduty', 'maintenance');
      const mismatches = state.services.filter(
        (s) =>
          statusRowAJson(state, s, clock) !== JSON.stringify(statusRowA(state, s, clock, null)),
      );
      expect(mismatches.map((s) => s.entry.feedId)).toEqual([]);
      const kinds = new Set(
        state.services.map((s) => `${s.entry.sourceKind}/${s.evidence}/${s.status}`),
      );
      expect(kinds.size).toBeGreaterThan(8);

      // the rows really are in the wording asked for (not both in the standard words)
      const text = state.services.map((s) => statusRowAJson(state, s, clock)).join('\n');
      const alternate = [
        '"displayStatus":"unavailable"',
        '"displayStatus":"partially_unavailable"',
        '"displayStatus":"scheduled_work"',
        '"incidentScope":"all_components"',
        '"incidentScope":"some_components"',
        '"verificationState":"outdated"',
        '"verificationState":"unconfirmed"',
        '"endpointReachabilityStatus":"responding"',
        '(cause_found)',
      ];
      const standard = [
        '"displayStatus":"major_outage"',
        '"displayStatus":"partial_outage"',
        '"displayStatus":"maintenance"',
        '"incidentScope":"full"',
        '"incidentScope":"partial"',
        '"verificationState":"stale"',
        '"verificationState":"unverified"',
        '"endpointReachabilityStatus":"reachable"',
        '(identified)',
      ];
      const [present, absent] =
        wording === 'alternate' ? [alternate, standard] : [standard, alternate];
      for (const s of present) expect(text, s).toContain(s);
      for (const s of absent) expect(text, s).not.toContain(s);
    },
  );

  it('follows a wording switch of the same state', () => {
    const clock = Date.UTC(2025, 3, 1, 10, 0, 0);
    const state = new SimState({
      catalog: buildCatalog(50, 3),
      seed: 3,
      variant: 'A',
      now: () => clock,
    });
    state.setStatus('github', 'degraded');
    const github = state.get('github');
    const version = state.version;
    expect(JSON.parse(statusRowAJson(state, github, clock))).toMatchObject({
      status: 'degraded',
      displayStatus: 'degraded',
    });
    state.setWording('alternate');
    expect(state.version).toBeGreaterThan(version);
    expect(JSON.parse(statusRowAJson(state, github, clock))).toMatchObject({
      status: 'performance_issues',
      displayStatus: 'performance_issues',
      availabilityStatus: 'performance_issues',
      statusLabel: 'Degraded performance',
    });
    expect(() => {
      state.setWording('loud' as 'standard');
    }).toThrow(/wording must be standard or alternate, got loud/);
    expect(state.wording).toBe('alternate');
  });
});
