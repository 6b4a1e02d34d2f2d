import { afterEach, describe, expect, it } from 'vitest';
import { testRedis, type TestRedis } from '../../test/helpers/redis.js';
import { COMMIT_BATCH, SnapshotStore } from './store.js';

let tr: TestRedis | undefined;
afterEach(async () => {
  await tr?.cleanup();
  tr = undefined;
});

describe('SnapshotStore (real Redis)', () => {
  it('commits 100,000 entries (a chain of calls of COMMIT_BATCH) and reads them back', async () => {
    tr = await testRedis('snap');
    const store = new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status');
    const first = await store.load();
    const changed = new Map(
      Array.from({ length: 100_000 }, (_, i) => [`svc-${i}`, { n: i }] as const),
    );
    const commit = await store.commit({
      expectedVersion: first.version,
      changed,
      upstream: undefined,
      baselined: true,
    });
    expect(commit.ok).toBe(true);
    const fresh = new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status');
    const loaded = await fresh.load();
    expect(loaded.entries.size).toBe(100_000);
    expect(loaded.entries.get('svc-99999')).toEqual({ n: 99_999 });
    expect(loaded.baselined).toBe(true);
  });

  it('refuses a commit when another writer committed since the load (compare-and-set)', async () => {
    tr = await testRedis('snap');
    const a = new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status');
    const b = new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status');
    const sa = await a.load();
    const sb = await b.load();
    expect(
      (
        await a.commit({
          expectedVersion: sa.version,
          changed: new Map([['x', { n: 1 }]]),
          upstream: undefined,
          baselined: true,
        })
      ).ok,
    ).toBe(true);
    expect(
      (
        await b.commit({
          expectedVersion: sb.version,
          changed: new Map([['x', { n: 2 }]]),
          upstream: undefined,
          baselined: true,
        })
      ).ok,
    ).toBe(false);
    expect((await b.load()).entries.get('x')).toEqual({ n: 1 });
  });

  it('a commit bigger than one batch writes the meta with its last call, and refuses a stale version first', async () => {
    tr = await testRedis('snap');
    const store = new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status');
    const first = await store.load();
    const size = COMMIT_BATCH * 2 + 17;
    const changed = new Map(Array.from({ length: size }, (_, i) => [`f${i}`, { n: i }] as const));
    const stale = await store.commit({
      expectedVersion: 'not-the-version',
      changed,
      upstream: undefined,
      baselined: true,
    });
    expect(stale.ok).toBe(false);
    expect(await tr.redis.hlen(tr.keys.key('snap', 'status'))).toBe(0);

    const commit = await store.commit({
      expectedVersion: first.version,
      changed,
      upstream: { health: 'ok', failures: 0, reason: null, seq: 3 },
      baselined: true,
      variant: 'A',
    });
    expect(commit.ok).toBe(true);
    // The cached copy moved on with the commit: a load reads only the version.
    const cached = await store.load();
    expect(cached.version).toBe(commit.version);
    expect(cached.entries.size).toBe(size);
    const fresh = await new SnapshotStore<{ n: number }>(tr.redis, tr.keys, 'status').load();
    expect(fresh.version).toBe(commit.version);
    expect(fresh.entries.size).toBe(size);
    expect(fresh.entries.get(`f${size - 1}`)).toEqual({ n: size - 1 });
    expect(fresh.baselined).toBe(true);
    expect(fresh.variant).toBe('A');
    expect(fresh.upstream).toEqual({ health: 'ok', failures: 0, reason: null, seq: 3 });
  });

  it('compact: the cached copy holds the stored texts and reads as the decoded entries, through loads, commits and corrupt entries', async () => {
    tr = await testRedis('snap');
    interface Sla {
      status: string;
      seq: number;
      history?: [number, number][];
    }
    const entriesKey = tr.keys.key('snap', 'sla');
    const store = new SnapshotStore<Sla>(tr.redis, tr.keys, 'sla', { compact: true });
    const first = await store.load();
    const changed = new Map<string, Sla>([
      ['a', { status: 'met', seq: 0, history: [[1_764_300_000, 99.5]] }],
      ['b', { status: 'breached', seq: 2 }],
    ]);
    const one = await store.commit({
      expectedVersion: first.version,
      changed,
      upstream: undefined,
      baselined: true,
    });
    expect(one.ok).toBe(true);
    // The commit moved the cached copy on (no reload): it reads as what was committed.
    const cached = await store.load();
    expect(cached.version).toBe(one.version);
    expect(cached.entries.size).toBe(2);
    expect(cached.entries.get('a')).toEqual(changed.get('a'));
    expect(cached.entries.get('b')).toEqual(changed.get('b'));
    expect(cached.entries.has('c')).toBe(false);
    expect(cached.entries.get('c')).toBeUndefined();
    expect(new Map(cached.entries)).toEqual(changed);
    expect([...cached.entries.keys()]).toEqual(['a', 'b']);
    expect([...cached.entries.values()]).toEqual([...changed.values()]);
    const seen: string[] = [];
    cached.entries.forEach((entry, feedId) => seen.push(`${feedId}:${entry.status}`));
    expect(seen).toEqual(['a:met', 'b:breached']);
    // Each read is a fresh decode: a caller changing one changes nothing kept.
    (cached.entries.get('a') as Sla).status = 'changed';
    expect(cached.entries.get('a')?.status).toBe('met');

    // Another writer (a corrupt entry, a new one) and a full read: corrupt entries left out.
    await tr.redis.hset(
      entriesKey,
      'bad',
      '{"v":1,"d":7}',
      'c',
      '{"v":1,"d":{"status":"met","seq":1}}',
    );
    await tr.redis.hset(tr.keys.key('snap', 'sla', 'meta'), 'v', 'other');
    const full = await store.load();
    expect(full.version).toBe('other');
    expect(full.corrupt).toBe(1);
    expect([...full.corruptFeeds]).toEqual(['bad']);
    expect(full.entries.size).toBe(3);
    expect(full.entries.get('c')).toEqual({ status: 'met', seq: 1 });

    // A commit over it updates the texts, and clears the corrupt feed it wrote.
    const two = await store.commit({
      expectedVersion: full.version,
      changed: new Map<string, Sla>([
        [
          'a',
          {
            status: 'at_risk',
            seq: 1,
            history: [
              [1_764_300_000, 99.5],
              [1_764_303_600, 99.1],
            ],
          },
        ],
        ['bad', { status: 'met', seq: 5 }],
      ]),
      upstream: undefined,
      baselined: true,
    });
    expect(two.ok).toBe(true);
    const after = await store.load();
    expect(after.version).toBe(two.version);
    expect(after.corrupt).toBe(0);
    expect(after.entries.get('a')).toEqual({
      status: 'at_risk',
      seq: 1,
      history: [
        [1_764_300_000, 99.5],
        [1_764_303_600, 99.1],
      ],
    });
    expect(after.entries.get('bad')).toEqual({ status: 'met', seq: 5 });
    const fresh = await new SnapshotStore<Sla>(tr.redis, tr.keys, 'sla').load();
    expect(new Map(fresh.entries)).toEqual(new Map(after.entries));
  });
});
