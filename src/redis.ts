import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { toError } from './errors.js';

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

const outages = new WeakMap<Redis, Outage>();

/** True while `redis` has seen connection errors and was not `ready` since (see {@link createRedis}). */
export function isUnreachable(redis: Redis): boolean {
  return (outages.get(redis)?.since ?? null) !== null;
}

function isConnectionError(redis: Redis, value: unknown): boolean {
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
function reportOutages(redis: Redis): Redis {
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
  const silentEmit = redis.silentEmit.bind(redis);
  const duplicate = redis.duplicate.bind(redis);
  // ioredis raises its errors through `silentEmit`; own properties shadow the prototype's.
  Object.assign(redis, {
    silentEmit(eventName: string, arg?: unknown): boolean {
      // ioredis drops errors itself once the connection is ended or being closed on purpose.
      const closing =
        redis.status === 'end' ||
        (redis as unknown as { manuallyClosing?: boolean }).manuallyClosing === true;
      if (eventName !== 'error' || closing || !isConnectionError(redis, arg)) {
        return silentEmit(eventName, arg);
      }
      outage.failedAttempts += 1;
      if (outage.since !== null) return false;
      outage.since = Date.now();
      return redis.emit('unreachable', toError(arg));
    },
    duplicate(override?: Omit<Partial<RedisOptions>, 'replyMapping'>): Redis {
      return reportOutages(duplicate(override));
    },
  });
  return redis;
}

/**
 * A connection for statuswatch's own commands. BullMQ workers need `maxRetriesPerRequest: null`;
 * we use the same options everywhere so one connection config serves both. An outage is reported
 * once (`unreachable` / `reachable` events), not as an `error` per reconnect attempt: see
 * {@link watchRedis}.
 */
export function createRedis(url: string, options: { connectionName?: string } = {}): Redis {
  return reportOutages(
    new Redis(url, {
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
      ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
    }),
  );
}

const inFlightPings = new WeakMap<Redis, Promise<boolean>>();

/**
 * Whether Redis answers a PING on `redis` within `timeoutMs`. Never queues a command: false at
 * once when the connection is not `ready` (the command would wait in the offline queue), and at
 * most one PING is outstanding per connection (a probe while one is unanswered — Redis paused or
 * stalled — waits on that one instead of adding another).
 */
export async function answersWithin(redis: Redis, timeoutMs: number): Promise<boolean> {
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
 * - `redis:error` / `<source>:error` (error) for other errors, each source at most once a minute
 *   and again after each recovery; repeats in between are counted in the next line (`repeats`).
 * Every BullMQ Queue/Worker must have an `error` listener (without one BullMQ prints each error
 * as a multi-line dump to stderr): pass those not listened to elsewhere in `emitters`.
 */
export function watchRedis(
  log: Pick<Logger, 'info' | 'warn' | 'error'>,
  connection: Redis,
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
  connection.on('unreachable', (err: Error) => {
    log.warn(
      { event: 'redis:down', err: err.message },
      'redis unreachable; reconnecting (logged again once it is back)',
    );
  });
  connection.on('reachable', (r: Reachable) => {
    lastLogged.clear();
    log.info(
      { event: 'redis:up', downMs: r.downMs, failedAttempts: r.failedAttempts },
      'redis reachable again',
    );
  });
  connection.on('error', (err: Error) => {
    report('redis', toError(err));
  });
  for (const [source, emitter] of Object.entries(emitters)) {
    emitter.on('error', (err: Error) => {
      // While Redis is unreachable every command fails; redis:down already said so.
      if (isUnreachable(connection)) return;
      report(source, toError(err));
    });
  }
}
