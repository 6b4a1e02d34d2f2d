/**
 * One home per rule: the delivery rank, the routing clock's skew and the ledger's values are
 * defined once, in src/delivery/rules.ts, and the Lua scripts take them as ARGV; the channel kinds
 * are listed once, in src/notify/kinds.ts, and the demo's sinks derive from that list. These tests
 * fail when a copy comes back.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CLOCK_SKEW_MS,
  LEDGER_VALUES,
  isClosingRank,
  rankOf,
  rankSpan,
} from '../src/delivery/rules.js';
import { SINKS } from '../src/demo/sinks.js';
import { CHANNEL_TYPES } from '../src/notify/kinds.js';

const SCRIPTS_DIR = new URL('../src/redis/scripts/', import.meta.url);

/** Every script's code, comments left out (a header may name a rule; only code may not copy it). */
const scripts = readdirSync(SCRIPTS_DIR)
  .filter((f) => f.endsWith('.lua'))
  .map((file) => ({
    file,
    code: readFileSync(new URL(file, SCRIPTS_DIR), 'utf8')
      .split('\n')
      .map((line) => line.replace(/--.*$/, ''))
      .join('\n'),
  }));

/** The string literals of a script's code. */
function literals(code: string): string[] {
  return [...code.matchAll(/'([^'\\]*)'|"([^"\\]*)"/g)].map((m) => m[1] ?? m[2] ?? '');
}

describe('the Lua scripts carry no copy of a TypeScript rule', () => {
  it('finds the scripts', () => {
    expect(scripts.map((s) => s.file)).toContain('ledger-hand-off.lua');
    expect(scripts.map((s) => s.file)).toContain('routing-decided-at.lua');
  });

  it('no script spells the clock skew (CLOCK_SKEW_MS)', () => {
    const skew = new RegExp(`\\b${String(CLOCK_SKEW_MS)}\\b`);
    for (const { file, code } of scripts) {
      // pace.lua keeps a pace key a minute past its last slot: its own rule, not the clock skew.
      const own = file === 'pace.lua' ? code.replaceAll('- now + 60000)', '') : code;
      expect(own, file).not.toMatch(skew);
    }
  });

  it('no script does rank arithmetic (ranks are rankOf / rankSpan)', () => {
    for (const { file, code } of scripts) {
      expect(code, file).not.toMatch(/\*\s*2\b|\b2\s*\*/);
    }
  });

  it('no script spells a ledger value (LEDGER_VALUES)', () => {
    for (const { file, code } of scripts) {
      for (const literal of literals(code)) {
        expect(literal.startsWith(LEDGER_VALUES.batchOwnerPrefix), `${file}: '${literal}'`).toBe(
          false,
        );
        if (file.startsWith('ledger-')) {
          expect(
            [LEDGER_VALUES.retryJob, LEDGER_VALUES.sent],
            `${file}: '${literal}'`,
          ).not.toContain(literal);
        }
      }
    }
  });
});

describe('the rules as stored', () => {
  // Ranks and ledger values are stored in Redis: these are the formats existing data has.
  const T = Date.UTC(2026, 0, 1, 12, 0, 0);

  it('a rank is createdAt doubled, plus one for a closing', () => {
    expect(rankOf(T, false)).toBe(T * 2);
    expect(rankOf(T, true)).toBe(T * 2 + 1);
    expect(isClosingRank(rankOf(T, true))).toBe(true);
    expect(isClosingRank(rankOf(T, false))).toBe(false);
    expect(rankSpan(3_600_000)).toBe(7_200_000);
  });

  it('the ledger values and the clock skew', () => {
    expect(LEDGER_VALUES).toEqual({ batchOwnerPrefix: 'b:', retryJob: 'j', sent: 's' });
    expect(CLOCK_SKEW_MS).toBe(60_000);
  });
});

describe('the demo', () => {
  it("has a sink for each channel kind of kinds.ts, and the Slack app's", () => {
    expect(SINKS.filter((s) => s !== 'slack-app')).toEqual(CHANNEL_TYPES);
    expect(SINKS).toContain('opsgenie');
  });

  it('names no channel kind of its own in sinks.ts', () => {
    const source = readFileSync(new URL('../src/demo/sinks.ts', import.meta.url), 'utf8');
    // A hand-copied list would be a union or array of kind names: at most one name per line here.
    for (const line of source.split('\n')) {
      const named = CHANNEL_TYPES.filter((k) => line.includes(`'${k}'`));
      expect(named.length, line).toBeLessThan(2);
    }
  });
});
