/**
 * The one request-body reader of the ops server: the tenancy API (`/api/v1`), the admin API
 * (`/admin/*`) and the console's forms all read their bodies here, each with its own size limit.
 *
 * Bounded before anything walks the value:
 * - size: past the limit the rest is read and dropped, never buffered, up to
 *   `DRAIN_LIMIT_BYTES` (so a client that sends its whole body before reading the answer gets the
 *   413 rather than a reset connection); past that the 413 goes out at once. Either way the 413
 *   asks for the connection to be closed;
 * - depth: JSON text is scanned for nesting (`[` and `{` outside strings, a linear pass) before
 *   `JSON.parse`, so a value deeper than `MAX_JSON_DEPTH` is never built, and nothing later
 *   (`structuredClone`, zod, `JSON.stringify`) can run out of stack on it;
 * - form-encoded bodies: at most `MAX_FORM_FIELDS` fields.
 *
 * Problems are `BodyError`s (413 too large, 400 empty, malformed or too deep), with a message
 * naming the problem; each surface turns them into its own error shape.
 */
import type { IncomingMessage } from 'node:http';

/** An oversized body is read and dropped up to this size before the 413, then the 413 goes at once. */
export const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;
/** Deepest JSON nesting accepted (objects and arrays; `{"a":[1]}` is 2 deep). */
export const MAX_JSON_DEPTH = 64;
/** Most fields a form-encoded body may carry. */
export const MAX_FORM_FIELDS = 1000;

export type BodyProblem = 'too_large' | 'empty' | 'too_deep' | 'invalid_json' | 'too_many_fields';

export class BodyError extends Error {
  constructor(
    readonly status: 400 | 413,
    readonly problem: BodyProblem,
    message: string,
  ) {
    super(message);
    this.name = 'BodyError';
  }

  /** Response headers the error asks for (a 413 closes the connection). */
  get headers(): Record<string, string> {
    return this.status === 413 ? { connection: 'close' } : {};
  }
}

/**
 * The body as text, at most `maxBytes` bytes (a `BodyError` 413 past it, once the rest is read
 * and dropped up to `DRAIN_LIMIT_BYTES`).
 */
export function readBodyText(req: IncomingMessage, maxBytes: number): Promise<string> {
  const tooLarge = (): BodyError =>
    new BodyError(413, 'too_large', `body larger than ${String(maxBytes)} bytes`);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else chunks.length = 0;
      // Not a mistake but a flood: answer now; the connection is closed after the answer.
      if (size > DRAIN_LIMIT_BYTES)
        settle(() => {
          reject(tooLarge());
        });
    });
    req.once('error', (err) => {
      settle(() => {
        reject(err);
      });
    });
    req.once('end', () => {
      settle(() => {
        if (size > maxBytes) reject(tooLarge());
        else resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  });
}

/**
 * Whether JSON text nests deeper than `max` levels: `[` and `{` outside strings counted, one
 * linear pass, no value built. Malformed text is left for `JSON.parse` to refuse.
 */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return false;
}

/** JSON text parsed once its depth is known to be at most `maxDepth` (`BodyError` 400 otherwise). */
export function parseJsonText(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (text.trim() === '') throw new BodyError(400, 'empty', 'empty body; expected JSON');
  if (jsonDeeperThan(text, maxDepth))
    throw new BodyError(400, 'too_deep', `JSON nested deeper than ${String(maxDepth)} levels`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new BodyError(400, 'invalid_json', 'body is not valid JSON');
  }
}

/** A JSON body of at most `maxBytes` bytes and `maxDepth` levels. */
export async function readJsonBody(
  req: IncomingMessage,
  maxBytes: number,
  maxDepth = MAX_JSON_DEPTH,
): Promise<unknown> {
  return parseJsonText(await readBodyText(req, maxBytes), maxDepth);
}

export type FormBody = { type: 'json'; value: unknown } | { type: 'form'; params: URLSearchParams };

/** The media type of a request (`application/json`), lower case, without parameters. */
export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/**
 * A form body: JSON (`application/json`; an empty body reads as `{}`) or form-encoded (anything
 * else), at most `maxBytes` bytes, `MAX_JSON_DEPTH` levels or `MAX_FORM_FIELDS` fields.
 */
export async function readFormBody(req: IncomingMessage, maxBytes: number): Promise<FormBody> {
  const text = await readBodyText(req, maxBytes);
  if (mediaType(req) === 'application/json')
    return { type: 'json', value: parseJsonText(text === '' ? '{}' : text) };
  const params = new URLSearchParams(text);
  let fields = 0;
  for (const _ of params.keys()) {
    fields += 1;
    if (fields > MAX_FORM_FIELDS)
      throw new BodyError(
        400,
        'too_many_fields',
        `form with more than ${String(MAX_FORM_FIELDS)} fields`,
      );
  }
  return { type: 'form', params };
}
