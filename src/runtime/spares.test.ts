import { describe, expect, it } from 'vitest';
import { spareStep, type SpareState } from './spares.js';

const OFF: SpareState = { running: false, idleSince: null };
const limits = { startBatches: 10, idleMs: 60_000 };

describe('spareStep', () => {
  it('starts the spares once the backlog reaches the threshold, not below', () => {
    expect(spareStep(OFF, 9, 0, limits)).toEqual({ state: OFF, action: null });
    expect(spareStep(OFF, 10, 0, limits)).toEqual({
      state: { running: true, idleSince: null },
      action: 'start',
    });
  });

  it('ends them once the queue has been empty for idleMs in a row', () => {
    let s: SpareState = { running: true, idleSince: null };
    let r = spareStep(s, 0, 1_000, limits);
    expect(r).toEqual({ state: { running: true, idleSince: 1_000 }, action: null });
    s = r.state;
    r = spareStep(s, 0, 60_999, limits);
    expect(r.action).toBeNull();
    r = spareStep(r.state, 0, 61_000, limits);
    expect(r).toEqual({ state: OFF, action: 'stop' });
  });

  it('a batch waiting again restarts the idle count; running spares are not started twice', () => {
    const idle: SpareState = { running: true, idleSince: 1_000 };
    expect(spareStep(idle, 1, 50_000, limits)).toEqual({
      state: { running: true, idleSince: null },
      action: null,
    });
    expect(spareStep({ running: true, idleSince: null }, 500, 0, limits).action).toBeNull();
  });
});
