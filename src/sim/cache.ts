/**
 * Byte-bounded memo of serialized response fragments. Keys carry everything the value depends
 * on (resource, variant, state version, check cycle...), so stale entries are simply never hit
 * again and age out oldest-first once the byte budget is exceeded.
 */
export class BodyCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  get(key: string, build: () => Buffer): Buffer {
    const hit = this.entries.get(key);
    if (hit) return hit;
    const value = build();
    this.entries.set(key, value);
    this.bytes += value.length;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes || k === key) break;
      this.entries.delete(k);
      this.bytes -= v.length;
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
