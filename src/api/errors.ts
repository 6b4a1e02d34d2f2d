/**
 * Errors of the `/api/v1` API: each becomes `{error: {code, message, field}}` with its HTTP
 * status. `field` names the offending field of the request (`channels[1]`, `url`, `name`), or is
 * null when no single field is at fault. Messages never echo a submitted value (it may be a
 * secret).
 */
import type { z } from 'zod';
import { StatuswatchError } from '../errors.js';
import { formatPath } from '../config/path.js';

/** One problem with a request, at the field it concerns. */
export interface FieldIssue {
  field: string;
  message: string;
}

export class ApiError extends StatuswatchError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    readonly field: string | null = null,
    readonly issues: readonly FieldIssue[] = [],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message);
  }

  /** The response body. */
  body(): {
    error: { code: string; message: string; field: string | null } & Record<string, unknown>;
  } {
    return {
      error: {
        code: this.code,
        message: this.message,
        field: this.field,
        ...(this.issues.length > 1 ? { issues: this.issues } : {}),
      },
    };
  }
}

/** A 400 listing every issue; `field` and `message` are the first one's. */
export function invalid(issues: readonly FieldIssue[], code = 'invalid'): ApiError {
  const first = issues[0] ?? { field: '(root)', message: 'invalid request' };
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new ApiError(400, code, `${first.field}: ${first.message}${more}`, first.field, issues);
}

export function notFound(what: string, name: string): ApiError {
  return new ApiError(404, 'not_found', `no ${what} ${JSON.stringify(name)}`, null);
}

/**
 * Zod issues as field issues, each path prefixed by `prefix` (where the validated part sits in
 * the request body); an unknown key is named itself.
 */
export function issuesOf(
  error: z.ZodError,
  prefix: readonly (string | number)[] = [],
): FieldIssue[] {
  return error.issues.flatMap((issue): FieldIssue[] => {
    const path = [
      ...prefix,
      ...issue.path.filter((s): s is string | number => typeof s !== 'symbol'),
    ];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: formatPath([...path, key]),
        message: 'unknown key',
      }));
    }
    return [{ field: formatPath(path), message: issue.message }];
  });
}
