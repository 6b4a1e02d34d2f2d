/**
 * The rows of one list endpoint's last response, by their exact bytes, with what the response's
 * collector made of each: a row of the next response that is byte for byte the same is not
 * parsed, validated or normalized again, its remembered result is used.
 *
 * Why: every incidents poll repeats every open incident (a storm leaves thousands open) and
 * every status poll repeats every service, nearly all unchanged. Parsing them again cost most
 * of a quiet poll's CPU, and it sits between a new incident's poll response and its webhook.
 * Comparing bytes is a `memcmp`.
 *
 * Safe by construction: a result is reused only for bytes equal to the bytes it was made from,
 * and a collector's per-row work is a pure function of the row, so a hit gives what parsing
 * would have given. Lists keep their order from poll to poll, so a row is looked for near the
 * position after the last hit (a few rows ahead, to step over rows that changed or went); a row
 * found nowhere near is parsed, which is only slower. Two responses read at once through one
 * memo (never the case for one poll kind) would only cost hits.
 *
 * Bounded: rows are remembered until their bytes reach `maxBytes`; the rest of a larger
 * response is parsed every time (a status list of 100,000 services is 63 MB: the memory target
 * wins over the CPU there).
 */

export interface RowMemoEntry {
  readonly bytes: Buffer;
  readonly result: unknown;
}

/** How far past the expected position a row is looked for. */
const LOOKAHEAD = 32;

export class RowMemo {
  private prev: RowMemoEntry[] = [];
  private next: RowMemoEntry[] = [];
  private at = 0;
  private size = 0;
  private hitCount = 0;

  constructor(readonly maxBytes: number) {}

  /** A list starts (again): the rows of the previous complete response are the ones matched. */
  begin(): void {
    this.next = [];
    this.at = 0;
    this.size = 0;
    this.hitCount = 0;
  }

  /**
   * The remembered row with exactly these bytes near the current position, or undefined. Pass
   * it to `keepFound` when it takes its place in the response (rows are remembered in order).
   */
  find(row: Buffer): RowMemoEntry | undefined {
    const end = Math.min(this.prev.length, this.at + LOOKAHEAD);
    for (let k = this.at; k < end; k++) {
      const e = this.prev[k] as RowMemoEntry;
      if (e.bytes.length === row.length && e.bytes.equals(row)) {
        this.at = k + 1;
        this.hitCount += 1;
        return e;
      }
    }
    return undefined;
  }

  /** Remembers a row `find` found, for the next response. */
  keepFound(e: RowMemoEntry): void {
    this.remember(e);
  }

  /** Remembers what a parsed row became (a copy of its bytes: the chunk is not kept). */
  keep(row: Buffer, result: unknown): void {
    if (this.size + row.length > this.maxBytes) return;
    this.remember({ bytes: Buffer.from(row), result });
  }

  /** The response ended well: its rows are the ones the next response is matched against. */
  commit(): void {
    this.prev = this.next;
    this.next = [];
  }

  /** Rows the current response took from the memo. */
  get hits(): number {
    return this.hitCount;
  }

  /** Rows remembered for the next response. */
  get rows(): number {
    return this.prev.length;
  }

  private remember(e: RowMemoEntry): void {
    if (this.size + e.bytes.length > this.maxBytes) return;
    this.size += e.bytes.length;
    this.next.push(e);
  }
}
