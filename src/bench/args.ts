/** Command-line arguments of the bench (`index.ts`). */
import { BenchError } from './errors.js';

export const SECTIONS = ['cycle', 'fanout', 'latency', 'memory', 'storm', 'soak'] as const;
export type SectionName = (typeof SECTIONS)[number];
/** What runs without `--only`: every section but the soak (minutes long; name it to run it). */
export const DEFAULT_SECTIONS: readonly SectionName[] = SECTIONS.filter((s) => s !== 'soak');

export interface SoakArgs {
  /** Minutes the soak runs (fractions allowed, e.g. 0.5 for a quick check). */
  minutes: number;
  services: number;
  /** Run the daemon as a plain `node dist-bench/cli.js run`, without the shipped Node.js flags. */
  plain: boolean;
}

export interface BenchArgs {
  sections: SectionName[];
  soak: SoakArgs;
}

export const SOAK_ARG_DEFAULTS: SoakArgs = { minutes: 10, services: 20_000, plain: false };

const USAGE = `usage: node dist-bench/bench/index.js [--only ${SECTIONS.join('|')}[,...]] [--soak-minutes N] [--soak-services N] [--soak-plain]`;

function isSection(name: string): name is SectionName {
  return (SECTIONS as readonly string[]).includes(name);
}

function numberArg(name: string, raw: string | undefined, min: number, max: number): number {
  const value = Number(raw);
  if (
    raw === undefined ||
    raw.trim() === '' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max
  )
    throw new BenchError(
      'bench_usage',
      `${name} expects a number from ${String(min)} to ${String(max)}, got ${String(raw)}; ${USAGE}`,
    );
  return value;
}

/**
 * Parses `--only a,b` / `--only=a` (repeatable; DEFAULT_SECTIONS when absent) and the soak's
 * `--soak-minutes N`, `--soak-services N` (also as `--opt=N`) and `--soak-plain`.
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const wanted: string[] = [];
  const soak: SoakArgs = { ...SOAK_ARG_DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq !== -1 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq !== -1 ? arg.slice(eq + 1) : undefined;
    const value = (): string | undefined => {
      if (inline !== undefined) return inline;
      i += 1;
      return argv[i];
    };
    switch (name) {
      case '--only':
        wanted.push(...(value() ?? '').split(','));
        break;
      case '--soak-minutes':
        soak.minutes = numberArg(name, value(), 0.05, 24 * 60);
        break;
      case '--soak-services':
        soak.services = Math.round(numberArg(name, value(), 1, 200_000));
        break;
      case '--soak-plain':
        if (inline !== undefined)
          throw new BenchError('bench_usage', `${name} takes no value; ${USAGE}`);
        soak.plain = true;
        break;
      case '--help':
      case '-h':
        throw new BenchError('bench_usage', USAGE);
      default:
        throw new BenchError('bench_usage', `unknown argument ${arg}; ${USAGE}`);
    }
  }
  if (wanted.length === 0) return { sections: [...DEFAULT_SECTIONS], soak };
  const sections: SectionName[] = [];
  for (const w of wanted.map((x) => x.trim()).filter((x) => x !== '')) {
    if (!isSection(w))
      throw new BenchError(
        'bench_usage',
        `unknown section "${w}"; expected ${SECTIONS.join(', ')}`,
      );
    if (!sections.includes(w)) sections.push(w);
  }
  return { sections, soak };
}

/** The sections of `argv` (see parseBenchArgs). */
export function parseSections(argv: readonly string[]): SectionName[] {
  return parseBenchArgs(argv).sections;
}
