/**
 * Errors of the `/api/v1` API: the ops server's one HTTP error (src/server/http-error.ts), each
 * answered as `{error: {code, message, field, issues?}}` with its HTTP status. `field` names the
 * offending field of the request (`channels[1]`, `url`, `name`), or is null when no single field
 * is at fault. Messages never echo a submitted value (it may be a secret).
 */
import type { z } from 'zod';
import { formatPath } from '../config/path.js';
import { HttpError, invalid, type FieldIssue } from '../server/http-error.js';

/** The API's name for the ops server's one HTTP error. */
export { HttpError as ApiError, invalid, type FieldIssue };

export function notFound(what: string, name: string): HttpError {
  return new HttpError(404, 'not_found', `no ${what} ${JSON.stringify(name)}`, null);
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
