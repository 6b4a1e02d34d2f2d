import { CronExpressionParser, type CronField } from 'cron-parser';
import { StatuswatchError, toError } from '../errors.js';

/** A cron expression that is not a valid 5-field schedule. */
export class CronError extends StatuswatchError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('cron_invalid', message, options);
  }
}

/** A parsed 5-field cron schedule: the sorted values each field allows. */
export interface CronSchedule {
  /** The expression as written (trimmed, single spaces); what `cron-parser` evaluates. */
  expression: string;
  minutes: number[];
  hours: number[];
  daysOfMonth: number[];
  months: number[];
  /** 0 = Sunday … 6 = Saturday (7 is accepted as Sunday). */
  daysOfWeek: number[];
}

export const CRON_HINT =
  'expected a 5-field cron expression "minute hour day-of-month month day-of-week", such as "0 8 * * 1"';

const FIELD_NAMES = ['minute', 'hour', 'day of month', 'month', 'day of week'] as const;
type FieldName = (typeof FIELD_NAMES)[number];

/**
 * The subset of cron-parser's syntax we accept: numbers, `*`, lists, ranges, steps and (in the
 * month and weekday fields) three-letter names. cron-parser also knows `?`, `L`, `#` and `H`
 * (a random minute per process, which replicas would not agree on); they stay out so a schedule
 * means the same in every cron the reader knows.
 */
function checkSyntax(text: string, name: FieldName): void {
  const namesAllowed = name === 'month' || name === 'day of week';
  const words = text.match(/[a-z]+/gi) ?? [];
  if (!/^[0-9a-z*,/-]+$/i.test(text) || words.some((w) => !namesAllowed || w.length !== 3)) {
    throw new CronError(`invalid ${name} value; ${CRON_HINT}`);
  }
}

/**
 * cron-parser throws plain `Error`s without a code. Its message is turned into ours here, for
 * the reader only (the field is known from where it was thrown, never from the text); the
 * expression itself is never echoed. An unrecognised message still gives a clear error.
 */
function fieldError(name: FieldName, cause: Error): CronError {
  const message = cause.message;
  const bounds = /expected range (\d+)-(\d+)/.exec(message);
  let text: string;
  if (/got range [^ ]*NaN/.test(message) || /^Invalid range: [^,]*$/.test(message)) {
    text = `invalid ${name} range; ${CRON_HINT}`;
  } else if (bounds !== null) {
    text = `${name} must be between ${bounds[1] ?? ''} and ${bounds[2] ?? ''}`;
  } else if (message.includes('cannot repeat at every 0 time')) {
    text = `${name} step must be a positive integer`;
  } else if (/min\(\d+\) > max\(\d+\)/.test(message)) {
    text = `${name} range must not run backwards`;
  } else {
    text = `invalid ${name} value; ${CRON_HINT}`;
  }
  return new CronError(text, { cause });
}

/** A fixed reference date so that validating never reads the clock. */
const REFERENCE_DATE = 0;

function numbers(field: CronField): number[] {
  const values: number[] = [];
  for (const value of field.values) if (typeof value === 'number') values.push(value);
  return values;
}

/**
 * Parses a standard 5-field cron expression (`*`, `a-b`, lists, `/step`, month and weekday
 * names) with `cron-parser`, the library that also computes the fire times
 * (`src/noise/schedule.ts`). Throws `CronError` naming the offending field, never echoing the
 * expression.
 */
export function parseCron(expression: string): CronSchedule {
  const parts = expression
    .trim()
    .split(/\s+/)
    .filter((p) => p !== '');
  if (parts.length !== 5) {
    throw new CronError(`expected 5 fields, found ${parts.length}; ${CRON_HINT}`);
  }
  // One field at a time (the others `*`), so an error names its field.
  FIELD_NAMES.forEach((name, index) => {
    const part = parts[index] ?? '';
    checkSyntax(part, name);
    const probe = parts.map((p, i) => (i === index ? p : '*')).join(' ');
    try {
      CronExpressionParser.parse(probe, { currentDate: REFERENCE_DATE });
    } catch (caught) {
      throw fieldError(name, toError(caught));
    }
  });
  const normalized = parts.join(' ');
  let fields;
  try {
    fields = CronExpressionParser.parse(normalized, { currentDate: REFERENCE_DATE }).fields;
  } catch (caught) {
    // Every field is valid alone: the days of month never occur in the months (`0 0 30 2 *`).
    throw new CronError(`day of month never occurs in the given months; ${CRON_HINT}`, {
      cause: toError(caught),
    });
  }
  const daysOfWeek = [...new Set(numbers(fields.dayOfWeek).map((d) => d % 7))].sort(
    (a, b) => a - b,
  );
  return {
    expression: normalized,
    minutes: numbers(fields.minute),
    hours: numbers(fields.hour),
    daysOfMonth: numbers(fields.dayOfMonth),
    months: numbers(fields.month),
    daysOfWeek,
  };
}
