import { describe, expect, it } from 'vitest';
import type { Transition } from '../diff/transition.js';
import { mergeHeldAndGrouped } from './catchup.js';

function t(id: string, kind: Transition['kind'], observedAt: number): Transition {
  return {
    id,
    kind,
    feedId: 'stripe',
    subject: 'incident:i1',
    service: { feedId: 'stripe', name: 'Stripe', canonicalUrl: null, officialStatusUrl: null },
    previous: null,
    current: {},
    incident: null,
    observedAt,
  };
}

const ids = (ts: Transition[]): string[] => ts.map((x) => x.id);

describe('mergeHeldAndGrouped', () => {
  it('an opening grouped before its held closing goes first', () => {
    const open = t('o', 'incident.opened', 100);
    const close = t('c', 'incident.resolved', 200);
    expect(ids(mergeHeldAndGrouped([close], [open]))).toEqual(['o', 'c']);
  });

  it('a held closing before a grouped reopening keeps its place', () => {
    const close = t('c', 'incident.resolved', 100);
    const reopened = { ...t('r', 'incident.updated', 200), current: { reopened: true } };
    expect(ids(mergeHeldAndGrouped([close], [reopened]))).toEqual(['c', 'r']);
  });

  it('at the same instant (one cycle) an opening goes before its closing, whichever list holds it', () => {
    const open = t('o', 'incident.opened', 100);
    const close = t('c', 'incident.resolved', 100);
    expect(ids(mergeHeldAndGrouped([close], [open]))).toEqual(['o', 'c']);
    expect(ids(mergeHeldAndGrouped([open], [close]))).toEqual(['o', 'c']);
  });

  it("keeps each list's own order, and takes either list alone as it is", () => {
    const held = [t('h1', 'incident.updated', 300), t('h2', 'incident.updated', 100)];
    const grouped = [t('g1', 'incident.opened', 200), t('g2', 'incident.opened', 50)];
    expect(ids(mergeHeldAndGrouped(held, grouped))).toEqual(['g1', 'g2', 'h1', 'h2']);
    expect(ids(mergeHeldAndGrouped(held, []))).toEqual(['h1', 'h2']);
    expect(ids(mergeHeldAndGrouped([], grouped))).toEqual(['g1', 'g2']);
  });
});
