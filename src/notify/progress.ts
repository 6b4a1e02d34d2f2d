/**
 * Where a delivery made of several requests stopped (PagerDuty and Opsgenie send one request per
 * transition of a batch): the index of its first request not yet accepted, kept for its retry in
 * this process, so the retry sends only what is missing. Bounded: the oldest entries are
 * forgotten first. A retry that runs on another replica, or after a restart, starts over, which
 * the vendors' deduplication makes harmless in all but the rare cases each kind describes.
 */
export class SendProgress {
  private readonly stopped = new Map<string, number>();

  constructor(private readonly max = 1000) {}

  /** The request to start at, of `count`. */
  start(id: string, count: number): number {
    return Math.min(this.stopped.get(id) ?? 0, count);
  }

  /** A retryable failure at request `index`: its retry starts there. */
  stoppedAt(id: string, index: number): void {
    this.stopped.delete(id);
    if (index === 0) return;
    this.stopped.set(id, index);
    if (this.stopped.size > this.max) {
      const oldest = this.stopped.keys().next();
      if (oldest.done !== true) this.stopped.delete(oldest.value);
    }
  }

  /** Sent in full, or failed for good. */
  forget(id: string): void {
    this.stopped.delete(id);
  }
}
