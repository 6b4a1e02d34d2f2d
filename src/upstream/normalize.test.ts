import { describe, expect, it } from 'vitest';
import * as fx from '../../test/upstream-fixtures.js';
import {
  detectStatusRowVariant,
  isJsonValue,
  mapIncidentStatus,
  mapServiceStatus,
  mapSlaStatus,
  mapSourceKind,
  normalizeIncidentList,
  normalizeIncidentUpdate,
  normalizeOpaque,
  normalizeScoreRecord,
  normalizeScoreReport,
  normalizeService,
  normalizeServiceList,
  normalizeServiceState,
  normalizeSlaRecord,
  normalizeSlaReport,
  normalizeStatusSnapshot,
  parseEnvelope,
  statusSnapshotCollector,
  toUnixSeconds,
  type Normalized,
} from './normalize.js';
import { ServiceStateMemo } from './memo.js';

function ok<T>(n: Normalized<T>): { value: T; skipped: number } {
  if (!n.ok) throw new Error(`expected ok, got problem: ${n.problem}`);
  return { value: n.value, skipped: n.skipped };
}

describe('vocabulary mapping', () => {
  it.each([
    ['operational', 'operational'],
    ['up', 'operational'],
    ['reachable', 'operational'],
    ['none', 'operational'],
    ['degraded', 'degraded'],
    ['degraded_performance', 'degraded'],
    ['minor', 'degraded'],
    ['partial_outage', 'partial_outage'],
    ['major', 'partial_outage'],
    ['major_outage', 'major_outage'],
    ['down', 'major_outage'],
    ['unreachable', 'major_outage'],
    ['critical', 'major_outage'],
    ['maintenance', 'maintenance'],
    ['under_maintenance', 'maintenance'],
    ['Operational', 'operational'],
    [' DOWN ', 'major_outage'],
    ['exploded', 'unknown'],
    ['', 'unknown'],
    [null, 'unknown'],
    [undefined, 'unknown'],
  ] as const)('service status %j → %s', (raw, expected) => {
    expect(mapServiceStatus(raw)).toBe(expected);
  });

  it.each([
    ['investigating', 'investigating'],
    ['identified', 'identified'],
    ['monitoring', 'monitoring'],
    ['resolved', 'resolved'],
    ['postmortem', 'unknown'],
    [null, 'unknown'],
  ] as const)('incident status %j → %s', (raw, expected) => {
    expect(mapIncidentStatus(raw)).toBe(expected);
  });

  it.each([
    ['met', 'met'],
    ['at_risk', 'at_risk'],
    ['breached', 'breached'],
    ['at-risk', 'unknown'],
  ] as const)('sla status %j → %s', (raw, expected) => {
    expect(mapSlaStatus(raw)).toBe(expected);
  });

  it.each([
    ['official', 'official'],
    ['reachability', 'reachability'],
    ['community', 'community'],
    ['satellite', 'unknown'],
    [undefined, 'unknown'],
  ] as const)('source kind %j → %s', (raw, expected) => {
    expect(mapSourceKind(raw)).toBe(expected);
  });
});

describe('variant detection', () => {
  it.each([
    [{ feedId: 'a', displayStatus: 'operational' }, 'A'],
    [{ feedId: 'a', sourceKind: 'official' }, 'A'],
    [{ feedId: 'a', canonicalUrl: 'https://x' }, 'A'],
    [{ feedId: 'a', endpointReachabilityStatus: 'reachable' }, 'A'],
    [{ feedId: 'a', status: 'up', lastChanged: 1 }, 'A'],
    [{ feedId: 'a', status: 'up', lastCheck: 1, indicator: 'none' }, 'B'],
    [{ feedId: 'a', status: 'operational' }, 'B'],
    ['not a row', 'B'],
  ] as const)('%j → %s', (row, expected) => {
    expect(detectStatusRowVariant(row)).toBe(expected);
  });
});

describe('envelope', () => {
  it('accepts success:true with data and keeps meta', () => {
    const r = parseEnvelope({ success: true, data: [], meta: { total: 0 }, extra: 1 });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.envelope.meta).toEqual({ total: 0 });
  });

  it.each([
    ['array body', [1, 2], 'not a response envelope'],
    ['string body', 'hello', 'not a response envelope'],
    ['null body', null, 'not a response envelope'],
    ['success not boolean', { success: 'yes', data: [] }, 'success'],
    ['no success', { data: [] }, 'success'],
    ['no data', { success: true }, 'envelope has no data'],
  ])('rejects %s', (_name, body, problem) => {
    const r = parseEnvelope(body);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toContain(problem);
  });

  it('rejects success:false and quotes its error', () => {
    const r = parseEnvelope({ success: false, error: 'Service initializing' });
    expect(r).toEqual({
      ok: false,
      problem: 'success:false in a 2xx response',
      upstreamError: 'Service initializing',
    });
  });
});

describe('services', () => {
  it('normalizes Variant A field by field (unknown sourceKind kept raw)', () => {
    expect(ok(normalizeServiceList(fx.servicesA.data, fx.servicesA.meta))).toEqual({
      value: fx.servicesAExpected,
      skipped: 0,
    });
  });

  it('normalizes Variant B with Variant A fields null', () => {
    expect(ok(normalizeServiceList(fx.servicesB.data, fx.servicesB.meta))).toEqual({
      value: fx.servicesBExpected,
      skipped: 0,
    });
  });

  it('skips and counts malformed rows, keeps meta.total, falls back to row count', () => {
    const rows = [
      ...fx.servicesB.data,
      null,
      'stripe',
      { name: 'no id' },
      { feedId: 7 },
      { feedId: '' },
    ];
    const r = ok(normalizeServiceList(rows, { total: 99 }));
    expect(r.skipped).toBe(5);
    expect(r.value.services.map((s) => s.feedId)).toEqual(['stripe', 'github']);
    expect(r.value.total).toBe(99);
    expect(ok(normalizeServiceList(rows, undefined)).value.total).toBe(7);
  });

  it('reads an odd optional field as absent instead of dropping the row', () => {
    const r = ok(normalizeServiceList([{ feedId: 'x', name: 42, url: ['no'] }], { total: 1 }));
    expect(r.skipped).toBe(0);
    expect(r.value.services[0]).toMatchObject({ feedId: 'x', name: 'x', url: null });
  });

  it('fails when data is not a list', () => {
    const r = normalizeServiceList({ services: [] }, undefined);
    expect(r).toEqual({ ok: false, problem: 'services: data is not an array' });
  });

  it('single service', () => {
    expect(ok(normalizeService(fx.servicesA.data[0])).value).toEqual(
      fx.servicesAExpected.services[0],
    );
    expect(normalizeService({ name: 'no id' }).ok).toBe(false);
  });

  it('empty list without Variant A hints is Variant B', () => {
    expect(ok(normalizeServiceList([], { total: 0 })).value).toEqual({
      variant: 'B',
      total: 0,
      services: [],
    });
  });
});

describe('status', () => {
  it('normalizes Variant A field by field (display → legacy → reachability)', () => {
    expect(ok(normalizeStatusSnapshot(fx.statusA.data, fx.statusA.meta))).toEqual({
      value: fx.statusAExpected,
      skipped: 0,
    });
  });

  it('normalizes Variant B field by field (status, then indicator)', () => {
    const r = ok(normalizeStatusSnapshot(fx.statusB.data, fx.statusB.meta));
    expect({ value: r.value, skipped: r.skipped }).toEqual({
      value: fx.statusBExpected,
      skipped: 0,
    });
  });

  it('legacy status is used when displayStatus is absent', () => {
    const r = ok(
      normalizeServiceState({ feedId: 's', sourceKind: 'official', status: 'maintenance' }),
    );
    expect(r.value).toMatchObject({
      variant: 'A',
      status: 'maintenance',
      statusRaw: 'maintenance',
    });
  });

  it('a row with no status at all is unknown with raw null', () => {
    const r = ok(normalizeServiceState({ feedId: 's', lastCheck: 5 }));
    expect(r.value).toMatchObject({
      variant: 'B',
      status: 'unknown',
      statusRaw: null,
      lastCheck: 5,
    });
  });

  it('skips broken rows among good ones', () => {
    const rows = [
      fx.statusB.data[0],
      { status: 'up' },
      fx.statusB.data[1],
      [],
      { feedId: null, displayStatus: 'operational' },
      { ...fx.statusA.data[0], feedId: 'adyen' },
    ];
    const r = ok(normalizeStatusSnapshot(rows, fx.statusB.meta));
    expect(r.skipped).toBe(3);
    expect(r.value.services.map((s) => [s.feedId, s.variant])).toEqual([
      ['stripe', 'B'],
      ['github', 'B'],
      ['adyen', 'A'],
    ]);
    expect(r.value.variant).toBe('A');
  });

  it('skips every row of a service listed twice (which one is its state is unknown), in status, SLA and scores lists', () => {
    const status = ok(
      normalizeStatusSnapshot(
        [
          { ...fx.statusA.data[0], feedId: 'stripe', displayStatus: 'major_outage' },
          { ...fx.statusA.data[0], feedId: 'github' },
          { ...fx.statusA.data[0], feedId: 'stripe', displayStatus: 'operational' },
        ],
        fx.statusA.meta,
      ),
    );
    expect(status.skipped).toBe(2);
    expect(status.value.services.map((s) => s.feedId)).toEqual(['github']);
    const slaRow = { sla_target: 99.9, uptime_30d: 99.95, status: 'met', margin: 0.05 };
    const sla = ok(
      normalizeSlaReport({
        services: [
          { ...slaRow, feedId: 'a' },
          { ...slaRow, feedId: 'b' },
          { ...slaRow, feedId: 'a', status: 'breached', margin: -0.4 },
        ],
      }),
    );
    expect(sla.skipped).toBe(2);
    expect(sla.value.services.map((r) => r.feedId)).toEqual(['b']);
    const scores = ok(
      normalizeScoreReport({
        scores: [
          { feedId: 'a', score: 90 },
          { feedId: 'a', score: 40 },
          { feedId: 'b', score: 70 },
        ],
      }),
    );
    expect(scores.skipped).toBe(2);
    expect(scores.value.scores.map((r) => r.feedId)).toEqual(['b']);
  });

  it('skips a service listed twice through the status memo too, which counts the distinct feeds', () => {
    const memo = new ServiceStateMemo();
    const read = (feeds: string[]): { feeds: string[]; skipped: number } => {
      const c = statusSnapshotCollector(memo);
      for (const feedId of feeds) c.add({ ...fx.statusA.data[0], feedId });
      const r = ok(c.finish(fx.statusA.meta));
      return { feeds: r.value.services.map((s) => s.feedId), skipped: r.skipped };
    };
    expect(read(['stripe', 'github', 'adyen'])).toEqual({
      feeds: ['stripe', 'github', 'adyen'],
      skipped: 0,
    });
    // The same feeds again (each one remembered): a repeat is still found.
    expect(read(['stripe', 'github', 'stripe'])).toEqual({ feeds: ['github'], skipped: 2 });
    expect(read(['github', 'adyen'])).toEqual({ feeds: ['github', 'adyen'], skipped: 0 });
    expect(read(['adyen', 'new', 'adyen', 'new'])).toEqual({ feeds: [], skipped: 4 });
  });

  it('compact rows of both variants', () => {
    expect(
      ok(
        normalizeServiceState({
          feedId: 'stripe',
          displayStatus: 'partial_outage',
          lastChanged: 9,
        }),
      ).value,
    ).toMatchObject({
      feedId: 'stripe',
      variant: 'A',
      status: 'partial_outage',
      lastChanged: 9,
      lastCheck: null,
      name: null,
    });
    expect(
      ok(normalizeServiceState({ feedId: 'stripe', status: 'down', lastCheck: 8 })).value,
    ).toMatchObject({
      feedId: 'stripe',
      variant: 'B',
      status: 'major_outage',
      lastCheck: 8,
      indicator: null,
    });
  });

  it('meta.includes absent → null; partial includes → false', () => {
    expect(ok(normalizeStatusSnapshot([], { includes: { incidents: true } })).value).toMatchObject({
      variant: 'A',
      includes: { incidents: true, maintenances: false },
      total: 0,
      generated: null,
      ageSeconds: null,
    });
  });

  it('a single malformed status record is a problem', () => {
    const r = normalizeServiceState({ displayStatus: 'up' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toContain('feedId');
    expect(normalizeServiceState('x').ok).toBe(false);
  });
});

describe('incidents', () => {
  it('normalizes Variant A field by field, updates best effort', () => {
    expect(ok(normalizeIncidentList(fx.incidentsA.data, fx.incidentsA.meta))).toEqual({
      value: fx.incidentsAExpected,
      skipped: 0,
    });
  });

  it('normalizes Variant B (no feedId; numeric id; unknown status kept raw)', () => {
    expect(ok(normalizeIncidentList(fx.incidentsB.data, fx.incidentsB.meta))).toEqual({
      value: fx.incidentsBExpected,
      skipped: 0,
    });
  });

  it('an empty unverified Variant A list is recognised by its meta', () => {
    expect(
      ok(normalizeIncidentList(fx.incidentsAUnverified.data, fx.incidentsAUnverified.meta)).value,
    ).toEqual({
      variant: 'A',
      total: 0,
      servicesAffected: 0,
      sourceKind: 'official',
      verificationState: 'unverified',
      incidents: [],
    });
  });

  it('skips incidents without id, start time or service', () => {
    const good = fx.incidentsB.data[0];
    const rows = [
      good,
      { service: 'X', title: 't', status: 'investigating', started: 1 },
      { service: 'X', id: 'a', title: 't', status: 'investigating', started: 'yesterday' },
      { id: 'b', title: 't', status: 'investigating', started: 1 },
      { id: '', service: 'X', started: 1 },
      { service: 'X', id: 'c', started: 5, updates: 'not a list' },
    ];
    const r = ok(normalizeIncidentList(rows, undefined));
    expect(r.skipped).toBe(4);
    expect(r.value.incidents.map((i) => i.id)).toEqual(['gh-9', 'c']);
    expect(r.value.incidents[1]).toMatchObject({
      serviceName: 'X',
      title: '',
      status: 'unknown',
      statusRaw: '',
      updates: [],
    });
    expect(r.value.total).toBe(6);
  });

  it.each([
    [
      { status: 's', body: 'b', created: 10 },
      { status: 's', text: 'b', at: 10 },
    ],
    [
      { text: 't', created_at: '1970-01-01T00:01:40Z' },
      { status: null, text: 't', at: 100 },
    ],
    [
      { message: 'm', timestamp: '50' },
      { status: null, text: 'm', at: 50 },
    ],
    [
      { description: 'd', at: 7 },
      { status: null, text: 'd', at: 7 },
    ],
    [{ updated: '1970-01-01T00:00:30+00:00' }, { status: null, text: null, at: 30 }],
    [
      { body: 5, created: 'garbage' },
      { status: null, text: null, at: null },
    ],
    ['plain text', { status: null, text: 'plain text', at: null }],
    [null, { status: null, text: null, at: null }],
  ])('update %j', (item, expected) => {
    expect(normalizeIncidentUpdate(item)).toEqual(expected);
  });

  it('toUnixSeconds', () => {
    expect(toUnixSeconds(12)).toBe(12);
    expect(toUnixSeconds('12')).toBe(12);
    expect(toUnixSeconds('2023-11-14T22:13:20Z')).toBe(1_700_000_000);
    expect(toUnixSeconds('2023-11-14T23:13:20+01:00')).toBe(1_700_000_000);
    expect(toUnixSeconds('nope')).toBeNull();
    expect(toUnixSeconds('')).toBeNull();
    expect(toUnixSeconds(null)).toBeNull();
  });
});

describe('sla and scores', () => {
  it('normalizes the SLA report field by field', () => {
    expect(ok(normalizeSlaReport(fx.sla.data))).toEqual({ value: fx.slaExpected, skipped: 0 });
  });

  it('skips SLA rows with missing or mistyped figures', () => {
    const rows = [
      ...fx.sla.data.services,
      { feedId: 'a', sla_target: 99.9, uptime_30d: 99, status: 'breached' },
      { feedId: 'b', sla_target: '99.9', uptime_30d: 99, status: 'met', margin: 1 },
      { feedId: 'c', sla_target: 99.9, uptime_30d: 99, margin: 1 },
    ];
    const r = ok(normalizeSlaReport({ services: rows }));
    expect(r.skipped).toBe(3);
    expect(r.value.services).toHaveLength(4);
    expect(r.value.summary).toEqual({
      servicesTracked: null,
      complianceRate: null,
      servicesBreachingSla: null,
    });
  });

  it('SLA data without services list is a problem', () => {
    expect(normalizeSlaReport({ summary: {} }).ok).toBe(false);
    expect(normalizeSlaReport([]).ok).toBe(false);
  });

  it('single SLA record', () => {
    expect(ok(normalizeSlaRecord(fx.sla.data.services[2])).value).toEqual(
      fx.slaExpected.services[2],
    );
    expect(normalizeSlaRecord({ feedId: 'x' }).ok).toBe(false);
  });

  it('normalizes the score report field by field (unknown grade/tier kept)', () => {
    expect(ok(normalizeScoreReport(fx.scores.data))).toEqual({
      value: fx.scoresExpected,
      skipped: 0,
    });
  });

  it('skips score rows without a numeric score', () => {
    const r = ok(
      normalizeScoreReport({
        summary: fx.scores.data.summary,
        scores: [...fx.scores.data.scores, { feedId: 'z', score: 'high' }, { score: 5 }],
      }),
    );
    expect(r.skipped).toBe(2);
    expect(r.value.scores.map((s) => s.feedId)).toEqual(['stripe', 'acme']);
  });

  it('single score record without components', () => {
    expect(ok(normalizeScoreRecord({ feedId: 'q', score: 50 })).value).toEqual({
      feedId: 'q',
      name: 'q',
      score: 50,
      grade: null,
      tier: null,
      components: { uptime: null, incidents: null, resolution: null, sla: null },
    });
  });
});

describe('opaque JSON', () => {
  it('keeps rankings data as parsed', () => {
    expect(ok(normalizeOpaque(fx.rankings.data)).value).toEqual(fx.rankings.data);
  });

  it('isJsonValue', () => {
    expect(isJsonValue({ a: [1, 'x', null, true, { b: 2 }] })).toBe(true);
    expect(isJsonValue({ a: undefined })).toBe(false);
    expect(isJsonValue([Number.NaN])).toBe(false);
    expect(isJsonValue(() => 1)).toBe(false);
  });
});

describe("Variant A: an unknown display word is read from the row's other fields", () => {
  it.each([
    [{ displayStatus: 'unavailable' }, 'unknown'],
    [{ displayStatus: 'unavailable', activeIncidentCount: 2 }, 'degraded'],
    [{ displayStatus: 'unavailable', incidentScope: 'all_components' }, 'degraded'],
    [{ displayStatus: 'unavailable', incidentScope: 'none', activeIncidentCount: 0 }, 'unknown'],
    [{ displayStatus: 'unavailable', availabilityStatus: 'major_outage' }, 'major_outage'],
    [{ displayStatus: 'operational', activeIncidentCount: 3 }, 'operational'],
    [{ displayStatus: 'degraded', activeIncidentCount: 1 }, 'degraded'],
  ] as const)('%j → %s', (fields, want) => {
    const r = ok(normalizeServiceState({ feedId: 's', sourceKind: 'official', ...fields }));
    expect(r.value.status).toBe(want);
  });
});

describe('Variant B severity', () => {
  it.each([
    ['degraded', 'major', 'partial_outage'],
    ['degraded', 'minor', 'degraded'],
    ['up', 'none', 'operational'],
    ['down', 'minor', 'major_outage'],
    // An unknown status word cannot hide what the indicator shows.
    ['wobbly', 'critical', 'major_outage'],
    ['wobbly', 'none', 'unknown'],
    ['wobbly', 'severe', 'degraded'],
    ['up', 'severe', 'degraded'],
    ['offline', 'high', 'degraded'],
  ] as const)('status %s + indicator %s → %s', (status, indicator, want) => {
    const r = ok(normalizeServiceState({ feedId: 's', status, indicator, lastCheck: 1 }));
    expect(r.value.status).toBe(want);
  });
});
