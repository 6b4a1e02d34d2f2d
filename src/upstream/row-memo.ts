/**
 * The rows of one list endpoint's last response, by their exact bytes, with what the response's
 * collector made of each: a row of the next response that is byte for byte the same is not
 * parsed, validated or normalized again, its remembered result is used.
 *
 * Why: every incidents poll repeats every open incident (a storm leaves thousands open), nearly
 * all unchanged. Parsing them again cost most of a quiet incidents poll's CPU, and it sits
 * between a new incident's poll response and its webhook. Comparing bytes is a `memcmp`.
 * (Status rows carry check times that move with every upstream check: they seldom repeat
 * byte for byte, so the status list has `memo.ts`, which compares parsed fields, instead.)
 *
 * Safe by construction: a result is reused only for bytes equal to the bytes it was made from,
 * and a collector's per-row work is a pure function of the row, so a hit gives what parsing
 * would have given. Lists keep their order from poll to poll, so a row is looked for near the
 * position after the last hit (a few rows ahead, to step over rows that changed or went); a row
 * found nowhere near is parsed, which is only slower. Two responses read at once through one
 * memo (never the case for one poll kind) would only cost hits.
 *
 * Bounded: a response whose rows add up to more than `maxBytes` is not remembered at all, and
 * the response after it is only measured (nothing copied) unless it is smaller: a status list
 * of 20,000 services is 13 MB, and the memory targets there win over the CPU.
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
  /** Row bytes of the current response so far. */
  private size = 0;
  /** Row bytes of the last complete response (0 before the first). */
  private lastSize = 0;
  /** Whether the current response's rows are remembered: the last one fitted `maxBytes`. */
  private remembering = true;
  private hitCount = 0;

  constructor(readonly maxBytes: number) {}

  /** A list starts (again): the rows of the previous complete response are the ones matched. */
  begin(): void {
    this.next = [];
    this.at = 0;
    this.size = 0;
    this.hitCount = 0;
    this.remembering = this.lastSize <= this.maxBytes;
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

  /**
   * The remembered row at the current position (the one after the last hit), or undefined; a
   * caller that finds it in the response takes it with `takeExpected`, then `keepFound`.
   */
  expected(): RowMemoEntry | undefined {
    return this.prev[this.at];
  }

  /** The row `expected` returned is in the response: the position moves past it. */
  takeExpected(): void {
    this.at += 1;
    this.hitCount += 1;
  }

  /** Remembers a row `find` or `expected` found, for the next response. */
  keepFound(e: RowMemoEntry): void {
    this.count(e.bytes.length);
    if (this.remembering) this.next.push(e);
  }

  /** Remembers what a parsed row became (a copy of its bytes: the chunk is not kept). */
  keep(row: Buffer, result: unknown): void {
    this.count(row.length);
    if (this.remembering) this.next.push({ bytes: Buffer.from(row), result });
  }

  /** The response ended well: its rows are the ones the next response is matched against. */
  commit(): void {
    this.prev = this.next;
    this.next = [];
    this.lastSize = this.size;
  }

  /** Rows the current response took from the memo. */
  get hits(): number {
    return this.hitCount;
  }

  /** Rows remembered for the next response. */
  get rows(): number {
    return this.prev.length;
  }

  private count(bytes: number): void {
    this.size += bytes;
    if (this.remembering && this.size > this.maxBytes) {
      // Too big: none of this response is remembered, nor the next one's unless it is smaller.
      this.remembering = false;
      this.next = [];
    }
  }
}
