/**
 * Tests CI runs once per run: `.ci/run` runs the suite a second time on the Docker image's Node
 * major with STATUSWATCH_SKIP_TOPOLOGY_TESTS=1, and that pass skips the slow ones (Redis
 * topologies and outages, the four-thread daemons) to keep within CI's time budget.
 */
import { it } from 'vitest';

/** True on CI's second pass: the tests below are skipped there. */
export const secondCiPass = process.env.STATUSWATCH_SKIP_TOPOLOGY_TESTS === '1';

/** `it` for a test run once per CI run (`it.skip` on the second pass). */
export const itOncePerCi = secondCiPass ? it.skip : it;

/** The cases of an `it.each`: `everyPass`, then `oncePerCi` unless this is the second pass. */
export function casesOncePerCi<T>(everyPass: readonly T[], oncePerCi: readonly T[]): T[] {
  return secondCiPass ? [...everyPass] : [...everyPass, ...oncePerCi];
}
