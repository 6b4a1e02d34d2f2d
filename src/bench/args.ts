/** Command-line arguments of the bench (`index.ts`). */
import { BenchError } from './errors.js';

export const SECTIONS = ['cycle', 'fanout', 'latency', 'memory', 'storm'] as const;
export type SectionName = (typeof SECTIONS)[number];

function isSection(name: string): name is SectionName {
  return (SECTIONS as readonly string[]).includes(name);
}

/** Parses `--only a,b` / `--only=a` (repeatable); all sections when absent. */
export function parseSections(argv: readonly string[]): SectionName[] {
  const wanted: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--only') {
      wanted.push(...(argv[i + 1] ?? '').split(','));
      i += 1;
    } else if (arg.startsWith('--only=')) {
      wanted.push(...arg.slice('--only='.length).split(','));
    } else if (arg === '--help' || arg === '-h') {
      throw new BenchError(
        'bench_usage',
        `usage: node dist/bench/index.js [--only ${SECTIONS.join('|')}[,...]]`,
      );
    } else {
      throw new BenchError(
        'bench_usage',
        `unknown argument ${arg}; usage: [--only ${SECTIONS.join('|')}[,...]]`,
      );
    }
  }
  if (wanted.length === 0) return [...SECTIONS];
  const out: SectionName[] = [];
  for (const name of wanted.map((w) => w.trim()).filter((w) => w !== '')) {
    if (!isSection(name))
      throw new BenchError(
        'bench_usage',
        `unknown section "${name}"; expected ${SECTIONS.join(', ')}`,
      );
    if (!out.includes(name)) out.push(name);
  }
  return out;
}
