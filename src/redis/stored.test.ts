import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { countCorrupt, corruptCounts, decode, encode, zodShape } from './stored.js';

const shape = zodShape('test-shape', z.object({ name: z.string(), n: z.number() }));

describe('stored values (versioned envelope)', () => {
  it('encodes as {"v":<version>,"d":<value>} and decodes it back', () => {
    const text = encode(shape, { name: 'a', n: 1 });
    expect(text).toBe('{"v":1,"d":{"name":"a","n":1}}');
    expect(decode(shape, text)).toEqual({ name: 'a', n: 1 });
  });

  it('reads the previous, unversioned format', () => {
    expect(decode(shape, '{"name":"a","n":1}')).toEqual({ name: 'a', n: 1 });
  });

  it.each([
    ['a future version', '{"v":99,"d":{"name":"a","n":1}}'],
    ['a future version with the fields inline', '{"v":2,"name":"a","n":1}'],
    ['an envelope without a payload', '{"v":1}'],
    ['a payload the schema refuses', '{"v":1,"d":{"name":"a"}}'],
    ['a previous-format value the schema refuses', '{"name":1,"n":1}'],
    ['not JSON', '{"v":1,'],
    ['an array', '[{"name":"a","n":1}]'],
    ['a bare string', '"a"'],
    ['null', 'null'],
  ])('rejects %s (undefined, never a throw)', (_what, text) => {
    expect(decode(shape, text)).toBeUndefined();
  });

  it('tells a shape whether a payload came in the envelope or in the previous format', () => {
    const seen: (number | undefined)[] = [];
    const spy = {
      kind: 'spy',
      version: 3,
      parse: (payload: unknown, version: number | undefined) => {
        seen.push(version);
        return payload;
      },
    };
    decode(spy, '{"v":3,"d":{}}');
    decode(spy, '{"x":1}');
    decode(spy, '{"v":1,"d":{}}');
    expect(seen).toEqual([3, undefined]);
  });

  it('counts corrupt values per kind', () => {
    const before = corruptCounts().get('test-count') ?? 0;
    countCorrupt('test-count');
    countCorrupt('test-count', 2);
    countCorrupt('test-count', 0);
    expect(corruptCounts().get('test-count')).toBe(before + 3);
  });
});
