import { parseConfig } from '../config/load.js';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createRedis } from '../redis.js';
import { parseSections } from './args.js';
import { parseChildReply, parseChildRequest, sinkKeysOf } from './child-protocol.js';
import { BenchError } from './errors.js';
import {
  ClientCommandCounter,
  REDIS_URL,
  benchConfigYaml,
  median,
  metricSamples,
  metricSum,
  percentile,
  ratio,
  SHIPPED_FLAGS,
  threadBusySeconds,
  threadHeaps,
  benchThreadSettings,
} from './support.js';

describe('median and percentile', () => {
  it.each([
    [[3, 1, 2], 2],
    [[4, 1, 3, 2], 2.5],
    [[7], 7],
  ])('median(%j) = %d', (values, expected) => {
    expect(median(values)).toBe(expected);
  });

  it('median of nothing is NaN', () => {
    expect(median([])).toBeNaN();
  });

  it('uses the nearest rank', () => {
    const values = Array.from({ length: 20 }, (_, i) => 20 - i); // 20..1, unsorted
    expect(percentile(values, 50)).toBe(10);
    expect(percentile(values, 90)).toBe(18);
    expect(percentile(values, 99)).toBe(20);
    expect(percentile(values, 0)).toBe(1);
  });

  it('formats ratios and refuses a zero baseline', () => {
    expect(ratio(3, 2)).toBe('1.50x');
    expect(ratio(3, 0)).toBe('n/a');
  });
});

describe('parseSections', () => {
  it('defaults to every section', () => {
    expect(parseSections([])).toEqual(['cycle', 'fanout', 'latency', 'memory', 'storm']);
  });

  it('accepts --only lists in both spellings, deduplicated, in the given order', () => {
    expect(parseSections(['--only', 'latency,cycle'])).toEqual(['latency', 'cycle']);
    expect(parseSections(['--only=fanout', '--only', 'fanout'])).toEqual(['fanout']);
  });

  it('rejects unknown sections and arguments with a usage error', () => {
    expect(() => parseSections(['--only', 'cycles'])).toThrow(BenchError);
    expect(() => parseSections(['--fast'])).toThrow(/unknown argument --fast/);
  });
});

describe('child protocol', () => {
  it('parses requests and rejects malformed ones', () => {
    expect(parseChildRequest({ op: 'change', id: 3, kind: 'status' })).toEqual({
      op: 'change',
      id: 3,
      kind: 'status',
    });
    expect(parseChildRequest({ op: 'prepare', id: 1, kind: 'incidents', fraction: 0.01 })).toEqual({
      op: 'prepare',
      id: 1,
      kind: 'incidents',
      fraction: 0.01,
    });
    expect(parseChildRequest({ op: 'change', id: 3, kind: 'sla' })).toBeNull();
    expect(parseChildRequest({ op: 'entries', id: 4, from: 10 })).toEqual({
      op: 'entries',
      id: 4,
      from: 10,
    });
    expect(parseChildRequest({ op: 'entries', id: 4, from: -1 })).toBeNull();
    expect(parseChildRequest({ op: 'count', id: 5 })).toEqual({ op: 'count', id: 5 });
    expect(parseChildRequest({ op: 'count', id: 5, path: '/api/v1/incidents' })).toEqual({
      op: 'count',
      id: 5,
      path: '/api/v1/incidents',
    });
    expect(parseChildRequest({ op: 'count', id: 5, path: 7 })).toEqual({ op: 'count', id: 5 });
    expect(parseChildRequest({ op: 'count' })).toBeNull();
    expect(parseChildRequest('close')).toBeNull();
  });

  it('parses replies', () => {
    expect(parseChildReply({ op: 'ready', url: 'http://127.0.0.1:1' })).toEqual({
      op: 'ready',
      url: 'http://127.0.0.1:1',
    });
    expect(parseChildReply({ op: 'ok', id: 2, count: 20 })).toEqual({ op: 'ok', id: 2, count: 20 });
    expect(parseChildReply({ op: 'error', id: 2, message: 'boom' })).toEqual({
      op: 'error',
      id: 2,
      message: 'boom',
    });
    expect(parseChildReply({ op: 'ok', id: 2 })).toBeNull();
    const entry = { at: 1.5, webhookId: 'msg_1', keys: ['inc-1'] };
    expect(parseChildReply({ op: 'entries', id: 3, entries: [entry] })).toEqual({
      op: 'entries',
      id: 3,
      entries: [entry],
    });
    expect(parseChildReply({ op: 'entries', id: 3, entries: [{ at: 1 }] })).toBeNull();
  });

  it('reads the ids a webhook body is about, and nothing from garbage', () => {
    const event = { type: 'incident.opened', data: { incident: { id: 'inc-1' } } };
    expect(sinkKeysOf(JSON.stringify(event))).toEqual(['inc-1']);
    const batch = {
      type: 'batch',
      data: { events: [{ incident: { id: 'a' } }, { incident: null }, { incident: { id: 'b' } }] },
    };
    expect(sinkKeysOf(JSON.stringify(batch))).toEqual(['a', 'b']);
    const alertmanager = {
      alerts: [{ labels: { storm_id: 'am-1' } }, { labels: { alertname: 'x' } }],
    };
    expect(sinkKeysOf(JSON.stringify(alertmanager))).toEqual(['am-1']);
    expect(sinkKeysOf('not json')).toEqual([]);
    expect(sinkKeysOf('[1]')).toEqual([]);
  });
});

describe('ClientCommandCounter (real Redis)', () => {
  it('counts commands, and a pipeline as one round trip', async () => {
    const redis = createRedis(REDIS_URL);
    const key = `{swbench-test-${randomBytes(4).toString('hex')}}:k`;
    try {
      await redis.ping();
      const counter = new ClientCommandCounter(redis);
      await redis.set(key, '1');
      await redis.get(key);
      expect([counter.commands, counter.roundTrips]).toEqual([2, 2]);
      counter.reset();
      await redis.pipeline().incr(key).incr(key).incr(key).exec();
      expect([counter.commands, counter.roundTrips]).toEqual([3, 1]);
      expect(await redis.get(key)).toBe('4');
    } finally {
      await redis.del(key);
      await redis.quit();
    }
  });
});

describe('benchConfigYaml', () => {
  const env = {
    SIM_URL: 'http://127.0.0.1:1',
    REDIS_URL: 'redis://127.0.0.1:6379',
    PREFIX: 'swbench-test',
    SINK_URL: 'http://127.0.0.1:2/hook',
    SINK_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
  };

  it('is a valid daemon config with the events and confirmations asked for', () => {
    const config = parseConfig(
      benchConfigYaml(['incident.opened', 'status.changed'], 1),
      env,
      'bench',
    );
    expect(config.subscriptions.map((s) => [s.name, s.events, s.channels])).toEqual([
      ['bench', ['incident.opened', 'status.changed'], ['sink']],
    ]);
    expect(config.rules.statusConfirmations).toBe(1);
    expect(config.channels.sink).toMatchObject({ type: 'webhook', url: env.SINK_URL });
  });

  it('polls and serves on what it is asked', () => {
    const config = parseConfig(
      benchConfigYaml(['incident.opened'], undefined, { poll: '1s', port: 18080 }),
      env,
      'bench',
    );
    expect([config.poll.status, config.poll.incidents, config.server.port]).toEqual([
      1000, 1000, 18080,
    ]);
    const defaults = parseConfig(benchConfigYaml(['incident.opened']), env, 'bench');
    expect([defaults.poll.status, defaults.server.port]).toEqual([2000, 0]);
  });

  it('gives the daemon the simulator key and polls SLA and scores only when asked', () => {
    const withKey = { ...env, SIM_KEY: 'swbench-key-1' };
    const premium = parseConfig(
      benchConfigYaml(['incident.opened'], undefined, { poll: '5s', premium: '10s' }),
      withKey,
      'bench',
    );
    expect(premium.upstream.apiKey).toBe('swbench-key-1');
    expect([premium.poll.status, premium.poll.sla, premium.poll.scores]).toEqual([
      5000, 10_000, 10_000,
    ]);
    const plain = parseConfig(benchConfigYaml(['incident.opened']), env, 'bench');
    expect(plain.upstream.apiKey).toBeUndefined();
  });

  it('leaves the confirmations at their default when not asked', () => {
    const asked = parseConfig(benchConfigYaml(['incident.opened'], 3), env, 'bench');
    const unasked = parseConfig(benchConfigYaml(['incident.opened']), env, 'bench');
    expect(asked.rules.statusConfirmations).toBe(3);
    expect(unasked.rules.statusConfirmations).not.toBe(3);
  });
});

describe('SHIPPED_FLAGS', () => {
  it("are the Node.js flags of the Docker image's ENTRYPOINT", () => {
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    const line = dockerfile.split('\n').find((l) => l.startsWith('ENTRYPOINT '));
    expect(JSON.parse(line?.slice('ENTRYPOINT '.length) ?? 'null')).toEqual([
      'node',
      ...SHIPPED_FLAGS,
      'dist/cli.js',
    ]);
  });
});

describe('metrics text', () => {
  const text = [
    '# HELP statuswatch_thread_busy_seconds_total Event-loop busy time.',
    '# TYPE statuswatch_thread_busy_seconds_total counter',
    'statuswatch_thread_busy_seconds_total{thread="main"} 1.5',
    'statuswatch_thread_busy_seconds_total{thread="upstream"} 0.25',
    'statuswatch_thread_busy_seconds_total{thread="deliver-1"} 2',
    'statuswatch_thread_busy_seconds_total_extra{thread="main"} 99',
    'statuswatch_polls_total{kind="sla",outcome="ok"} 3',
    'statuswatch_polls_total{kind="sla",outcome="error"} 1',
    'statuswatch_polls_total{kind="scores",outcome="ok"} 4',
    'statuswatch_up 1',
  ].join('\n');

  it('reads the samples of one metric with their labels, and no other metric', () => {
    expect(metricSamples(text, 'statuswatch_up')).toEqual([{ labels: {}, value: 1 }]);
    expect(metricSamples(text, 'statuswatch_polls_total')).toHaveLength(3);
    expect(metricSum(text, 'statuswatch_polls_total', { kind: 'sla', outcome: 'ok' })).toBe(3);
    expect(metricSum(text, 'statuswatch_polls_total', { outcome: 'ok' })).toBe(7);
    expect(metricSum(text, 'statuswatch_missing')).toBe(0);
  });

  it('gives each thread its busy seconds', () => {
    expect([...threadBusySeconds(text)]).toEqual([
      ['main', 1.5],
      ['upstream', 0.25],
      ['deliver-1', 2],
    ]);
  });

  it('gives each thread its heap in MB, used and committed', () => {
    const heaps = [
      'statuswatch_thread_heap_bytes{thread="main",state="used"} 30000000',
      'statuswatch_thread_heap_bytes{thread="main",state="committed"} 45000000',
      'statuswatch_thread_heap_bytes{thread="upstream",state="used"} 60000000',
      'statuswatch_thread_heap_bytes{thread="upstream",state="committed"} 70000000',
    ].join('\n');
    expect([...threadHeaps(heaps)]).toEqual([
      ['main', { used: 30, committed: 45 }],
      ['upstream', { used: 60, committed: 70 }],
    ]);
    expect(threadHeaps(text).size).toBe(0);
  });
});

describe('benchThreadSettings', () => {
  it('runs the daemon as the image does when unset, else once per value', () => {
    expect(benchThreadSettings(undefined)).toEqual([null]);
    expect(benchThreadSettings(' ')).toEqual([null]);
    expect(benchThreadSettings('auto, 1,auto')).toEqual(['auto', '1']);
    expect(() => benchThreadSettings('0')).toThrow(BenchError);
    expect(() => benchThreadSettings('many')).toThrow(/STATUSWATCH_BENCH_THREADS/);
  });
});

describe('the bench build (tsconfig.bench.json)', () => {
  it('compiles every module its modules load by URL (worker and child entries)', async () => {
    // A worker thread's or forked child's entry is loaded by `new URL('./x.js', import.meta.url)`,
    // not imported: tsc does not follow it, so the bench build must name it or the daemon it
    // runs cannot start its threads.
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const tsc = resolve(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [tsc, '-p', 'tsconfig.bench.json', '--listFilesOnly'],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    const compiled = new Set(
      stdout
        .split('\n')
        .map((line) => relative(root, line.trim()).split(sep).join('/'))
        .filter((file) => file.startsWith('src/')),
    );
    const loaded: string[] = [];
    for (const file of compiled) {
      const text = readFileSync(resolve(root, file), 'utf8');
      for (const m of text.matchAll(/new URL\('(\.{1,2}\/[^']+)\.js', import\.meta\.url\)/g))
        if (m[1] !== undefined)
          loaded.push(
            relative(root, resolve(root, dirname(file), `${m[1]}.ts`))
              .split(sep)
              .join('/'),
          );
    }
    expect(loaded).toContain('src/runtime/thread.ts');
    expect(loaded.filter((file) => !compiled.has(file))).toEqual([]);
  }, 120_000);
});
