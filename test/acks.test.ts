/**
 * Acknowledgement (src/noise/acks.ts, docs/acting-on-alerts.md): an acknowledged episode gets no
 * more reminders for the subscription that acknowledged it, its updates and closing still go
 * out, the closing clears the ack, and the next opening is not acknowledged.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EventKind } from '../src/config/events.js';
import type { Transition } from '../src/diff/transition.js';
import { lifecycleKey } from '../src/noise/policy.js';
import { stripeIncident } from './helpers/episode.js';
import { noiseHarness, type NoiseHarness } from './helpers/noise.js';

let h: NoiseHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = Date.UTC(2026, 10, 24, 10, 0, 0);

function incident(kind: EventKind, at: number, n = 1, extra: Partial<Transition> = {}): Transition {
  const id = `t${kind.replace('.', '')}stripe${n}${at}`;
  return stripeIncident(kind, { at, startedAt: START, n }, { id, ...extra });
}

/** Two subscriptions of the same service, both reminded hourly, both on the webhook. */
const SUBS = ['ops', 'pay'].map((name) => ({
  name,
  services: ['stripe'],
  channels: ['hook'],
  events: ['incident.opened', 'incident.updated', 'incident.resolved'],
  repeat: '1h',
}));

/** (type, subscription) of every webhook received, in order. */
function received(x: NoiseHarness): string[] {
  return x
    .hooks()
    .map((b) => `${b.type}:${String(b.data['subscription'])}`)
    .sort();
}

describe('acknowledgement', () => {
  it('stops the reminders of the subscription that acknowledged; updates and the closing still arrive; the closing clears it', async () => {
    h = await noiseHarness(SUBS, { start: START });
    const opened = incident('incident.opened', h.clock.now);
    await h.route(opened);
    await h.hook.waitFor(2);
    const ack = await h.store.acknowledge(
      {
        subscription: 'ops',
        channels: ['hook'],
        lifecycle: lifecycleKey(opened),
        by: 'token:t1',
        name: 'ops team',
        via: 'api',
      },
      h.clock.now,
    );
    expect(ack?.created).toBe(true);
    expect(ack?.ack.openings).toEqual([opened.id]);
    // A second ack keeps the first acknowledger.
    const again = await h.store.acknowledge(
      {
        subscription: 'ops',
        channels: ['hook'],
        lifecycle: lifecycleKey(opened),
        by: 'slack:U2',
        name: 'someone else',
        via: 'slack',
      },
      h.clock.now + 1,
    );
    expect(again).toMatchObject({ created: false, ack: { by: 'token:t1' } });

    h.clock.now += 60 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(3);
    // Only `pay` is reminded.
    expect(received(h)).toEqual(['incident.opened:ops', 'incident.opened:pay', 'reminder:pay']);
    // An update still reaches both.
    await h.route(incident('incident.updated', h.clock.now, 1));
    await h.hook.waitFor(5);
    h.clock.now += 60 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(6);
    // The closing reaches both, and deletes the ack in the same MULTI as the ledger.
    await h.route(incident('incident.resolved', h.clock.now, 1));
    await h.hook.waitFor(8);
    expect(await h.store.acks.get('ops', lifecycleKey(opened), h.clock.now)).toBeNull();
    expect(received(h)).toEqual([
      'incident.opened:ops',
      'incident.opened:pay',
      'incident.resolved:ops',
      'incident.resolved:pay',
      'incident.updated:ops',
      'incident.updated:pay',
      'reminder:pay',
      'reminder:pay',
    ]);
    // A new opening of the same lifecycle is not acknowledged: both are reminded.
    h.clock.now += 60_000;
    await h.route(incident('incident.opened', h.clock.now, 1));
    await h.hook.waitFor(10);
    h.clock.now += 60 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 2 });
    await h.hook.waitFor(12);
  });

  it('refuses to acknowledge what is not open for the subscription (never told, or closed)', async () => {
    h = await noiseHarness(SUBS, { start: START });
    const opened = incident('incident.opened', h.clock.now);
    const input = {
      subscription: 'ops',
      channels: ['hook'],
      lifecycle: lifecycleKey(opened),
      by: 'token:t1',
      name: null,
      via: 'api' as const,
    };
    expect(await h.store.acknowledge(input, h.clock.now)).toBeNull();
    await h.route(opened);
    await h.hook.waitFor(2);
    await h.route(incident('incident.resolved', h.clock.now + 1000));
    await h.hook.waitFor(4);
    expect(await h.store.acknowledge(input, h.clock.now + 2000)).toBeNull();
    const keys = await h.tr.redis.keys(`${h.tr.prefix}:noise:ack:*`);
    expect(keys).toEqual([]);
  });

  it('an ack written as the closing went by does not cover the next opening', async () => {
    h = await noiseHarness(SUBS, { start: START });
    const opened = incident('incident.opened', h.clock.now);
    await h.route(opened);
    await h.hook.waitFor(2);
    await h.route(incident('incident.resolved', h.clock.now + 1000));
    await h.hook.waitFor(4);
    // The ack of the closed opening lands after the closing deleted the old one.
    await h.store.acks.put({
      subscription: 'ops',
      lifecycle: lifecycleKey(opened),
      openings: [opened.id],
      by: 'slack:U1',
      name: null,
      via: 'slack',
      at: h.clock.now,
      expiresAt: h.clock.now + 24 * 3600_000,
    });
    h.clock.now += 60_000;
    await h.route(incident('incident.opened', h.clock.now, 1));
    await h.hook.waitFor(6);
    h.clock.now += 60 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 2 });
  });
});
