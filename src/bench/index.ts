/**
 * `npm run bench`: measures the performance targets in README.md and prints tables.
 *
 *   node dist-bench/bench/index.js [--only cycle|fanout|latency|memory|storm|soak[,...]]
 *                            [--soak-minutes N] [--soak-services N] [--soak-plain]
 *
 * Without `--only`, every section but the soak runs (it takes minutes: 10 by default; name it).
 *
 * Every figure comes with a ratio against a baseline measured in the same run (the machine is
 * shared and noisy). A missed target prints FAIL but does not change the exit code; only a
 * measurement that crashes does (exit 1). Keys live under a random `{swbench-xxxxxx...}` prefix
 * and are deleted at the end. Nothing is written to disk but temporary files (daemon and
 * Alertmanager configs, Alertmanager's storage), removed at the end. The storm section compares
 * with Prometheus Alertmanager when it is installed (`apt-get install prometheus-alertmanager`).
 */
import { toError } from '../errors.js';
import { parseBenchArgs, type BenchArgs, type SectionName } from './args.js';
import {
  RUN_PREFIX,
  deleteRunKeys,
  fmt,
  printTable,
  printTargets,
  type SectionResult,
  type TargetResult,
} from './support.js';

type Runner = (progress: (line: string) => void) => Promise<SectionResult>;

/** Section modules are loaded when their section runs: one that does not load crashes only itself. */
const RUNNERS: Record<SectionName, (args: BenchArgs) => Promise<Runner>> = {
  cycle: async () => {
    const { runCycleBench } = await import('./cycle.js');
    return (progress) => runCycleBench(progress);
  },
  fanout: async () => (await import('./fanout.js')).runFanoutBench,
  latency: async () => (await import('./latency.js')).runLatencyBench,
  memory: async () => (await import('./memory.js')).runMemoryBench,
  storm: async () => (await import('./storm.js')).runStormBench,
  soak: async ({ soak }) => {
    const { runSoakBench, SHIPPED_FLAGS } = await import('./soak.js');
    return (progress) =>
      runSoakBench(progress, {
        minutes: soak.minutes,
        services: soak.services,
        nodeFlags: soak.plain ? [] : SHIPPED_FLAGS,
      });
  },
};

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${toError(err).message}\n`);
    return 1;
  }
  const sections: SectionName[] = args.sections;
  const t0 = performance.now();
  const progress = (line: string): void => {
    process.stderr.write(`[${fmt((performance.now() - t0) / 1000, 1)}s] ${line}\n`);
  };
  process.stdout.write(
    `# statuswatch bench — node ${process.version}, sections: ${sections.join(', ')}, redis prefix {${RUN_PREFIX}...}\n`,
  );
  const targets: TargetResult[] = [];
  const crashed: string[] = [];
  for (const name of sections) {
    try {
      const run = await RUNNERS[name](args);
      const result = await run(progress);
      for (const table of result.tables) printTable(table);
      targets.push(...result.targets);
      if (result.crashed !== undefined && result.crashed.length > 0) crashed.push(name);
    } catch (err) {
      const e = toError(err);
      crashed.push(name);
      process.stdout.write(`\n## ${name}: measurement crashed: ${e.message}\n`);
      process.stderr.write(`${e.stack ?? e.message}\n`);
    }
  }
  try {
    const deleted = await deleteRunKeys();
    progress(`deleted ${deleted} keys of {${RUN_PREFIX}...}`);
  } catch (err) {
    process.stderr.write(`could not delete bench keys: ${toError(err).message}\n`);
  }
  if (targets.length > 0) printTargets(targets);
  process.stdout.write(
    `\nbench took ${fmt((performance.now() - t0) / 1000, 1)} s${
      crashed.length > 0 ? `; crashed: ${crashed.join(', ')}` : ''
    }\n`,
  );
  return crashed.length > 0 ? 1 : 0;
}

main().then(
  (code) => {
    // Exit explicitly: a stray keep-alive socket or BullMQ timer must not keep the bench alive.
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`bench failed: ${toError(err).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
