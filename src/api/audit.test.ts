import { describe, expect, it } from 'vitest';
import {
  AUDIT_DIFF_MAX_BYTES,
  AUDIT_DIFF_MAX_FIELDS,
  AUDIT_VALUE_MAX_BYTES,
  diffOf,
} from './audit.js';

describe('diffOf: the audit diff is bounded (every team writes to one stream)', () => {
  it('keeps small changes as they are', () => {
    expect(diffOf({ a: 1, b: 'x' }, { a: 2, c: true })).toEqual([
      { field: 'a', from: 1, to: 2 },
      { field: 'b', from: 'x' },
      { field: 'c', to: true },
    ]);
  });

  it('keeps a large value as its size and digest, so two large variants tell apart', () => {
    const big = (c: string) => c.repeat(64 * 1024);
    const [entry] = diffOf({ services: [big('a')] }, { services: [big('b')] });
    expect(entry?.field).toBe('services');
    expect(entry?.from).toMatch(/^<\d+ bytes, sha256 [0-9a-f]{16}…>$/);
    expect(entry?.to).toMatch(/^<\d+ bytes, sha256 [0-9a-f]{16}…>$/);
    expect(entry?.from).not.toBe(entry?.to);
    expect(
      JSON.stringify(diffOf({ v: 'x'.repeat(AUDIT_VALUE_MAX_BYTES) }, {})).length,
    ).toBeLessThan(200);
  });

  it('lists at most AUDIT_DIFF_MAX_FIELDS fields and stays within AUDIT_DIFF_MAX_BYTES', () => {
    const many = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`k${String(i)}`, 'v'.repeat(200)]),
    );
    const diff = diffOf({}, many);
    expect(diff.length).toBe(AUDIT_DIFF_MAX_FIELDS + 1);
    expect(diff.at(-1)).toEqual({
      field: `(and ${String(500 - AUDIT_DIFF_MAX_FIELDS)} more fields)`,
    });
    // Too large with values: the fields are named without them.
    expect(diff.every((d) => !('to' in d))).toBe(true);
    expect(JSON.stringify(diff).length).toBeLessThanOrEqual(AUDIT_DIFF_MAX_BYTES);
  });
});
