/** The daemon's own heap settings (docs/performance.md). */
import { setFlagsFromString } from 'node:v8';

/**
 * The upstream thread's young generation (MB): V8 sizes it at three semi-spaces, so 6 MB is the
 * 2 MB semi-space that held memory at 20,000 services (docs/performance.md). The delivery
 * threads keep V8's default, which is faster in a storm.
 */
export const UPSTREAM_YOUNG_GENERATION_MB = 6;

/**
 * The same young generation as a semi-space size (`--max-semi-space-size`), for a main thread
 * that polls or routes (src/runtime/reexec.ts).
 */
export const UPSTREAM_SEMI_SPACE_MB = UPSTREAM_YOUNG_GENERATION_MB / 3;

/**
 * The semi-space of a main thread that delivers and neither polls nor routes (src/runtime/reexec.ts).
 * V8's default on the image's Node.js lets an idle delivering thread hold a young generation of
 * 20-25 MB; 8 MB semi-spaces kept the storm's rate and cut the RSS (docs/performance.md). Smaller
 * ones slow the storm (4 MB: 0.55x to 0.43x of Alertmanager's rate in one run).
 */
export const DELIVERY_SEMI_SPACE_MB = 8;

/** The same as a worker thread's young generation (three semi-spaces): the spare delivery threads'. */
export const DELIVERY_YOUNG_GENERATION_MB = DELIVERY_SEMI_SPACE_MB * 3;

/**
 * V8 flags the daemon sets for itself, for every thread, unless the command line gives them: the
 * heap grows by 10% at a time, so each poll's garbage does not pile up (docs/performance.md). V8
 * reads it at each full collection, so `applyHeapFlags` sets it for the collections to come
 * (Node.js without `process.execve`); the re-execution (src/runtime/reexec.ts) also puts it on
 * the command line, for the first collection, which runs while the program loads.
 */
export const HEAP_FLAGS: readonly string[] = ['--heap-growing-percent=10'];

/**
 * V8 flags for the process's command line only (src/runtime/reexec.ts), where V8 reads them as
 * the process starts, on the V8 versions they were measured on: Node.js refuses to start with a
 * flag its V8 does not know, so another version runs without them.
 *
 * `--memory-pool-timeout=0`: V8 keeps the pages a full collection freed in a pool for 8 s before
 * it gives them back; at 20,000 services that held 15-22 MB through each poll's collections
 * (`--trace-gc`), the RSS's plateaus. Given back at once, the RSS's median in the memory bench
 * was 145-149 MB instead of 150-155 (three runs each), and the storm's CPU per delivery did not
 * change (0.388 ms either way).
 */
export const STARTUP_FLAGS: readonly {
  flag: string;
  /** The first V8 version (major, minor) it is given to, and the first it is not. */
  v8From: readonly [number, number];
  v8Below: readonly [number, number];
}[] = [{ flag: '--memory-pool-timeout=0', v8From: [14, 6], v8Below: [15, 0] }];

/** STARTUP_FLAGS for the V8 `version` (`process.versions.v8`, `14.6.202.34-node.40`). */
export function startupFlags(version: string): string[] {
  const [major, minor] = version.split('.').map(Number);
  if (major === undefined || minor === undefined || !Number.isInteger(major + minor)) return [];
  const before = (a: readonly [number, number]): boolean =>
    major < a[0] || (major === a[0] && minor < a[1]);
  return STARTUP_FLAGS.filter((f) => !before(f.v8From) && before(f.v8Below)).map((f) => f.flag);
}

/** A command-line flag's name, as V8 reads it (`--max_semi_space_size` is `--max-semi-space-size`). */
export function flagName(arg: string): string {
  return arg.split('=')[0]?.replaceAll('_', '-') ?? '';
}

/** Sets HEAP_FLAGS not already on the command line (`execArgv`). */
export function applyHeapFlags(execArgv: readonly string[] = process.execArgv): string[] {
  const applied: string[] = [];
  for (const flag of HEAP_FLAGS) {
    if (execArgv.some((arg) => flagName(arg) === flagName(flag))) continue;
    setFlagsFromString(flag);
    applied.push(flag);
  }
  return applied;
}
