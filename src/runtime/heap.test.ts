import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { HEAP_FLAGS, applyHeapFlags, startupFlags } from './heap.js';

describe('applyHeapFlags', () => {
  it('leaves a flag the command line gives to the command line', () => {
    expect(applyHeapFlags(['--heap-growing-percent=25', '--max-old-space-size=512'])).toEqual([]);
    expect(applyHeapFlags(['--heap_growing_percent=5'])).toEqual([]);
  });

  it('sets the others (V8 takes them while the process runs)', () => {
    expect(applyHeapFlags([])).toEqual([...HEAP_FLAGS]);
  });
});

describe('startupFlags', () => {
  it('gives the V8 versions each was measured on their flags, and no other version any', () => {
    const pool = ['--memory-pool-timeout=0'];
    expect(startupFlags('14.6.202.34-node.40')).toEqual(pool);
    expect(startupFlags('14.10.1')).toEqual(pool);
    expect(startupFlags('14.5.9')).toEqual([]);
    expect(startupFlags('15.0.1')).toEqual([]);
    expect(startupFlags('11.3.244.8-node.38')).toEqual([]);
    expect(startupFlags('')).toEqual([]);
    expect(startupFlags('x.y')).toEqual([]);
  });

  it('names only flags the V8 it runs on accepts, where that V8 is one of them', () => {
    // Node.js stops at a flag its V8 does not know: `node --bad-flag -e 0` exits with 9.
    const flags = startupFlags(process.versions.v8);
    const run = spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
