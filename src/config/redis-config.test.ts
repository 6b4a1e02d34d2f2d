/**
 * The `redis` section's three forms (one Redis, Redis Cluster, Redis Sentinel): what loads, what
 * each mistake is reported as (by path), and that no password reaches `check-config`-style output
 * or logs.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, parseConfig } from './load.js';
import {
  describeRedis,
  PINO_REDACT_PATHS,
  REDACTED,
  redactedConfig,
  secretValues,
} from './redact.js';
import type { Config } from './schema.js';

function yamlWith(redis: unknown): string {
  return stringify({
    upstream: { baseUrl: 'http://127.0.0.1:4010' },
    redis,
    channels: {},
    subscriptions: [],
  });
}

function load(redis: unknown, env: Record<string, string> = {}): Config {
  return parseConfig(yamlWith(redis), env);
}

function issues(
  redis: unknown,
  env: Record<string, string> = {},
): { path: string; message: string }[] {
  try {
    load(redis, env);
  } catch (err) {
    if (err instanceof ConfigError)
      return err.issues.map(({ path, message }) => ({ path, message }));
    throw err;
  }
  throw new Error('the config loaded');
}

const PASSWORD = 'cluster-Pa55-word';
const SENTINEL_PASSWORD = 'sentinel-Pa55-word';

describe('redis: one Redis (url)', () => {
  it('is unchanged: url and prefix, nothing else in the result', () => {
    expect(load({ url: 'redis://h:6379/2', prefix: 'p' }).redis).toEqual({
      url: 'redis://h:6379/2',
      prefix: 'p',
    });
    expect(load({ url: 'rediss://h:6380' }).redis).toEqual({
      url: 'rediss://h:6380',
      prefix: 'statuswatch',
    });
  });

  it('rejects the keys of the other forms, naming each', () => {
    expect(issues({ url: 'redis://h:6379', name: 'm', sentinelPassword: 'x' })).toEqual([
      { path: 'redis.name', message: 'only with sentinels' },
      { path: 'redis.sentinelPassword', message: 'only with sentinels' },
    ]);
    expect(issues({ url: 'redis://h:6379', password: 'x' })).toEqual([
      { path: 'redis.password', message: 'only with cluster or sentinels' },
    ]);
  });
});

describe('redis: cluster', () => {
  it('takes seed URLs or host:port, with credentials in the fields or the URLs', () => {
    expect(
      load({
        cluster: ['redis://10.0.0.1:7000', '10.0.0.2:7001', 'redis://[::1]:7002'],
        prefix: 'sw',
        username: 'app',
        password: PASSWORD,
      }).redis,
    ).toEqual({
      cluster: ['redis://10.0.0.1:7000', '10.0.0.2:7001', 'redis://[::1]:7002'],
      prefix: 'sw',
      username: 'app',
      password: PASSWORD,
    });
    expect(
      load({ cluster: [`redis://app:${PASSWORD}@a:7000`, `redis://app:${PASSWORD}@b:7000`] }).redis,
    ).toEqual({
      cluster: [`redis://app:${PASSWORD}@a:7000`, `redis://app:${PASSWORD}@b:7000`],
      prefix: 'statuswatch',
    });
  });

  it('takes a comma-separated string (from one ${VAR})', () => {
    expect(
      load({ cluster: '${SEEDS}' }, { SEEDS: 'redis://a:7000, redis://b:7001,' }).redis,
    ).toEqual({ cluster: ['redis://a:7000', 'redis://b:7001'], prefix: 'statuswatch' });
  });

  it('reports each bad seed, an empty list, a database and mixed TLS by path', () => {
    expect(issues({ cluster: [] })).toEqual([
      { path: 'redis.cluster', message: 'expected at least one address' },
    ]);
    expect(issues({ cluster: ['redis://a:7000', 'http://b:7000', 'b', 7] })).toEqual([
      { path: 'redis.cluster[1]', message: 'expected a redis:// or rediss:// URL or host:port' },
      { path: 'redis.cluster[2]', message: 'expected a redis:// or rediss:// URL or host:port' },
      { path: 'redis.cluster[3]', message: 'expected a redis:// or rediss:// URL or host:port' },
    ]);
    expect(issues({ cluster: ['redis://a:7000/1', 'rediss://b:7000'] })).toEqual([
      { path: 'redis.cluster[0]', message: 'a Redis Cluster has database 0 only' },
      { path: 'redis.cluster[1]', message: 'every seed uses redis:// or every seed rediss://' },
    ]);
    expect(issues({ cluster: 'redis://a:7000', name: 'm' })).toEqual([
      { path: 'redis.name', message: 'only with sentinels' },
    ]);
  });

  it('rejects two sets of credentials', () => {
    expect(
      issues({ cluster: ['redis://:one@a:7000', 'redis://:two@b:7000'] }).map((i) => i.path),
    ).toEqual(['redis.cluster']);
    expect(
      issues({ cluster: ['redis://:one@a:7000'], password: 'two' }).map((i) => i.path),
    ).toEqual(['redis.cluster']);
  });
});

describe('redis: sentinels', () => {
  it('takes host:port or redis:// addresses, the master name and both passwords', () => {
    expect(
      load({
        sentinels: ['10.0.0.1:26379', 'redis://s2:26380', 'redis://s3'],
        name: 'mymaster',
        password: PASSWORD,
        sentinelPassword: SENTINEL_PASSWORD,
      }).redis,
    ).toEqual({
      sentinels: ['10.0.0.1:26379', 'redis://s2:26380', 'redis://s3'],
      name: 'mymaster',
      prefix: 'statuswatch',
      password: PASSWORD,
      sentinelPassword: SENTINEL_PASSWORD,
    });
  });

  it('an empty ${VAR:-} password is no password', () => {
    expect(load({ sentinels: ['s:26379'], name: 'm', password: '${P:-}' }).redis).toEqual({
      sentinels: ['s:26379'],
      name: 'm',
      prefix: 'statuswatch',
    });
  });

  it('reports a missing name, credentials or TLS in an address, and a cluster key, by path', () => {
    expect(issues({ sentinels: ['s:26379'] })).toEqual([
      {
        path: 'redis.name',
        message: 'required with sentinels: the master name the sentinels monitor',
      },
    ]);
    expect(
      issues({
        sentinels: ['redis://:pw@s1:26379', 'rediss://s2:26379', 's3'],
        name: 'm',
        username: 'u',
      }),
    ).toEqual([
      {
        path: 'redis.sentinels[0]',
        message:
          'no credentials in a sentinel address: use sentinelPassword (and password for the master)',
      },
      { path: 'redis.sentinels[1]', message: 'rediss:// (TLS) to sentinels is not supported' },
      { path: 'redis.sentinels[2]', message: 'expected host:port or a redis:// URL' },
      { path: 'redis.username', message: 'only with cluster' },
    ]);
    expect(issues({ sentinels: 7, name: 'm' })).toEqual([
      { path: 'redis.sentinels', message: 'expected a list of addresses' },
    ]);
  });
});

describe('redis: the form itself', () => {
  it('one of url, cluster or sentinels is required, and only one', () => {
    expect(issues({ prefix: 'p' })).toEqual([
      {
        path: 'redis.url',
        message:
          'required: set url (one Redis), cluster (Redis Cluster seed nodes) or sentinels and name (Redis Sentinel)',
      },
    ]);
    expect(issues({ url: 'redis://h:1', cluster: ['h:2'], sentinels: ['h:3'], name: 'm' })).toEqual(
      [
        { path: 'redis.cluster', message: 'use one of url, cluster or sentinels (url is set)' },
        { path: 'redis.sentinels', message: 'use one of url, cluster or sentinels (url is set)' },
        { path: 'redis.name', message: 'only with sentinels' },
      ],
    );
    expect(issues({ url: 'redis://h:1', replicas: ['x'] })).toEqual([
      {
        path: 'redis.replicas',
        message:
          'unknown key (expected one of: url, cluster, sentinels, name, username, password, sentinelPassword, prefix)',
      },
    ]);
  });
});

describe('redis secrets', () => {
  const cluster = () =>
    load({
      cluster: [`redis://app:${PASSWORD}@a:7000`, 'b:7001'],
      username: 'app',
      prefix: 'sw',
    });
  const sentinel = () =>
    load({
      sentinels: ['s1:26379', 'redis://s2:26379'],
      name: 'mymaster',
      password: PASSWORD,
      sentinelPassword: SENTINEL_PASSWORD,
    });

  it('secretValues has every password; redactedConfig and describeRedis show none', () => {
    for (const config of [cluster(), sentinel()]) {
      const secrets = secretValues(config);
      expect(secrets).toContain(PASSWORD);
      const shown = JSON.stringify(redactedConfig(config)) + describeRedis(config.redis);
      for (const secret of [PASSWORD, SENTINEL_PASSWORD]) expect(shown).not.toContain(secret);
    }
    expect(secretValues(sentinel())).toContain(SENTINEL_PASSWORD);
    expect(redactedConfig(sentinel()).redis).toEqual({
      sentinels: ['s1:26379', 'redis://s2:26379'],
      name: 'mymaster',
      prefix: 'statuswatch',
      password: REDACTED,
      sentinelPassword: REDACTED,
    });
    expect(redactedConfig(cluster()).redis).toEqual({
      cluster: [`redis://app:${REDACTED}@a:7000`, 'b:7001'],
      username: 'app',
      prefix: 'sw',
    });
  });

  it('describeRedis names the topology', () => {
    expect(describeRedis(load({ url: `redis://:${PASSWORD}@h:6379/1` }).redis)).toBe(
      `redis redis://:${REDACTED}@h:6379/1 (one Redis)`,
    );
    expect(describeRedis(cluster().redis)).toBe(
      `redis cluster redis://app:${REDACTED}@a:7000, b:7001 (2 seeds, username app, password set)`,
    );
    expect(describeRedis(sentinel().redis)).toBe(
      'redis sentinel master "mymaster" via s1:26379, redis://s2:26379 (2 sentinels, password set, sentinel password set)',
    );
  });

  it('a config logged whole carries no Redis password', () => {
    const lines: string[] = [];
    const logger = pino(
      { redact: { paths: PINO_REDACT_PATHS, censor: REDACTED } },
      { write: (line: string) => lines.push(line) },
    );
    for (const config of [cluster(), sentinel()]) {
      logger.info({ config }, 'loaded');
      logger.info(config, 'at the root');
    }
    const text = lines.join('\n');
    for (const secret of [PASSWORD, SENTINEL_PASSWORD]) expect(text).not.toContain(secret);
    expect(text).toContain('mymaster');
  });
});
