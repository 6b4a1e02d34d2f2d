import { StatuswatchError } from '../errors.js';

/** A cron expression that is not a valid 5-field schedule. */
export class CronError extends StatuswatchError {
  constructor(message: string) {
    super('cron_invalid', message);
  }
}

/** A parsed 5-field cron schedule: the sorted values each field allows. */
export interface CronSchedule {
  /** The expression as written (trimmed, single spaces). */
  expression: string;
  minutes: number[];
  hours: number[];
  daysOfMonth: number[];
  months: number[];
  /** 0 = Sunday … 6 = Saturday (7 is accepted as Sunday). */
  daysOfWeek: number[];
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  { name: 'day of week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

export const CRON_HINT =
  'expected a 5-field cron expression "minute hour day-of-month month day-of-week", such as "0 8 * * 1"';

function parseValue(text: string, spec: FieldSpec): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) {
      throw new CronError(`${spec.name} must be between ${spec.min} and ${spec.max}`);
    }
    return value;
  }
  const index = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (index === -1) throw new CronError(`invalid ${spec.name} value; ${CRON_HINT}`);
  return index + spec.min;
}

function parseField(text: string, spec: FieldSpec): number[] {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    const [rangeText = '', stepText, extra] = item.split('/');
    if (extra !== undefined) throw new CronError(`invalid ${spec.name} step; ${CRON_HINT}`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) {
        throw new CronError(`${spec.name} step must be a positive integer`);
      }
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (rangeText === '*') {
      from = spec.min;
      to = spec.max;
    } else {
      const bounds = rangeText.split('-');
      if (bounds.length > 2 || bounds.some((b) => b === '')) {
        throw new CronError(`invalid ${spec.name} range; ${CRON_HINT}`);
      }
      from = parseValue(bounds[0] ?? '', spec);
      to =
        bounds[1] === undefined
          ? stepText === undefined
            ? from
            : spec.max
          : parseValue(bounds[1], spec);
      if (to < from) throw new CronError(`${spec.name} range must not run backwards`);
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return [...values].sort((a, b) => a - b);
}

/**
 * Parses a standard 5-field cron expression (`*`, `a-b`, lists, `/step`, month and weekday
 * names). Throws `CronError` naming the offending field, never echoing the expression.
 */
export function parseCron(expression: string): CronSchedule {
  const parts = expression
    .trim()
    .split(/\s+/)
    .filter((p) => p !== '');
  if (parts.length !== 5)
    throw new CronError(`expected 5 fields, found ${parts.length}; ${CRON_HINT}`);
  const fields = parts.map((part, index) => {
    const spec = FIELDS[index];
    if (spec === undefined) throw new CronError(CRON_HINT);
    return parseField(part, spec);
  });
  const [minutes = [], hours = [], daysOfMonth = [], months = [], weekdays = []] = fields;
  const daysOfWeek = [...new Set(weekdays.map((d) => d % 7))].sort((a, b) => a - b);
  return { expression: parts.join(' '), minutes, hours, daysOfMonth, months, daysOfWeek };
}
