import { describe, expect, it } from 'vitest';
import { EnvelopeStreamParser, JsonStreamError, type ParsedEnvelope } from './json-stream.js';

interface Outcome {
  parsed: ParsedEnvelope;
  rows: unknown[];
  starts: number;
}

/** Feeds `body` in the given pieces and collects what the parser hands on. */
function feed(pieces: readonly Buffer[], sink = true, rowsIn: string | null = null): Outcome {
  let rows: unknown[] = [];
  let starts = 0;
  const parser = new EnvelopeStreamParser(
    sink
      ? {
          start: () => {
            starts += 1;
            rows = [];
          },
          row: (value) => rows.push(value),
        }
      : null,
    null,
    rowsIn,
  );
  for (const piece of pieces) parser.write(piece);
  return { parsed: parser.end(), rows, starts };
}

/** `body` cut at `cuts` (sorted byte offsets). */
function cutAt(body: Buffer, cuts: readonly number[]): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (const at of cuts) {
    out.push(body.subarray(from, at));
    from = at;
  }
  out.push(body.subarray(from));
  return out;
}

/** What `JSON.parse` makes of the body, with the rows of `data` taken out as the parser does. */
function reference(text: string): { value: unknown; rows: unknown[] | null } {
  const value: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { value, rows: null };
  }
  const { data, ...rest } = value as Record<string, unknown>;
  return Array.isArray(data) ? { value: rest, rows: data } : { value, rows: null };
}

/** The outcome as one comparable value: the envelope with its rows put back. */
function reassembled(o: Outcome): unknown {
  return o.parsed.rowList ? { ...(o.parsed.value as object), data: o.rows } : o.parsed.value;
}

/** The same for rows streamed from `data[rowsIn]`: they go back there (after data's other members). */
function reassembledIn(o: Outcome, rowsIn: string): unknown {
  if (!o.parsed.rowList) return o.parsed.value;
  const env = o.parsed.value as Record<string, unknown>;
  const data = env.data as Record<string, unknown>;
  expect(data).not.toHaveProperty(rowsIn);
  return { ...env, data: { ...data, [rowsIn]: o.rows } };
}

/** What JSON.parse reads, with the keys of `data` sorted (the parser puts the streamed list last). */
function sortedData(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const env = value as Record<string, unknown>;
  const data = env.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return value;
  return { ...env, data: Object.fromEntries(Object.entries(data)) };
}

const TRICKY = Buffer.from(
  '\uFEFF { "success" : true,\n "data" : [ {"feedId":"a\\"b","name":"Café ☕ 𝄞","x":[1,{"y":"]}"}]},' +
    '\tnull , 5,"row \\\\ \\u00e9",[],{},' +
    '{"feedId":"z","summary":"{[}]\\\\","n":-1.5e3,"t":true,"f":false,"nul":null}\r\n],' +
    '"meta":{"total":7,"includes":{"incidents":true}},"error":null,"extra":[{"a":"b"}] } \n',
  'utf8',
);

describe('EnvelopeStreamParser', () => {
  it('hands each row of `data` on as JSON.parse reads it, and keeps the rest of the envelope', () => {
    const out = feed([TRICKY]);
    const ref = reference(TRICKY.toString('utf8'));
    expect(out.parsed.rowList).toBe(true);
    expect(out.parsed.rows).toBe(7);
    expect(out.starts).toBe(1);
    expect(out.rows).toEqual(ref.rows);
    expect(out.parsed.value).toEqual(ref.value);
    expect(out.parsed.value).not.toHaveProperty('data');
  });

  it('reads the same whatever the chunks: split at every byte, and in one-byte pieces', () => {
    const whole = reassembled(feed([TRICKY]));
    for (let at = 1; at < TRICKY.length; at++) {
      expect(reassembled(feed(cutAt(TRICKY, [at]))), `split at byte ${at}`).toEqual(whole);
    }
    const bytes = Array.from({ length: TRICKY.length - 1 }, (_, i) => i + 1);
    expect(reassembled(feed(cutAt(TRICKY, bytes)))).toEqual(whole);
  });

  it('reads the same at every pair of cut points of a list body (rows spanning chunks)', () => {
    const body = Buffer.from(
      JSON.stringify({
        success: true,
        data: [{ feedId: 'é"1', s: 'x\\' }, 'two', { feedId: '3', nested: { a: [1, 2] } }],
        meta: { total: 3 },
      }),
    );
    const whole = reassembled(feed([body]));
    for (let a = 1; a < body.length; a++) {
      for (let b = a + 1; b < body.length; b += 3) {
        expect(reassembled(feed(cutAt(body, [a, b]))), `cut at ${a}, ${b}`).toEqual(whole);
      }
    }
  });

  it('parses values that are not a list whole: a `data` object, a body without a sink, a top level that is not an object', () => {
    const object = feed([Buffer.from('{"success":true,"data":{"feedId":"x","score":1}}')]);
    expect(object.parsed).toEqual({
      value: { success: true, data: { feedId: 'x', score: 1 } },
      rowList: false,
      rows: 0,
    });
    expect(object.starts).toBe(0);
    const noSink = feed([Buffer.from('{"success":true,"data":[1,2]}')], false);
    expect(noSink.parsed.value).toEqual({ success: true, data: [1, 2] });
    expect(noSink.parsed.rowList).toBe(false);
    for (const text of ['[{"feedId":"a"}]', '"text"', '5', 'null', ' true ']) {
      const out = feed(cutAt(Buffer.from(text), [1]));
      expect(out.parsed).toEqual({ value: JSON.parse(text) as unknown, rowList: false, rows: 0 });
    }
  });

  it('follows JSON.parse on duplicate keys: the last `data` wins, a list starts the rows over', () => {
    const twice = feed([Buffer.from('{"success":true,"data":[1,2],"data":[3]}')]);
    expect(twice.rows).toEqual([3]);
    expect(twice.starts).toBe(2);
    expect(twice.parsed.rows).toBe(1);
    const thenObject = feed([Buffer.from('{"success":true,"data":[1,2],"data":{"a":1}}')]);
    expect(thenObject.parsed.rowList).toBe(false);
    expect(thenObject.parsed.value).toEqual({ success: true, data: { a: 1 } });
    const proto = feed([Buffer.from('{"__proto__":{"polluted":true},"success":true,"data":[]}')]);
    expect(Object.getPrototypeOf(proto.parsed.value)).toBe(Object.prototype);
    expect(proto.parsed.value).toHaveProperty('__proto__', { polluted: true });
  });

  it.each([
    ['empty', ''],
    ['whitespace only', ' \n\t'],
    ['a byte-order mark only', '\uFEFF'],
    ['truncated row', '{"success":true,"data":[{"feedId":"stripe","status":"u'],
    ['truncated list', '{"success":true,"data":[{"a":1},'],
    ['missing close', '{"success":true,"data":[]'],
    ['html', '<!doctype html><p>hi</p>'],
    ['garbage between rows', '{"success":true,"data":[{"a":1} x {"b":2}]}'],
    ['missing comma', '{"success":true,"data":[{"a":1}{"b":2}]}'],
    ['trailing comma', '{"success":true,"data":[{"a":1},]}'],
    ['leading comma', '{"success":true,"data":[,{"a":1}]}'],
    ['bad row', '{"success":true,"data":[{"a":1},{"b":tru}]}'],
    ['bad scalar', '{"success":tru,"data":[]}'],
    ['unquoted key', '{success:true,"data":[]}'],
    ['missing colon', '{"success" true}'],
    ['mismatched brackets', '{"success":true,"data":[{"a":[1}]}'],
    ['text after the value', '{"success":true,"data":[]} {}'],
    ['two scalars', '{"success":true 1}'],
    ['a BOM after whitespace', ' \uFEFF{}'],
    ['unterminated string key', '{"succ'],
  ])('%s: not JSON, exactly when JSON.parse says so', (_name, text) => {
    expect(() => JSON.parse(text.replace(/^\uFEFF/, '')) as unknown).toThrow();
    for (let at = 0; at <= Buffer.byteLength(text); at++) {
      const body = Buffer.from(text);
      expect(() => feed(cutAt(body, at === 0 ? [] : [at])), `split at ${at}`).toThrow(
        JsonStreamError,
      );
    }
  });

  it('accepts exactly what JSON.parse accepts, and reads it the same (mutated bodies)', () => {
    const base =
      '{"success":true,"data":[{"feedId":"a","n":[1,2,{"k":"v\\"]"}]},"b",3,null],"meta":{"total":4}}';
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '1', 'a', 'n'];
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const pos = rand(base.length);
      const ch = alphabet[rand(alphabet.length)] ?? '';
      const text =
        rand(2) === 0
          ? base.slice(0, pos) + ch + base.slice(pos)
          : base.slice(0, pos) + base.slice(pos + 1);
      let expected: { value: unknown } | null;
      try {
        expected = { value: JSON.parse(text) as unknown };
      } catch {
        expected = null;
      }
      const body = Buffer.from(text);
      const cut = 1 + rand(Math.max(1, body.length - 1));
      if (expected === null) {
        expect(() => feed(cutAt(body, [cut])), text).toThrow(JsonStreamError);
      } else {
        accepted += 1;
        expect(reassembled(feed(cutAt(body, [cut]))), text).toEqual(expected.value);
      }
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('with rowsIn, streams the list of that member of a `data` object and parses the rest whole', () => {
    const body = Buffer.from(
      '{"success":true,"data":{"summary":{"services_tracked":3,"x":[1,{"y":"]}"}]},' +
        '"services":[{"feedId":"a\\"b","margin":0.5},{"feedId":"c","nested":{"k":[1,2]}},"odd",null],' +
        '"after":"}"},"meta":{"total":3}}',
    );
    const ref = JSON.parse(body.toString('utf8')) as { data: { services: unknown[] } };
    const out = feed([body], true, 'services');
    expect(out.parsed.rowList).toBe(true);
    expect(out.parsed.rows).toBe(4);
    expect(out.starts).toBe(1);
    expect(out.rows).toEqual(ref.data.services);
    expect(out.parsed.value).toEqual({
      success: true,
      data: { summary: { services_tracked: 3, x: [1, { y: ']}' }] }, after: '}' },
      meta: { total: 3 },
    });
    const whole = reassembledIn(out, 'services');
    expect(whole).toEqual(ref);
    for (let a = 1; a < body.length; a++) {
      expect(
        reassembledIn(feed(cutAt(body, [a]), true, 'services'), 'services'),
        `split at ${a}`,
      ).toEqual(ref);
      for (let b = a + 7; b < body.length; b += 11) {
        expect(
          reassembledIn(feed(cutAt(body, [a, b]), true, 'services'), 'services'),
          `cut at ${a}, ${b}`,
        ).toEqual(ref);
      }
    }
    // Without the member, or `data` a list or a scalar: parsed whole, no rows.
    for (const text of [
      '{"success":true,"data":{"summary":{}}}',
      '{"success":true,"data":{"services":{"a":1}}}',
      '{"success":true,"data":[{"feedId":"a"}]}',
      '{"success":true,"data":null}',
      '{"success":true,"data":{}}',
    ]) {
      const o = feed(cutAt(Buffer.from(text), [9]), true, 'services');
      expect(o.parsed.rowList, text).toBe(false);
      expect(o.parsed.value, text).toEqual(JSON.parse(text));
    }
  });

  it('with rowsIn, follows JSON.parse on duplicate keys, in `data` and of `data`', () => {
    const twice = feed(
      [Buffer.from('{"data":{"services":[1,2],"summary":1,"services":[3]},"success":true}')],
      true,
      'services',
    );
    expect(twice.rows).toEqual([3]);
    expect(twice.starts).toBe(2);
    expect(twice.parsed.value).toEqual({ data: { summary: 1 }, success: true });
    for (const text of [
      '{"data":{"services":[1,2],"services":null}}',
      '{"data":{"services":[1,2]},"data":{"summary":2}}',
      '{"data":{"services":[1,2]},"data":[5]}',
      '{"data":{"services":null,"services":[4]}}',
      '{"data":{"summary":0},"data":{"services":[6],"summary":1}}',
      '{"data":{"__proto__":{"polluted":true},"services":[7]}}',
    ]) {
      const o = feed([Buffer.from(text)], true, 'services');
      expect(sortedData(reassembledIn(o, 'services')), text).toEqual(sortedData(JSON.parse(text)));
    }
    const proto = feed(
      [Buffer.from('{"data":{"__proto__":{"polluted":true},"services":[]}}')],
      true,
      'services',
    );
    const data = (proto.parsed.value as { data: object }).data;
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(data).toHaveProperty('__proto__', { polluted: true });
  });

  it('with rowsIn, accepts exactly what JSON.parse accepts, and reads it the same (mutated bodies)', () => {
    const base =
      '{"success":true,"data":{"summary":{"n":1},"services":[{"feedId":"a","n":[1,{"k":"v\\"]"}]},"b",3],"z":{}},"meta":{}}';
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '1', 'a', 'n'];
    let seed = 11;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const pos = rand(base.length);
      const ch = alphabet[rand(alphabet.length)] ?? '';
      const text =
        rand(2) === 0
          ? base.slice(0, pos) + ch + base.slice(pos)
          : base.slice(0, pos) + base.slice(pos + 1);
      let expected: { value: unknown } | null;
      try {
        expected = { value: JSON.parse(text) as unknown };
      } catch {
        expected = null;
      }
      const body = Buffer.from(text);
      const cut = 1 + rand(Math.max(1, body.length - 1));
      if (expected === null) {
        expect(() => feed(cutAt(body, [cut]), true, 'services'), text).toThrow(JsonStreamError);
      } else {
        accepted += 1;
        const o = feed(cutAt(body, [cut]), true, 'services');
        expect(sortedData(reassembledIn(o, 'services')), text).toEqual(sortedData(expected.value));
      }
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('never quotes the body in its error', () => {
    const secret = 'k9x2-secret';
    try {
      feed([Buffer.from(`{"success":true,"data":[{"a":${secret}}]}`)]);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(JsonStreamError);
      expect((e as Error).message).not.toContain(secret);
    }
  });
});
