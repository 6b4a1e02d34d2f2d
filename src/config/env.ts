import type { ConfigIssue } from './errors.js';
import { formatPath, type ConfigPath } from './path.js';

/** Where `${VAR}` references are looked up (injected; `process.env` in production). */
export type EnvSource = Readonly<Record<string, string | undefined>>;

export interface SubstitutionResult {
  /** The input with every string scalar expanded (unresolvable references become ''). */
  value: unknown;
  /** One issue per unresolvable or malformed reference, naming the config path and variable. */
  issues: (ConfigIssue & { segments: ConfigPath })[];
  /** Paths (formatted) whose value could not be fully resolved. */
  failedPaths: string[];
  /** Environment values that were inserted, so callers can keep them out of messages. */
  inserted: string[];
}

interface StringExpansion {
  value: string;
  problems: string[];
  inserted: string[];
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^]*))?$/;

/**
 * Expands one string: `${VAR}` (error when VAR is unset), `${VAR:-default}` (default when VAR
 * is unset or empty), and `$${...}` → a literal `${...}`. A lone `$` stays as it is. Expansion
 * is a single pass: an inserted value is never expanded again. Problems never quote the text.
 */
export function expandString(text: string, env: EnvSource): StringExpansion {
  let value = '';
  const problems: string[] = [];
  const inserted: string[] = [];
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar === -1) {
      value += text.slice(i);
      break;
    }
    value += text.slice(i, dollar);
    if (text.startsWith('$${', dollar)) {
      value += '${';
      i = dollar + 3;
      continue;
    }
    if (!text.startsWith('${', dollar)) {
      value += '$';
      i = dollar + 1;
      continue;
    }
    const close = text.indexOf('}', dollar + 2);
    if (close === -1) {
      problems.push('unterminated ${ reference (write $${ for a literal ${)');
      break;
    }
    i = close + 1;
    const match = REFERENCE.exec(text.slice(dollar + 2, close));
    if (match === null) {
      problems.push('malformed ${...} reference: expected ${NAME} or ${NAME:-default}');
      continue;
    }
    const [, name = '', fallback] = match;
    // Own variables only: `${toString}` is not set, not a function's text.
    const found = Object.hasOwn(env, name) ? env[name] : undefined;
    if (fallback !== undefined && (found === undefined || found === '')) {
      value += fallback;
    } else if (found === undefined) {
      problems.push(
        `environment variable ${name} is not set (use \${${name}:-} to allow an empty value)`,
      );
    } else {
      value += found;
      if (found !== '') inserted.push(found);
    }
  }
  return { value, problems, inserted };
}

/**
 * Applies `expandString` to every string scalar of a parsed YAML value (never to keys, and
 * never to the raw text, so an environment value cannot inject YAML structure).
 */
export function substituteEnv(value: unknown, env: EnvSource): SubstitutionResult {
  const result: SubstitutionResult = {
    value: undefined,
    issues: [],
    failedPaths: [],
    inserted: [],
  };
  result.value = walk(value, [], env, result);
  return result;
}

function walk(value: unknown, path: ConfigPath, env: EnvSource, out: SubstitutionResult): unknown {
  if (typeof value === 'string') {
    const expansion = expandString(value, env);
    out.inserted.push(...expansion.inserted);
    if (expansion.problems.length > 0) {
      const formatted = formatPath(path);
      out.failedPaths.push(formatted);
      for (const message of expansion.problems) {
        out.issues.push({ path: formatted, message, segments: path });
      }
    }
    return expansion.value;
  }
  if (Array.isArray(value)) {
    return value.map((item: unknown, index) => walk(item, [...path, index], env, out));
  }
  if (isPlainObject(value)) {
    // fromEntries defines own properties, so a `__proto__` key stays a plain (rejected) key.
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, walk(item, [...path, key], env, out)]),
    );
  }
  return value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
