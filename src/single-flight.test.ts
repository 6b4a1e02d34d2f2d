import { describe, expect, it } from 'vitest';
import { singleFlight } from './single-flight.js';

describe('singleFlight', () => {
  it('shares the run in progress with every caller, and starts a new one after it ends (also after a failure)', async () => {
    let runs = 0;
    let release!: () => void;
    const once = singleFlight(async () => {
      runs += 1;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      if (runs === 2) throw new Error('second run fails');
      return runs;
    });
    const [a, b] = [once(), once()];
    expect(runs).toBe(1);
    release();
    expect(await Promise.all([a, b])).toEqual([1, 1]);
    const failing = once();
    expect(runs).toBe(2);
    release();
    await expect(failing).rejects.toThrow('second run fails');
    const third = once();
    expect(runs).toBe(3);
    release();
    expect(await third).toBe(3);
  });
});
