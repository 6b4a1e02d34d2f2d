import { describe, expect, it } from 'vitest';
import { keyOfField, ledgerField, parseLedgerField, parseRouteKey, routeKey } from './route.js';

describe('route codec', () => {
  const route = { subscription: 'payments', channel: 'pager-1' };

  it('writes the forms Redis holds and reads them back', () => {
    expect(routeKey(route)).toBe('payments|pager-1');
    expect(parseRouteKey('payments|pager-1')).toEqual(route);
    const field = ledgerField(route, 'stripe|incident:inc-1');
    expect(field).toBe('payments|pager-1|stripe|incident:inc-1');
    expect(parseLedgerField(field)).toEqual({ route, key: 'stripe|incident:inc-1' });
    expect(keyOfField(field)).toBe('stripe|incident:inc-1');
  });

  it('answers null for text that is not one', () => {
    expect(parseRouteKey('payments')).toBeNull();
    expect(parseLedgerField('payments|pager-1')).toBeNull();
    expect(parseLedgerField('')).toBeNull();
    expect(keyOfField('payments')).toBe('');
  });
});
