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
});
