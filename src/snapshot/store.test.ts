import { afterEach, describe, expect, it } from 'vitest';
import { testRedis, type TestRedis } from '../../test/helpers/redis.js';
import { SnapshotStore } from './store.js';

let tr: TestRedis | undefined;
afterEach(async () => {
  await tr?.cleanup();
  tr = undefined;
});

describe('SnapshotStore (real Redis)', () => {
  it('commits 100,000 entries in one call and reads them back', async () => {
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
});
