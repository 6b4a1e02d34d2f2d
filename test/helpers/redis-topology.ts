/**
 * Local Redis topologies for the Cluster and Sentinel suites, from Debian's `redis-server` alone
 * (no redis-cli needed): a cluster of primaries with replicas (slots assigned and nodes joined
 * with CLUSTER ADDSLOTSRANGE / MEET / REPLICATE), and a primary, a replica and sentinels
 * (`redis-server <file> --sentinel`). Loopback ports chosen free, one temporary directory per
 * topology; `stop()` ends every process and removes the directory, and a test run that dies
 * without it still SIGKILLs them on exit. Waits are readiness checks, never fixed sleeps.
 *
 * Also the pieces the two suites share with the daemon: a Standard Webhooks receiver that counts
 * deliveries by webhook-id, and the config the daemon runs with.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { listen, readBody, verifyDelivery } from '../../src/demo/sinks.js';
import { findOnPath, redisAnswers } from './global-setup.js';
import { freePort } from './process.js';
import { waitFor } from './wait.js';

const HOST = '127.0.0.1';

/** `redis-server` on PATH, or null (the suites skip, saying so). */
export function redisServerBinary(): Promise<string | null> {
  return findOnPath('redis-server');
}

export const NO_REDIS_SERVER =
  'redis-server is not on PATH: skipped (install Debian/Ubuntu package redis-server; CI does)';

// ---------------------------------------------------------------------------------------------
// Processes

interface RedisProcess {
  readonly port: number;
  output(): string;
  /** SIGTERM, SIGKILL after 3 s; resolves once it has exited. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Spawns `redis-server ...args` and waits until it answers on `port`. */
async function spawnRedis(binary: string, args: string[], port: number): Promise<RedisProcess> {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
  const state = { exited: false };
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      state.exited = true;
      running.delete(child);
      resolve();
    });
    child.once('error', (err) => {
      output += err.message;
      state.exited = true;
      running.delete(child);
      resolve();
    });
  });
  const handle: RedisProcess = {
    port,
    output: () => output,
    async stop() {
      if (state.exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitFor(
      async () => {
        if (state.exited) throw new Error(`redis-server on ${port} exited: ${output.trim()}`);
        return redisAnswers(HOST, port, 250);
      },
      { timeoutMs: 10_000, intervalMs: 25, what: `redis-server on port ${port}` },
    );
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}

const PORT_ATTEMPTS = 5;

/**
 * Spawns `redis-server` on `count` ports picked free (the first is the one it answers on). A
 * port can be taken between the pick and redis-server's bind — by another suite, or as the local
 * port of any outgoing connection — so a start that failed with "Address already in use" picks
 * new ports and tries again, up to 5 times.
 */
async function spawnOnFreePorts(
  binary: string,
  count: number,
  args: (ports: number[]) => Promise<string[]> | string[],
): Promise<{ node: RedisProcess; ports: number[] }> {
  for (let attempt = 1; ; attempt += 1) {
    const ports: number[] = [];
    while (ports.length < count) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    try {
      const node = await spawnRedis(binary, await args(ports), ports[0] ?? 0);
      return { node, ports };
    } catch (err) {
      const taken = err instanceof Error && /address already in use/i.test(err.message);
      if (!taken || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}

/** Runs `fn` with a short-lived plain connection to one node. */
async function onNode<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(port, HOST, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

const field = (info: string, name: string): string | undefined =>
  new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();

const NO_PERSISTENCE = ['--save', '', '--appendonly', 'no', '--daemonize', 'no'];

// ---------------------------------------------------------------------------------------------
// Redis Cluster

export interface LocalCluster {
  /** `redis://127.0.0.1:PORT` of every node (the config's seeds). */
  readonly seeds: string[];
  readonly primaryPorts: number[];
  readonly replicaPorts: number[];
  /**
   * CLUSTER FAILOVER (the graceful, manual kind: the replica catches up first) on a replica of
   * the primary that owns `key`'s slot; resolves once that replica is the slot's primary in
   * every node's view. Returns the old and the new primary's ports.
   */
  failover(key: string): Promise<{ from: number; to: number }>;
  /** Every process ended, the directory removed. */
  stop(): Promise<void>;
}

/** The primary and replica ports of the slot `slot`, as node `port` sees it (CLUSTER SLOTS). */
async function slotOwners(port: number, slot: number): Promise<number[]> {
  const ranges = (await onNode(port, (r) => r.call('CLUSTER', 'SLOTS'))) as unknown[][];
  for (const range of ranges) {
    const [start, end, ...nodes] = range as [number, number, ...[string, number, string][]];
    if (slot >= start && slot <= end) return nodes.map((n) => n[1]);
  }
  return [];
}

/**
 * A cluster of `primaries` primaries (16384 slots split evenly) with `replicasPerPrimary`
 * replicas each, all on loopback; resolves once every node reports `cluster_state:ok`, knows
 * every other node and each replica's link to its primary is up.
 */
export async function startCluster(
  binary: string,
  o: { primaries?: number; replicasPerPrimary?: number } = {},
): Promise<LocalCluster> {
  const primaries = o.primaries ?? 3;
  const perPrimary = o.replicasPerPrimary ?? 1;
  const dir = await mkdtemp(join(tmpdir(), 'statuswatch-cluster-'));
  const nodes: RedisProcess[] = [];
  const busPorts: number[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const total = primaries * (1 + perPrimary);
    for (let i = 0; i < total; i += 1) {
      const { node, ports } = await spawnOnFreePorts(binary, 2, ([p, bus]) => [
        '--port',
        String(p),
        '--bind',
        HOST,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${p}.conf`,
        '--cluster-port',
        String(bus),
        '--cluster-node-timeout',
        '3000',
        '--dir',
        dir,
        '--loglevel',
        'warning',
        ...NO_PERSISTENCE,
      ]);
      busPorts.push(ports[1] ?? 0);
      nodes.push(node);
    }
    const ports = nodes.map((n) => n.port);
    const primaryPorts = ports.slice(0, primaries);
    const replicaPorts = ports.slice(primaries);
    const ids = await Promise.all(ports.map((p) => onNode(p, (r) => r.cluster('MYID'))));
    await Promise.all(ports.map((p, i) => onNode(p, (r) => r.cluster('SET-CONFIG-EPOCH', i + 1))));
    const SLOTS = 16384;
    await Promise.all(
      primaryPorts.map((p, i) =>
        onNode(p, (r) =>
          r.call(
            'CLUSTER',
            'ADDSLOTSRANGE',
            Math.floor((i * SLOTS) / primaries),
            Math.floor(((i + 1) * SLOTS) / primaries) - 1,
          ),
        ),
      ),
    );
    await onNode(ports[0] ?? 0, async (r) => {
      for (const [i, p] of ports.entries())
        if (i > 0) await r.call('CLUSTER', 'MEET', HOST, p, busPorts[i] ?? p + 10_000);
    });
    // Everyone knows everyone (no handshake left) before a replica may name its primary.
    await waitFor(
      async () => {
        const views = await Promise.all(
          ports.map((p) => onNode(p, async (r) => String(await r.call('CLUSTER', 'NODES')))),
        );
        return views.every((v) => {
          const lines = v.trim().split('\n');
          return lines.length === total && !/handshake|noaddr/.test(v);
        });
      },
      { timeoutMs: 15_000, intervalMs: 50, what: 'every cluster node to know every other' },
    );
    await Promise.all(
      replicaPorts.map((p, i) =>
        onNode(p, (r) => r.cluster('REPLICATE', ids[i % primaries] ?? '')),
      ),
    );
    await waitFor(
      async () => {
        const ok = await Promise.all(
          ports.map((p) =>
            onNode(p, async (r) => {
              const info = await r.cluster('INFO');
              if (field(info, 'cluster_state') !== 'ok') return false;
              if (!replicaPorts.includes(p)) return true;
              return field(await r.info('replication'), 'master_link_status') === 'up';
            }),
          ),
        );
        // Every node sees the replicas as replicas: CLUSTER SLOTS then lists them.
        const views = await Promise.all(
          ports.map((p) => onNode(p, async (r) => String(await r.call('CLUSTER', 'NODES')))),
        );
        const replicasSeen = views.every(
          (v) => (v.match(/\bslave\b/g) ?? []).length === replicaPorts.length,
        );
        return ok.every(Boolean) && replicasSeen;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'cluster_state:ok and replicas in sync' },
    );
    return {
      seeds: ports.map((p) => `redis://${HOST}:${p}`),
      primaryPorts,
      replicaPorts,
      async failover(key) {
        const slot = await onNode(ports[0] ?? 0, (r) => r.cluster('KEYSLOT', key));
        const [from, to] = await slotOwners(ports[0] ?? 0, slot);
        if (from === undefined || to === undefined)
          throw new Error(`slot ${String(slot)} has no primary with a replica`);
        await onNode(to, (r) => r.call('CLUSTER', 'FAILOVER'));
        await waitFor(
          async () => {
            const views = await Promise.all(ports.map((p) => slotOwners(p, slot)));
            return views.every((owners) => owners[0] === to);
          },
          { timeoutMs: 20_000, intervalMs: 50, what: `the replica on ${String(to)} to take over` },
        );
        return { from, to };
      },
      stop,
    };
  } catch (err) {
    const logs = nodes.map((n) => `${n.port}: ${n.output().trim()}`).join('\n');
    await stop();
    throw new Error(`could not start a local Redis Cluster: ${String(err)}\n${logs}`, {
      cause: err,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Redis Sentinel

export interface LocalSentinels {
  readonly name: string;
  /** `127.0.0.1:PORT` of every sentinel (the config's `sentinels`). */
  readonly sentinels: string[];
  /** The port of the master the sentinels name now (asked of the first sentinel). */
  masterPort(): Promise<number>;
  /** SENTINEL FAILOVER: resolves once a sentinel has accepted it (the failover has started). */
  startFailover(): Promise<{ from: number; to: number }>;
  /**
   * Waits until every sentinel names `to` as the master and `to` says so itself. (The old
   * master is turned into its replica some seconds later; it refuses writes meanwhile.)
   */
  failedOver(to: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A primary, a replica of it and `sentinels` sentinels monitoring them as `name` (quorum 2),
 * all on loopback. The primary accepts writes only while its replica is attached
 * (`min-replicas-to-write 1`): during a failover the old primary then refuses the writes that
 * would otherwise be lost when it becomes a replica. Resolves once every sentinel knows the
 * replica and the other sentinels.
 */
export async function startSentinels(
  binary: string,
  o: { name?: string; sentinels?: number } = {},
): Promise<LocalSentinels> {
  const name = o.name ?? 'swmaster';
  const count = o.sentinels ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'statuswatch-sentinel-'));
  const processes: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    // Sentinels first: they would otherwise react to the data nodes going away.
    await Promise.all(processes.slice(2).map((p) => p.stop()));
    await Promise.all(processes.slice(0, 2).map((p) => p.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  const dataNode = async (extra: string[]): Promise<RedisProcess> =>
    (
      await spawnOnFreePorts(binary, 1, ([port]) => [
        '--port',
        String(port),
        '--bind',
        HOST,
        '--dir',
        dir,
        '--dbfilename',
        `dump-${port}.rdb`,
        '--loglevel',
        'warning',
        ...NO_PERSISTENCE,
        ...extra,
      ])
    ).node;
  try {
    const primary = await dataNode([
      '--min-replicas-to-write',
      '1',
      '--min-replicas-max-lag',
      '10',
    ]);
    processes.push(primary);
    const primaryPort = primary.port;
    const replica = await dataNode(['--replicaof', HOST, String(primaryPort)]);
    processes.push(replica);
    const replicaPort = replica.port;
    await waitFor(
      () =>
        onNode(
          replicaPort,
          async (r) => field(await r.info('replication'), 'master_link_status') === 'up',
        ),
      { timeoutMs: 10_000, intervalMs: 50, what: 'the replica in sync' },
    );
    const sentinelPorts: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const { node } = await spawnOnFreePorts(binary, 1, async ([port]) => {
        const file = join(dir, `sentinel-${port}.conf`);
        await writeFile(
          file,
          [
            `port ${port}`,
            `bind ${HOST}`,
            `dir ${dir}`,
            `sentinel monitor ${name} ${HOST} ${primaryPort} 2`,
            `sentinel down-after-milliseconds ${name} 2000`,
            `sentinel failover-timeout ${name} 10000`,
            `sentinel parallel-syncs ${name} 1`,
            '',
          ].join('\n'),
        );
        return [file, '--sentinel', '--loglevel', 'warning'];
      });
      processes.push(node);
      sentinelPorts.push(node.port);
    }
    const sentinelCall = (port: number, ...args: (string | number)[]) =>
      onNode(port, (r) => r.call('SENTINEL', ...args));
    await waitFor(
      async () => {
        for (const port of sentinelPorts) {
          const replicas = (await sentinelCall(port, 'REPLICAS', name)) as string[][];
          const known = replicas.some((flat) => {
            const entry = new Map<string, string>();
            for (let i = 0; i + 1 < flat.length; i += 2)
              entry.set(flat[i] ?? '', flat[i + 1] ?? '');
            return entry.get('port') === String(replicaPort) && entry.get('flags') === 'slave';
          });
          const others = (await sentinelCall(port, 'SENTINELS', name)) as unknown[];
          if (!known || others.length < count - 1) return false;
        }
        return true;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        what: 'every sentinel to know the replica and the others',
      },
    );
    const masterPort = async (): Promise<number> => {
      const addr = (await sentinelCall(sentinelPorts[0] ?? 0, 'GET-MASTER-ADDR-BY-NAME', name)) as [
        string,
        string,
      ];
      return Number(addr[1]);
    };
    return {
      name,
      sentinels: sentinelPorts.map((p) => `${HOST}:${p}`),
      masterPort,
      async startFailover() {
        const from = await masterPort();
        const to = from === primaryPort ? replicaPort : primaryPort;
        await sentinelCall(sentinelPorts[0] ?? 0, 'FAILOVER', name);
        return { from, to };
      },
      async failedOver(to) {
        await waitFor(
          async () => {
            for (const port of sentinelPorts) {
              const addr = (await sentinelCall(port, 'GET-MASTER-ADDR-BY-NAME', name)) as string[];
              if (addr[1] !== String(to)) return false;
            }
            return field(await onNode(to, (r) => r.info('replication')), 'role') === 'master';
          },
          { timeoutMs: 20_000, intervalMs: 50, what: `the sentinels to name ${to} the master` },
        );
      },
      stop,
    };
  } catch (err) {
    const logs = processes.map((p) => `${p.port}: ${p.output().trim()}`).join('\n');
    await stop();
    throw new Error(`could not start Redis Sentinel: ${String(err)}\n${logs}`, { cause: err });
  }
}

// ---------------------------------------------------------------------------------------------
// The daemon's side: a webhook receiver and its config

export const WEBHOOK_SECRET = `whsec_${Buffer.from('topology-WEBHOOKSECRET-0123456789').toString('base64')}`;

export interface Hit {
  /** webhook-id: `<transition id>:<subscription>:<channel>`. */
  id: string;
  type: string;
  feedId: string;
  verified: boolean;
  /** The 200 was written completely. */
  answered: boolean;
}

export interface Receiver {
  /** `http://127.0.0.1:PORT/hook/`; append a channel name. */
  base: string;
  hits: Hit[];
  /** How long each answer is held. */
  delayMs: number;
  /** Answered hits. */
  delivered(): Hit[];
  /** webhook-ids answered more than once. */
  duplicates(): string[];
  close(): Promise<void>;
}

/** A Standard Webhooks receiver (verified with the official library) answering 200 after `delayMs`. */
export async function webhookReceiver(): Promise<Receiver> {
  const wh = new Webhook(WEBHOOK_SECRET);
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const { headers, verified } = verifyDelivery(wh, body, req.headers);
      const parsed = JSON.parse(body) as { type: string; data: { service: { feedId: string } } };
      const hit: Hit = {
        id: headers['webhook-id'] ?? '',
        type: parsed.type,
        feedId: parsed.data.service.feedId,
        verified,
        answered: false,
      };
      receiver.hits.push(hit);
      res.on('finish', () => {
        hit.answered = true;
      });
      const answer = (): void => {
        if (!res.destroyed) res.writeHead(verified ? 200 : 400).end();
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  const receiver: Receiver = {
    base: '',
    hits: [],
    delayMs: 0,
    delivered: () => receiver.hits.filter((h) => h.answered),
    duplicates() {
      const seen = new Map<string, number>();
      for (const h of receiver.delivered()) seen.set(h.id, (seen.get(h.id) ?? 0) + 1);
      return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
  receiver.base = `${await listen(server)}/hook/`;
  return receiver;
}

/** A daemon config: the simulator upstream, `redis` as given, webhook channels on the receiver. */
export function daemonConfig(o: {
  simUrl: string;
  redis: Record<string, unknown>;
  receiver: Receiver;
  channels: string[];
  events: string[];
}): Record<string, unknown> {
  return {
    upstream: { baseUrl: o.simUrl, requestsPerMinute: 6000, timeoutMs: 5000 },
    redis: o.redis,
    poll: { status: '1s', incidents: '1s' },
    server: { port: 0 },
    channels: Object.fromEntries(
      o.channels.map((name) => [
        name,
        {
          type: 'webhook',
          url: `${o.receiver.base}${name}`,
          secret: WEBHOOK_SECRET,
          timeoutMs: 10_000,
        },
      ]),
    ),
    subscriptions: [{ name: 'all', services: ['*'], events: o.events, channels: o.channels }],
  };
}
