import { readFile } from 'node:fs/promises';
import { LineCounter, isNode, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { errorCode, toError } from '../errors.js';
import { substituteEnv, type EnvSource } from './env.js';
import { ConfigError, type ConfigIssue } from './errors.js';
import { formatPath, type ConfigPath } from './path.js';
import { redactText } from './redact.js';
import { configSchema, type Config } from './schema.js';

export { ConfigError, type ConfigIssue } from './errors.js';

export const DEFAULT_CONFIG_PATH = 'config/statuswatch.yaml';

/** `--config`, then `$STATUSWATCH_CONFIG`, then `config/statuswatch.yaml` (relative to the cwd). */
export function resolveConfigPath(explicit?: string, env: EnvSource = process.env): string {
  if (explicit !== undefined && explicit !== '') return explicit;
  const fromEnv = env.STATUSWATCH_CONFIG;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return DEFAULT_CONFIG_PATH;
}

/** Reads, substitutes and validates a config file; throws `ConfigError` listing every problem. */
export async function loadConfig(file: string, env: EnvSource = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (caught) {
    const error = toError(caught);
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new ConfigError(
        'config_not_found',
        file,
        [{ path: '(file)', message: 'file not found (set --config or STATUSWATCH_CONFIG)' }],
        { cause: error },
      );
    }
    throw new ConfigError(
      'config_unreadable',
      file,
      [{ path: '(file)', message: `cannot read the file (${code})` }],
      { cause: error },
    );
  }
  return parseConfig(text, env, file);
}

/** Values substituted from the environment that are long enough to redact safely. */
const MIN_REDACTED_LENGTH = 8;

/** A type-error message that names the received type, never the value. */
const describeIssue: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'unrecognized_keys') {
    const allowed = issue.inst instanceof z.ZodObject ? Object.keys(issue.inst.shape) : [];
    return allowed.length === 0
      ? 'unknown key'
      : `unknown key (expected one of: ${allowed.join(', ')})`;
  }
  if (issue.code !== 'invalid_type') return undefined;
  if (issue.input === undefined) return 'required';
  const expected = EXPECTED_NAMES[issue.expected] ?? issue.expected;
  return `expected ${expected}, got ${typeName(issue.input)}`;
};

const EXPECTED_NAMES: Partial<Record<string, string>> = {
  object: 'a map',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
};

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return `a ${typeof value}`;
}

/** yaml's message without anything it quotes from the source (which could be a secret). */
function yamlMessage(message: string): string {
  return message.replace(/:\s[^]*$/, '').trim();
}

/** Parses config text: YAML → `${VAR}` substitution on string scalars → schema validation. */
export function parseConfig(text: string, env: EnvSource, sourceName = 'config'): Config {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  if (doc.errors.length > 0) {
    // yaml's own messages only; its pretty form would quote the source line (maybe a secret).
    const issues = doc.errors.map((error): ConfigIssue => {
      const { line, col } = lineCounter.linePos(error.pos[0]);
      return {
        path: `line ${line}, column ${col}`,
        message: `YAML syntax error: ${yamlMessage(error.message)}`,
      };
    });
    throw new ConfigError('config_invalid', sourceName, issues);
  }

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (caught) {
    throw new ConfigError(
      'config_invalid',
      sourceName,
      [{ path: '(root)', message: `YAML could not be resolved: ${toError(caught).name}` }],
      { cause: caught },
    );
  }
  if (raw === null || raw === undefined) {
    throw new ConfigError('config_invalid', sourceName, [
      {
        path: '(root)',
        message:
          'the config is empty; expected a map with upstream, redis, channels and subscriptions',
      },
    ]);
  }

  const substituted = substituteEnv(raw, env);
  const result = configSchema.safeParse(substituted.value, { error: describeIssue });
  if (result.success && substituted.issues.length === 0) return result.data;

  const failed = substituted.failedPaths;
  const schemaIssues = result.success ? [] : result.error.issues.flatMap(toConfigIssues);
  const issues: LocatedIssue[] = [
    ...substituted.issues,
    // A field whose variable is missing already has its issue; skip the consequences.
    ...schemaIssues.filter(
      (issue) =>
        !failed.some(
          (path) =>
            issue.path === path ||
            issue.path.startsWith(`${path}.`) ||
            issue.path.startsWith(`${path}[`),
        ),
    ),
  ];
  const secrets = substituted.inserted.filter((value) => value.length >= MIN_REDACTED_LENGTH);
  const located = issues.map((issue): ConfigIssue => {
    const line = lineOf(doc, lineCounter, issue.segments ?? []);
    const safe: ConfigIssue = {
      path: redactText(issue.path, secrets),
      message: redactText(issue.message, secrets),
    };
    return line === undefined ? safe : { ...safe, line };
  });
  located.sort((a, b) => (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER));
  throw new ConfigError('config_invalid', sourceName, located);
}

interface LocatedIssue extends ConfigIssue {
  segments?: ConfigPath;
}

function toConfigIssues(issue: z.core.$ZodIssue): LocatedIssue[] {
  const path = issue.path.filter((s): s is string | number => typeof s !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    // One issue per key, each at the key's own path.
    return issue.keys.map((key) => {
      const segments = [...path, key];
      return { path: formatPath(segments), message: issue.message, segments };
    });
  }
  if (issue.code === 'invalid_key') {
    const message = issue.issues[0]?.message ?? 'invalid key';
    return [{ path: formatPath(path), message, segments: path }];
  }
  return [{ path: formatPath(path), message: issue.message, segments: path }];
}

/** The 1-based line of the deepest node that exists along `path`. */
function lineOf(doc: Document, lineCounter: LineCounter, path: ConfigPath): number | undefined {
  for (let length = path.length; length >= 0; length -= 1) {
    const node: unknown = length === 0 ? doc.contents : doc.getIn(path.slice(0, length), true);
    if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
  }
  return undefined;
}
