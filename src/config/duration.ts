import { StatuswatchError } from '../errors.js';

/** A duration string that is not `<integer><unit>`… with units ms, s, m, h, d. */
export class DurationError extends StatuswatchError {
  constructor(message: string) {
    super('duration_invalid', message);
  }
}

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
const UNIT_ORDER: readonly Unit[] = ['d', 'h', 'm', 's', 'ms'];

export const DURATION_HINT =
  'expected a duration such as 500ms, 30s, 5m, 1h, 1d or 1h30m (integer amounts, largest unit first)';

/**
 * Parses `500ms`, `1s`, `30s`, `5m`, `1h`, `1d` and combinations in descending unit order
 * (`1h30m`, `1d12h`, `1m30s500ms`) into milliseconds. Anything else (no unit, decimals, spaces
 * inside, repeated or out-of-order units) throws a `DurationError` that does not echo the input.
 */
export function parseDuration(text: string): number {
  const source = text.trim();
  if (source === '') throw new DurationError(`empty duration; ${DURATION_HINT}`);
  let total = 0;
  let lastRank = -1;
  const part = /(\d+)(ms|d|h|m|s)/y;
  while (part.lastIndex < source.length) {
    const match = part.exec(source);
    if (match === null) throw new DurationError(DURATION_HINT);
    const [, amount = '', unit = ''] = match;
    const rank = UNIT_ORDER.indexOf(unit as Unit);
    if (rank <= lastRank) {
      throw new DurationError(`units must appear once each, largest first; ${DURATION_HINT}`);
    }
    lastRank = rank;
    total += Number(amount) * UNIT_MS[unit as Unit];
  }
  if (!Number.isSafeInteger(total)) throw new DurationError('duration is too large');
  return total;
}

/** Formats milliseconds back into the shortest duration string (`90000` → `1m30s`). */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw new RangeError('duration must be a non-negative integer');
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of UNIT_ORDER) {
    const size = UNIT_MS[unit];
    const amount = Math.floor(rest / size);
    if (amount > 0) {
      out += `${amount}${unit}`;
      rest -= amount * size;
    }
  }
  return out;
}
