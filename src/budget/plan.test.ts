import { describe, expect, it } from 'vitest';
import { budgetOf, describeOverBudget, limiterFor, planRequests } from './plan.js';

const poll = { status: 60_000, incidents: 60_000, sla: 900_000, scores: 900_000 };

describe('planRequests', () => {
  it.each([
    ['auto', false, 30],
    ['auto', true, 120],
    [45, false, 45],
  ] as const)('budget %s with key=%s is %d', (rpm, key, want) => {
    expect(budgetOf(rpm, key)).toBe(want);
  });

  it('default plan without a key: status + incidents + catalog, premium left out', () => {
    const plan = planRequests({ poll, hasApiKey: false, requestsPerMinute: 'auto' });
    expect(plan.lines.map((l) => l.name)).toEqual([
      'status',
      'incidents',
      'catalog',
      'incident confirmations',
    ]);
    // The headroom within 24/min allows 21 confirming reads a minute; at most 10 per cycle.
    expect(plan.confirmationsPerCycle).toBe(10);
    expect(plan.total).toBeCloseTo(2 + 1 / 60 + 10, 6);
    expect(plan.ok).toBe(true);
    expect(plan.allowed).toBe(24);
  });

  it('with a key, premium polls are planned', () => {
    const plan = planRequests({ poll, hasApiKey: true, requestsPerMinute: 'auto', categories: 3 });
    expect(plan.lines.map((l) => l.name)).toEqual([
      'status',
      'incidents',
      'sla',
      'scores',
      'catalog',
      'categories (3)',
      'incident confirmations',
    ]);
    expect(plan.total).toBeCloseTo(2 + 8 / 60 + 1 / 60 + 3 / 60 + 10, 6);
  });

  it('refuses a plan over 80% and names the offending intervals', () => {
    const plan = planRequests({
      poll: { ...poll, status: 6_000, incidents: 10_000 },
      hasApiKey: false,
      requestsPerMinute: 'auto',
    });
    // 16/min of polls leave room for one confirming read per incidents poll (6/min).
    expect(plan.confirmationsPerCycle).toBe(1);
    expect(plan.total).toBeCloseTo(22 + 1 / 60, 6);
    expect(plan.ok).toBe(true); // within 80% of 30
    const over = planRequests({
      poll: { ...poll, status: 2_000, incidents: 10_000 },
      hasApiKey: false,
      requestsPerMinute: 'auto',
    });
    expect(over.ok).toBe(false);
    expect(describeOverBudget(over)).toContain(
      'poll.status every 2s = 30/min, poll.incidents every 10s = 6/min',
    );
  });

  it('confirmations take the headroom, at least one per incidents poll even when it tips the plan over', () => {
    const tight = planRequests({
      poll: { ...poll, status: 5_000, incidents: 10_000 },
      hasApiKey: false,
      requestsPerMinute: 'auto',
    });
    expect(tight.confirmationsPerCycle).toBe(1);
    expect(tight.ok).toBe(false);
    expect(describeOverBudget(tight)).toContain(
      'incident confirmations (at least 1 per incidents poll) = 6/min',
    );
    const roomy = planRequests({
      poll: { ...poll, incidents: 300_000 },
      hasApiKey: true,
      requestsPerMinute: 'auto',
    });
    expect(roomy.confirmationsPerCycle).toBe(10);
  });

  it('the limiter keeps seven windows within the budget', () => {
    for (const budget of [1, 7, 30, 120, 1000]) {
      const l = limiterFor(budget);
      expect(l.duration).toBe(10_000);
      if (budget >= 7) expect(l.max * 7).toBeLessThanOrEqual(budget);
    }
  });
});
