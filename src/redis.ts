import { Redis } from 'ioredis';

/**
 * Key layout: every key statuswatch writes starts with `{prefix}` — a Redis Cluster hash tag, so
 * all keys of one installation live in one slot and Lua scripts / MULTI may span them. BullMQ
 * queues get the same `{prefix}` as their prefix.
 */
export interface Keys {
  /** `{prefix}` — also the BullMQ queue prefix. */
  readonly tag: string;
  key(...parts: string[]): string;
}

export function createKeys(prefix: string): Keys {
  const tag = `{${prefix}}`;
  return { tag, key: (...parts) => [tag, ...parts].join(':') };
}

/**
 * A connection for statuswatch's own commands. BullMQ workers need `maxRetriesPerRequest: null`;
 * we use the same options everywhere so one connection config serves both.
 */
export function createRedis(url: string, options: { connectionName?: string } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
  });
}
