import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { createKeys, type Keys, type RedisClient } from '../../src/redis.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestRedis {
  redis: Redis;
  prefix: string;
  keys: Keys;
  /** Deletes every key of this test's prefix and closes the connections. */
  cleanup(): Promise<void>;
  /** Deletes every key of this test's prefix (a scoped stand-in for FLUSHALL). */
  flush(): Promise<void>;
}

/** A real Redis connection with a random key prefix of its own; `cleanup` removes its keys. */
export async function testRedis(label = 't'): Promise<TestRedis> {
  const prefix = `swtest-${label}-${randomBytes(4).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  await redis.ping();
  const keys = createKeys(prefix);
  const flush = (): Promise<void> => deletePrefix(redis, prefix);
  return {
    redis,
    prefix,
    keys,
    flush,
    cleanup: async () => {
      await flush();
      redis.disconnect();
    },
  };
}

/** Every key matching `pattern`: SCAN on one Redis, on every master of a cluster. */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  // A cluster knows its nodes once connected: the PING waits for that.
  if (redis instanceof Cluster) await redis.ping();
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const found = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) found.add(key);
    } while (cursor !== '0');
  }
  return [...found];
}

/**
 * Deletes every key of `prefix` (`{prefix}…`). They share the `{prefix}` hash tag, so on a
 * cluster one DEL per batch is still a one-slot command.
 */
export async function deletePrefix(redis: RedisClient, prefix: string): Promise<void> {
  const keys = await scanKeys(redis, `{${prefix}}*`);
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
}
