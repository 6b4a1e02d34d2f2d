/**
 * The one error base class of statuswatch: every error we throw carries a stable `code`
 * (a metric label and a log field; never match on messages) and keeps its `cause`.
 */
export class StatuswatchError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = new.target.name;
  }
}

/** Turns anything thrown into an Error, for use in every `catch`. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === 'string') return new Error(value);
  try {
    return new Error(JSON.stringify(value));
  } catch {
    return new Error(String(value));
  }
}

/** The `code` of an error when it has one, else `unknown`. */
export function errorCode(value: unknown): string {
  if (value instanceof StatuswatchError) return value.code;
  if (value !== null && typeof value === 'object' && 'code' in value) {
    const code = value.code;
    if (typeof code === 'string') return code;
  }
  return 'unknown';
}
