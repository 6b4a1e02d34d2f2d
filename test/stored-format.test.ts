/**
 * State written by the previous format (unversioned JSON, exactly as statuswatch wrote it before
 * the versioned envelope) is read correctly after an upgrade; a value of an unknown, future
 * version is treated as corrupt (a first sight, or skipped), never misread.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  IncidentsEntry,
  ScoreEntry,
  SlaEntry,
  StatusEntry,
  UpstreamEntry,
} from '../src/diff/state.js';
import { DeliveryLedger } from '../src/delivery/ledger.js';
import { silentLogger } from '../src/log.js';
import { NoiseStore, type ToldEntry } from '../src/noise/store.js';
import { CatalogStore } from '../src/pipeline/catalog.js';
import { VocabularyRecorder } from '../src/pipeline/vocabulary.js';
import { scripts } from '../src/redis/scripts.js';
import { corruptCounts } from '../src/redis/stored.js';
import { createMetrics } from '../src/server/metrics.js';
import type { Silence } from '../src/silences/model.js';
import { SilenceStore } from '../src/silences/store.js';
import { SnapshotStore } from '../src/snapshot/store.js';
import { transition } from './notify-helpers.js';
import { testRedis, type TestRedis } from './helpers/redis.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const HOUR = 3_600_000;

let tr: TestRedis;
beforeEach(async () => {
  tr = await testRedis('stored');
});
afterEach(async () => {
  await tr.cleanup();
});

/** What a value of a future version looks like: another envelope version around the same data. */
const future = (value: unknown): string => JSON.stringify({ v: 99, d: value });

const corrupt = (kind: string): number => corruptCounts().get(kind) ?? 0;

const status: StatusEntry = {
  variant: 'A',
  status: 'major_outage',
  raw: 'major_outage',
  sourceKind: 'official',
  evidence: 'fresh',
  seq: 3,
  pending: { status: 'operational', raw: 'operational', seen: 1, lastSnapshot: T0 },
};
const incidents: IncidentsEntry = {
  seq: 2,
  open: {
    'inc-1': {
      title: 'Card payments failing',
      status: 'investigating',
      started: 1,
      updateCount: 2,
    },
  },
  closed: { 'inc-0': { title: 'Earlier', started: 0, updateCount: 1, at: T0 - HOUR } },
};
const sla: SlaEntry = {
  status: 'at_risk',
  seq: 1,
  history: [[1_767_225_600, 99.95]],
  forecasting: false,
  fseq: 0,
};
const score: ScoreEntry = { reference: 87, grade: 'B', seq: 4, history: [[1_767_225_600, 87]] };
const upstream: UpstreamEntry = { health: 'degraded', failures: 2, reason: 'http 503', seq: 1 };

describe('snapshot entries in the previous format', () => {
  const cases = [
    ['status', status],
    ['incidents', incidents],
    ['sla', sla],
    ['scores', score],
  ] as const;

  it.each(cases)(
    '%s: loads unversioned entries and meta, and keeps them through a commit',
    async (kind, entry) => {
      const key = tr.keys.key('snap', kind);
      await tr.redis.hset(key, 'stripe', JSON.stringify(entry));
      await tr.redis.hset(
        `${key}:meta`,
        'v',
        'token-1',
        'b',
        '1',
        'u',
        JSON.stringify(upstream),
        't',
        'A',
      );
      const store = new SnapshotStore<typeof entry>(tr.redis, tr.keys, kind);
      const snapshot = await store.load();
      expect(snapshot).toMatchObject({
        version: 'token-1',
        baselined: true,
        upstream,
        variant: 'A',
        corrupt: 0,
      });
      expect(snapshot.entries.get('stripe')).toEqual(entry);
      expect((await store.get(['stripe'])).get('stripe')).toEqual(entry);

      // A commit rewrites only what changed (in the envelope); the old entry stays readable.
      const commit = await store.commit({
        expectedVersion: snapshot.version,
        changed: new Map([['github', entry]]),
        upstream: undefined,
        baselined: true,
      });
      expect(commit.ok).toBe(true);
      expect(JSON.parse((await tr.redis.hget(key, 'github')) ?? 'null')).toEqual({
        v: 1,
        d: entry,
      });
      const fresh = await new SnapshotStore<typeof entry>(tr.redis, tr.keys, kind).load();
      expect(fresh.entries).toEqual(
        new Map([
          ['stripe', entry],
          ['github', entry],
        ]),
      );
      expect(fresh.upstream).toEqual(upstream);
    },
  );

  it.each(cases)(
    '%s: an entry of a future version is a first sight, not misread',
    async (kind, entry) => {
      const key = tr.keys.key('snap', kind);
      const before = corrupt(`snap:${kind}`);
      await tr.redis.hset(key, 'stripe', JSON.stringify(entry), 'github', future(entry));
      await tr.redis.hset(`${key}:meta`, 'v', 'token-1', 'u', future(upstream));
      const store = new SnapshotStore<typeof entry>(tr.redis, tr.keys, kind);
      const snapshot = await store.load();
      expect([...snapshot.entries.keys()]).toEqual(['stripe']);
      expect(snapshot.corrupt).toBe(1);
      expect(snapshot.upstream).toBeUndefined();
      expect((await store.get(['github', 'stripe'])).has('github')).toBe(false);
      expect(corrupt(`snap:${kind}`)).toBe(before + 2);
    },
  );

  it('an unversioned entry that is not of its kind is a first sight', async () => {
    const key = tr.keys.key('snap', 'scores');
    await tr.redis.hset(key, 'stripe', JSON.stringify(status), 'github', '[1,2]', 'okta', '{');
    const snapshot = await new SnapshotStore<ScoreEntry>(tr.redis, tr.keys, 'scores').load();
    expect(snapshot.entries.size).toBe(0);
    expect(snapshot.corrupt).toBe(3);
  });
});

describe('noise state in the previous format', () => {
  const opening = transition('incident.opened');
  const told: ToldEntry = {
    subscription: 'payments',
    channel: 'oncall',
    opening,
    toldAt: T0,
    lastSentAt: T0,
    reminders: 0,
  };

  it('reads an unversioned told entry, and updates it in place (compare-and-set on the stored text)', async () => {
    const hash = tr.keys.key('noise', 'told');
    const field = `payments|oncall|stripe|incident:inc-1`;
    await tr.redis.hset(hash, field, JSON.stringify(told));
    const store = new NoiseStore(tr.redis, tr.keys);
    expect(await store.lookup('payments|oncall', 'stripe|incident:inc-1')).toEqual({
      told,
      suppressed: false,
    });
    const all = await store.allTold();
    expect(all).toEqual(new Map([[field, told]]));
    const after: ToldEntry = { ...told, lastSentAt: T0 + HOUR, reminders: 1 };
    await store.updateTold(field, all.get(field)!, after);
    expect(JSON.parse((await tr.redis.hget(hash, field)) ?? 'null')).toEqual({ v: 1, d: after });
    expect((await store.allTold()).get(field)).toEqual(after);
  });

  it('ignores a told entry of a future version', async () => {
    const hash = tr.keys.key('noise', 'told');
    const before = corrupt('noise:told');
    await tr.redis.hset(hash, 'payments|oncall|stripe|incident:inc-1', future(told));
    const store = new NoiseStore(tr.redis, tr.keys);
    expect(await store.lookup('payments|oncall', 'stripe|incident:inc-1')).toEqual({
      told: null,
      suppressed: false,
    });
    expect(await store.allTold()).toEqual(new Map());
    expect(corrupt('noise:told')).toBe(before + 2);
    // Visible in /metrics as statuswatch_stored_values_unreadable_total{kind}.
    const scrape = await createMetrics().registry.metrics();
    expect(scrape).toContain(
      `statuswatch_stored_values_unreadable_total{kind="noise:told"} ${String(before + 2)}`,
    );
  });

  it('claims unversioned buffered transitions, skipping one of a future version', async () => {
    const route = 'payments|oncall';
    const later = transition('incident.updated', { id: 'tlater' });
    const other = transition('status.changed', { id: 'tfuture' });
    await tr.redis.rpush(
      tr.keys.key('noise', 'group', route),
      JSON.stringify(opening),
      future(other),
      JSON.stringify(later),
    );
    await tr.redis.hset(tr.keys.key('noise', 'group-since'), route, String(T0));
    const store = new NoiseStore(tr.redis, tr.keys);
    expect(await store.groupsSince()).toEqual(new Map([[route, T0]]));
    // A transition buffered after the upgrade joins the same buffer, in the envelope.
    await store.addToGroup(route, transition('incident.resolved', { id: 'tnew' }), T0 + 1);
    const claimed = await store.claim('group', route);
    expect(claimed.map((t) => t.id)).toEqual([opening.id, later.id, 'tnew']);
    expect(claimed[0]).toEqual(opening);
    await store.finish('group', route, T0 + 2);
    expect(await store.groupsSince()).toEqual(new Map());
  });

  it('reads unversioned routed-log items, skipping one of a future version', async () => {
    const key = tr.keys.key('history');
    const later = transition('incident.resolved', { observedAt: T0 + 1 });
    await tr.redis.zadd(
      key,
      String(opening.observedAt),
      JSON.stringify({ t: opening, subscriptions: ['payments'] }),
      String(T0 + 2),
      future({ t: later, subscriptions: ['payments'] }),
    );
    const store = new NoiseStore(tr.redis, tr.keys);
    await store.logRouted(later, ['payments', 'all'], T0 + 1);
    expect(await store.routedLog(T0 - 1, T0 + HOUR)).toEqual([
      { t: opening, subscriptions: ['payments'] },
      { t: later, subscriptions: ['payments', 'all'] },
    ]);
  });
});

describe('silences in the previous format', () => {
  const silence: Silence = {
    id: 'legacySilence01',
    matchers: { services: ['stripe'] },
    startsAt: T0,
    endsAt: T0 + HOUR,
    author: 'alice',
    comment: 'provider maintenance',
    createdAt: T0,
  };

  it('lists, gets and expires an unversioned silence', async () => {
    const key = tr.keys.key('silences');
    await tr.redis.hset(key, silence.id, JSON.stringify(silence));
    const now = T0 + 10 * 60_000;
    const store = new SilenceStore(tr.redis, tr.keys, () => now, { cacheMs: 0 });
    expect(await store.get(silence.id)).toEqual(silence);
    expect(await store.list()).toEqual([silence]);
    expect(await store.active()).toEqual([silence]);
    const expired = await store.expire(silence.id);
    expect(expired).toEqual({ ...silence, endsAt: now });
    expect(JSON.parse((await tr.redis.hget(key, silence.id)) ?? 'null')).toEqual({
      v: 1,
      d: expired,
    });
  });

  it('skips a silence of a future version (never deletes it)', async () => {
    const key = tr.keys.key('silences');
    const before = corrupt('silence');
    await tr.redis.hset(key, silence.id, future(silence));
    const store = new SilenceStore(tr.redis, tr.keys, () => T0, { cacheMs: 0 });
    expect(await store.list({ includeExpired: true })).toEqual([]);
    expect(await store.active()).toEqual([]);
    expect(await store.get(silence.id)).toBeUndefined();
    expect(await tr.redis.hexists(key, silence.id)).toBe(1);
    expect(corrupt('silence')).toBe(before + 3);
  });
});

describe('catalog and vocabulary in the previous format', () => {
  it('reads unversioned catalog identities; one of a future version reads as unknown', async () => {
    const key = tr.keys.key('catalog', 'services');
    const stripe = {
      name: 'Stripe',
      canonicalUrl: 'https://stripe.com/',
      officialStatusUrl: 'https://status.stripe.com/',
    };
    await tr.redis.hset(key, 'stripe', JSON.stringify(stripe), 'github', future(stripe));
    const refs = await new CatalogStore(tr.redis, tr.keys).refs(['stripe', 'github']);
    expect(refs).toEqual(new Map([['stripe', { feedId: 'stripe', ...stripe }]]));
  });

  it("reads an unversioned word's first sight; one of a future version has none", async () => {
    const key = tr.keys.key('vocabulary');
    const firstSeen = new Date(T0).toISOString();
    await tr.redis.hset(
      key,
      'sla.status\u0000met',
      JSON.stringify({ firstSeen }),
      'sla.status\u0000within_target',
      future({ firstSeen }),
    );
    const recorder = new VocabularyRecorder({
      redis: tr.redis,
      keys: tr.keys,
      log: silentLogger(),
    });
    const seen = (await recorder.report()).find((f) => f.field === 'sla.status')?.seen ?? [];
    expect(Object.fromEntries(seen.map((s) => [s.value, s.firstSeen]))).toEqual({
      met: firstSeen,
      within_target: null,
    });
  });
});

describe('delivery ledger (plain strings, not JSON: unchanged)', () => {
  it('claims and reads values written before the scripts moved to files', async () => {
    const ledger = new DeliveryLedger(tr.redis, tr.keys, 3600, 7200);
    await tr.redis.set(tr.keys.key('delivery', 'sent'), 's');
    await tr.redis.set(tr.keys.key('delivery', 'handed'), 'j');
    await tr.redis.set(tr.keys.key('delivery', 'mine'), 'b:job-1');
    expect(await ledger.claim(['sent', 'handed', 'mine', 'new'], 'b:job-1')).toEqual([
      'other',
      'handed',
      'mine',
      'new',
    ]);
    expect(await ledger.entries(['sent', 'handed', 'new'])).toEqual([
      { state: 'sent' },
      { state: 'retry_job' },
      { state: 'claimed', owner: 'b:job-1' },
    ]);
  });
});

describe('Redis scripts as defined commands', () => {
  it('registers once per connection and runs inside a MULTI', async () => {
    expect(scripts(tr.redis)).toBe(scripts(tr.redis));
    const hash = tr.keys.key('cas');
    await tr.redis.hset(hash, 'f', 'a');
    const m = tr.redis.multi();
    scripts(tr.redis).queue(m).hashFieldCas([hash], ['f', 'a', 'b']);
    scripts(tr.redis).queue(m).hashFieldCas([hash], ['f', 'a', 'c']);
    expect(await m.exec()).toEqual([
      [null, 1],
      [null, 0],
    ]);
    expect(await tr.redis.hget(hash, 'f')).toBe('b');
  });

  it('refuses a MULTI made before the scripts were registered on its connection', () => {
    const other = tr.redis.duplicate({ lazyConnect: true });
    const m = other.multi();
    expect(() => scripts(other).queue(m)).toThrow(/not defined here/);
    other.disconnect();
  });
});
