import { describe, expect, it } from 'vitest';
import { notification, transition } from '../../test/notify-helpers.js';
import type { Transition } from '../diff/transition.js';
import { renderOpsgenieRequests } from './opsgenie/render.js';
import { chronological } from './order.js';
import { renderPagerduty, type PagerdutyAlertEvent } from './pagerduty/render.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 7);
const NON_FINITE = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

const at = (id: string, observedAt: number): Transition => ({
  ...transition('incident.updated'),
  id,
  observedAt,
});

describe('chronological', () => {
  it('puts the oldest first and keeps ties in the given order, without touching its input', () => {
    const given = [at('c', 3000), at('a1', 1000), at('b', 2000), at('a2', 1000)];
    expect(chronological(given).map((t) => t.id)).toEqual(['a1', 'a2', 'b', 'c']);
    expect(given.map((t) => t.id)).toEqual(['c', 'a1', 'b', 'a2']);
  });

  it('puts a transition without a finite time after the timed ones, in the given order', () => {
    const given = [
      at('c', 3000),
      at('nan', Number.NaN),
      at('a', 1000),
      at('inf', Number.POSITIVE_INFINITY),
      at('b', 2000),
      at('-inf', Number.NEGATIVE_INFINITY),
    ];
    expect(chronological(given).map((t) => t.id)).toEqual(['a', 'b', 'c', 'nan', 'inf', '-inf']);
    // The same whatever the given order of the timed ones.
    expect(chronological([...given].reverse()).map((t) => t.id)).toEqual([
      'a',
      'b',
      'c',
      '-inf',
      'inf',
      'nan',
    ]);
  });
});

describe('a batch holding a transition without a finite time', () => {
  const opened = transition('incident.opened', { observedAt: 1000 });
  const resolved = transition('incident.resolved', { observedAt: 2000 });
  const untimed = (observedAt: number): Transition =>
    transition('incident.opened', {
      id: 'tuntimed',
      subject: 'incident:inc-9',
      incident: { ...opened.incident!, id: 'inc-9' },
      observedAt,
    });

  it.each(NON_FINITE)('PagerDuty: triggers and resolves the timed ones first (%s)', (time) => {
    const n = notification([resolved, untimed(time), opened], { type: 'batch' });
    const events = renderPagerduty(n, { routingKey: 'R0UT1NGKEY0123456789abcdefABCDEF' }, NOW).map(
      (r) => r.body as PagerdutyAlertEvent,
    );
    expect(events.map((e) => `${e.event_action} ${e.dedup_key}`)).toEqual([
      'trigger statuswatch:stripe:incident:inc-1',
      'resolve statuswatch:stripe:incident:inc-1',
      'trigger statuswatch:stripe:incident:inc-9',
    ]);
    // Stamped with the sending time, which is later than the others: the order agrees.
    expect(events[2]?.payload.timestamp).toBe(new Date(NOW).toISOString());
  });

  it.each(NON_FINITE)('Opsgenie: creates and closes the timed ones first (%s)', (time) => {
    const n = notification([resolved, untimed(time), opened], { type: 'batch' });
    expect(renderOpsgenieRequests(n).map((r) => `${r.action} ${r.alias}`)).toEqual([
      'create statuswatch:stripe:incident:inc-1',
      'close statuswatch:stripe:incident:inc-1',
      'create statuswatch:stripe:incident:inc-9',
    ]);
  });
});
