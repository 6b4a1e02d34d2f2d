import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { PINO_REDACT_PATHS } from './config/redact.js';

export type { Logger };

export interface LogOptions {
  level?: string;
  /** Extra secret strings to scrub from every line (values from the loaded config). */
  secrets?: readonly string[];
  destination?: DestinationStream;
  pretty?: boolean;
}

/**
 * The secret strings one logger's lines are scrubbed of, longest first. It grows while the daemon
 * runs: channels stored through the API and reloaded configs bring secrets the config file the
 * logger was made with did not hold (`addLogSecrets`). Nothing is ever taken off the list: a
 * rotated secret may still turn up in a late line.
 */
class SecretList {
  values: string[] = [];

  add(values: Iterable<string>): void {
    const known = new Set(this.values);
    const fresh = [...values].filter((s) => s.length >= 4 && !known.has(s));
    if (fresh.length === 0) return;
    this.values = [...new Set([...this.values, ...fresh])].sort((a, b) => b.length - a.length);
  }
}

/** sonic-boom with `contentMode: 'buffer'` takes Buffers (its types name strings only). */
interface ByteSink {
  write(data: Buffer): boolean;
}

/** The secret list of each stream `createLogger` made (shared by a logger and its children). */
const listsByStream = new WeakMap<object, SecretList>();

/**
 * Adds secrets to the strings a logger (made by `createLogger`, or a child of one) scrubs from
 * every line from now on. False for any other logger (nothing to add to).
 */
export function addLogSecrets(log: Logger, values: Iterable<string>): boolean {
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
  const list =
    typeof stream === 'object' && stream !== null ? listsByStream.get(stream) : undefined;
  if (list === undefined) return false;
  list.add(values);
  return true;
}

function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // Most lines hold no secret: a search is cheaper than splitting every line.
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

/**
 * Where a logger's lines go: the given destination, pino-pretty, or stdout. Stdout takes bytes:
 * in its text mode sonic-boom measures its whole pending buffer on every line (flattening it),
 * which copied about 8 KB per line in a burst of delivery lines.
 */
function lineWriter(options: LogOptions): (line: string) => void {
  const text: DestinationStream | undefined =
    options.destination ??
    (options.pretty === true
      ? pino.transport({ target: 'pino-pretty', options: { colorize: true } })
      : undefined);
  if (text !== undefined)
    return (line) => {
      text.write(line);
    };
  const stdout = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' });
  const bytes = stdout as unknown as ByteSink;
  return (line) => {
    bytes.write(Buffer.from(line));
  };
}

/**
 * JSON logs with a stable field set (event, feedId, transitionId, channel, outcome). Secrets are
 * removed twice: by path (`redact`) and by value (every configured secret string is scrubbed from
 * the serialized line, wherever it hides: a URL in an error message, a stack, a nested field).
 */
export function createLogger(options: LogOptions = {}): Logger {
  const secrets = new SecretList();
  secrets.add(options.secrets ?? []);
  const base: LoggerOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    base: { service: 'statuswatch' },
    redact: { paths: PINO_REDACT_PATHS, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  const write = lineWriter(options);
  // Always in place, as secrets may come later; a line is only searched while the list has some.
  const scrubbing: DestinationStream = {
    write: (line: string) => {
      write(secrets.values.length === 0 ? line : scrub(line, secrets.values));
    },
  };
  listsByStream.set(scrubbing, secrets);
  return pino(base, scrubbing);
}

/** A logger that writes nowhere (tests that do not assert on logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
