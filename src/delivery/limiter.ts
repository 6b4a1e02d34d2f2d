/**
 * The cap on sends in flight (`DeliveryWorker`'s `concurrency`): what p-limit did, without its
 * two promises and extra microtask per call (a storm makes one call per delivery). A free slot
 * runs the function at once; otherwise the caller waits its turn, first come first served, and a
 * slot given back goes straight to the next in line (so no newcomer slips past the line).
 */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly concurrency: number) {
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new RangeError(`concurrency must be a positive integer, got ${String(concurrency)}`);
  }

  /** Slots taken now. */
  get activeCount(): number {
    return this.active;
  }

  /** Callers waiting for a slot. */
  get pendingCount(): number {
    return this.waiting.length;
  }

  /** `fn` once a slot is free; the slot is held until what `fn` returns settles. */
  async run<T>(fn: () => T | PromiseLike<T>): Promise<T> {
    if (this.active < this.concurrency) this.active += 1;
    else
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
      });
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // The slot passes to the next in line as it is; only an unwanted one is given back.
      if (next === undefined) this.active -= 1;
      else next();
    }
  }
}
