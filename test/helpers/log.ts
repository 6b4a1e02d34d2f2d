import { createLogger, type Logger } from '../../src/log.js';

/** A real logger at `level` whose lines are kept, parsed, for a test to assert on. */
export function captureLog(level = 'info'): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level,
    destination: {
      write: (line: string) => {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  });
  return { log, lines };
}
