import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Keys, RedisClient } from '../redis.js';

/**
 * "Redis refuses work": the error replies with which a Redis that is up declines a command,
 * each a state of the server (full, demoted, paused…) rather than a fault of the command. They
 * are recognised here by their reply code, and handled in one place ({@link RedisRefusals}):
 * counted, reported as one line when they start, a summary a minute while they last and one
 * line when they end, and turned into /readyz 503 with the reason.
 */
export const REFUSAL_REASONS = [
  'oom',
  'readonly',
  'noreplicas',
  'noperm',
  'maxclients',
  'busy',
  'loading',
  'misconf',
  'masterdown',
  'stalled',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** What an operator does about each reason (the start line's `hint`). */
export const REFUSAL_HINTS: Readonly<Record<RefusalReason, string>> = {
  oom: 'maxmemory reached: raise it or free memory; BullMQ needs noeviction',
  readonly:
    'Redis answers as a read-only replica (a failover demoted it): statuswatch reconnects to follow the primary; point redis.url at a name that moves with the primary, or use redis.sentinels',
  noreplicas:
    'the primary has fewer replicas than min-replicas-to-write asks for: bring a replica back or lower it',
  noperm:
    'the ACL user lacks a command statuswatch needs: grant it (ACL SETUSER <user> +<command>)',
  maxclients:
    'maxclients reached: raise maxclients or close other clients (statuswatch retries every 2 s)',
  busy: 'a script or function runs too long (BUSY): SCRIPT KILL / FUNCTION KILL, or wait for it',
  loading: 'Redis is loading its dataset into memory: it takes work once done',
  misconf:
    'Redis refuses writes after a failed background save (stop-writes-on-bgsave-error): fix the disk or permissions of its dir, or the save',
  masterdown: 'the replica has lost its primary (MASTERDOWN): fix the replication link',
  stalled:
    'writes are not answered within 1 s while PING is (CLIENT PAUSE WRITE, or a stalled primary)',
};

/** Reply codes (the first word of an error reply) and the reason each means. */
const BY_CODE: Readonly<Record<string, RefusalReason>> = {
  OOM: 'oom',
  READONLY: 'readonly',
  NOREPLICAS: 'noreplicas',
  NOPERM: 'noperm',
  BUSY: 'busy',
  LOADING: 'loading',
  MISCONF: 'misconf',
  MASTERDOWN: 'masterdown',
};

/**
 * Two refusals come with the generic code ERR and only their text tells them apart: a full
 * server (it has no code of its own) and a command a script calls that the ACL user may not run
 * (Redis 7.0 reports it as ERR, 7.2 as NOPERM).
 */
const BY_ERR_TEXT: readonly [RegExp, RefusalReason][] = [
  [/\bmax number of clients reached/, 'maxclients'],
  [/^ERR The user executing the script can't run this command/, 'noperm'],
];

const CODE = /^([A-Z]+) /;
/** A reply quoted inside another error's text (BullMQ: "Failed to add …: OOM command …"). */
const QUOTED = new RegExp(`(?:^|: )(${Object.keys(BY_CODE).join('|')}) `);

/** The refusal an error is, by its reply code; null for any other error. */
export function refusalOf(err: unknown, depth = 0): RefusalReason | null {
  if (!(err instanceof Error) || depth > 3) return null;
  const text = err.message;
  // ioredis reports a reply that came before any command (a full server says so at connect)
  // inside an error of its own, "Command queue state error … Last reply: ERR max number …".
  for (const [pattern, r] of BY_ERR_TEXT) if (r === 'maxclients' && pattern.test(text)) return r;
  const code = CODE.exec(text)?.[1];
  if (code !== undefined) {
    const reason = BY_CODE[code];
    if (reason !== undefined) return reason;
    if (code === 'ERR') for (const [pattern, r] of BY_ERR_TEXT) if (pattern.test(text)) return r;
  }
  const quoted = QUOTED.exec(text)?.[1];
  if (quoted !== undefined) return BY_CODE[quoted] ?? null;
  return refusalOf(err.cause, depth + 1);
}

/** The pause after the `n`th refusal in a row (1-based): 250 ms doubling to 2 s. */
export function refusalBackoff(n: number): number {
  return Math.min(REFUSAL_BACKOFF_MAX_MS, 250 * 2 ** Math.max(0, Math.min(n, 8) - 1));
}
export const REFUSAL_BACKOFF_MAX_MS = 2_000;

/** How often a summary is logged while Redis keeps refusing. */
export const REFUSAL_SUMMARY_MS = 60_000;
/** How often, while refusing, Redis is asked again whether it takes writes. */
export const REFUSAL_PROBE_MS = 500;

export interface RefusalState {
  reasons: RefusalReason[];
  /** Unix ms of the first refusal of this episode. */
  since: number;
  /** Refusals seen in this episode, by reason. */
  counts: Partial<Record<RefusalReason, number>>;
  /** The first refusal's text. */
  first: string;
  /** The commands the ACL user was found to lack (a `noperm` episode, once checked). */
  commands?: string[];
  /**
   * Whether Redis itself was seen refusing (a probe, the connection, the start-up checks), not
   * only a job's command: a late reply to a command sent just before Redis recovered opens no
   * episode of its own (it ends at the next probe, unlogged, and /readyz does not flip).
   */
  confirmed: boolean;
  /** Each reason's first text, until its start line is logged. */
  unlogged: Map<RefusalReason, { text: string; detail: Record<string, unknown> }>;
}

export interface RefusalEvents {
  /** Every refusal seen (the metric counts them). */
  refusal: [RefusalReason];
  /** Redis takes work again after an episode of refusals. */
  accepting: [RefusalState];
}

type Log = Pick<Logger, 'info' | 'warn' | 'error'>;

/**
 * The one model of a Redis that refuses work, per connection (and every BullMQ duplicate of it,
 * which report their errors through the workers sharing this root). Everything that sees an
 * error passes it to `note`; a refusal is counted and opens (or extends) an episode:
 * - `redis:refusing` (warn) once per reason, with the reply and the hint;
 * - `redis:still_refusing` (warn) at most once a minute, with the counts;
 * - `redis:accepting` (info) when Redis takes writes again, with the duration and counts.
 * While an episode lasts, Redis is asked every REFUSAL_PROBE_MS whether it takes writes again
 * (a SET of a key of its own, or for a missing permission the commands of {@link permissionCheck}).
 */
export class RedisRefusals extends EventEmitter<RefusalEvents> {
  private state: RefusalState | null = null;
  private summaryTimer: NodeJS.Timeout | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private lastSummaryCounts: Partial<Record<RefusalReason, number>> = {};
  private log: Log | null = null;
  private keys: Keys | null = null;
  private writeProbe: Promise<WriteProbe> | null = null;
  private closed = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  /** Logs the episodes to `log`, and probes writes on `keys`' probe key while one lasts. */
  watch(log: Log, keys: Keys): void {
    this.log = log;
    this.keys = keys;
  }

  /** The current episode (once confirmed); null while Redis takes work. */
  current(): RefusalState | null {
    return this.state?.confirmed === true ? this.state : null;
  }

  /** Counts `err` when it is a refusal (and opens an episode); its reason, or null. */
  note(err: unknown, detail?: Record<string, unknown>, confirmed = false): RefusalReason | null {
    const reason = refusalOf(err);
    if (reason === null) return null;
    this.noteReason(reason, err instanceof Error ? err.message : String(err), detail, confirmed);
    return reason;
  }

  /**
   * Counts a refusal of `reason`. `confirmed`: Redis itself refuses (a probe, the connection,
   * the start-up checks), not only a job's command (which the next probe confirms or not).
   */
  noteReason(
    reason: RefusalReason,
    text: string,
    detail: Record<string, unknown> = {},
    confirmed = false,
  ): void {
    if (this.closed) return;
    this.emit('refusal', reason);
    const fresh: RefusalState = {
      reasons: [],
      since: this.now(),
      counts: {},
      first: text,
      confirmed: false,
      unlogged: new Map(),
    };
    const state = (this.state ??= fresh);
    state.counts[reason] = (state.counts[reason] ?? 0) + 1;
    if (Array.isArray(detail.commands)) state.commands = detail.commands as string[];
    if (!state.reasons.includes(reason)) {
      state.reasons.push(reason);
      state.unlogged.set(reason, { text, detail });
    }
    if (confirmed) state.confirmed = true;
    if (state.confirmed) {
      for (const [r, first] of state.unlogged)
        this.log?.warn(
          {
            event: 'redis:refusing',
            reason: r,
            err: first.text,
            hint: REFUSAL_HINTS[r],
            ...first.detail,
          },
          `Redis refuses work (${r}): ${REFUSAL_HINTS[r]}`,
        );
      state.unlogged.clear();
    }
    this.summaryTimer ??= setInterval(() => {
      this.summary();
    }, REFUSAL_SUMMARY_MS).unref();
    this.probeTimer ??= setInterval(() => {
      void this.probe();
    }, REFUSAL_PROBE_MS).unref();
  }

  private summary(): void {
    const state = this.state;
    if (state?.confirmed !== true) return;
    const since: Partial<Record<RefusalReason, number>> = {};
    for (const [reason, n] of Object.entries(state.counts) as [RefusalReason, number][])
      since[reason] = n - (this.lastSummaryCounts[reason] ?? 0);
    this.lastSummaryCounts = { ...state.counts };
    this.log?.warn(
      {
        event: 'redis:still_refusing',
        reasons: state.reasons,
        refusedMs: this.now() - state.since,
        refusals: state.counts,
        lastMinute: since,
      },
      `Redis still refuses work (${state.reasons.join(', ')})`,
    );
  }

  /**
   * Redis took work: `via` 'write' (a write succeeded) ends every reason but a missing
   * permission, 'permissions' (every command statuswatch uses was allowed) ends them all, and
   * 'connection' (the connection is ready again) ends `maxclients`.
   */
  accepted(via: 'write' | 'permissions' | 'connection'): void {
    const state = this.state;
    // After a stop began: nothing is put back or rescheduled on closing workers and queues.
    if (state === null || this.closed) return;
    const ended = (r: RefusalReason): boolean =>
      via === 'permissions' || (via === 'write' ? r !== 'noperm' : r === 'maxclients');
    state.reasons = state.reasons.filter((r) => !ended(r));
    if (state.reasons.length > 0) return;
    this.state = null;
    this.lastSummaryCounts = {};
    if (this.summaryTimer !== null) clearInterval(this.summaryTimer);
    if (this.probeTimer !== null) clearInterval(this.probeTimer);
    this.summaryTimer = null;
    this.probeTimer = null;
    if (state.confirmed)
      this.log?.info(
        { event: 'redis:accepting', refusedMs: this.now() - state.since, refusals: state.counts },
        'Redis takes work again',
      );
    this.emit('accepting', state);
  }

  /** Asks Redis whether it takes work again (see the class comment). */
  private async probe(): Promise<void> {
    const state = this.state;
    if (state === null || this.keys === null || this.redis.status !== 'ready') return;
    if (state.reasons.includes('noperm')) {
      const missing = await permissionCheck(this.redis, this.keys).catch(() => null);
      if (missing !== null && missing.length === 0) this.accepted('permissions');
      else if (missing !== null) {
        // A script's refusal does not name the command (Redis 7.0): the check does.
        this.noteReason(
          'noperm',
          `the ACL user may not run: ${missing.join(', ')}`,
          { commands: missing },
          true,
        );
      }
      return;
    }
    await this.writable(REFUSAL_PROBE_MS * 4);
  }

  /**
   * Whether Redis takes a write within `timeoutMs`: one SET of the probe key at a time (a probe
   * while one is unanswered waits on that one). A refusal is noted; a write not answered in
   * time is `stalled` (call it only when PING answers); a write that succeeds ends the episode.
   */
  async writable(timeoutMs: number): Promise<WriteProbe> {
    const keys = this.keys;
    if (keys === null || this.redis.status !== 'ready') return { ok: false, reason: null };
    if (this.writeProbe === null) {
      const started = this.redis
        .set(keys.key('probe', 'writable'), String(this.now()), 'PX', 10_000)
        .then(
          (): WriteProbe => {
            this.accepted('write');
            return { ok: true, reason: null };
          },
          (err: unknown): WriteProbe => ({ ok: false, reason: this.note(err, {}, true) }),
        );
      this.writeProbe = started;
      void started.finally(() => {
        if (this.writeProbe === started) this.writeProbe = null;
      });
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<WriteProbe>((resolve) => {
      timer = setTimeout(() => {
        resolve({ ok: false, reason: 'stalled' });
      }, timeoutMs);
    });
    try {
      const result = await Promise.race([this.writeProbe, timeout]);
      if (result.reason === 'stalled')
        this.noteReason('stalled', `no answer to a write within ${String(timeoutMs)} ms`, {}, true);
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops the timers (the daemon stops). */
  close(): void {
    this.closed = true;
    this.state = null;
    if (this.summaryTimer !== null) clearInterval(this.summaryTimer);
    if (this.probeTimer !== null) clearInterval(this.probeTimer);
    this.summaryTimer = null;
    this.probeTimer = null;
  }
}

export interface WriteProbe {
  ok: boolean;
  /** Why not: a refusal, `stalled`, or null (not connected, or an error that is no refusal). */
  reason: RefusalReason | null;
}

const trackers = new WeakMap<RedisClient, RedisRefusals>();

/** The refusal model of connection `redis` (one per root connection, made on first use). */
export function refusalsOf(redis: RedisClient): RedisRefusals {
  let tracker = trackers.get(redis);
  if (tracker === undefined) {
    tracker = new RedisRefusals(redis);
    trackers.set(redis, tracker);
  }
  return tracker;
}

/**
 * Every command statuswatch and BullMQ send (directly or from their Lua scripts), each with
 * arguments that are harmless on the check's own keys: an ACL user that lacks one is told at
 * start, with the command named, instead of at the first job that needs it. ACL is checked
 * before a command runs, so any reply but NOPERM (WRONGTYPE, no such key) means allowed.
 */
function checkCommands(k: (type: string) => string): [string, ...string[]][] {
  const str = k('string');
  const hash = k('hash');
  const list = k('list');
  const set = k('set');
  const zset = k('zset');
  const stream = k('stream');
  return [
    ['PING'],
    ['TIME'],
    ['INFO', 'server'],
    ['SET', str, '1', 'PX', '10000'],
    ['GET', str],
    ['MGET', str, str],
    ['INCR', k('counter')],
    ['INCRBY', k('counter'), '1'],
    ['EXISTS', str],
    ['TYPE', str],
    ['PTTL', str],
    ['PEXPIRE', str, '10000'],
    ['PEXPIREAT', str, String(Date.now() + 10_000)],
    ['EXPIRE', str, '10'],
    ['PERSIST', str],
    ['RENAME', str, k('renamed')],
    ['HSET', hash, 'f', '1'],
    ['HSETNX', hash, 'g', '1'],
    ['HMSET', hash, 'h', '1'],
    ['HGET', hash, 'f'],
    ['HMGET', hash, 'f', 'g'],
    ['HGETALL', hash],
    ['HEXISTS', hash, 'f'],
    ['HINCRBY', hash, 'n', '1'],
    ['HLEN', hash],
    ['HKEYS', hash],
    ['HDEL', hash, 'g'],
    ['LPUSH', list, 'a'],
    ['RPUSH', list, 'b'],
    ['LLEN', list],
    ['LINDEX', list, '0'],
    ['LPOS', list, 'a'],
    ['LRANGE', list, '0', '-1'],
    ['LSET', list, '0', 'a'],
    ['LREM', list, '0', 'b'],
    ['LTRIM', list, '0', '-1'],
    ['RPOPLPUSH', list, list],
    ['LPOP', list],
    ['RPOP', list],
    ['SADD', set, 'a'],
    ['SISMEMBER', set, 'a'],
    ['SMEMBERS', set],
    ['SCARD', set],
    ['SREM', set, 'a'],
    ['ZADD', zset, '1', 'a', '2', 'b'],
    ['ZSCORE', zset, 'a'],
    ['ZMSCORE', zset, 'a'],
    ['ZCARD', zset],
    ['ZCOUNT', zset, '-inf', '+inf'],
    ['ZLEXCOUNT', zset, '-', '+'],
    ['ZRANGE', zset, '0', '-1'],
    ['ZRANGEBYLEX', zset, '-', '+'],
    ['ZRANGEBYSCORE', zset, '-inf', '+inf'],
    ['ZREVRANGE', zset, '0', '-1'],
    ['ZREVRANGEBYSCORE', zset, '+inf', '-inf'],
    ['ZREMRANGEBYRANK', zset, '5', '6'],
    ['ZREMRANGEBYSCORE', zset, '5', '6'],
    ['ZPOPMIN', zset],
    // An element is left: BZPOPMIN answers at once.
    ['BZPOPMIN', zset, '0.01'],
    ['ZREM', zset, 'a'],
    ['XADD', stream, 'MAXLEN', '10', '*', 'f', 'v'],
    ['XLEN', stream],
    ['XRANGE', stream, '-', '+'],
    ['XREVRANGE', stream, '+', '-'],
    ['XREAD', 'COUNT', '1', 'STREAMS', stream, '0'],
    ['XTRIM', stream, 'MAXLEN', '10'],
    ['XDEL', stream, '0-1'],
    ['EVAL', 'return 1', '0'],
    ['EVALSHA', 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db', '0'],
    ['PUBLISH', k('channel'), 'check'],
    ['UNLINK', k('renamed')],
    ['DEL', str, hash, list, set, zset, stream, k('counter'), k('renamed')],
  ];
}

/**
 * Runs {@link checkCommands} on keys of its own under the installation's prefix (deleted at the
 * end); resolves with the commands the ACL user may not run (empty when all are allowed). Other
 * refusals on the way (a full Redis) are noted on `refusalsOf(redis)`.
 */
export async function permissionCheck(redis: RedisClient, keys: Keys): Promise<string[]> {
  const commands = checkCommands((type) => keys.key('redis-check', type));
  const pipeline = redis.pipeline();
  for (const [name, ...args] of commands) pipeline.call(name, ...args);
  const replies = (await pipeline.exec()) ?? [];
  const missing: string[] = [];
  replies.forEach(([err], i) => {
    if (err === null) return;
    const reason = refusalOf(err);
    if (reason === 'noperm') missing.push((commands[i]?.[0] ?? '?').toLowerCase());
    else if (reason !== null) refusalsOf(redis).note(err, {}, true);
  });
  try {
    await redis.multi().ping().exec();
  } catch (err) {
    if (refusalOf(err) === 'noperm') missing.push('multi', 'exec');
  }
  return missing;
}

/** `maxmemory_policy` from INFO memory (CONFIG GET is often not allowed); null when not said. */
export async function maxmemoryPolicy(redis: RedisClient): Promise<string | null> {
  const info = await redis.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? null;
}

/**
 * At start: a warning (once) when Redis may evict keys (BullMQ's queues and statuswatch's state
 * would silently lose entries; `noeviction` makes a full Redis refuse writes instead, which the
 * daemon waits out), and the commands the ACL user lacks, named, as a refusal (`redis:refusing`
 * with `commands`; /readyz 503 until they are granted). Never throws: a check Redis refuses is
 * itself reported.
 */
export async function startupChecks(redis: RedisClient, keys: Keys, log: Log): Promise<void> {
  const refusals = refusalsOf(redis);
  try {
    const policy = await maxmemoryPolicy(redis);
    if (policy !== null && policy !== 'noeviction')
      log.warn(
        { event: 'redis:eviction_policy', policy },
        `Redis maxmemory-policy is ${policy}: a full Redis would evict queue and state keys; set it to noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf)`,
      );
  } catch (err) {
    if (refusals.note(err) === null)
      log.warn(
        { event: 'redis:check_failed', check: 'maxmemory-policy', err: String(err) },
        'could not read the maxmemory-policy of Redis',
      );
  }
  try {
    const missing = await permissionCheck(redis, keys);
    if (missing.length > 0)
      refusals.noteReason(
        'noperm',
        `the ACL user may not run: ${missing.join(', ')}`,
        { commands: missing },
        true,
      );
  } catch (err) {
    if (refusals.note(err) === null)
      log.warn(
        { event: 'redis:check_failed', check: 'permissions', err: String(err) },
        'could not check the ACL permissions of the Redis user',
      );
  }
}
