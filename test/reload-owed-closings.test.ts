/**
 * A subscription a reload removes from the config file is owed the closings of the openings it
 * was told, as one deleted through the API is (a tombstone in Redis for the same period): the
 * resolution of an incident it was told still reaches its channel, once, from this replica at
 * once and from another one (or this one restarted) that never had it in its config; a removed
 * subscription that was told nothing gets nothing. The real daemon (`App`, in process: pollers,
 * routing, noise control, delivery) on real Redis, the simulator as upstream with a clock the
 * test moves, a local Standard Webhooks receiver.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { App } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import type { Config } from '../src/config/schema.js';
import { decode } from '../src/redis/stored.js';
import { SUBSCRIPTION_TOMBSTONE } from '../src/api/model.js';
import { TOMBSTONE_MS } from '../src/api/store.js';
import type { Actor } from '../src/api/tokens.js';
import { captureLog } from './helpers/log.js';
import { waitFor } from './helpers/wait.js';
import {
  baseConfig,
  receiver,
  webhookSecret,
  world,
  type Receiver,
  type World,
} from './api-helpers.js';

const PAY = '/hooks/pay';
const QUIET = '/hooks/quiet';
const OPS = '/hooks/ops';
const SECRETS: Record<string, string> = {
  [PAY]: webhookSecret('pay'),
  [QUIET]: webhookSecret('quiet'),
  [OPS]: webhookSecret('ops'),
};

let w: World | undefined;
const apps: App[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop().catch(() => undefined);
  for (const c of (w?.cleanups ?? []).splice(0).reverse()) await c().catch(() => undefined);
  w = undefined;
});

/**
 * The config: `payments` (stripe) and `quiet` (github) unless `removed`; `ops` (github) always,
 * the witness that a github transition was routed.
 */
function configOf(world: World, hook: Receiver, removed: boolean): Config {
  const channel = (path: string) => ({
    type: 'webhook',
    url: `${hook.base}${path}`,
    secret: SECRETS[path],
    timeoutMs: 5000,
  });
  const subscriptions = [
    { name: 'ops', services: ['github'], channels: ['hook-ops'] },
    ...(removed
      ? []
      : [
          { name: 'payments', services: ['stripe'], channels: ['hook-pay'] },
          { name: 'quiet', services: ['github'], channels: ['hook-quiet'] },
        ]),
  ];
  return parseConfig(
    stringify(
      baseConfig(world, {
        channels: {
          'hook-pay': channel(PAY),
          'hook-quiet': channel(QUIET),
          'hook-ops': channel(OPS),
        },
        subscriptions,
      }),
    ),
    {},
  );
}

async function startApp(config: Config, log = captureLog('info').log): Promise<App> {
  const app = new App(config, { log, server: false, noiseTickMs: 500 });
  apps.push(app);
  await app.start();
  await waitFor(
    async () => {
      const polls = await app.history.upstream();
      return polls.has('status') && polls.has('incidents');
    },
    { timeoutMs: 15_000, intervalMs: 100, what: 'the first status and incidents cycles' },
  );
  return app;
}

async function arrived(hook: Receiver, path: string, type: string, count = 1) {
  return waitFor(
    () => {
      const hits = hook.of(path, type);
      return hits.length >= count ? hits : false;
    },
    {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: `${String(count)} ${type} at ${path} (have ${hook.hits.map((h) => `${h.path} ${h.type}`).join(', ')})`,
    },
  );
}

/** What each path got, as `type subscription` (the webhook id ends with `:subscription:channel`). */
function got(hook: Receiver, path: string): string[] {
  return hook.of(path).map((h) => `${h.type} ${h.webhookId.split(':').at(-2) ?? '?'}`);
}

/** Opens and resolves a github incident, waits until `ops` heard both, then a little longer. */
async function githubIncident(world: World, hook: Receiver): Promise<void> {
  world.clock.tick();
  const inc = world.sim.openIncident('github', { title: 'Actions degraded', body: 'Looking' });
  await arrived(hook, OPS, 'incident.opened');
  world.clock.tick();
  world.sim.resolveIncident('github', inc, 'Fixed');
  await arrived(hook, OPS, 'incident.resolved');
  await new Promise((resolve) => setTimeout(resolve, 2_000));
}

/**
 * A world whose daemon (with every subscription) told `payments` of a stripe incident; returns
 * the daemon, still running, and the incident's id.
 */
async function toldPayments(
  name: string,
): Promise<{ world: World; hook: Receiver; first: App; inc: string }> {
  const made = await world(name);
  w = made;
  const hook = await receiver(SECRETS);
  made.cleanups.push(() => hook.close());
  const first = await startApp(configOf(made, hook, false));
  made.clock.tick();
  const inc = made.sim.openIncident('stripe', {
    title: 'Card payments failing',
    body: 'Looking',
  });
  await arrived(hook, PAY, 'incident.opened');
  return { world: made, hook, first, inc };
}

/** Stops a daemon started by `startApp`. */
async function stopApp(app: App): Promise<void> {
  await app.stop();
  apps.splice(apps.indexOf(app), 1);
}

describe('a subscription removed from the config file by a reload', () => {
  it('still gets the closing of an opening it was told, once; one told nothing gets nothing', async () => {
    w = await world('reload-owed');
    const hook = await receiver(SECRETS);
    w.cleanups.push(() => hook.close());
    const { log, lines } = captureLog('info');
    const app = await startApp(configOf(w, hook, false), log);

    w.clock.tick();
    const inc = w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Looking' });
    await arrived(hook, PAY, 'incident.opened');

    app.reload(configOf(w, hook, true));
    expect(app.api.runtime.subscriptions().map((s) => s.name)).toEqual(['ops']);

    w.clock.tick();
    w.sim.resolveIncident('stripe', inc, 'Fixed');
    const [resolved] = await arrived(hook, PAY, 'incident.resolved');
    expect(resolved?.verified).toBe(true);
    const removed = lines.filter((l) => l.event === 'config:subscriptions_removed');
    expect(removed.map((l) => l.subscriptions)).toEqual([['payments', 'quiet']]);

    // Removed and never told anything: neither a new opening nor its closing reaches it.
    await githubIncident(w, hook);
    expect(got(hook, QUIET)).toEqual([]);
    expect(got(hook, PAY)).toEqual(['incident.opened payments', 'incident.resolved payments']);
    expect(got(hook, OPS)).toEqual(['incident.opened ops', 'incident.resolved ops']);

    // Re-added to the file later: it is live again, not held back by its tombstone.
    app.reload(configOf(w, hook, false));
    w.clock.tick();
    w.sim.openIncident('stripe', { title: 'Payouts delayed', body: 'Looking' });
    await arrived(hook, PAY, 'incident.opened', 2);
    expect(hook.hits.every((h) => h.verified)).toBe(true);
  }, 120_000);

  it('is owed its closings through Redis: a restarted daemon without it sends the closing; its name stays free', async () => {
    const { world: w, hook, first, inc } = await toldPayments('reload-owed');

    // Removed by a reload, then the daemon stops; the one that follows never had it in its config.
    const before = Date.now();
    first.reload(configOf(w, hook, true));
    await stopApp(first);
    const second = await startApp(configOf(w, hook, true));

    w.clock.tick();
    w.sim.resolveIncident('stripe', inc, 'Fixed');
    const [resolved] = await arrived(hook, PAY, 'incident.resolved');
    expect(resolved?.verified).toBe(true);
    // Owed through the tombstones stored in the API's shape, for the API's period.
    expect([...second.api.runtime.owedClosings()].sort()).toEqual(['payments', 'quiet']);
    const stored = await w.tr.redis.hgetall(second.api.store.k.subscriptionTombstones);
    expect(Object.keys(stored).sort()).toEqual(['payments', 'quiet']);
    const tombstone = decode(SUBSCRIPTION_TOMBSTONE, stored.payments ?? '');
    expect(tombstone?.until).toBeGreaterThanOrEqual(before + TOMBSTONE_MS);
    await githubIncident(w, hook);
    expect(got(hook, QUIET)).toEqual([]);
    expect(got(hook, PAY)).toEqual(['incident.opened payments', 'incident.resolved payments']);

    // A team may take the name through the API: the tombstone of a config-file subscription
    // reserves it for no team.
    const team: Actor = { tokenId: 'test', team: 'payments', admin: false, address: 'test' };
    const created = await second.api.store.putSubscription(
      team,
      { name: 'payments', services: ['stripe'], channels: ['hook-pay'] },
      'create',
    );
    expect(created.created).toBe(true);
  }, 120_000);

  it('removed while the daemon was down (a Helm upgrade restarts it with the new file): found in the told ledger at start, owed its closings', async () => {
    const { world: w, hook, first, inc } = await toldPayments('restart-owed');
    await stopApp(first);

    const { log, lines } = captureLog('info');
    const second = await startApp(configOf(w, hook, true), log);
    // Told an opening: owed. Never told anything (`quiet`): nothing to owe.
    expect([...second.api.runtime.owedClosings()]).toEqual(['payments']);
    const removed = lines.filter((l) => l.event === 'config:subscriptions_removed');
    expect(removed.map((l) => l.subscriptions)).toEqual([['payments']]);
    w.clock.tick();
    w.sim.resolveIncident('stripe', inc, 'Fixed');
    const [resolved] = await arrived(hook, PAY, 'incident.resolved');
    expect(resolved?.verified).toBe(true);
    await githubIncident(w, hook);
    expect(got(hook, PAY)).toEqual(['incident.opened payments', 'incident.resolved payments']);
    expect(got(hook, QUIET)).toEqual([]);
  }, 120_000);
});
