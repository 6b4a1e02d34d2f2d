/**
 * The main thread's young generation, given by re-executing the process with the V8 flag (and
 * the C allocator's arenas, ALLOCATOR_ENV, which also take effect only when a process starts).
 *
 * V8 sizes an isolate's young generation when the isolate starts. A worker thread's is set by
 * `resourceLimits` (the upstream thread's, src/runtime/daemon.ts), but the main thread's can only
 * come from the command line. So when the main thread itself polls or routes (`threads: 1`, or
 * a process whose roles leave it no upstream thread), `statuswatch run` re-executes itself once,
 * before it starts anything, with the upstream thread's semi-space: the same process (same PID,
 * same standard streams, same environment plus a marker), now with the flag. This needs
 * `process.execve` (Node.js 22.15 / 23.11 and later: the Docker image's Node.js has it). Where
 * Node.js lacks it, or the command line or `NODE_OPTIONS` already sets the flag, or the process
 * was re-executed already, the daemon runs on as it is.
 *
 * The re-executed command line also carries HEAP_FLAGS (`reexecFlags`), so that they hold from
 * the process's first collection, and the STARTUP_FLAGS its V8 version takes.
 *
 * A main thread that only delivers gets a larger one (DELIVERY_SEMI_SPACE_MB): a small young
 * generation slows the delivery path in a storm, V8's default holds more than a storm needs
 * (docs/performance.md). The flag is the process's: delivery threads beyond the main one take it
 * too; the upstream thread's `resourceLimits` set its own.
 */
import type { Role } from './plan.js';
import {
  DELIVERY_SEMI_SPACE_MB,
  HEAP_FLAGS,
  UPSTREAM_SEMI_SPACE_MB,
  flagName,
  startupFlags,
} from './heap.js';

/** Set in the environment of the re-executed process: it never re-executes again. */
export const REEXEC_MARKER_ENV = 'STATUSWATCH_REEXECUTED';

/**
 * The C allocator's settings, read once when the process starts (so they too need the
 * re-execution). glibc gives each thread that allocates its own arena, up to 8 per core, and
 * keeps what they freed: a daemon with worker threads, V8's helper threads and libuv's pool held
 * about 28 MB more at 20,000 services than with 2 arenas (docs/performance.md). An operator's own
 * value is kept; allocators other than glibc's ignore the variable.
 */
export const ALLOCATOR_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

const SEMI_SPACE_FLAG = '--max-semi-space-size';

/** Flags that start a profiler with the process: it runs on as it is (see `reexecPlan`). */
const PROFILER_FLAGS: ReadonlySet<string> = new Set(['--cpu-prof', '--prof', '--heap-prof']);

/** The V8 flags the main thread wants on its command line for the roles it runs. */
export function mainHeapFlags(mainRoles: readonly Role[]): string[] {
  if (mainRoles.includes('poll') || mainRoles.includes('route'))
    return [`${SEMI_SPACE_FLAG}=${String(UPSTREAM_SEMI_SPACE_MB)}`];
  if (mainRoles.includes('deliver'))
    return [`${SEMI_SPACE_FLAG}=${String(DELIVERY_SEMI_SPACE_MB)}`];
  return [];
}

export interface ReexecInput {
  mainRoles: readonly Role[];
  /** `process.execPath`, `process.execArgv`, `process.argv`. */
  execPath: string;
  execArgv: readonly string[];
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  /** Whether this Node.js has `process.execve`. */
  canExecve: boolean;
  /** `process.versions.v8`: which STARTUP_FLAGS this V8 takes (none when absent). */
  v8Version?: string;
}

/** The flags `NODE_OPTIONS` gives. */
function nodeOptions(env: ReexecInput['env']): string[] {
  return (env['NODE_OPTIONS'] ?? '').split(/\s+/).filter((arg) => arg !== '');
}

/** The flags the process started with: its command line's, then `NODE_OPTIONS`'. */
function givenFlags(input: Pick<ReexecInput, 'execArgv' | 'env'>): string[] {
  return [...input.execArgv, ...nodeOptions(input.env)];
}

/**
 * The flags the re-executed process gets: `mainHeapFlags`, and HEAP_FLAGS, which the daemon also
 * sets at run time (`applyHeapFlags`) but which then come too late for the first full collection.
 * V8 computes the old generation's limit at each one; the first runs while the program loads,
 * before the daemon can set anything, and without `--heap-growing-percent` it let the heap grow
 * to about four times what it kept (20 MB live, an 83 MB limit): the first sync at 20,000
 * services then ran up to that limit before the next one (docs/performance.md). Then the
 * STARTUP_FLAGS of `v8Version`, which V8 reads only as the process starts.
 */
export function reexecFlags(mainRoles: readonly Role[], v8Version = ''): string[] {
  return [...mainHeapFlags(mainRoles), ...HEAP_FLAGS, ...startupFlags(v8Version)];
}

/** Those of `flags` the process did not start with. */
function missingOf(flags: readonly string[], given: readonly string[]): string[] {
  return flags.filter((flag) => !given.some((arg) => flagName(arg) === flagName(flag)));
}

/** `mainHeapFlags` the process did not start with. */
function missingFlags(mainRoles: readonly Role[], given: readonly string[]): string[] {
  return missingOf(mainHeapFlags(mainRoles), given);
}

/** What to re-execute (pure): null when the process should run on as it is. */
export function reexecPlan(input: ReexecInput): {
  file: string;
  args: string[];
  env: Record<string, string>;
  flags: string[];
  /** The variables of ALLOCATOR_ENV the environment lacked (set in `env`). */
  allocator: string[];
} | null {
  if (!input.canExecve || input.env[REEXEC_MARKER_ENV] !== undefined) return null;
  const given = givenFlags(input);
  // A profiler started with the process arms a SIGPROF interval timer, which outlives execve
  // while the signal's handler does not: the new process would die of the next tick.
  if (given.some((arg) => PROFILER_FLAGS.has(flagName(arg)))) return null;
  const flags = missingOf(reexecFlags(input.mainRoles, input.v8Version), given);
  const allocator = Object.keys(ALLOCATOR_ENV).filter((name) => input.env[name] === undefined);
  if (flags.length === 0 && allocator.length === 0) return null;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.env)) if (v !== undefined) env[k] = v;
  for (const name of allocator) env[name] = ALLOCATOR_ENV[name] ?? '';
  env[REEXEC_MARKER_ENV] = '1';
  return {
    file: input.execPath,
    args: [input.execPath, ...flags, ...input.execArgv, ...input.argv.slice(1)],
    env,
    flags,
    allocator,
  };
}

type Execve = (file: string, args: string[], env: Record<string, string>) => never;

/** Whether this Node.js can re-execute the process (`process.execve`, not on Windows). */
function canExecve(): boolean {
  return (
    typeof (process as unknown as { execve?: Execve }).execve === 'function' &&
    process.platform !== 'win32'
  );
}

/**
 * Re-executes the process with the main thread's heap flags when `reexecPlan` says so; returns
 * (without doing anything) otherwise. Call it before anything is started: nothing of this process
 * survives but its PID, environment and standard streams.
 */
export function reexecWithHeapFlags(mainRoles: readonly Role[]): void {
  const execve = (process as unknown as { execve?: Execve }).execve;
  const plan = reexecPlan({
    mainRoles,
    execPath: process.execPath,
    execArgv: process.execArgv,
    argv: process.argv,
    env: process.env,
    canExecve: canExecve(),
    v8Version: process.versions.v8,
  });
  if (plan === null || execve === undefined) return;
  execve.call(process, plan.file, plan.args, plan.env);
}

/** The main thread's heap settings as the process runs, for the start-up log (`threads:planned`). */
export interface HeapReport {
  /** This process is the re-executed one (`REEXEC_MARKER_ENV`). */
  reexecuted: boolean;
  /** The young generation flag the process runs with (`--max-semi-space-size=2`), or null: V8's default. */
  semiSpace: string | null;
  /** `MALLOC_ARENA_MAX` as the process started with it, or null: glibc's default. */
  mallocArenaMax: string | null;
  /**
   * Why the main thread runs without the young generation it wants (`mainHeapFlags`), or null
   * when it has it: a profiler started with the process, this Node.js has no `process.execve`,
   * or the environment came with `REEXEC_MARKER_ENV` already set.
   */
  without: 'profiler' | 'no_execve' | 'marker' | null;
}

/** What the main thread runs with, and why not what it wants (pure; `reexecPlan`'s counterpart). */
export function heapReport(input: Omit<ReexecInput, 'execPath' | 'argv'>): HeapReport {
  const given = givenFlags(input);
  // Node.js applies NODE_OPTIONS before the command line: the command line's last one wins.
  const semiSpace =
    [...nodeOptions(input.env), ...input.execArgv].findLast(
      (arg) => flagName(arg) === SEMI_SPACE_FLAG,
    ) ?? null;
  const missing = missingFlags(input.mainRoles, given).length > 0;
  return {
    // Not when the marker came with the environment and the flags did not.
    reexecuted: input.env[REEXEC_MARKER_ENV] !== undefined && !missing,
    semiSpace,
    mallocArenaMax: input.env['MALLOC_ARENA_MAX'] ?? null,
    without: !missing
      ? null
      : given.some((arg) => PROFILER_FLAGS.has(flagName(arg)))
        ? 'profiler'
        : !input.canExecve
          ? 'no_execve'
          : 'marker',
  };
}

/** `heapReport` of this process. */
export function processHeapReport(mainRoles: readonly Role[]): HeapReport {
  return heapReport({
    mainRoles,
    execArgv: process.execArgv,
    env: process.env,
    canExecve: canExecve(),
  });
}
