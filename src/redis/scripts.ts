/**
 * statuswatch's Lua scripts: one file each under `./scripts/` (a header comment there states
 * KEYS, ARGV and the reply), read once when this module loads and registered per connection
 * with ioredis `defineCommand`. A defined command is sent as EVALSHA, as EVAL the first time on
 * a socket, and again as EVAL after a NOSCRIPT (a SCRIPT FLUSH or a restarted Redis): callers
 * never handle script caching. It works in a MULTI or pipeline too, through `queue`.
 *
 * The `.lua` files are not compiled: `npm run build` copies them next to the compiled module
 * (dist/redis/scripts/), and they are read relative to this module, so the same URL resolves
 * from src/ (vitest) and from dist/.
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis.js';

/** A script's file, its KEYS count (undefined = variable, sent before the keys) and, as phantom types, its call. */
interface ScriptSpec<K extends readonly string[], A extends readonly string[], R> {
  readonly file: string;
  readonly numberOfKeys: number | undefined;
  readonly types?: { keys: K; argv: A; reply: R };
}

function script<K extends readonly string[], A extends readonly string[], R>(
  file: string,
  numberOfKeys?: number,
): ScriptSpec<K, A, R> {
  return { file, numberOfKeys };
}

/** Every script: KEYS and ARGV tuples as in the file's header, and the reply's type. */
const SPECS = {
  snapshotLoad: script<[entries: string, meta: string], [cachedVersion: string], string[]>(
    'snapshot-load',
    2,
  ),
  snapshotCommit: script<
    [entries: string, meta: string],
    // expected version, new version, baselined, upstream, variant, then field/value pairs
    readonly string[],
    [number, string]
  >('snapshot-commit', 2),
  routingDecidedAt: script<
    // the routing clock, then optionally the cycle job's kept time
    readonly [last: string] | readonly [last: string, decided: string],
    // now, the clock skew allowed (CLOCK_SKEW_MS), then with the job's key: how long its time
    // is kept
    | readonly [nowMs: string, skewMs: string]
    | readonly [nowMs: string, skewMs: string, retentionMs: string],
    string
  >('routing-decided-at'),
  hashFieldCas: script<[hash: string], [field: string, read: string, next: string], number>(
    'hash-field-cas',
    1,
  ),
  noiseBufferAppend: script<
    [buffer: string, seen: string, marker: string],
    [transitionId: string, value: string, route: string, markerValue: string, nx: '1' | '0'],
    number
  >('noise-buffer-append', 3),
  noiseBufferClaim: script<
    [buffer: string, claimed: string, marks: string, claimedMarks: string],
    [],
    string[]
  >('noise-buffer-claim', 4),
  noiseBufferFinish: script<
    [buffer: string, claimed: string, marker: string, claimedMarks: string],
    [route: string, markerValue: string],
    number
  >('noise-buffer-finish', 4),
  noiseClosedInQuiet: script<
    [held: string, marks: string],
    // the closing's observedAt, then lifecycle keys
    readonly string[],
    number
  >('noise-closed-in-quiet', 2),
  // The ledger's values (retryJob, sent) are LEDGER_VALUES of src/delivery/rules.ts.
  ledgerClaim: script<
    readonly string[],
    [owner: string, ttlSeconds: string, retryJob: string],
    number[]
  >('ledger-claim'),
  ledgerMarkSent: script<readonly string[], [ttlSeconds: string, sent: string], number>(
    'ledger-mark-sent',
  ),
  historyAppend: script<
    readonly string[],
    // oldest score kept, most members kept, TTL ms, then per key: count, score/member pairs
    readonly string[],
    number
  >('history-append'),
  historySamples: script<
    // the latest records' hash, then per service its sorted set of each resolution
    readonly string[],
    // resolutions r, per resolution: bucket start, exclusive oldest bound, TTL ms; then per
    // service: feedId, latest record, a member per resolution
    readonly string[],
    number
  >('history-samples'),
  historyStatus: script<
    // the last statuses' hash, then per service its status sorted set
    readonly string[],
    // now, exclusive oldest bound, most members kept, TTL ms; then per service: feedId, status,
    // member
    readonly string[],
    number
  >('history-status'),
  ledgerHandOff: script<
    // the ledger key, then the indexes of its lifecycles (none, one or more)
    readonly string[],
    // owner, TTL seconds, retry job's value, then with indexes: index TTL ms, that TTL in ranks,
    // delivery id, a rank per index
    readonly string[],
    number
  >('ledger-hand-off'),
  ledgerRevertHandOff: script<
    [key: string],
    [owner: string, ttlSeconds: string, retryJob: string],
    number
  >('ledger-revert-hand-off', 1),
  pace: script<[key: string], [intervalMs: string, holdMs: string, slotHeld: '1' | '0'], number>(
    'pace',
    1,
  ),
  authAttempt: script<
    [attempts: string],
    [step: 'take' | 'fail' | 'free', limit: string, windowMs: string],
    [number, number] | number
  >('auth-attempt', 1),
};

type ScriptName = keyof typeof SPECS;

type Call<S> =
  S extends ScriptSpec<infer K, infer A, infer R> ? (keys: K, argv: A) => Promise<R> : never;
type Queue<S> =
  S extends ScriptSpec<infer K, infer A, unknown> ? (keys: K, argv: A) => void : never;

/** The scripts as typed calls on one connection, and `queue` to add them to a MULTI or pipeline. */
export type Scripts = { readonly [N in ScriptName]: Call<(typeof SPECS)[N]> } & {
  /** The scripts queued on `m`, a MULTI or pipeline made from this connection. */
  queue(m: ChainableCommander): { readonly [N in ScriptName]: Queue<(typeof SPECS)[N]> };
};

const NAMES = Object.keys(SPECS) as ScriptName[];

/** The ioredis command name of a script: prefixed, so it never shadows a Redis command or BullMQ's. */
function commandOf(name: ScriptName): string {
  return `sw${name.charAt(0).toUpperCase()}${name.slice(1)}`;
}

/** Every script's source, read once at start (a missing file fails the import, not a cycle). */
const LUA: ReadonlyMap<ScriptName, string> = new Map(
  NAMES.map((name) => [
    name,
    readFileSync(new URL(`./scripts/${SPECS[name].file}.lua`, import.meta.url), 'utf8'),
  ]),
);

/** A defined command as ioredis adds it to a connection (and copies to its pipelines). */
type DefinedCommand = (...args: (string | number | readonly string[])[]) => unknown;

function definedOn(target: object, name: ScriptName): DefinedCommand {
  const fn = (target as Record<string, unknown>)[commandOf(name)];
  if (typeof fn !== 'function') {
    throw new Error(
      `Redis script ${name} is not defined here: call scripts(redis) before redis.multi()/pipeline()`,
    );
  }
  return fn as DefinedCommand;
}

/** ioredis arguments: arrays are flattened, so 200,000 arguments are never spread into a JS call. */
function argsOf(name: ScriptName, keys: readonly string[], argv: readonly string[]) {
  return SPECS[name].numberOfKeys === undefined ? [keys.length, keys, argv] : [keys, argv];
}

const registered = new WeakMap<RedisClient, Scripts>();

/** Registers every script on `redis` (once per connection) and returns them as typed calls. */
export function scripts(redis: RedisClient): Scripts {
  const known = registered.get(redis);
  if (known !== undefined) return known;
  const calls: Record<string, unknown> = {};
  for (const name of NAMES) {
    const { numberOfKeys } = SPECS[name];
    redis.defineCommand(commandOf(name), {
      lua: LUA.get(name) ?? '',
      ...(numberOfKeys === undefined ? {} : { numberOfKeys }),
    });
    const command = definedOn(redis, name);
    calls[name] = (keys: readonly string[], argv: readonly string[]) =>
      command.apply(redis, argsOf(name, keys, argv));
  }
  calls.queue = (m: ChainableCommander) =>
    Object.fromEntries(
      NAMES.map((name) => {
        const command = definedOn(m, name);
        return [
          name,
          (keys: readonly string[], argv: readonly string[]) => {
            command.apply(m, argsOf(name, keys, argv));
          },
        ];
      }),
    );
  const out = calls as Scripts;
  registered.set(redis, out);
  return out;
}
