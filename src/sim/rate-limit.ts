/**
 * Fixed-window rate limiter of the simulator: windows aligned to multiples of `windowMs` on the
 * (injectable) clock, one counter per identity (API key or client address).
 */

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds of the end of the current window. */
  reset: number;
  /** Seconds until the window ends (at least 1). */
  retryAfter: number;
}

const SWEEP_THRESHOLD = 10_000;

export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  hit(identity: string, limit: number): RateDecision {
    const now = this.now();
    const start = Math.floor(now / this.windowMs) * this.windowMs;
    let w = this.windows.get(identity);
    if (w?.start !== start) {
      if (this.windows.size >= SWEEP_THRESHOLD) this.sweep(start);
      w = { start, count: 0 };
      this.windows.set(identity, w);
    }
    w.count++;
    const end = start + this.windowMs;
    return {
      allowed: w.count <= limit,
      limit,
      remaining: Math.max(0, limit - w.count),
      reset: Math.ceil(end / 1000),
      retryAfter: Math.max(1, Math.ceil((end - now) / 1000)),
    };
  }

  reset(): void {
    this.windows.clear();
  }

  private sweep(current: number): void {
    for (const [k, v] of this.windows) if (v.start !== current) this.windows.delete(k);
  }
}
