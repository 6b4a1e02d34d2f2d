/**
 * Incremental reader of a response envelope (`{"success":…,"data":[…],"meta":…}`) that never
 * holds the whole body: bytes go in chunk by chunk as they arrive, and when `data` is a list each
 * of its rows is handed to the caller as soon as its last byte is in, parsed on its own with
 * `JSON.parse`, so at most one row's text and one row's value are alive at a time besides what
 * the caller keeps. The other top-level values (`success`, `meta`, `error`, anything else, or a
 * `data` that is not a list) are small and parsed whole. Where the list is a member of a `data`
 * object (`{"summary":…,"services":[…]}` of /sla and /scores: `rowsIn`), that member is streamed
 * the same way and `data`'s other members are parsed whole.
 *
 * Only the structure of the top-level object and of the `data` list is scanned here (bytes,
 * strings with their escapes, brackets); every value, row or not, is validated by `JSON.parse`,
 * so a body is accepted exactly when `JSON.parse` would accept it, and reads the same (duplicate
 * keys: the last one wins; a `data` list seen twice starts the rows over). A leading byte-order
 * mark is skipped. Row boundaries are ASCII bytes, so a UTF-8 sequence is never cut.
 *
 * Why not stream-json: its tokenizer alone takes 0.47 s on the 63.5 MB status body of 100,000
 * services (0.65–0.9 s with the rows assembled), against 0.32 s for this scan plus one
 * `JSON.parse` per row, and the poll-cycle target there is 1 s of CPU for everything.
 */

import type { RowMemo } from './row-memo.js';

/** The body is not valid JSON (the message never quotes the body). */
export class JsonStreamError extends Error {
  override name = 'JsonStreamError';
}

/** Receives the rows of a `data` list. */
export interface RowSink {
  /** A `data` list starts (again, for a duplicate `data` key: forget the rows so far). */
  start(): void;
  /**
   * One element of the list, as `JSON.parse` reads it (any JSON value, not only objects).
   * Returns what a `RowMemo` remembers for the row's bytes.
   */
  row(value: unknown): unknown;
  /**
   * A row whose bytes equal a row of the previous response (with a `RowMemo`): what `row`
   * returned for that one. Without it, every row is parsed.
   */
  again?(result: unknown): void;
}

export interface ParsedEnvelope {
  /**
   * The top-level value as `JSON.parse` reads it, except that a `data` list whose rows went to
   * the sink is left out (`rowList` true); with `rowsIn`, `data` is there, without its member
   * list that went to the sink.
   */
  value: unknown;
  /**
   * True when the top-level value is an object whose (last) `data` is a list streamed to the
   * sink (with `rowsIn`: an object whose last `rowsIn` member is).
   */
  rowList: boolean;
  /** Rows handed to the sink (of the last `data` list). */
  rows: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Where a finished capture goes. */
const TO_KEY = 0;
const TO_VALUE = 1;
const TO_ROW = 2;
/** A key, and its value, of the `data` object whose member list is streamed (`rowsIn`). */
const TO_DATA_KEY = 3;
const TO_DATA_VALUE = 4;
type Target =
  typeof TO_KEY | typeof TO_VALUE | typeof TO_ROW | typeof TO_DATA_KEY | typeof TO_DATA_VALUE;

/** What is being captured. */
const CAP_CONTAINER = 0;
const CAP_STRING = 1;
const CAP_SCALAR = 2;
type CaptureKind = typeof CAP_CONTAINER | typeof CAP_STRING | typeof CAP_SCALAR;

/** Scanner states outside a capture. */
const S_START = 0; // before the top-level value
const S_WHOLE = 1; // the top-level value is not an object: kept whole, parsed at the end
const S_KEY_OR_END = 2; // after `{`
const S_KEY = 3; // after `,` in the top-level object
const S_COLON = 4;
const S_VALUE = 5; // the value of a top-level key
const S_OBJ_NEXT = 6; // after a top-level value: `,` or `}`
const S_ROW_OR_END = 7; // after `[` of the `data` list
const S_ROW = 8; // after `,` in the `data` list
const S_ROWS_NEXT = 9; // after a row: `,` or `]`
const S_DONE = 10; // after the top-level `}`: whitespace only
const S_CAPTURE = 11;
// Inside the `data` object, with `rowsIn`:
const S_DATA_KEY_OR_END = 12; // after its `{`
const S_DATA_KEY = 13; // after `,`
const S_DATA_COLON = 14;
const S_DATA_VALUE = 15;
const S_DATA_NEXT = 16; // after one of its values: `,` or `}`

const BOM = [0xef, 0xbb, 0xbf] as const;

export class EnvelopeStreamParser {
  private state = S_START;
  private bom = 0;
  private bytes = 0;
  private sawValue = false;

  // The capture in progress.
  private capKind: CaptureKind = CAP_CONTAINER;
  private capTarget: Target = TO_VALUE;
  private capDepth = 0;
  private capInString = false;
  private capEscape = false;
  /** Earlier chunks' pieces of the capture. */
  private capParts: Buffer[] = [];

  // The top-level object.
  private readonly envelope: Record<string, unknown> = {};
  private key = '';
  private rowList = false;
  private rows = 0;
  private whole: Buffer[] = [];
  /** The rows of the current chunk not handed on yet: bytes runStart..runEnd (see flushRun). */
  private runStart = -1;
  private runEnd = 0;
  private runRows = 0;
  /** With a memo: where each row of the run starts and ends (pairs). */
  private runBounds: number[] = [];
  private readonly memo: RowMemo | null;
  /** With `rowsIn`: the `data` object read so far (its streamed list left out), and its key. */
  private dataObject: Record<string, unknown> = {};
  private dataKey = '';
  /** The state after the streamed list's `]`. */
  private afterRows = S_OBJ_NEXT;

  /**
   * `sink` null: a `data` list is parsed whole like any other value. With a `memo` (and a sink
   * that takes `again`), rows byte-identical to one of the previous response are not parsed.
   * With `rowsIn`, the streamed list is not `data` itself but its member `rowsIn` when `data`
   * is an object (`{"summary":…,"services":[…]}`); `data`'s other members are parsed whole.
   */
  constructor(
    private readonly sink: RowSink | null,
    memo: RowMemo | null = null,
    private readonly rowsIn: string | null = null,
  ) {
    this.memo = sink?.again === undefined ? null : memo;
  }

  /** Bytes seen so far. */
  get size(): number {
    return this.bytes;
  }

  /** True when nothing but whitespace (and a byte-order mark) came in. */
  get blank(): boolean {
    return !this.sawValue;
  }

  write(chunk: Buffer): void {
    this.scanChunk(chunk);
    this.flushRun(chunk);
  }

  private scanChunk(chunk: Buffer): void {
    const base = this.bytes;
    this.bytes += chunk.length;
    const n = chunk.length;
    let i = 0;
    // A capture continuing from the previous chunk starts at 0 of this one.
    let capStart = 0;
    while (i < n) {
      switch (this.state) {
        case S_CAPTURE: {
          const end = this.scan(chunk, i, n);
          if (end < 0) {
            this.capParts.push(chunk.subarray(capStart));
            return;
          }
          this.finishCapture(chunk, capStart, end);
          i = end;
          continue;
        }
        case S_WHOLE:
          this.whole.push(i === 0 ? chunk : chunk.subarray(i));
          return;
        default:
          break;
      }
      const b = chunk[i] as number;
      if (this.state === S_START && this.bom < BOM.length && b === BOM[this.bom]) {
        if (this.bom === 0 && base + i !== 0) throw this.error('unexpected byte', base + i);
        this.bom += 1;
        i += 1;
        continue;
      }
      if (this.state === S_START && this.bom > 0 && this.bom < BOM.length) {
        throw this.error('broken byte-order mark', base + i);
      }
      if (isSpace(b)) {
        i += 1;
        continue;
      }
      this.sawValue = true;
      switch (this.state) {
        case S_START:
          this.bom = BOM.length;
          if (b === LBRACE) {
            this.state = S_KEY_OR_END;
            i += 1;
          } else {
            this.state = S_WHOLE;
          }
          continue;
        case S_KEY_OR_END:
        case S_KEY:
          if (b === RBRACE && this.state === S_KEY_OR_END) {
            this.state = S_DONE;
            i += 1;
            continue;
          }
          if (b !== QUOTE) throw this.error('expected a key', base + i);
          capStart = i;
          this.begin(CAP_STRING, TO_KEY);
          continue;
        case S_COLON:
          if (b !== COLON) throw this.error('expected a colon', base + i);
          this.state = S_VALUE;
          i += 1;
          continue;
        case S_VALUE:
          if (this.key === 'data' && this.sink !== null) {
            if (this.rowsIn === null && b === LBRACKET) {
              delete this.envelope.data;
              this.startRows(this.sink, S_OBJ_NEXT);
              i += 1;
              continue;
            }
            if (this.rowsIn !== null && b === LBRACE) {
              // A `data` seen again reads as itself only: no rows until its list comes.
              this.rowList = false;
              this.dataObject = {};
              delete this.envelope.data;
              this.state = S_DATA_KEY_OR_END;
              i += 1;
              continue;
            }
          }
          capStart = i;
          this.beginValue(b, TO_VALUE, base + i);
          continue;
        case S_DATA_KEY_OR_END:
        case S_DATA_KEY:
          if (b === RBRACE && this.state === S_DATA_KEY_OR_END) {
            this.endData();
            i += 1;
            continue;
          }
          if (b !== QUOTE) throw this.error('expected a key', base + i);
          capStart = i;
          this.begin(CAP_STRING, TO_DATA_KEY);
          continue;
        case S_DATA_COLON:
          if (b !== COLON) throw this.error('expected a colon', base + i);
          this.state = S_DATA_VALUE;
          i += 1;
          continue;
        case S_DATA_VALUE:
          if (this.dataKey === this.rowsIn && b === LBRACKET && this.sink !== null) {
            Reflect.deleteProperty(this.dataObject, this.dataKey);
            this.startRows(this.sink, S_DATA_NEXT);
            i += 1;
            continue;
          }
          capStart = i;
          this.beginValue(b, TO_DATA_VALUE, base + i);
          continue;
        case S_DATA_NEXT:
          if (b === COMMA) this.state = S_DATA_KEY;
          else if (b === RBRACE) this.endData();
          else throw this.error('expected , or }', base + i);
          i += 1;
          continue;
        case S_OBJ_NEXT:
          if (b === COMMA) this.state = S_KEY;
          else if (b === RBRACE) this.state = S_DONE;
          else throw this.error('expected , or }', base + i);
          i += 1;
          continue;
        case S_ROW_OR_END:
        case S_ROW:
          if (b === RBRACKET && this.state === S_ROW_OR_END) {
            this.state = this.afterRows;
            i += 1;
            continue;
          }
          if (b === LBRACE && this.memo !== null) {
            const end = this.expectedRow(chunk, i);
            if (end > 0) {
              i = end;
              continue;
            }
          }
          capStart = i;
          this.beginValue(b, TO_ROW, base + i);
          continue;
        case S_ROWS_NEXT:
          if (b === COMMA) {
            this.state = S_ROW;
          } else if (b === RBRACKET) {
            this.flushRun(chunk);
            this.state = this.afterRows;
          } else {
            throw this.error('expected , or ]', base + i);
          }
          i += 1;
          continue;
        case S_DONE:
          throw this.error('unexpected data after the JSON value', base + i);
        default:
          throw this.error('parser state');
      }
    }
  }

  /** The envelope once every byte is in; throws `JsonStreamError` when the body is not valid JSON. */
  end(): ParsedEnvelope {
    if (this.state === S_WHOLE) {
      const text = Buffer.concat(this.whole).toString('utf8');
      this.whole = [];
      return { value: parse(text), rowList: false, rows: 0 };
    }
    if (this.state !== S_DONE) throw this.error('unexpected end of JSON input');
    if (this.rowList) this.memo?.commit();
    return { value: this.envelope, rowList: this.rowList, rows: this.rows };
  }

  /** A streamed list starts (`[` read); `after`: the state once its `]` is read. */
  private startRows(sink: RowSink, after: number): void {
    this.rowList = true;
    this.rows = 0;
    this.afterRows = after;
    this.memo?.begin();
    sink.start();
    this.state = S_ROW_OR_END;
  }

  /** The `data` object (with `rowsIn`) ends: it is the envelope's `data`. */
  private endData(): void {
    define(this.envelope, 'data', this.dataObject);
    this.dataObject = {};
    this.state = S_OBJ_NEXT;
  }

  private error(what: string, at = this.bytes): JsonStreamError {
    return new JsonStreamError(`body is not valid JSON: ${what} at byte ${String(at)}`);
  }

  private begin(kind: CaptureKind, target: Target): void {
    this.capKind = kind;
    this.capTarget = target;
    this.capDepth = 0;
    this.capInString = false;
    this.capEscape = false;
    this.capParts = [];
    this.state = S_CAPTURE;
  }

  private beginValue(b: number, target: Target, at: number): void {
    if (b === LBRACE || b === LBRACKET) this.begin(CAP_CONTAINER, target);
    else if (b === QUOTE) this.begin(CAP_STRING, target);
    else if (b === COMMA || b === COLON || b === RBRACE || b === RBRACKET)
      throw this.error('expected a value', at);
    else this.begin(CAP_SCALAR, target);
  }

  /**
   * Advances the capture from `i`; returns the index just after its last byte, or -1 when the
   * chunk ends first. The hot loop: every byte of every row goes through here.
   */
  private scan(c: Buffer, i: number, n: number): number {
    if (this.capKind === CAP_SCALAR) {
      while (i < n) {
        const b = c[i] as number;
        if (b === COMMA || b === RBRACE || b === RBRACKET || isSpace(b)) return i;
        i += 1;
      }
      return -1;
    }
    let depth = this.capDepth;
    let inString = this.capInString;
    /** The next backslash at or after `i` (n when none is left in this chunk). */
    let slash = -1;
    if (this.capEscape) {
      // The byte after a backslash that ended the previous chunk.
      this.capEscape = false;
      i += 1;
    }
    while (i < n) {
      if (inString) {
        const quote = c.indexOf(QUOTE, i);
        if (slash < i) {
          slash = c.indexOf(BACKSLASH, i);
          if (slash < 0) slash = n;
        }
        if (slash < n && (quote < 0 || slash < quote)) {
          if (slash + 1 >= n) {
            this.capEscape = true;
            break;
          }
          i = slash + 2;
          continue;
        }
        if (quote < 0) break;
        inString = false;
        i = quote + 1;
        if (this.capKind === CAP_STRING) {
          this.capInString = false;
          return i;
        }
        continue;
      }
      const b = c[i] as number;
      if (b === QUOTE) {
        inString = true;
      } else if (b === LBRACE || b === LBRACKET) {
        depth += 1;
      } else if (b === RBRACE || b === RBRACKET) {
        depth -= 1;
        if (depth === 0) {
          this.capDepth = 0;
          return i + 1;
        }
      }
      i += 1;
    }
    this.capDepth = depth;
    this.capInString = inString;
    return -1;
  }

  private finishCapture(c: Buffer, start: number, end: number): void {
    if (this.capTarget === TO_ROW && this.memo !== null && this.findRow(c, start, end)) return;
    if (this.capTarget === TO_ROW && this.capParts.length === 0) {
      // A row that lies in this chunk joins the run of such rows, parsed together (flushRun).
      if (this.runStart < 0) this.runStart = start;
      this.runEnd = end;
      this.runRows += 1;
      if (this.memo !== null) this.runBounds.push(start, end);
      this.state = S_ROWS_NEXT;
      return;
    }
    let raw: Buffer;
    if (this.capParts.length === 0) {
      raw = c.subarray(start, end);
    } else {
      this.capParts.push(c.subarray(start, end));
      raw = Buffer.concat(this.capParts);
      this.capParts = [];
    }
    const value = parse(raw.toString('utf8'));
    switch (this.capTarget) {
      case TO_KEY:
        this.key = value as string;
        this.state = S_COLON;
        return;
      case TO_VALUE:
        if (this.key === 'data') this.rowList = false;
        define(this.envelope, this.key, value);
        this.state = S_OBJ_NEXT;
        return;
      case TO_DATA_KEY:
        this.dataKey = value as string;
        this.state = S_DATA_COLON;
        return;
      case TO_DATA_VALUE:
        // The last one wins, as in JSON.parse: a list member seen before is overridden.
        if (this.dataKey === this.rowsIn) this.rowList = false;
        define(this.dataObject, this.dataKey, value);
        this.state = S_DATA_NEXT;
        return;
      case TO_ROW: {
        this.rows += 1;
        const result = this.sink?.row(value);
        this.memo?.keep(raw, result);
        this.state = S_ROWS_NEXT;
        return;
      }
    }
  }

  /**
   * With a memo, before a row starting at `i` is scanned: when the bytes there begin with the
   * next remembered row whole (in this chunk), that is the row, handed on as what it became then
   * without scanning a byte of it. A remembered row is a JSON object `JSON.parse` accepted, and
   * an object's bytes end where its own `}` closes it, so equal bytes are the same row, ending
   * at the same place. Returns the index after the row, or -1 (then the row is scanned).
   */
  private expectedRow(c: Buffer, i: number): number {
    const memo = this.memo as RowMemo;
    const e = memo.expected();
    if (e === undefined) return -1;
    const end = i + e.bytes.length;
    if (end > c.length || c.compare(e.bytes, 0, e.bytes.length, i, end) !== 0) return -1;
    this.flushRun(c);
    memo.takeExpected();
    memo.keepFound(e);
    this.rows += 1;
    this.sink?.again?.(e.result);
    this.state = S_ROWS_NEXT;
    return end;
  }

  /**
   * With a memo: a row byte-identical to one of the previous response is handed on as what it
   * became then (after the rows before it). Returns false when there is none.
   */
  private findRow(c: Buffer, start: number, end: number): boolean {
    const memo = this.memo as RowMemo;
    const bytes =
      this.capParts.length === 0
        ? c.subarray(start, end)
        : Buffer.concat([...this.capParts, c.subarray(start, end)]);
    const hit = memo.find(bytes);
    if (hit === undefined) return false;
    this.capParts = [];
    this.flushRun(c);
    memo.keepFound(hit);
    this.rows += 1;
    this.sink?.again?.(hit.result);
    this.state = S_ROWS_NEXT;
    return true;
  }

  /**
   * Parses the run of rows that lie in chunk `c` (`row,row,…` between runStart and runEnd) with
   * one `JSON.parse` of `[…]` and hands them on: per row, a `toString` and a `JSON.parse` call
   * cost more than the row itself at 600 bytes.
   */
  private flushRun(c: Buffer): void {
    if (this.runStart < 0) return;
    const text = `[${c.toString('utf8', this.runStart, this.runEnd)}]`;
    const expected = this.runRows;
    const bounds = this.runBounds;
    this.runStart = -1;
    this.runRows = 0;
    if (bounds.length > 0) this.runBounds = [];
    const values = parse(text);
    if (!Array.isArray(values) || values.length !== expected) throw this.error('row list');
    const memo = this.memo;
    let i = 0;
    for (const value of values as unknown[]) {
      this.rows += 1;
      const result = this.sink?.row(value);
      if (memo !== null) memo.keep(c.subarray(bounds[i] ?? 0, bounds[i + 1] ?? 0), result);
      i += 2;
    }
  }
}

/** Sets `key` as JSON.parse does: an own property, even `__proto__`. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new JsonStreamError('body is not valid JSON', { cause: e });
  }
}
