/**
 * The one error of the ops server's HTTP edge (`/api/v1`, `/admin/*`, the console's JSON
 * answers): a status, a stable `code`, a message, the request field at fault (or null) and, when
 * several fields are, every issue. Its JSON is `{error: {code, message, field, issues?}}`.
 * Messages never echo a submitted value (it may be a secret).
 */
import type { ServerResponse } from 'node:http';
import { StatuswatchError } from '../errors.js';
import { BodyError } from './body.js';

/** One problem with a request, at the field it concerns. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** The JSON of every error answer of the ops server. */
export interface ErrorBody {
  error: { code: string; message: string; field: string | null; issues?: FieldIssue[] };
}

export class HttpError extends StatuswatchError {
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

  /** The response body (`issues` only when there are several). */
  body(): ErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        field: this.field,
        ...(this.issues.length > 1 ? { issues: [...this.issues] } : {}),
      },
    };
  }

  /** Every issue, for a form to show at its fields: the listed ones, else the one field's. */
  fieldIssues(): readonly FieldIssue[] {
    if (this.issues.length > 0) return this.issues;
    if (this.field === null) return [];
    return [{ field: this.field, message: this.message.replace(/^[^:]*: /, '') }];
  }
}

/** A 400 listing every issue; `field` and `message` are the first one's. */
export function invalid(issues: readonly FieldIssue[], code = 'invalid'): HttpError {
  const first = issues[0] ?? { field: '(root)', message: 'invalid request' };
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new HttpError(400, code, `${first.field}: ${first.message}${more}`, first.field, issues);
}

const CODE_OF_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'too_large',
  429: 'rate_limited',
  503: 'unavailable',
};

/** An error whose code is its status's usual one (`forbidden` for a 403…), no field at fault. */
export function httpError(
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): HttpError {
  return new HttpError(status, CODE_OF_STATUS[status] ?? 'internal', message, null, [], headers);
}

/** A refused request body (src/server/body.ts): 413 `too_large`, else 400 `invalid_json`. */
export function bodyRefused(err: BodyError): HttpError {
  if (err.status === 413)
    return new HttpError(413, 'too_large', err.message, '(root)', [], err.headers);
  return invalid([{ field: '(root)', message: err.message }], 'invalid_json');
}

/**
 * What a caught value answers: an HttpError itself, a refused body as {@link bodyRefused},
 * anything else a 500 `internal` (its details are for the log, never the client).
 */
export function httpErrorOf(caught: unknown): HttpError {
  if (caught instanceof HttpError) return caught;
  if (caught instanceof BodyError) return bodyRefused(caught);
  return new HttpError(500, 'internal', 'internal error');
}

/** Answers an error as JSON, with the headers it asks for (`retry-after`, `allow`…). */
export function sendError(
  res: ServerResponse,
  err: HttpError,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(err.status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    ...headers,
    ...err.headers,
  });
  res.end(JSON.stringify(err.body()));
}
