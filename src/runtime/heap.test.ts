import { describe, expect, it } from 'vitest';
import { HEAP_FLAGS, applyHeapFlags } from './heap.js';

describe('applyHeapFlags', () => {
  it('leaves a flag the command line gives to the command line', () => {
    expect(applyHeapFlags(['--heap-growing-percent=25', '--max-old-space-size=512'])).toEqual([]);
  });

  it('sets the others (V8 takes them while the process runs)', () => {
    expect(applyHeapFlags([])).toEqual([...HEAP_FLAGS]);
  });
});
