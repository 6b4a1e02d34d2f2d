import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines } from './deadlines.js';

describe('Deadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends each entry between 1x and 1.25x the limit after it was added, unless deleted first', () => {
    const d = new Deadlines(1000);
    const ended: string[] = [];
    d.add(() => ended.push('a'));
    const b = d.add(() => ended.push('b'));
    vi.advanceTimersByTime(500);
    d.add(() => ended.push('c'));
    d.delete(b);
    vi.advanceTimersByTime(499);
    expect(ended).toEqual([]);
    vi.advanceTimersByTime(251);
    expect(ended).toEqual(['a']);
    vi.advanceTimersByTime(750);
    expect(ended).toEqual(['a', 'c']);
    expect(d.size).toBe(0);
  });

  it('runs its timer only while entries wait', () => {
    const d = new Deadlines(40);
    const entry = d.add(() => undefined);
    expect(vi.getTimerCount()).toBe(1);
    d.delete(entry);
    vi.advanceTimersByTime(10);
    expect(vi.getTimerCount()).toBe(0);
    d.add(() => undefined);
    vi.advanceTimersByTime(60);
    expect(d.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
