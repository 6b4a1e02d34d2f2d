import { describe, expect, it } from 'vitest';
import { EnvelopeStreamParser } from './json-stream.js';
import { RowMemo } from './row-memo.js';

interface Pass {
  /** Every row in order: `parsed:<id>` when it went through JSON.parse, `again:<id>` from the memo. */
  seen: string[];
  values: unknown[];
}

/**
 * Reads `body` in `pieces` bytes at a time through a parser with `memo`. The sink's result for a
 * row is a fresh object holding the value, so a hit shows the very object of an earlier pass.
 */
function read(memo: RowMemo, body: string, pieces = body.length): Pass {
  const seen: string[] = [];
  const values: unknown[] = [];
  const parser = new EnvelopeStreamParser(
    {
      start: () => {
        seen.length = 0;
        values.length = 0;
      },
      row: (value) => {
        const id = (value as { id?: unknown }).id;
        seen.push(`parsed:${String(id)}`);
        const result = { value };
        values.push(result);
        return result;
      },
      again: (result) => {
        const { value } = result as { value: { id?: unknown } };
        seen.push(`again:${String(value.id)}`);
        values.push(result);
      },
    },
    memo,
  );
  const bytes = Buffer.from(body, 'utf8');
  for (let i = 0; i < bytes.length; i += pieces) parser.write(bytes.subarray(i, i + pieces));
  parser.end();
  return { seen, values };
}

const row = (id: number, text = 'ok'): string =>
  JSON.stringify({ id, title: `incident ${String(id)} – “${text}”`, updates: [{ body: text }] });
const body = (rows: readonly string[]): string =>
  `{"success":true,"data":[${rows.join(',')}],"meta":{"total":${String(rows.length)}}}`;

describe('RowMemo with EnvelopeStreamParser', () => {
  const ten = Array.from({ length: 10 }, (_, i) => row(i));

  it('parses a first response, then takes every byte-identical row of the next from the memo', () => {
    const memo = new RowMemo(1 << 20);
    const first = read(memo, body(ten));
    expect(first.seen).toEqual(ten.map((_, i) => `parsed:${String(i)}`));
    const second = read(memo, body(ten));
    expect(second.seen).toEqual(ten.map((_, i) => `again:${String(i)}`));
    expect(second.values).toEqual(first.values);
    second.values.forEach((v, i) => {
      expect(v).toBe(first.values[i]);
    });
    expect(memo.hits).toBe(10);
  });

  it('parses exactly the rows that changed, came in or moved far, in order, whatever the chunks', () => {
    for (const pieces of [1, 7, 64, 100_000]) {
      const memo = new RowMemo(1 << 20);
      read(memo, body(ten), pieces);
      // Row 3 changed, row 6 went, a new row 42 came in first and another after row 8.
      const next = [row(42), ...ten.slice(0, 3), row(3, 'changed'), ...ten.slice(4, 6)];
      next.push(...ten.slice(7, 9), row(43), ten[9] ?? '');
      const pass = read(memo, body(next), pieces);
      expect(pass.seen, `pieces of ${String(pieces)}`).toEqual([
        'parsed:42',
        'again:0',
        'again:1',
        'again:2',
        'parsed:3',
        'again:4',
        'again:5',
        'again:7',
        'again:8',
        'parsed:43',
        'again:9',
      ]);
      expect(pass.values.map((v) => (v as { value: unknown }).value)).toEqual(
        next.map((r) => JSON.parse(r) as unknown),
      );
      // What this pass parsed is matched the time after.
      expect(read(memo, body(next), pieces).seen.every((s) => s.startsWith('again:'))).toBe(true);
    }
  });

  it('never takes a row whose bytes differ, even by one byte or by key order', () => {
    const memo = new RowMemo(1 << 20);
    read(memo, body(['{"id":1,"a":1,"b":2}', '{"id":2,"a":1}']));
    const pass = read(memo, body(['{"id":1,"b":2,"a":1}', '{"id":2,"a":2}']));
    expect(pass.seen).toEqual(['parsed:1', 'parsed:2']);
    expect(pass.values.map((v) => (v as { value: unknown }).value)).toEqual([
      { id: 1, b: 2, a: 1 },
      { id: 2, a: 2 },
    ]);
  });

  it('does not remember a response whose rows exceed its byte budget; a smaller one again', () => {
    const size = Buffer.byteLength(ten[0] ?? '');
    const memo = new RowMemo(size * 4);
    read(memo, body(ten));
    expect(memo.rows).toBe(0);
    const pass = read(memo, body(ten));
    expect(pass.seen.every((s) => s.startsWith('parsed:'))).toBe(true);
    expect(pass.values.map((v) => (v as { value: unknown }).value)).toEqual(
      ten.map((r) => JSON.parse(r) as unknown),
    );
    // The first smaller response is measured, the one after it remembered.
    read(memo, body(ten.slice(0, 4)));
    expect(memo.rows).toBe(0);
    read(memo, body(ten.slice(0, 4)));
    expect(memo.rows).toBe(4);
    expect(read(memo, body(ten.slice(0, 4))).seen).toEqual(
      [0, 1, 2, 3].map((i) => `again:${String(i)}`),
    );
  });

  it('keeps the last complete response when a body turns out not to be JSON', () => {
    const memo = new RowMemo(1 << 20);
    read(memo, body(ten));
    const broken = new EnvelopeStreamParser(
      { start: () => undefined, row: () => ({}), again: () => undefined },
      memo,
    );
    broken.write(Buffer.from(body([row(99)]).slice(0, -5)));
    expect(() => broken.end()).toThrow(/not valid JSON/);
    expect(read(memo, body(ten)).seen.every((s) => s.startsWith('again:'))).toBe(true);
  });

  it('rejects a body whose remembered row is followed by what JSON does not allow there', () => {
    const rows = ['{"id":1,"t":"a}b"}', '{"id":2}'];
    for (const text of [
      '{"success":true,"data":[{"id":1,"t":"a}b"}}],"meta":{}}',
      '{"success":true,"data":[{"id":1,"t":"a}b"} x,{"id":2}],"meta":{}}',
      '{"success":true,"data":[{"id":1,"t":"a}b"}{"id":2}],"meta":{}}',
      '{"success":true,"data":[{"id":1,"t":"a}b"},{"id":2}',
    ]) {
      expect(() => JSON.parse(text) as unknown, text).toThrow();
      const memo = new RowMemo(1 << 20);
      read(memo, body(rows));
      expect(() => read(memo, text), text).toThrow(/not valid JSON/);
    }
  });

  it('reads mutated bodies after a remembered one exactly as JSON.parse does, whatever the chunks', () => {
    const rows = [
      String.raw`{"id":1,"t":"a}b","u":[{"x":"\\"}]}`,
      String.raw`{"id":2,"t":"c\\\"q"}`,
      '{"id":3,"n":[1,{"k":"]"}]}',
      '{"id":4}',
    ];
    const base = body(rows);
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '1', 'x'];
    let seed = 11;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 2000; i++) {
      const pos = rand(base.length);
      const ch = alphabet[rand(alphabet.length)] ?? '';
      const text =
        rand(2) === 0
          ? base.slice(0, pos) + ch + base.slice(pos)
          : base.slice(0, pos) + base.slice(pos + 1);
      let expected: { rows: unknown } | null;
      try {
        const value = JSON.parse(text) as { data?: unknown };
        expected = Array.isArray(value.data) ? { rows: value.data } : null;
        if (expected === null) continue;
      } catch {
        expected = null;
      }
      const memo = new RowMemo(1 << 20);
      read(memo, base);
      const pieces = 1 + rand(base.length);
      if (expected === null) {
        expect(() => read(memo, text, pieces), text).toThrow(/not valid JSON/);
      } else {
        accepted += 1;
        const pass = read(memo, text, pieces);
        expect(
          pass.values.map((v) => (v as { value: unknown }).value),
          text,
        ).toEqual(expected.rows);
      }
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('is not used by a sink without `again`: every row is parsed', () => {
    const memo = new RowMemo(1 << 20);
    read(memo, body(ten));
    const parsed: unknown[] = [];
    const parser = new EnvelopeStreamParser(
      { start: () => undefined, row: (v) => parsed.push(v) },
      memo,
    );
    parser.write(Buffer.from(body(ten)));
    parser.end();
    expect(parsed).toHaveLength(10);
  });
});
