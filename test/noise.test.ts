import type { PollKind } from '../src/pipeline/cycle.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Transition } from '../src/diff/transition.js';
import type { EventKind } from '../src/config/events.js';
import { transition } from './notify-helpers.js';
import { noiseHarness, type NoiseHarness } from './helpers/noise.js';
import { waitFor } from './helpers/wait.js';
import { createSimulator } from '../src/sim/index.js';
import { createUpstreamClient } from '../src/upstream/index.js';
import { monthlyFigures } from '../src/noise/monthly.js';

const PREMIUM = 'premium-key-for-monthly-digests';

let h: NoiseHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** 2026-11-24 (a Tuesday) 23:00 in Berlin (CET, UTC+1). */
const TUE_2300_BERLIN = Date.UTC(2026, 10, 24, 22, 0, 0);

function incident(kind: EventKind, feedId: string, at: number, n = 1): Transition {
  return transition(kind, {
    id: `t${kind.replace('.', '')}${feedId.replace(/[^a-z0-9]/g, '')}${n}`,
    feedId,
    subject: `incident:inc-${feedId}-${n}`,
    service: { feedId, name: `Service ${feedId}`, canonicalUrl: null, officialStatusUrl: null },
    incident: {
      id: `inc-${feedId}-${n}`,
      title: `${feedId} is down`,
      status: kind === 'incident.resolved' ? 'resolved' : 'investigating',
      started: Math.floor(at / 1000),
      updateCount: 1,
      latestUpdate: null,
    },
    observedAt: at,
  });
}

function slaBreached(feedId: string, at: number): Transition {
  return transition('sla.breached', {
    id: `tslabreached${feedId}`,
    feedId,
    subject: 'sla',
    service: { feedId, name: `Service ${feedId}`, canonicalUrl: null, officialStatusUrl: null },
    previous: { status: 'at_risk' },
    current: {
      status: 'breached',
      statusRaw: 'breached',
      margin: -0.4,
      uptime30d: 99.5,
      slaTarget: 99.9,
    },
    incident: null,
    observedAt: at,
  });
}

const kinds = (x: NoiseHarness): string[] => x.hooks().map((b) => b.type);

/** Subscription `ops`: stripe and adyen incidents opening and resolving → hook. */
const OPS = {
  name: 'ops',
  services: ['stripe', 'adyen'],
  channels: ['hook'],
  events: ['incident.opened', 'incident.resolved'],
};

/** Subscription `night` (stripe → hook) with weeknight quiet hours that `except` lets through. */
function nightHarness(
  events: EventKind[],
  except: EventKind[],
  hookReply?: Parameters<typeof noiseHarness>[1]['hookReply'],
): Promise<NoiseHarness> {
  return noiseHarness(
    [
      {
        name: 'night',
        services: ['stripe'],
        channels: ['hook'],
        events,
        quietHours: { timezone: 'Europe/Berlin', windows: ['Mon-Fri 22:00-07:00'], except },
      },
    ],
    { start: TUE_2300_BERLIN, ...(hookReply === undefined ? {} : { hookReply }) },
  );
}

/** What the receiver got: two openings, stripe's closing, and one reminder, of adyen only. */
function expectAdyenReminded(harness: NoiseHarness): void {
  expect(kinds(harness)).toEqual([
    'incident.opened',
    'incident.opened',
    'incident.resolved',
    'reminder',
  ]);
  const events = harness.hooks()[3]?.data.events as { service: { feedId: string } }[];
  expect(events.map((e) => e.service.feedId)).toEqual(['adyen']);
}

/**
 * Subscription `payments` (`services`, `events` → hook) with a weekly digest (Mondays 08:00
 * Berlin), its first boundary set on Mon 16 Nov 2026, and stripe's incident opened on Tue 10:04
 * Berlin and resolved 90 minutes later.
 */
async function weekWithStripeIncident(
  services: string[],
  events: EventKind[],
): Promise<NoiseHarness> {
  const monday = Date.UTC(2026, 10, 16, 7, 0, 30); // Mon 16 Nov 08:00:30 Berlin
  const harness = await noiseHarness(
    [
      {
        name: 'payments',
        services,
        channels: ['hook'],
        events,
        digest: { schedule: '0 8 * * 1', timezone: 'Europe/Berlin' },
      },
    ],
    { start: monday, apiKey: 'premium-key-for-digests' },
  );
  expect(await harness.ticker.tick()).toMatchObject({ digests: 0 }); // first sight: the marker is set
  const tue = Date.UTC(2026, 10, 17, 9, 4, 0); // Tue 10:04 Berlin
  harness.clock.now = tue;
  await harness.route(incident('incident.opened', 'stripe', tue));
  harness.clock.now = tue + 90 * 60_000;
  await harness.route(incident('incident.resolved', 'stripe', harness.clock.now));
  return harness;
}

describe('noise control (real Redis, real receivers, injected clock)', () => {
  it('a 40-service outage with group: 30s is one message per channel naming all 40', async () => {
    h = await noiseHarness(
      [
        {
          name: 'all',
          services: ['*'],
          channels: ['hook', 'chat'],
          events: ['incident.opened'],
          group: '30s',
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    const feeds = Array.from({ length: 40 }, (_, i) => `svc-${String(i).padStart(3, '0')}`);
    await h.route(...feeds.map((f) => incident('incident.opened', f, h!.clock.now)));
    h.clock.now += 29_000;
    expect(await h.ticker.tick()).toMatchObject({ batches: 0 });
    expect(h.hook.received.length + h.slack.received.length).toBe(0);
    h.clock.now += 1_000;
    expect(await h.ticker.tick()).toMatchObject({ batches: 2 });
    await h.hook.waitFor(1);
    await h.slack.waitFor(1);
    expect(await h.ticker.tick()).toMatchObject({ batches: 0 });
    const [batch] = h.hooks();
    expect(batch?.type).toBe('batch');
    const events = batch?.data.events as { service: { feedId: string } }[];
    expect(events.map((e) => e.service.feedId).sort()).toEqual(feeds);
    const slackText = h.slack.received[0]?.body ?? '';
    expect(slackText).toContain('40');
    expect(h.hook.received).toHaveLength(1);
    expect(h.slack.received).toHaveLength(1);
  });

  it('reminders repeat while an incident stays open and stop at its resolution', async () => {
    h = await noiseHarness(
      [
        {
          name: 'ops',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved'],
          repeat: '1h',
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    h.clock.now += 59 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    h.clock.now += 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(2);
    h.clock.now += 30 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    h.clock.now += 30 * 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(3);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(4);
    h.clock.now += 5 * 3600_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    expect(kinds(h)).toEqual(['incident.opened', 'reminder', 'reminder', 'incident.resolved']);
    const ids = h.hook.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(4);
  });

  it('quiet hours hold transitions and send one catch-up with what opened and resolved inside; excepted kinds break through', async () => {
    h = await noiseHarness(
      [
        {
          name: 'night',
          services: ['stripe', 'adyen'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved', 'sla.breached'],
          quietHours: {
            timezone: 'Europe/Berlin',
            windows: ['Mon-Fri 22:00-07:00'],
            except: ['sla.breached'],
          },
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now += 3600_000; // 00:00
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.route(slaBreached('adyen', h.clock.now));
    await h.hook.waitFor(1);
    expect(kinds(h)).toEqual(['sla.breached']);
    h.clock.now = Date.UTC(2026, 10, 25, 5, 59, 0); // Wed 06:59 Berlin: still quiet
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30); // Wed 07:00:30 Berlin
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(2);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    const catchup = h.hooks()[1];
    expect(catchup?.type).toBe('catchup');
    const events = catchup?.data.events as { kind: string; service: { feedId: string } }[];
    expect(events.map((e) => `${e.kind} ${e.service.feedId}`)).toEqual([
      'incident.opened stripe',
      'incident.resolved stripe',
    ]);
    expect(h.hook.received).toHaveLength(2);
  });

  it('an excepted opening grouped just before the end of quiet hours and its held closing: the catch-up carries both, the opening first, and the group sends nothing after it', async () => {
    h = await noiseHarness(
      [
        {
          name: 'night',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved'],
          group: '5m',
          quietHours: {
            timezone: 'Europe/Berlin',
            windows: ['Mon-Fri 22:00-07:00'],
            except: ['incident.opened'],
          },
        },
      ],
      { start: Date.UTC(2026, 10, 25, 5, 58, 0) }, // Wed 06:58 Berlin
    );
    // 06:58: the opening is excepted, so it goes to the group (5 minutes); 06:59: its closing
    // is held for the catch-up.
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now += 60_000;
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 1); // 07:00:01: the group's window runs to 07:03
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1, batches: 0 });
    await h.hook.waitFor(1);
    const events = h.hooks()[0]?.data.events as { kind: string }[];
    expect(h.hooks()[0]?.type).toBe('catchup');
    expect(events.map((e) => e.kind)).toEqual(['incident.opened', 'incident.resolved']);
    h.clock.now = Date.UTC(2026, 10, 25, 6, 5, 0); // 07:05: past the group's window
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0, batches: 0 });
    expect(h.hook.received).toHaveLength(1);
  });

  it('a closing that goes out through quiet hours takes what was held of its lifecycle out of the catch-up; a later reopening stays in', async () => {
    h = await nightHarness(
      ['incident.opened', 'incident.updated', 'incident.resolved'],
      ['incident.opened', 'incident.resolved'],
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    h.clock.now += 30 * 60_000; // 23:30: an update, held
    await h.route(incident('incident.updated', 'stripe', h.clock.now));
    h.clock.now += 60 * 60_000; // 00:30: the resolution breaks through
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(2);
    h.clock.now += 60_000; // 00:31: the incident is back (a new lifecycle), held
    // Seen by a replica whose clock is two minutes behind (00:29, before the resolution):
    // its place in the held list, after the resolution, keeps it.
    const reopened: Transition = {
      ...incident('incident.updated', 'stripe', h.clock.now - 120_000),
      id: 'treopenedstripe1',
      current: { status: 'investigating', updateCount: 2, reopened: true },
    };
    await h.route(reopened);
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30); // Wed 07:00:30 Berlin
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(3);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(kinds(h)).toEqual(['incident.opened', 'incident.resolved', 'catchup']);
    const events = h.hooks()[2]?.data.events as { eventId: string }[];
    expect(events.map((e) => e.eventId)).toEqual(['treopenedstripe1']);
    expect(h.hook.received).toHaveLength(3);
  });

  it('a reopening held before a late-routed closing of the earlier lifecycle (a routing retry) stays in the catch-up', async () => {
    h = await nightHarness(
      ['incident.opened', 'incident.updated', 'incident.resolved'],
      ['incident.opened', 'incident.resolved'],
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    const resolvedAt = h.clock.now + 60_000;
    h.clock.now += 120_000;
    // The incident is back (held) before the resolution's cycle, retried, is routed.
    await h.route({
      ...incident('incident.updated', 'stripe', h.clock.now),
      id: 'treopenedstripe1',
      current: { status: 'investigating', updateCount: 2, reopened: true },
    });
    await h.route(incident('incident.resolved', 'stripe', resolvedAt));
    await h.hook.waitFor(2);
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30); // Wed 07:00:30 Berlin
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(3);
    const events = h.hooks()[2]?.data.events as { eventId: string }[];
    expect(events.map((e) => e.eventId)).toEqual(['treopenedstripe1']);
  });

  it('a closing routed after quiet hours end, before the tick that sends the catch-up, goes out in that catch-up behind its opening', async () => {
    h = await nightHarness(['incident.opened', 'incident.resolved'], []);
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 10); // Wed 07:00:10 Berlin: quiet hours are over
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    h.clock.now += 2_000;
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(1);
    // Nothing is held back once the catch-up is out: the next change goes out at once.
    await h.route(incident('incident.opened', 'stripe', h.clock.now, 2));
    await h.hook.waitFor(2);
    expect(kinds(h)).toEqual(['catchup', 'incident.opened']);
    const events = h.hooks()[0]?.data.events as { kind: string }[];
    expect(events.map((e) => e.kind)).toEqual(['incident.opened', 'incident.resolved']);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(h.hook.received).toHaveLength(2);
  });

  it("a closing owed to a route its subscription no longer leads to waits for that route's catch-up too", async () => {
    h = await nightHarness(['incident.opened', 'incident.resolved'], []);
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    // The team stops watching stripe overnight: the closing is still owed to the route.
    const [night] = h.config.subscriptions;
    if (night === undefined) throw new Error('one subscription expected');
    h.config.subscriptions.splice(0, 1, { ...night, services: ['adyen'] });
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 10); // Wed 07:00:10 Berlin
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    h.clock.now += 2_000;
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(1);
    expect(kinds(h)).toEqual(['catchup']);
    const events = h.hooks()[0]?.data.events as { kind: string }[];
    expect(events.map((e) => e.kind)).toEqual(['incident.opened', 'incident.resolved']);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(h.hook.received).toHaveLength(1);
  });

  it.each([
    ['a second after it', 1_000],
    ['by a replica whose clock is 5 s behind the tick', -5_000],
  ])(
    'a closing routed after the catch-up went out (%s) waits while that catch-up, carrying its opening, is retried',
    async (_, later) => {
      // The catch-up's first attempt is refused; everything else is taken.
      h = await nightHarness(['incident.opened', 'incident.resolved'], [], (req) =>
        req.body.includes('"catchup"') && harness.hook.received.length === 0
          ? { status: 503 }
          : { status: 204 },
      );
      const harness = h;
      await harness.route(incident('incident.opened', 'stripe', harness.clock.now));
      harness.clock.now = Date.UTC(2026, 10, 25, 6, 0, 10); // Wed 07:00:10 Berlin
      expect(await harness.ticker.tick()).toMatchObject({ catchups: 1 });
      await harness.hook.waitFor(1, 10_000);
      // The catch-up waits for its retry (0.5–1.5 s); the resolution comes meanwhile.
      harness.clock.now += later;
      await harness.route(incident('incident.resolved', 'stripe', harness.clock.now));
      await harness.hook.waitFor(3, 20_000);
      expect(kinds(harness)).toEqual(['catchup', 'catchup', 'incident.resolved']);
      const [refused, retried] = harness.hook.received.map((r) => r.headers['webhook-id']);
      expect(retried).toBe(refused);
    },
  );

  it('a closing routed while a catch-up is claimed but not yet sent (the ticker died) goes out in the next catch-up, after it', async () => {
    h = await nightHarness(['incident.opened', 'incident.resolved'], []);
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 10); // Wed 07:00:10 Berlin
    // A tick claimed the held list and died before its catch-up was enqueued.
    expect(await h.store.claimPositions('held', 'night|hook')).toHaveLength(1);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    h.clock.now += 2_000;
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(1);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1 });
    await h.hook.waitFor(2);
    expect(kinds(h)).toEqual(['catchup', 'catchup']);
    const events = h.hooks().map((b) => (b.data.events as { kind: string }[]).map((e) => e.kind));
    expect(events).toEqual([['incident.opened'], ['incident.resolved']]);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(h.hook.received).toHaveLength(2);
  });

  it('a closing through quiet hours marks nothing when nothing of the route is held (no state grows)', async () => {
    h = await nightHarness(
      ['incident.opened', 'incident.resolved'],
      ['incident.opened', 'incident.resolved'],
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now += 60_000;
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(2);
    expect(await h.tr.redis.keys(`{${h.tr.prefix}}*closed*`)).toEqual([]);
  });

  it('an opening held in quiet hours whose resolution broke through is not caught up on afterwards', async () => {
    h = await nightHarness(['incident.opened', 'incident.resolved'], ['incident.resolved']);
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now += 90 * 60_000; // 00:30
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30); // Wed 07:00:30 Berlin
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0 });
    // The route's held list is gone: the next night starts a new one.
    expect(await h.store.heldUntil()).toEqual(new Map());
    expect(kinds(h)).toEqual(['incident.resolved']);
    expect(h.hook.received).toHaveLength(1);
  });

  it('a routing run that crashed before its commit is re-run on the clock of its first run: across the start of quiet hours, one opening and no catch-up', async () => {
    const TUE_2159_BERLIN = Date.UTC(2026, 10, 24, 20, 59, 59);
    h = await noiseHarness(
      [
        {
          name: 'night',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved'],
          quietHours: { timezone: 'Europe/Berlin', windows: ['Mon-Fri 22:00-07:00'] },
        },
      ],
      { start: TUE_2159_BERLIN },
    );
    const harness = h;
    const commit = harness.store.commitGate.bind(harness.store);
    let crashes = 0;
    harness.store.commitGate = async (...args) => {
      if (crashes === 0) {
        crashes += 1;
        // The deliveries are enqueued; the process dies before the commit, and the retry runs
        // after 22:00, inside quiet hours.
        harness.clock.now = Date.UTC(2026, 10, 24, 21, 0, 5);
        throw new Error('simulated crash before the commit');
      }
      return commit(...args);
    };
    await harness.route(incident('incident.opened', 'stripe', harness.clock.now));
    expect(crashes).toBe(1);
    await harness.hook.waitFor(1);
    // The end of quiet hours: nothing was held, so there is nothing to catch up on.
    harness.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30);
    expect(await harness.ticker.tick()).toMatchObject({ catchups: 0 });
    expect(kinds(harness)).toEqual(['incident.opened']);
    expect(harness.hook.received).toHaveLength(1);
  });

  it('after a downtime a reminder waits for a fresh poll: none for what closed meanwhile, one for what is still open', async () => {
    const polled = new Map<PollKind, number>();
    h = await noiseHarness([{ ...OPS, repeat: '1h' }], {
      start: TUE_2300_BERLIN,
      lastLook: () => Promise.resolve({ polled, unseen: new Set() }),
    });
    polled.set('incidents', h.clock.now);
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.route(incident('incident.opened', 'adyen', h.clock.now));
    await h.hook.waitFor(2);
    // Three days down: the last incidents poll is from before.
    h.clock.now += 3 * 24 * 3600_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    // The first poll after it: stripe resolved meanwhile, adyen still open.
    polled.set('incidents', h.clock.now);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(3);
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(4);
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    expectAdyenReminded(h);
  });

  it('a closing routed while a tick decides its reminders: no "still open" reminder for it', async () => {
    const polled = new Map<PollKind, number>();
    let midTick: (() => Promise<void>) | undefined;
    h = await noiseHarness([{ ...OPS, repeat: '1h' }], {
      start: TUE_2300_BERLIN,
      lastLook: async () => {
        // The tick has read the told ledger; the closing is routed now.
        const run = midTick;
        midTick = undefined;
        await run?.();
        return { polled, unseen: new Set() };
      },
    });
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.route(incident('incident.opened', 'adyen', h.clock.now));
    await h.hook.waitFor(2);
    h.clock.now += 3600_000 + 1000;
    polled.set('incidents', h.clock.now);
    const harness = h;
    midTick = () => harness.route(incident('incident.resolved', 'stripe', harness.clock.now));
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(4);
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    expectAdyenReminded(h);
    expect(h.hook.received).toHaveLength(4);
  });

  it('a reminder whose first attempt failed is not sent once its incident has closed meanwhile', async () => {
    let refused = 0;
    h = await noiseHarness([{ ...OPS, repeat: '1h' }], {
      start: TUE_2300_BERLIN,
      // The reminder's first attempt is refused (503, retry in 3 s: the closing is routed
      // meanwhile); everything else is taken.
      hookReply: (req) =>
        (JSON.parse(req.body) as { type: string }).type === 'reminder' && refused++ === 0
          ? { status: 503, headers: { 'retry-after': '3' } }
          : { status: 204 },
    });
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    h.clock.now += 3600_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(2); // the refused reminder
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    const harness = h;
    const dropped = await waitFor(() => harness.outcomes.find((o) => o.outcome === 'dropped'), {
      timeoutMs: 10_000,
      what: 'the retried reminder dropped',
    });
    expect(dropped.notification.type).toBe('reminder');
    expect(h.hooks().map((b) => b.type)).toEqual([
      'incident.opened',
      'reminder',
      'incident.resolved',
    ]);
    expect(
      h.outcomes.filter((o) => o.notification.type === 'reminder').map((o) => o.outcome),
    ).toEqual(['retry', 'dropped']);
  });

  it('after a downtime an incident the first poll did not see (its confirming read still to come) gets no reminder until it is seen again or closes', async () => {
    const polled = new Map<PollKind, number>();
    const unseen = new Set<string>();
    h = await noiseHarness([{ ...OPS, repeat: '1h' }], {
      start: TUE_2300_BERLIN,
      lastLook: () => Promise.resolve({ polled, unseen }),
    });
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.route(incident('incident.opened', 'adyen', h.clock.now));
    await h.hook.waitFor(2);
    // Three days down. The first poll after it does not list either; one confirming read shows
    // adyen's still open, stripe's waits for the next poll's read.
    h.clock.now += 3 * 24 * 3600_000;
    polled.set('incidents', h.clock.now);
    unseen.add('stripe|incident:inc-stripe-1');
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(3);
    // Still unseen an hour later: still no reminder. Then it is seen again: reminded.
    h.clock.now += 3600_000;
    polled.set('incidents', h.clock.now);
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(4);
    unseen.clear();
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(5);
    const reminded = h
      .hooks()
      .slice(2)
      .map((b) => (b.data.events as { service: { feedId: string } }[])[0]?.service.feedId);
    expect(reminded).toEqual(['adyen', 'adyen', 'stripe']);
    expect(h.hook.received).toHaveLength(5);
  });

  it('a dead opening is retried while its incident is open, not once it has closed (it would open an alert nothing resolves)', async () => {
    const refused = new Set<string>();
    h = await noiseHarness([OPS], {
      start: TUE_2300_BERLIN,
      // Every opening's first request is refused for good (404: a dead letter at once).
      hookReply: (req) => {
        const id = String(req.headers['webhook-id']);
        if (!req.body.includes('"incident.opened"') || refused.has(id)) return { status: 204 };
        refused.add(id);
        return { status: 404 };
      },
    });
    const harness = h;
    const stripe = incident('incident.opened', 'stripe', harness.clock.now);
    const adyen = incident('incident.opened', 'adyen', harness.clock.now);
    await harness.route(stripe, adyen);
    await waitFor(async () => (await harness.deliveries.deadLetters()).length === 2, {
      what: 'two dead openings',
    });
    await harness.route(incident('incident.resolved', 'stripe', harness.clock.now));
    await harness.hook.waitFor(3);
    expect(await harness.retryDeadLetter(`${stripe.id}:ops:hook`)).toEqual({
      outcome: 'closed',
      lifecycle: 'stripe|incident:inc-stripe-1',
    });
    expect(await harness.retryDeadLetter(`${adyen.id}:ops:hook`)).toEqual({ outcome: 'retried' });
    expect(await harness.retryDeadLetter('no-such-delivery')).toEqual({ outcome: 'missing' });
    await harness.hook.waitFor(4);
    expect(harness.hook.received.map((r) => r.headers['webhook-id']).slice(2)).toEqual([
      `${stripe.id.replace('opened', 'resolved')}:ops:hook`,
      `${adyen.id}:ops:hook`,
    ]);
    // The refused one stays a dead letter; nothing else is sent.
    expect((await harness.deliveries.deadLetters()).map((d) => d.id)).toEqual([
      `${stripe.id}:ops:hook`,
    ]);
    expect(harness.hook.received).toHaveLength(4);
  });

  it('an opening held in quiet hours goes out once when they end: in the catch-up, with no reminder beside it; reminders count from the catch-up', async () => {
    h = await noiseHarness(
      [
        {
          name: 'night',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.resolved'],
          repeat: '4h',
          quietHours: { timezone: 'Europe/Berlin', windows: ['Mon-Fri 22:00-07:00'] },
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    h.clock.now = Date.UTC(2026, 10, 25, 6, 0, 30); // Wed 07:00:30 Berlin: 8 h later
    expect(await h.ticker.tick()).toMatchObject({ catchups: 1, reminders: 0 });
    await h.hook.waitFor(1);
    expect(await h.ticker.tick()).toMatchObject({ catchups: 0, reminders: 0 });
    h.clock.now += 4 * 3600_000 - 60_000; // 3 h 59 min after the catch-up
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    h.clock.now += 60_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 1 });
    await h.hook.waitFor(2);
    expect(kinds(h)).toEqual(['catchup', 'reminder']);
  });

  it('a silence that begins after an opening does not swallow its resolution; a silenced opening gets no resolution', async () => {
    h = await noiseHarness(
      [
        {
          name: 'ops',
          services: ['*'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.updated', 'incident.resolved'],
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    const silence = await h.silences.add({
      matchers: { services: ['stripe'] },
      duration: '2h',
      author: 'sre',
      comment: 'vendor maintenance',
    });
    await h.route(incident('incident.updated', 'stripe', h.clock.now));
    await h.route(incident('incident.opened', 'stripe', h.clock.now, 2));
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(2);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now, 2));
    await h.silences.expire(silence.id);
    await h.route(incident('incident.opened', 'adyen', h.clock.now)); // the last one: nothing else is in flight
    await h.hook.waitFor(3);
    expect(h.hooks().map((b) => `${b.type} ${(b.data.incident as { id: string }).id}`)).toEqual([
      'incident.opened inc-stripe-1',
      'incident.resolved inc-stripe-1',
      'incident.opened inc-adyen-1',
    ]);
  });

  it('an update that reaches a team after its silenced opening owes them the resolution', async () => {
    h = await noiseHarness(
      [
        {
          name: 'ops',
          services: ['*'],
          channels: ['hook'],
          events: ['incident.opened', 'incident.updated', 'incident.resolved'],
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    const silence = await h.silences.add({
      matchers: { services: ['stripe'], events: ['incident.opened'] },
      duration: '2h',
      author: 'sre',
    });
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.route(incident('incident.updated', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    await h.silences.expire(silence.id);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.hook.waitFor(2);
    await h.route(incident('incident.opened', 'adyen', h.clock.now)); // the last one: nothing else is in flight
    await h.hook.waitFor(3);
    expect(h.hooks().map((b) => `${b.type} ${(b.data.incident as { id: string }).id}`)).toEqual([
      'incident.updated inc-stripe-1',
      'incident.resolved inc-stripe-1',
      'incident.opened inc-adyen-1',
    ]);
  });

  it('a silence stops matching by itself when it ends', async () => {
    h = await noiseHarness(
      [{ name: 'ops', services: ['*'], channels: ['hook'], events: ['incident.opened'] }],
      {
        start: TUE_2300_BERLIN,
      },
    );
    await h.silences.add({
      matchers: { services: ['stripe'], events: ['incident.opened'] },
      duration: '1h',
      author: 'sre',
    });
    await h.route(incident('incident.opened', 'stripe', h.clock.now, 1));
    h.clock.now += 3600_000; // the silence has ended; nobody expired it
    await h.route(incident('incident.opened', 'stripe', h.clock.now, 2));
    await h.hook.waitFor(1);
    await h.route(incident('incident.opened', 'adyen', h.clock.now));
    await h.hook.waitFor(2);
    expect(h.hooks().map((b) => (b.data.incident as { id: string }).id)).toEqual([
      'inc-stripe-2',
      'inc-adyen-1',
    ]);
  });

  it('a weekly digest lists what happened in the week, delivered once per channel', async () => {
    h = await weekWithStripeIncident(
      ['stripe', 'adyen'],
      ['incident.opened', 'incident.resolved', 'sla.breached'],
    );
    h.clock.now = Date.UTC(2026, 10, 18, 12, 0, 0);
    await h.route(slaBreached('adyen', h.clock.now));
    h.clock.now = Date.UTC(2026, 10, 19, 12, 0, 0);
    await h.route(incident('incident.opened', 'adyen', h.clock.now));
    await h.hook.waitFor(4);
    h.clock.now = Date.UTC(2026, 10, 23, 6, 59, 0); // Mon 07:59 Berlin: not yet
    expect(await h.ticker.tick()).toMatchObject({ digests: 0 });
    h.clock.now = Date.UTC(2026, 10, 23, 7, 0, 5); // Mon 23 Nov 08:00:05 Berlin
    expect(await h.ticker.tick()).toMatchObject({ digests: 1 });
    await h.hook.waitFor(5);
    expect(await h.ticker.tick()).toMatchObject({ digests: 0 });
    const digest = h.hooks()[4]!;
    expect(digest.type).toBe('digest');
    expect(digest.data.title).toBe('Weekly digest for payments: 16–23 Nov 2026');
    expect(digest.data.summary).toEqual([
      'Service stripe — stripe is down: opened Tue 10:04, resolved Tue 11:34 (1h 30m)',
      'Service adyen — adyen is down: still open since Thu 13:00 (3d 19h)',
      'No status changes',
      'Service adyen SLA breached: margin -0.4 pp (uptime 99.5%, target 99.9%)',
      'No score or grade changes',
    ]);
    expect((digest.data.events as unknown[]).length).toBe(4);
  });

  it('a digest lists an incident reopened and still open as still open, not as resolved', async () => {
    h = await weekWithStripeIncident(
      ['stripe'],
      ['incident.opened', 'incident.updated', 'incident.resolved'],
    );
    // Back on Wednesday 03:00 Berlin: the same incident, listed open again.
    h.clock.now = Date.UTC(2026, 10, 18, 2, 0, 0);
    const back = incident('incident.updated', 'stripe', h.clock.now);
    await h.route({ ...back, current: { ...back.current, reopened: true } });
    await h.hook.waitFor(3);
    h.clock.now = Date.UTC(2026, 10, 23, 7, 0, 5); // Mon 23 Nov 08:00:05 Berlin
    expect(await h.ticker.tick()).toMatchObject({ digests: 1 });
    await h.hook.waitFor(4);
    const digest = h.hooks()[3]!;
    expect(digest.type).toBe('digest');
    expect((digest.data.summary as string[])[0]).toBe(
      'Service stripe — stripe is down: still open since Wed 03:00 (5d 5h)',
    );
  });

  it('reminders stop when the thing closes even if the subscription does not watch the closing kind', async () => {
    h = await noiseHarness(
      [
        {
          name: 'openings',
          services: ['stripe'],
          channels: ['hook'],
          events: ['incident.opened'],
          repeat: '1h',
        },
        {
          name: 'all',
          services: ['stripe'],
          channels: ['chat'],
          events: ['incident.opened', 'incident.resolved'],
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(incident('incident.opened', 'stripe', h.clock.now));
    await h.hook.waitFor(1);
    await h.route(incident('incident.resolved', 'stripe', h.clock.now));
    await h.slack.waitFor(2);
    h.clock.now += 2 * 3600_000;
    expect(await h.ticker.tick()).toMatchObject({ reminders: 0 });
    expect(await h.store.allTold()).toEqual(new Map());
  });

  it('a group flush interrupted after its claim sends the same batch once; later arrivals form the next group', async () => {
    h = await noiseHarness(
      [
        {
          name: 'all',
          services: ['*'],
          channels: ['hook'],
          events: ['incident.opened'],
          group: '30s',
        },
      ],
      { start: TUE_2300_BERLIN },
    );
    await h.route(
      incident('incident.opened', 'a1', h.clock.now),
      incident('incident.opened', 'a2', h.clock.now),
    );
    await h.store.claim('group', 'all|hook'); // a tick that claimed, then died before enqueueing
    await h.route(incident('incident.opened', 'b1', h.clock.now));
    // A retried routing job buffers the same transition again: it is kept once.
    await h.store.addToGroup(
      'all|hook',
      incident('incident.opened', 'b1', h.clock.now),
      h.clock.now,
    );
    h.clock.now += 30_000;
    expect(await h.ticker.tick()).toMatchObject({ batches: 1 });
    await h.hook.waitFor(1);
    h.clock.now += 29_000;
    expect(await h.ticker.tick()).toMatchObject({ batches: 0 }); // b1's window restarted at the flush
    h.clock.now += 1_000;
    expect(await h.ticker.tick()).toMatchObject({ batches: 1 });
    await h.hook.waitFor(2);
    const feedsOf = (i: number) =>
      (
        (h!.hooks()[i]?.data.events ?? [h!.hooks()[i]?.data]) as { service: { feedId: string } }[]
      ).map((e) => e.service.feedId);
    expect(feedsOf(0)).toEqual(['a1', 'a2']);
    expect(feedsOf(1)).toEqual(['b1']);
    expect(h.hook.received).toHaveLength(2);
  });

  it('a month-end digest carries the upstream figures for that month (GET /sla?month=, /scores?month=)', async () => {
    const sim = createSimulator({
      services: 50,
      rateLimit: false,
      keys: { [PREMIUM]: { scopes: ['sla:read', 'scores:read'] } },
    });
    const url = await sim.listen(0, '127.0.0.1');
    const client = createUpstreamClient({ baseUrl: url, apiKey: PREMIUM });
    try {
      h = await noiseHarness(
        [
          {
            name: 'payments',
            services: ['stripe'],
            channels: ['hook'],
            events: ['incident.opened'],
            digest: { schedule: '0 8 1 * *', timezone: 'Europe/Berlin' },
          },
        ],
        { start: Date.UTC(2026, 9, 1, 6, 0, 30), apiKey: PREMIUM, monthly: monthlyFigures(client) },
      );
      expect(await h.ticker.tick()).toMatchObject({ digests: 0 });
      h.clock.now = Date.UTC(2026, 9, 14, 10, 0, 0);
      await h.route(incident('incident.opened', 'stripe', h.clock.now));
      await h.hook.waitFor(1);
      h.clock.now = Date.UTC(2026, 10, 1, 7, 0, 5); // 1 Nov 08:00:05 Berlin (CET)
      expect(await h.ticker.tick()).toMatchObject({ digests: 1 });
      await h.hook.waitFor(2);
      const digest = h.hooks()[1]!;
      expect(digest.data.title).toBe('Monthly digest for payments: 1 Oct–1 Nov 2026');
      const expected = await client.sla({ month: '2026-10' });
      const stripe = expected.data.services.find((r) => r.feedId === 'stripe')!;
      const summary = digest.data.summary as string[];
      expect(summary).toContain(
        `2026-10: SLA compliance ${String(Math.round(expected.data.summary.complianceRate! * 100) / 100)}% across ${String(expected.data.summary.servicesTracked)} services, ${String(expected.data.summary.servicesBreachingSla)} below target`,
      );
      expect(
        summary.some((l) =>
          l.startsWith(
            `Stripe 2026-10: uptime ${String(Math.round(stripe.uptime30d * 100) / 100)}%`,
          ),
        ),
      ).toBe(true);
      expect(summary.some((l) => l.startsWith('Stripe 2026-10: score '))).toBe(true);
      expect(sim.stats.byPath['/api/v1/sla']).toBe(2);
    } finally {
      await client.close();
      await sim.close();
    }
  });
});
