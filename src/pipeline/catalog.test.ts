import { afterEach, describe, expect, it } from 'vitest';
import { scanKeys, testRedis, type TestRedis } from '../../test/helpers/redis.js';
import type { ServiceInfo } from '../upstream/model.js';
import { CatalogStore, REPLACE_BATCH } from './catalog.js';

let tr: TestRedis | undefined;
afterEach(async () => {
  await tr?.cleanup();
  tr = undefined;
});

function service(i: number, name = `Service ${i}`): ServiceInfo {
  return {
    feedId: `svc-${i}`,
    name,
    url: null,
    canonicalUrl: `https://status-directory.example/services/svc-${i}`,
    officialStatusUrl: i % 2 === 0 ? null : `https://status.svc-${i}.example`,
    feedType: null,
    sourceKind: 'official',
    sourceKindRaw: 'official',
    sourceLabel: null,
    description: null,
  };
}

describe('CatalogStore.replace (real Redis)', () => {
  it('a name several services share maps to all of them, also across batches', async () => {
    tr = await testRedis('catalog-names');
    const store = new CatalogStore(tr.redis, tr.keys);
    const services = Array.from({ length: REPLACE_BATCH + 3 }, (_, i) => service(i));
    services[1] = service(1, 'API');
    services[REPLACE_BATCH + 1] = service(REPLACE_BATCH + 1, 'API');
    services[2] = service(2, 'Payments');
    await store.replace(services, 1_000);
    expect(await store.feedIdsByName(['API', 'Payments', 'Service 0'])).toEqual(
      new Map<string, string | string[]>([
        ['API', ['svc-1', `svc-${REPLACE_BATCH + 1}`]],
        ['Payments', 'svc-2'],
        ['Service 0', 'svc-0'],
      ]),
    );
  });

  it('replaces a catalog bigger than one batch whole, leaving no staging keys behind', async () => {
    tr = await testRedis('catalog');
    const store = new CatalogStore(tr.redis, tr.keys);
    const size = REPLACE_BATCH * 2 + 5;
    const first = Array.from({ length: size }, (_, i) => service(i));
    await store.replace(first, 1_000);
    expect(await store.updatedAt()).toBe(1_000);
    const refs = await store.refs(['svc-0', 'svc-1', `svc-${size - 1}`, 'svc-nope']);
    expect([...refs.keys()]).toEqual(['svc-0', 'svc-1', `svc-${size - 1}`]);
    expect(refs.get('svc-1')).toEqual({
      feedId: 'svc-1',
      name: 'Service 1',
      canonicalUrl: 'https://status-directory.example/services/svc-1',
      officialStatusUrl: 'https://status.svc-1.example',
    });
    expect(await store.feedIdsByName([`Service ${size - 1}`])).toEqual(
      new Map([[`Service ${size - 1}`, `svc-${size - 1}`]]),
    );

    // A smaller catalog replaces the bigger one: the services that left are gone.
    await store.replace([service(1, 'Renamed'), service(size + 1)], 2_000);
    expect(await tr.redis.hlen(tr.keys.key('catalog', 'services'))).toBe(2);
    expect(await store.feedIdsByName(['Service 1', 'Renamed'])).toEqual(
      new Map([['Renamed', 'svc-1']]),
    );
    expect(await tr.redis.hget(tr.keys.key('catalog', 'meta'), 'size')).toBe('2');
    const keys = await scanKeys(tr.redis, `{${tr.prefix}}*`);
    expect(keys.filter((k) => k.includes(':tmp:'))).toEqual([]);
    expect(await tr.redis.pttl(tr.keys.key('catalog', 'services'))).toBe(-1);
    expect(await tr.redis.pttl(tr.keys.key('catalog', 'names'))).toBe(-1);

    await store.replace([], 3_000);
    expect(await tr.redis.exists(tr.keys.key('catalog', 'services'))).toBe(0);
    expect(await store.updatedAt()).toBe(3_000);
  });

  it('keeps a service whose feedId or name is __proto__ or constructor, as any other', async () => {
    tr = await testRedis('catalog');
    const store = new CatalogStore(tr.redis, tr.keys);
    const odd = [
      { ...service(1, '__proto__'), feedId: '__proto__' },
      { ...service(2, 'constructor'), feedId: 'constructor' },
    ];
    await store.replace([service(0), ...odd], 1);
    expect(await store.feedIdsByName(['__proto__', 'constructor'])).toEqual(
      new Map([
        ['__proto__', '__proto__'],
        ['constructor', 'constructor'],
      ]),
    );
    const refs = await store.refs(['__proto__', 'constructor']);
    expect([...refs.keys()].sort()).toEqual(['__proto__', 'constructor']);
    expect(refs.get('__proto__')?.name).toBe('__proto__');
  });
});
