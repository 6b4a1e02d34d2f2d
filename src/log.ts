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

function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // Most lines hold no secret: a search is cheaper than splitting every line.
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

/**
 * JSON logs with a stable field set (event, feedId, transitionId, channel, outcome). Secrets are
 * removed twice: by path (`redact`) and by value (every configured secret string is scrubbed from
 * the serialized line, wherever it hides: a URL in an error message, a stack, a nested field).
 */
export function createLogger(options: LogOptions = {}): Logger {
  const secrets = [...(options.secrets ?? [])]
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length);
  const base: LoggerOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    base: { service: 'statuswatch' },
    redact: { paths: PINO_REDACT_PATHS, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  const sink: DestinationStream = options.destination ?? pino.destination({ dest: 1, sync: false });
  const scrubbing: DestinationStream =
    secrets.length === 0
      ? sink
      : {
          write: (line: string) => {
            sink.write(scrub(line, secrets));
          },
        };
  if (options.pretty === true && options.destination === undefined) {
    const transport = pino.transport({
      target: 'pino-pretty',
      options: { colorize: true },
    }) as DestinationStream;
    return pino(
      base,
      secrets.length === 0
        ? transport
        : {
            write: (line: string) => {
              transport.write(scrub(line, secrets));
            },
          },
    );
  }
  return pino(base, scrubbing);
}

/** A logger that writes nowhere (tests that do not assert on logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
