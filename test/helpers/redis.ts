import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createKeys, type Keys } from '../../src/redis.js';

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
  const flush = async (): Promise<void> => {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `{${prefix}}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length > 0) await redis.del(...found);
    } while (cursor !== '0');
  };
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
