import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testRedis, type TestRedis } from '../../test/helpers/redis.js';
import type { CommittedCycle } from '../pipeline/cycle.js';
import type { StatusEntry } from '../diff/state.js';
import type { Transition } from '../diff/transition.js';
import type { ScoreReport, SlaReport, StatusSnapshot } from '../upstream/model.js';
import { HistoryStore, fingerprint } from './store.js';
import { watchedBy } from './index.js';
import { DAY_MS, HOUR_MS } from './series.js';

const T0 = Date.UTC(2026, 10, 2, 12, 0, 0);
const RATE = { limit: 120, remaining: 100, reset: null };
const NO_DATA = {
  variant: 'A',
  total: 0,
  generated: null,
  ageSeconds: null,
  includes: null,
  services: [],
} as StatusSnapshot;

function status(feedId: string, s: StatusEntry['status']): [string, StatusEntry] {
  return [
    feedId,
    {
      variant: 'A',
      status: s,
      raw: s,
      sourceKind: 'official',
      evidence: 'fresh',
      seq: 1,
      pending: null,
    },
  ];
}

function cycle(
  kind: CommittedCycle['kind'],
  now: number,
  o: Partial<CommittedCycle> = {},
): CommittedCycle {
  return { kind, transitions: [], changed: new Map(), data: NO_DATA, rateLimit: RATE, now, ...o };
}

function sla(now: number, rows: [string, number][]): CommittedCycle {
  const data: SlaReport = {
    summary: { servicesTracked: null, complianceRate: null, servicesBreachingSla: null },
    services: rows.map(([feedId, margin]) => ({
      feedId,
      name: feedId,
      slaTarget: 99.9,
      uptime30d: 99.9 + margin,
      status: margin < 0 ? 'breached' : 'met',
      statusRaw: 'met',
      margin,
    })),
  };
  return cycle('sla', now, { data });
}

function scores(now: number, rows: [string, number][]): CommittedCycle {
  const data: ScoreReport = {
    summary: { servicesScored: null, avgScore: null, topService: null },
    scores: rows.map(([feedId, score]) => ({
      feedId,
      name: feedId,
      score,
      grade: 'A',
      tier: null,
      components: { uptime: null, incidents: null, resolution: null, sla: null },
    })),
  };
  return cycle('scores', now, { data });
}

function opened(feedId: string, at: number, id = 'i1'): Transition {
  return {
    id: `t-${feedId}-${id}-${String(at)}`,
    kind: 'incident.opened',
    feedId,
    subject: `incident:${id}`,
    service: { feedId, name: feedId, canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current: { status: 'investigating', updateCount: 1 },
    incident: {
      id,
      title: '<b>down</b>',
      status: 'investigating',
      started: at / 1000,
      updateCount: 1,
      latestUpdate: null,
    },
    observedAt: at,
  };
}

let tr: TestRedis;
let store: HistoryStore;
const watched = (f: string): boolean => f !== 'ignored';

beforeEach(async () => {
  tr = await testRedis('hist');
  store = new HistoryStore(tr.redis, tr.keys);
});
afterEach(async () => {
  await tr.cleanup();
});

describe('service history', () => {
  it('records confirmed status changes once, for watched services only', async () => {
    await store.record(
      cycle('status', T0, {
        changed: new Map([status('a', 'operational'), status('ignored', 'degraded')]),
      }),
      watched,
    );
    await store.record(
      cycle('status', T0 + 60_000, { changed: new Map([status('a', 'operational')]) }),
      watched,
    );
    await store.record(
      cycle('status', T0 + 120_000, { changed: new Map([status('a', 'major_outage')]) }),
      watched,
    );
    expect(await store.statusChanges('a', 0)).toEqual([
      { at: T0, status: 'operational' },
      { at: T0 + 120_000, status: 'major_outage' },
    ]);
    expect(await store.statusChanges('ignored', 0)).toEqual([]);
    expect(await store.statusBefore('a', T0 + 60_000)).toBe('operational');
    expect((await store.upstream()).get('status')).toEqual({
      lastOk: T0 + 120_000,
      limit: 120,
      remaining: 100,
      reset: null,
    });
  });

  it('records the status changes of a big cycle over several script calls, bounded in time and count', async () => {
    // 1,200 services: three calls of 500 (SAMPLE_SERVICES_PER_CALL), the last one short.
    const feeds = Array.from({ length: 1_200 }, (_, i) => `s${String(i)}`);
    const old = T0 - 91 * DAY_MS;
    const all = (s: StatusEntry['status']): Map<string, StatusEntry> =>
      new Map(feeds.map((f) => status(f, s)));
    await store.record(cycle('status', old, { changed: all('operational') }), watched);
    // The same status again records nothing; a new one is recorded and the 91-day-old one goes.
    await store.record(cycle('status', T0 - DAY_MS, { changed: all('operational') }), watched);
    await store.record(cycle('status', T0, { changed: all('degraded') }), watched);
    for (const feedId of ['s0', 's499', 's500', 's1199']) {
      expect(await store.statusChanges(feedId, 0)).toEqual([{ at: T0, status: 'degraded' }]);
      const ttl = await tr.redis.pttl(tr.keys.key('hist', 'status', feedId));
      expect(ttl).toBeGreaterThan(90 * DAY_MS);
      expect(ttl).toBeLessThanOrEqual(91 * DAY_MS);
    }
    expect(await tr.redis.hlen(tr.keys.key('hist', 'status-last'))).toBe(1_200);
    // Within each call, every other service changes: each change lands in its own service's set.
    await store.record(
      cycle('status', T0 + HOUR_MS, {
        changed: new Map(feeds.map((f, i) => status(f, i % 2 === 0 ? 'major_outage' : 'degraded'))),
      }),
      watched,
    );
    for (const i of [0, 1, 498, 499, 500, 501, 1_198, 1_199]) {
      expect(await store.statusChanges(`s${String(i)}`, 0)).toEqual(
        i % 2 === 0
          ? [
              { at: T0, status: 'degraded' },
              { at: T0 + HOUR_MS, status: 'major_outage' },
            ]
          : [{ at: T0, status: 'degraded' }],
      );
    }
    // At most MAX_STATUS_CHANGES_PER_SERVICE (500) changes are kept, the newest.
    for (let i = 1; i <= 501; i++) {
      await store.record(
        cycle('status', T0 + i * 1000, {
          changed: new Map([status('s1', i % 2 === 0 ? 'degraded' : 'major_outage')]),
        }),
        watched,
      );
    }
    const kept = await store.statusChanges('s1', 0);
    expect(kept).toHaveLength(500);
    expect(kept.at(-1)).toEqual({ at: T0 + 501_000, status: 'major_outage' });
    expect(kept[0]).toEqual({ at: T0 + 2_000, status: 'degraded' });
  });

  it('keeps the last SLA and score sample per hour and per day, bounded in time', async () => {
    await store.record(
      sla(T0, [
        ['a', 0.5],
        ['ignored', 1],
      ]),
      watched,
    );
    await store.record(sla(T0 + 10 * 60_000, [['a', 0.4]]), watched); // same hour: replaces
    await store.record(sla(T0 + HOUR_MS, [['a', 0.3]]), watched);
    expect(await store.samples('a', 'sla', T0 - DAY_MS)).toEqual([
      [T0, 0.4],
      [T0 + HOUR_MS, 0.3],
    ]);
    const daily = await tr.redis.zrange(tr.keys.key('hist', 'sla', 'd', 'a'), '0', '-1');
    expect(daily).toEqual([`${String(T0 - 12 * HOUR_MS)}:0.3`]);
    expect(await store.samples('ignored', 'sla', 0)).toEqual([]);
    const latest = await store.latest(['a', 'ignored']);
    expect(latest.sla.get('a')).toMatchObject({ margin: 0.3, target: 99.9 });
    expect(latest.sla.has('ignored')).toBe(false);

    // 40 days later: the hourly samples (30 days) are gone from Redis, the daily one stays.
    await store.record(scores(T0, [['a', 90]]), watched);
    const later = T0 + 40 * DAY_MS;
    await store.record(sla(later, [['a', -0.1]]), watched);
    expect(await tr.redis.zcard(tr.keys.key('hist', 'sla', 'h', 'a'))).toBe(1);
    expect(await store.samples('a', 'sla', T0 - DAY_MS)).toEqual([
      [T0 - 12 * HOUR_MS, 0.3],
      [later, -0.1],
    ]);
    expect((await store.samplesOf(['a'], 'score', T0 - DAY_MS)).get('a')).toEqual([[T0, 90]]);
  });

  it('keeps at most 500 transitions per service, newest first', async () => {
    const list = Array.from({ length: 520 }, (_, i) => opened('a', T0 + i * 1000, `i${String(i)}`));
    await store.record(
      cycle('incidents', T0 + 600_000, { transitions: [...list, opened('ignored', T0)] }),
      watched,
    );
    const events = await store.events('a', 0);
    expect(events).toHaveLength(500);
    expect(events[0]?.incident?.id).toBe('i519');
    expect(events[0]?.incident?.title).toBe('<b>down</b>');
    expect(await store.events('ignored', 0)).toEqual([]);
  });

  it('bounds every service of a big cycle: 90 days kept, a TTL set, over several script calls', async () => {
    // 2,500 services: more than one call of SERVICES_PER_PIPELINE (2,000).
    const feeds = Array.from({ length: 2_500 }, (_, i) => `s${String(i)}`);
    const old = T0 - 91 * DAY_MS;
    await store.record(
      cycle('incidents', old, { transitions: feeds.map((f) => opened(f, old, 'old')) }),
      watched,
    );
    await store.record(
      cycle('incidents', T0, { transitions: feeds.map((f) => opened(f, T0, 'new')) }),
      watched,
    );
    for (const feedId of ['s0', 's1999', 's2000', 's2499']) {
      const events = await store.events(feedId, 0);
      expect(events.map((e) => e.incident?.id)).toEqual(['new']);
      const ttl = await tr.redis.pttl(tr.keys.key('hist', 'events', feedId));
      expect(ttl).toBeGreaterThan(90 * DAY_MS);
      expect(ttl).toBeLessThanOrEqual(91 * DAY_MS);
    }
  });

  it('writes the samples and latest records of a big SLA or scores cycle, over several script calls', async () => {
    // 1,200 services: three calls of 500 (SAMPLE_SERVICES_PER_CALL), the last one short.
    const feeds = Array.from({ length: 1_200 }, (_, i) => `s${String(i)}`);
    await store.record(
      sla(
        T0,
        feeds.map((f, i) => [f, i / 100]),
      ),
      watched,
    );
    await store.record(
      scores(T0 + HOUR_MS, [...feeds.map((f, i): [string, number] => [f, i]), ['ignored', 1]]),
      watched,
    );
    for (const i of [0, 499, 500, 1_199]) {
      const feedId = `s${String(i)}`;
      expect(await store.samples(feedId, 'sla', T0 - DAY_MS)).toEqual([[T0, i / 100]]);
      expect(await store.samples(feedId, 'score', T0 - DAY_MS)).toEqual([[T0 + HOUR_MS, i]]);
      const latest = await store.latest([feedId]);
      expect(latest.sla.get(feedId)).toEqual({
        margin: i / 100,
        target: 99.9,
        uptime30d: 99.9 + i / 100,
        status: 'met',
        at: T0,
      });
      expect(latest.score.get(feedId)).toEqual({ score: i, grade: 'A', at: T0 + HOUR_MS });
      for (const [series, r, days] of [
        ['sla', 'h', 30],
        ['sla', 'd', 90],
        ['score', 'h', 30],
        ['score', 'd', 90],
      ] as const) {
        const ttl = await tr.redis.pttl(tr.keys.key('hist', series, r, feedId));
        expect(ttl).toBeGreaterThan(days * DAY_MS);
        expect(ttl).toBeLessThanOrEqual((days + 1) * DAY_MS);
      }
    }
    expect(await tr.redis.hlen(tr.keys.key('hist', 'latest', 'sla'))).toBe(1_200);
    expect(await tr.redis.hlen(tr.keys.key('hist', 'latest', 'score'))).toBe(1_200);
    expect(await store.samples('ignored', 'score', 0)).toEqual([]);
  });

  it('leaves out the services whose sample and latest record it wrote in the last cycle of the kind', async () => {
    const at = async (feedId: string): Promise<number | undefined> =>
      (await store.latest([feedId])).sla.get(feedId)?.at;
    const m = 60_000;
    await store.record(
      sla(T0, [
        ['a', 0.5],
        ['b', 0.2],
        ['c', 0.1],
      ]),
      watched,
    );
    // Same hour: b changed, d is new, a and c are not written again.
    await store.record(
      sla(T0 + 10 * m, [
        ['a', 0.5],
        ['b', 0.3],
        ['c', 0.1],
        ['d', 0.7],
      ]),
      watched,
    );
    expect([await at('a'), await at('b'), await at('c'), await at('d')]).toEqual([
      T0,
      T0 + 10 * m,
      T0,
      T0 + 10 * m,
    ]);
    expect(await store.samples('b', 'sla', T0 - DAY_MS)).toEqual([[T0, 0.3]]);
    expect(await store.samples('d', 'sla', T0 - DAY_MS)).toEqual([[T0, 0.7]]);

    // Another replica records a cycle: this process's next one writes every service again.
    const rows: [string, number][] = [
      ['a', 0.5],
      ['b', 0.3],
      ['c', 0.1],
      ['d', 0.7],
    ];
    await new HistoryStore(tr.redis, tr.keys).record(sla(T0 + 20 * m, rows), watched);
    expect(await at('a')).toBe(T0 + 20 * m);
    await store.record(sla(T0 + 30 * m, rows), watched);
    expect(await at('a')).toBe(T0 + 30 * m);
    await store.record(sla(T0 + 40 * m, rows), watched);
    expect([await at('a'), await at('d')]).toEqual([T0 + 30 * m, T0 + 30 * m]);

    // A new hour: every service gets its sample in the new bucket.
    const hour = T0 + HOUR_MS;
    await store.record(sla(hour + m, rows), watched);
    expect(await at('c')).toBe(hour + m);
    expect(await store.samples('c', 'sla', T0 - DAY_MS)).toEqual([
      [T0, 0.1],
      [hour, 0.1],
    ]);

    // A service watched again is written, though its values are what they were.
    await store.record(sla(hour + 2 * m, rows), (f) => f !== 'c');
    await store.record(sla(hour + 3 * m, rows), watched);
    expect([await at('a'), await at('c')]).toEqual([hour + m, hour + 3 * m]);

    // A cycle that failed half-way: the next one writes every service.
    const failing = (f: string): boolean => {
      if (f === 'b') throw new Error('no');
      return true;
    };
    await expect(store.record(sla(hour + 4 * m, rows), failing)).rejects.toThrow('no');
    await store.record(sla(hour + 5 * m, rows), watched);
    expect([await at('a'), await at('d')]).toEqual([hour + 5 * m, hour + 5 * m]);

    // Scores are their own series: unchanged scores are left out too.
    await store.record(scores(hour + 6 * m, [['a', 90]]), watched);
    await store.record(scores(hour + 7 * m, [['a', 90]]), watched);
    expect((await store.latest(['a'])).score.get('a')?.at).toBe(hour + 6 * m);
    await store.record(scores(hour + 8 * m, [['a', 91]]), watched);
    expect((await store.latest(['a'])).score.get('a')).toEqual({
      score: 91,
      grade: 'A',
      at: hour + 8 * m,
    });
    // A grade that goes from none to an empty one is a change too.
    const graded = (now: number, grade: string | null): CommittedCycle => {
      const c = scores(now, [['a', 91]]);
      const row = (c.data as ScoreReport).scores[0];
      if (row !== undefined) row.grade = grade;
      return c;
    };
    await store.record(graded(hour + 9 * m, null), watched);
    await store.record(graded(hour + 10 * m, ''), watched);
    expect((await store.latest(['a'])).score.get('a')).toEqual({
      score: 91,
      grade: '',
      at: hour + 10 * m,
    });
  });

  it('watchedBy: feedIds, "*" and categories', async () => {
    const categories = {
      load: () => Promise.resolve(),
      has: (slug: string, f: string) => slug === 'payments' && f === 'adyen',
    };
    const w = await watchedBy([{ services: ['stripe'], categories: ['payments'] }], categories);
    expect(['stripe', 'adyen', 'github'].map(w)).toEqual([true, true, false]);
    expect((await watchedBy([{ services: ['*'], categories: [] }], categories))('anything')).toBe(
      true,
    );
  });
});

describe('fingerprint', () => {
  it('is a 53-bit integer that tells apart texts that differ in one character or their order', () => {
    const texts = [
      '0.501|99|99.501|met',
      '0.502|99|99.501|met',
      '99|0.501|99.501|met',
      '',
      'a',
      'b',
    ];
    const prints = texts.map(fingerprint);
    expect(new Set(prints).size).toBe(texts.length);
    for (const p of prints) {
      expect(Number.isSafeInteger(p)).toBe(true);
      expect(p).toBeGreaterThanOrEqual(0);
    }
    expect(fingerprint('0.501|99|99.501|met')).toBe(prints[0]);
  });
});
