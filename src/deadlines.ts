/**
 * Things that must end within `limitMs` of being added, and the one timer that ends those past
 * their deadline: a timer per send or per answer is real CPU at fan-out rates, and most end long
 * before. The timer runs only while there are any, and looks every quarter of the limit, so one
 * is ended between 1× and 1.25× `limitMs` after it was added (never before).
 *
 * Used by the delivery worker (a send running past `stallMs` is stalled) and the HTTP client of
 * the notifiers (an answer's body read past `timeoutMs` is dropped).
 */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
}

export class Deadlines {
  private readonly pending = new Set<Deadline>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly limitMs: number) {}

  /** `expire` runs once the limit has passed, unless `delete` came first. */
  add(expire: () => void): Deadline {
    const entry = { at: Date.now() + this.limitMs, expire };
    this.pending.add(entry);
    if (this.sweeper === null) {
      this.sweeper = setInterval(
        () => {
          this.sweep();
        },
        Math.max(10, Math.round(this.limitMs / 4)),
      );
      this.sweeper.unref();
    }
    return entry;
  }

  delete(entry: Deadline): void {
    this.pending.delete(entry);
  }

  get size(): number {
    return this.pending.size;
  }

  private sweep(): void {
    const now = Date.now();
    for (const entry of this.pending) {
      if (entry.at > now) continue;
      this.pending.delete(entry);
      entry.expire();
    }
    if (this.pending.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}
