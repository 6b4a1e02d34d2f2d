import { connect } from 'node:net';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisConfig } from './config/schema.js';
import { toError } from './errors.js';
import { refusalOf, refusalsOf } from './redis/refusals.js';

/**
 * A statuswatch connection: one Redis (a URL, or the master a set of Sentinels names) or a Redis
 * Cluster. Every key of one installation carries the same `{prefix}` hash tag (see {@link Keys}),
 * so on a cluster all of them live in one slot and no command spans slots.
 */
export type RedisClient = Redis | Cluster;

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

/** Socket-level failures: each reconnect attempt against an unreachable Redis raises one. */
const CONNECTION_SYSCALLS = new Set(['connect', 'read', 'write', 'getaddrinfo']);
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** How an outage ended: how long it lasted and how many connection errors it raised. */
export interface Reachable {
  downMs: number;
  failedAttempts: number;
}

interface Outage {
  /** When the first connection error of the current outage was seen; null while none. */
  since: number | null;
  failedAttempts: number;
}

const outages = new WeakMap<RedisClient, Outage>();

/** True while `redis` has seen connection errors and was not `ready` since (see {@link createRedis}). */
export function isUnreachable(redis: RedisClient): boolean {
  return (outages.get(redis)?.since ?? null) !== null;
}

function isConnectionError(redis: RedisClient, value: unknown): boolean {
  if (redis.status !== 'ready') return true;
  if (!(value instanceof Error)) return false;
  const { syscall, code } = value as NodeJS.ErrnoException;
  return (
    (syscall !== undefined && CONNECTION_SYSCALLS.has(syscall)) ||
    (code !== undefined && CONNECTION_CODES.has(code))
  );
}

/**
 * Makes `redis` report an outage as state, not as a stream of errors: ioredis emits `error` on
 * every failed reconnect attempt (ECONNREFUSED every few hundred ms while Redis is down), and
 * every BullMQ object sharing the connection re-emits each one. Connection errors — socket
 * failures, and anything raised while the connection is not `ready` (a refused AUTH, a failed
 * ready check) — are then not emitted as `error`; the connection emits `unreachable` (with the
 * first error) once per outage and `reachable` ({@link Reachable}) when it is `ready` again.
 * Other errors are emitted as `error` as usual. Duplicates (BullMQ's blocking connections)
 * behave the same.
 */
function reportOutages<C extends RedisClient>(redis: C): C {
  return (redis instanceof Cluster ? reportClusterOutages(redis) : reportRedisOutages(redis)) as C;
}

/**
 * The outage state of `redis`: `isOutage` says whether an error is a connection error (not one
 * raised while closing on purpose); `opened` counts one and says whether it opened an outage.
 * A `ready` ends the outage (`reachable`).
 */
function outageTracker(redis: RedisClient): {
  isOutage(arg: unknown): boolean;
  opened(): boolean;
} {
  const outage: Outage = { since: null, failedAttempts: 0 };
  outages.set(redis, outage);
  redis.on('ready', () => {
    if (outage.since === null) return;
    const reachable: Reachable = {
      downMs: Date.now() - outage.since,
      failedAttempts: outage.failedAttempts,
    };
    outage.since = null;
    outage.failedAttempts = 0;
    redis.emit('reachable', reachable);
  });
  return {
    isOutage(arg) {
      // ioredis drops errors itself once the connection is ended or being closed on purpose.
      const closing =
        redis.status === 'end' ||
        (redis as unknown as { manuallyClosing?: boolean }).manuallyClosing === true;
      return !closing && isConnectionError(redis, arg);
    },
    opened() {
      outage.failedAttempts += 1;
      if (outage.since !== null) return false;
      outage.since = Date.now();
      return true;
    },
  };
}

/** How long the maxclients probe waits for Redis to speak first. */
const MAXCLIENTS_PROBE_MS = 500;

/**
 * A server at maxclients answers a new connection with an error reply before any command, then
 * closes it. ioredis mostly reports only the EPIPE or ECONNRESET of its first command (the
 * reply is lost when the reset comes first, or matched to a command whose error it drops), if
 * anything. So when a connection closes before it was ready, Redis is asked once, on a socket
 * of its own that writes nothing (no reset), whether it greets new connections with that reply
 * (a server that is not full says nothing); the first bytes of every connection are read too.
 * Either way the refusal is passed on as `refused` (see watchRedis), when it is listened to.
 */
function watchMaxclients(redis: Redis): void {
  let attempt: { host: string; port: number; seen: boolean } | null = null;
  let probing = false;
  const refused = (text: string): boolean => {
    // What Redis writes on a connection it refuses for maxclients (then it closes it): an error
    // reply, which the refusal model reads as it reads any other (src/redis/refusals.ts).
    const reply = /^-([^\r\n]*)\r\n/.exec(text)?.[1];
    if (reply === undefined) return false;
    const err = new Error(reply);
    if (refusalOf(err) !== 'maxclients') return false;
    redis.emit('refused', err);
    return true;
  };
  redis.on('connect', () => {
    const stream = redis.stream;
    const current = { host: stream.remoteAddress ?? '', port: stream.remotePort ?? 0, seen: false };
    attempt = current;
    stream.once('data', (chunk: Buffer | string) => {
      if (refused(String(chunk))) current.seen = true;
    });
  });
  redis.on('ready', () => {
    attempt = null;
  });
  redis.on('close', () => {
    const closed = attempt;
    attempt = null;
    // TLS: the reply comes inside the handshake; only the first bytes' check applies.
    const tls = (redis.options as { tls?: unknown }).tls !== undefined;
    if (closed === null || closed.seen || closed.host === '' || tls || probing) return;
    if (redis.listenerCount('refused') === 0) return;
    probing = true;
    const socket = connect({ host: closed.host, port: closed.port });
    let heard = '';
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      probing = false;
    };
    const timer = setTimeout(done, MAXCLIENTS_PROBE_MS);
    timer.unref();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      heard += chunk;
      if (heard.includes('\r\n')) {
        refused(heard);
        done();
      }
    });
    socket.once('error', done);
    socket.once('close', done);
  });
}

function reportRedisOutages(redis: Redis): Redis {
  const tracker = outageTracker(redis);
  const silentEmit = redis.silentEmit.bind(redis);
  const duplicate = redis.duplicate.bind(redis);
  // ioredis raises its errors through `silentEmit`; own properties shadow the prototype's.
  Object.assign(redis, {
    silentEmit(eventName: string, arg?: unknown): boolean {
      if (eventName !== 'error' || !tracker.isOutage(arg)) return silentEmit(eventName, arg);
      // A reply refusing the connection (maxclients, LOADING) may follow the socket error that
      // opened the outage: it is passed on as `refused` (see watchRedis).
      if (refusalOf(arg) !== null) redis.emit('refused', toError(arg));
      return tracker.opened() ? redis.emit('unreachable', toError(arg)) : false;
    },
    duplicate(override?: Omit<Partial<RedisOptions>, 'replyMapping'>): Redis {
      return reportOutages(duplicate(override));
    },
  });
  watchMaxclients(redis);
  // ioredis leaves `sentinels` null on a connection to one Redis.
  const { sentinels } = redis.options as { sentinels?: unknown[] | null };
  return Array.isArray(sentinels) && sentinels.length > 0 ? followFailovers(redis) : redis;
}

/** Replies of a master that is being replaced: the write was refused, nothing was done. */
const FAILOVER_REPLY = /^(READONLY|NOREPLICAS)\b/;

/** What ioredis passes to its (internal) `handleReconnection` for an error reply. */
interface QueuedCommand {
  command: { name: string; inTransaction?: boolean };
}

/**
 * A Sentinel-backed connection through a failover. Between the replica's promotion and the
 * sentinels' `+switch-master` (about a second), the old master still takes connections; with
 * `min-replicas-to-write` it refuses writes (`NOREPLICAS`, since its replica left), and once it
 * is a replica itself it answers `READONLY`. Such a command is not failed: the connection is
 * re-established through the sentinels (which name the new master from the promotion on) and
 * the command sent again, as a reconnect does with unanswered commands. A command inside
 * MULTI/EXEC still fails (EXECABORT): re-sending it alone would break the transaction.
 */
function followFailovers(redis: Redis): Redis {
  const internal = redis as unknown as {
    handleReconnection(err: Error, item: QueuedCommand): void;
    sendCommand(command: QueuedCommand['command']): unknown;
  };
  const handleReconnection = internal.handleReconnection.bind(redis);
  Object.assign(redis, {
    handleReconnection(err: Error, item: QueuedCommand): void {
      if (!FAILOVER_REPLY.test(err.message) || item.command.inTransaction === true) {
        handleReconnection(err, item);
        return;
      }
      if (redis.status !== 'reconnecting') redis.disconnect(true);
      internal.sendCommand(item.command);
    },
  });
  return redis;
}

/**
 * A Cluster raises its own errors with `emit` (a node's errors come as `node error`, see
 * {@link watchRedis}); `ready` follows every (re)connection, as on one Redis. BullMQ duplicates a
 * cluster with `duplicate(undefined, { redisOptions })`.
 */
function reportClusterOutages(cluster: Cluster): Cluster {
  const tracker = outageTracker(cluster);
  const emit = cluster.emit.bind(cluster);
  const duplicate = cluster.duplicate.bind(cluster);
  Object.assign(cluster, {
    emit(eventName: string | symbol, ...args: unknown[]): boolean {
      if (eventName !== 'error' || !tracker.isOutage(args[0])) return emit(eventName, ...args);
      return tracker.opened() ? emit('unreachable', toError(args[0])) : false;
    },
    duplicate(
      startupNodes?: ClusterNode[],
      override?: Parameters<Cluster['duplicate']>[1],
    ): Cluster {
      return reportOutages(duplicate(startupNodes, override));
    },
  });
  return cluster;
}

/** One Redis address of the config: a cluster seed or a sentinel. */
export interface RedisEndpoint {
  host: string;
  port: number;
  /** `rediss://`. */
  tls: boolean;
  username?: string;
  password?: string;
  /** The database of a URL's path (`/2`); undefined when it has none. */
  db?: number;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * `redis://[user:password@]host[:port][/db]`, `rediss://…` or `host:port` (an IPv6 address in
 * brackets); null when `text` is none of these. A URL without a port gets `defaultPort`.
 */
export function parseRedisEndpoint(text: string, defaultPort: number): RedisEndpoint | null {
  const isUrl = /^rediss?:\/\//i.test(text);
  if (!isUrl && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d+$/.test(text)) return null;
  const candidate = isUrl ? text : `redis://${text}`;
  if (!URL.canParse(candidate)) return null;
  const url = new URL(candidate);
  if (url.hostname === '' || url.search !== '' || url.hash !== '' || url.port === '0') return null;
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) return null;
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? defaultPort : Number(url.port),
    tls: url.protocol === 'rediss:',
    ...(url.username === '' ? {} : { username: decoded(url.username) }),
    ...(url.password === '' ? {} : { password: decoded(url.password) }),
    ...(path === '' ? {} : { db: Number(path) }),
  };
}

export const CLUSTER_DEFAULT_PORT = 6379;
export const SENTINEL_DEFAULT_PORT = 26379;

function endpointsOf(list: readonly string[], defaultPort: number): RedisEndpoint[] {
  return list.map((text) => {
    const endpoint = parseRedisEndpoint(text, defaultPort);
    // The config schema let only valid ones through.
    if (endpoint === null) throw new Error(`not a Redis address: ${JSON.stringify(text)}`);
    return endpoint;
  });
}

/** Whether `config` is the single-URL form. */
function isUrlForm(config: RedisConfig): config is Extract<RedisConfig, { url: string }> {
  return typeof config.url === 'string';
}

function isClusterForm(config: RedisConfig): config is Extract<RedisConfig, { cluster: string[] }> {
  return Array.isArray(config.cluster);
}

/** Longest wait between two reconnect attempts while Redis is unreachable. */
export const RECONNECT_MAX_DELAY_MS = 2000;

/**
 * The `retryStrategy` of every connection: the wait before reconnect attempt `times` (1-based),
 * 100 ms doubling up to RECONNECT_MAX_DELAY_MS, less up to 20 % jitter so replicas do not
 * reconnect in step. Never gives up: the daemon waits out any outage, about one silent attempt
 * every 2 s (logged once, see {@link watchRedis}), and is back within 2 s of Redis.
 */
export function reconnectDelay(times: number, random: () => number = Math.random): number {
  const delay = Math.min(RECONNECT_MAX_DELAY_MS, 100 * 2 ** Math.max(0, Math.min(times, 16) - 1));
  return Math.round(delay * (0.8 + 0.2 * random()));
}

/**
 * ioredis `reconnectOnError` of a connection by address: reconnect on READONLY (1: the command
 * itself fails, not re-sent, so a Redis that stays a replica is not asked again in a loop).
 */
export function reconnectOnReadonly(err: Error): 1 | false {
  return /^READONLY\b/.test(err.message) ? 1 : false;
}

export interface RedisConnectionOptions {
  /** CLIENT SETNAME of the connection (every node's connection on a cluster). */
  connectionName?: string;
}

/**
 * A connection for statuswatch's own commands. BullMQ workers need `maxRetriesPerRequest: null`;
 * we use the same options everywhere so one connection config serves both. An outage is reported
 * once (`unreachable` / `reachable` events), not as an `error` per reconnect attempt: see
 * {@link watchRedis}.
 *
 * `target` is a URL or the config's `redis` section: one Redis (`url`), a Redis Cluster
 * (`cluster`: an ioredis `Cluster` over the seeds, every node connection with the options above)
 * or the master a set of Sentinels names (`sentinels`, `name`; the connection follows a failover:
 * it subscribes to the sentinels' `+switch-master`).
 */
export function createRedis(target: string, options?: RedisConnectionOptions): Redis;
export function createRedis(target: RedisConfig, options?: RedisConnectionOptions): RedisClient;
export function createRedis(
  target: string | RedisConfig,
  options: RedisConnectionOptions = {},
): RedisClient {
  const common = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times: number) => reconnectDelay(times),
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
  } satisfies RedisOptions;
  // A plain address: a READONLY reply means the server there was demoted (a failover), so the
  // connection is made again, following a DNS name that has moved to the new primary; the
  // command fails as refused (src/redis/refusals.ts) and its caller retries it.
  const byAddress = { ...common, reconnectOnError: reconnectOnReadonly } satisfies RedisOptions;
  if (typeof target === 'string') return reportOutages(new Redis(target, byAddress));
  if (isUrlForm(target)) return reportOutages(new Redis(target.url, byAddress));
  if (isClusterForm(target)) {
    const seeds = endpointsOf(target.cluster, CLUSTER_DEFAULT_PORT);
    // The schema allows one set of credentials: the fields, or the same in every seed URL.
    const username = target.username ?? seeds.find((s) => s.username !== undefined)?.username;
    const password = target.password ?? seeds.find((s) => s.password !== undefined)?.password;
    // A node's connection does not retry on its own (ioredis refreshes the slots instead); the
    // cluster as a whole reconnects with the same delays as one Redis.
    const { retryStrategy, ...nodeOptions } = common;
    return reportOutages(
      new Cluster(
        seeds.map(({ host, port }) => ({ host, port })),
        {
          enableReadyCheck: true,
          scaleReads: 'master',
          clusterRetryStrategy: retryStrategy,
          redisOptions: {
            ...nodeOptions,
            ...(username === undefined ? {} : { username }),
            ...(password === undefined ? {} : { password }),
            ...(seeds.some((s) => s.tls) ? { tls: {} } : {}),
          },
        },
      ),
    );
  }
  return reportOutages(
    new Redis({
      ...common,
      sentinels: endpointsOf(target.sentinels, SENTINEL_DEFAULT_PORT).map(({ host, port }) => ({
        host,
        port,
      })),
      name: target.name,
      role: 'master',
      // Reconnect to the new master as soon as a sentinel announces it, not once the old one
      // (still a writable master for a while) is turned into a replica and drops its clients.
      failoverDetector: true,
      ...(target.password === undefined ? {} : { password: target.password }),
      ...(target.sentinelPassword === undefined
        ? {}
        : { sentinelPassword: target.sentinelPassword }),
    }),
  );
}

const inFlightPings = new WeakMap<RedisClient, Promise<boolean>>();

/**
 * Whether Redis answers a PING on `redis` within `timeoutMs`. Never queues a command: false at
 * once when the connection is not `ready` (the command would wait in the offline queue), and at
 * most one PING is outstanding per connection (a probe while one is unanswered — Redis paused or
 * stalled — waits on that one instead of adding another).
 */
export async function answersWithin(redis: RedisClient, timeoutMs: number): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  let ping = inFlightPings.get(redis);
  if (ping === undefined) {
    const started = redis.ping().then(
      () => true,
      () => false,
    );
    ping = started;
    inFlightPings.set(redis, started);
    void started.then(() => {
      if (inFlightPings.get(redis) === started) inFlightPings.delete(redis);
    });
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, timeoutMs);
  });
  try {
    return await Promise.race([ping, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface ErrorEmitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** A source of errors logged again at the earliest this long after its last logged error. */
const ERROR_LOG_INTERVAL_MS = 60_000;

/**
 * Logs a Redis connection's state and the errors of the BullMQ objects using it, one line per
 * change rather than one per reconnect attempt:
 * - `redis:down` (warn) once when the connection loses Redis, with the first error;
 * - `redis:up` (info) when it is back, with how long it was down and how many attempts failed;
 * - `redis:error` / `redis-node:error` (a cluster node's) / `<source>:error` (error) for other
 *   errors, each source at most once a minute and again after each recovery; repeats in between
 *   are counted in the next line (`repeats`).
 * Every BullMQ Queue/Worker must have an `error` listener (without one BullMQ prints each error
 * as a multi-line dump to stderr): pass those not listened to elsewhere in `emitters`.
 */
export function watchRedis(
  log: Pick<Logger, 'info' | 'warn' | 'error'>,
  connection: RedisClient,
  emitters: Readonly<Record<string, ErrorEmitter>> = {},
  now: () => number = Date.now,
): void {
  const lastLogged = new Map<string, { at: number; repeats: number }>();
  const report = (source: string, err: Error): void => {
    const last = lastLogged.get(source);
    const at = now();
    if (last !== undefined && at - last.at < ERROR_LOG_INTERVAL_MS) {
      last.repeats += 1;
      return;
    }
    lastLogged.set(source, { at, repeats: 0 });
    log.error(
      {
        event: `${source}:error`,
        err: err.message,
        ...(last === undefined || last.repeats === 0 ? {} : { repeats: last.repeats }),
      },
      `${source} error`,
    );
  };
  const refusals = refusalsOf(connection);
  // A refusal at connect (maxclients, LOADING) is reported as such, with its hint, too.
  connection.on('refused', (err: Error) => {
    refusals.note(err, {}, true);
  });
  connection.on('unreachable', (err: Error) => {
    log.warn(
      { event: 'redis:down', err: err.message },
      'redis unreachable; reconnecting (logged again once it is back)',
    );
  });
  connection.on('reachable', (r: Reachable) => {
    lastLogged.clear();
    refusals.accepted('connection');
    log.info(
      { event: 'redis:up', downMs: r.downMs, failedAttempts: r.failedAttempts },
      'redis reachable again',
    );
  });
  connection.on('error', (err: Error) => {
    if (refusals.note(err) === null) report('redis', toError(err));
  });
  // A cluster node's own trouble (one primary down while its replica takes over): the cluster
  // as a whole stays `ready` and ioredis retries the node's commands.
  if (connection instanceof Cluster) {
    connection.on('node error', (err: unknown) => {
      report('redis-node', toError(err));
    });
  }
  for (const [source, emitter] of Object.entries(emitters)) {
    emitter.on('error', (err: Error) => {
      // While Redis is unreachable every command fails; redis:down already said so. A refusal
      // (OOM, READONLY…) is counted and reported by the refusal model, not line by line.
      if (isUnreachable(connection)) return;
      if (refusals.note(err) !== null) return;
      report(source, toError(err));
    });
  }
}
