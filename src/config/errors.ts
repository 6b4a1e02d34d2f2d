import { StatuswatchError } from '../errors.js';

/** One problem in a config file. `message` describes the expectation and never echoes a value. */
export interface ConfigIssue {
  /** e.g. `channels.oncall.webhookUrl`, `subscriptions[0].events[2]`, `line 3, column 5`. */
  path: string;
  message: string;
  /** 1-based line in the source file, when known. */
  line?: number;
}

export type ConfigErrorCode = 'config_invalid' | 'config_not_found' | 'config_unreadable';

/**
 * Thrown by the config loader. Lists every problem at once, one per line in `message`;
 * neither `message` nor `issues` contains a value from the config (so no secret).
 */
export class ConfigError extends StatuswatchError {
  readonly source: string;
  readonly issues: ConfigIssue[];

  constructor(
    code: ConfigErrorCode,
    source: string,
    issues: ConfigIssue[],
    options?: { cause?: unknown },
  ) {
    super(code, formatConfigError(source, issues), options);
    this.source = source;
    this.issues = issues;
  }
}

export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line === undefined ? issue.path : `${issue.path} (line ${issue.line})`;
  return `${where}: ${issue.message}`;
}

function formatConfigError(source: string, issues: ConfigIssue[]): string {
  const count = issues.length === 1 ? '1 problem' : `${issues.length} problems`;
  return [`invalid config ${source}: ${count}`, ...issues.map((i) => `  ${formatIssue(i)}`)].join(
    '\n',
  );
}
