import { describe, expect, it } from 'vitest';
import {
  ALTERNATE,
  STANDARD,
  WORDINGS,
  isWording,
  vocabularyOf,
  type Vocabulary,
} from './wording.js';

/** The words the upstream contract names ("values seen"): the same in both wordings. */
const NAMED: Partial<Record<keyof Vocabulary, readonly string[]>> = {
  status: ['operational'],
  reachability: [],
  scope: ['none'],
  verification: ['verified'],
  statusB: ['up'],
  indicatorB: ['none'],
  incident: ['investigating'],
  sla: ['at_risk'],
  tier: [],
};

const TABLES = Object.keys(NAMED) as (keyof typeof NAMED)[];

function table(v: Vocabulary, field: keyof typeof NAMED): Record<string, string> {
  return v[field] as Record<string, string>;
}

describe('wordings', () => {
  it('lists exactly standard and alternate', () => {
    expect(WORDINGS).toEqual(['standard', 'alternate']);
    expect(vocabularyOf('standard')).toBe(STANDARD);
    expect(vocabularyOf('alternate')).toBe(ALTERNATE);
    expect(isWording('alternate')).toBe(true);
    expect(isWording('Alternate')).toBe(false);
    expect(isWording(undefined)).toBe(false);
  });

  it.each(TABLES)(
    '%s: alternate differs from standard exactly where the contract names no word',
    (field) => {
      const std = table(STANDARD, field);
      const alt = table(ALTERNATE, field);
      expect(Object.keys(alt).sort()).toEqual(Object.keys(std).sort());
      const named = new Set(NAMED[field]);
      for (const [key, word] of Object.entries(std)) {
        if (named.has(word)) expect(alt[key], `${field}.${key}`).toBe(word);
        else expect(alt[key], `${field}.${key}`).not.toBe(word);
      }
      // no alternate word is a standard word of the same field (except the named ones)
      const stdWords = new Set(Object.values(std));
      for (const word of Object.values(alt)) {
        if (!named.has(word)) expect(stdWords.has(word), `${field}: ${word}`).toBe(false);
      }
      // distinct standard words stay distinct (one-to-one translation)
      expect(new Set(Object.values(alt)).size).toBe(stdWords.size);
    },
  );

  it('has the exact alternate words of the brief', () => {
    expect(ALTERNATE.status).toEqual({
      operational: 'operational',
      degraded: 'performance_issues',
      partial_outage: 'partially_unavailable',
      major_outage: 'unavailable',
      maintenance: 'scheduled_work',
    });
    expect(ALTERNATE.reachability).toEqual({
      reachable: 'responding',
      degraded: 'slow',
      unreachable: 'not_responding',
    });
    expect(ALTERNATE.scope).toEqual({
      none: 'none',
      partial: 'some_components',
      full: 'all_components',
    });
    expect(ALTERNATE.verification).toEqual({
      fresh: 'verified',
      stale: 'outdated',
      unverified: 'unconfirmed',
    });
    expect(ALTERNATE.incident).toEqual({
      investigating: 'investigating',
      identified: 'cause_found',
      monitoring: 'fix_deployed',
      resolved: 'closed',
    });
    expect(ALTERNATE.sla).toEqual({ met: 'within_target', at_risk: 'at_risk', breached: 'missed' });
    expect(ALTERNATE.maintenanceInProgress).not.toBe(STANDARD.maintenanceInProgress);
  });
});
