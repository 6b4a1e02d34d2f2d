import { describe, expect, it } from 'vitest';
import { Limiter } from './limiter.js';

/** A promise and its resolve, to settle by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('Limiter', () => {
  it('runs at most `concurrency` at once, the others in the order they came', async () => {
    const limiter = new Limiter(2);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((gate, i) =>
      limiter.run(async () => {
        started.push(i);
        await gate.promise;
        return i;
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    expect(limiter.activeCount).toBe(2);
    expect(limiter.pendingCount).toBe(2);

    gates[1]?.resolve();
    await runs[1];
    // A newcomer does not slip past the line: the freed slot went to the next waiting.
    const late = limiter.run(() => {
      started.push(9);
      return 9;
    });
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    expect(limiter.activeCount).toBe(2);

    for (const gate of gates) gate.resolve();
    expect(await Promise.all([...runs, late])).toEqual([0, 1, 2, 3, 9]);
    expect(started).toEqual([0, 1, 2, 3, 9]);
    expect(limiter.activeCount).toBe(0);
    expect(limiter.pendingCount).toBe(0);
  });

  it('gives the slot back when the function throws or rejects', async () => {
    const limiter = new Limiter(1);
    await expect(
      limiter.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(limiter.run(() => Promise.reject(new Error('async')))).rejects.toThrow('async');
    expect(limiter.activeCount).toBe(0);
    expect(await limiter.run(() => 'ok')).toBe('ok');
  });

  it('refuses a concurrency that is not a positive integer', () => {
    expect(() => new Limiter(0)).toThrow(RangeError);
    expect(() => new Limiter(1.5)).toThrow(RangeError);
  });
});
