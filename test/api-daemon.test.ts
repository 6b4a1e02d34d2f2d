/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * Subscriptions and channels managed through the API drive real daemons: two replicas
 * (`node dist/cli.js run`) on one Redis prefix, the simulator as upstream with a clock the test
 * moves, a local Standard Webhooks receiver. A team creates its channel and subscription through
 * the API and hears of an incident, signed; a change made through one replica is followed by the
 * other at its next routing step (each replica in turn is the only one routing); a subscription
 * deleted mid-incident still gets the closing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { newKey } from '../src/api/crypto.js';
import {
  killAll,
  morePolls,
  queuesIdle,
  startDaemon,
  writeConfig,
  type Daemon,
} from './helpers/process.js';
import { waitFor } from './helpers/wait.js';
import {
  ADMIN_TOKEN,
  baseConfig,
  client,
  dumpPrefix,
  receiver,
  secretForms,
  webhookSecret,
  world,
  type Receiver,
  type World,
} from './api-helpers.js';

const SECRET_KEY = newKey();
const SECRET = webhookSecret('payments');
const PATH = '/hooks/PAYMENTS-PATHTOKEN-5e6f';

let w: World | undefined;

afterAll(async () => {
  await killAll();
  for (const c of (w?.cleanups ?? []).splice(0).reverse()) await c().catch(() => undefined);
});

async function arrived(hook: Receiver, type: string, count = 1) {
  return waitFor(
    () => {
      const hits = hook.of(PATH, type);
      return hits.length >= count ? hits : false;
    },
    {
      timeoutMs: 30_000,
      what: `${count} webhook(s) ${type} (have ${hook.hits.map((h) => h.type).join(', ')})`,
    },
  );
}

describe('tenancy API driving real replicas', () => {
  it('create → hear it signed; change via one replica → the other follows; delete mid-incident → the closing still arrives', async () => {
    w = await world('api-d');
    const hook = await receiver({ [PATH]: SECRET });
    w.cleanups.push(() => hook.close());
    const file = await writeConfig(w.dir, baseConfig(w));
    const env = { STATUSWATCH_SECRET_KEY: SECRET_KEY, STATUSWATCH_GRACE_MS: '10000' };
    let r1 = await startDaemon(file, env);
    let r2 = await startDaemon(file, env);

    const created = await client(r1.url, ADMIN_TOKEN)('POST', '/api/v1/tokens', {
      team: 'payments',
    });
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    const team = (d: Daemon) => client(d.url, token);

    // 1. The team's channel and subscription, through replica 1.
    const channel = await team(r1)('POST', '/api/v1/channels', {
      name: 'pay-hook',
      type: 'webhook',
      url: `${hook.base}${PATH}`,
      secret: SECRET,
    });
    expect(channel.status, channel.text).toBe(201);
    const sub = await team(r1)('POST', '/api/v1/subscriptions', {
      name: 'pay-sub',
      services: ['stripe'],
      events: ['incident.opened'],
      channels: ['pay-hook'],
    });
    expect(sub.status, sub.text).toBe(201);
    await morePolls([r1, r2], 2);

    // 2. An incident on a subscribed service: the receiver gets it, signed.
    w.clock.tick();
    const inc = w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Looking' });
    const [opened] = await arrived(hook, 'incident.opened');
    expect(opened?.verified).toBe(true);
    expect(opened?.webhookId).toMatch(/:pay-sub:pay-hook$/);

    // 3. The events change through replica 1, which then stops: replica 2 routes the next
    //    transition and follows the change.
    const change1 = await team(r1)('PUT', '/api/v1/subscriptions/pay-sub', {
      services: ['stripe'],
      events: ['incident.opened', 'incident.updated'],
      channels: ['pay-hook'],
    });
    expect(change1.status, change1.text).toBe(200);
    r1.proc.signal('SIGTERM');
    expect((await r1.proc.waitForExit(15_000)).code).toBe(0);
    w.clock.tick();
    w.sim.updateIncident('stripe', inc, { status: 'identified', body: 'Root cause found' });
    const [updated] = await arrived(hook, 'incident.updated');
    expect(updated?.verified).toBe(true);

    // 4. Replica 1 comes back; the events change again through replica 2, which then stops:
    //    replica 1 routes the next transition and follows that change (no more updates).
    r1 = await startDaemon(file, env);
    await morePolls([r1, r2], 1);
    const change2 = await team(r2)('PUT', '/api/v1/subscriptions/pay-sub', {
      services: ['stripe'],
      events: ['incident.opened', 'incident.resolved'],
      channels: ['pay-hook'],
    });
    expect(change2.status, change2.text).toBe(200);
    r2.proc.signal('SIGTERM');
    expect((await r2.proc.waitForExit(15_000)).code).toBe(0);
    w.clock.tick();
    w.sim.updateIncident('stripe', inc, { status: 'monitoring', body: 'Fix deployed' });
    await morePolls([r1], 3);
    await queuesIdle(r1);
    expect(hook.of(PATH, 'incident.updated')).toHaveLength(1);

    // 5. The subscription is deleted mid-incident (through replica 1, with replica 2 back):
    //    the closing of what it was told still arrives; a new opening does not.
    r2 = await startDaemon(file, env);
    const deleted = await team(r1)('DELETE', '/api/v1/subscriptions/pay-sub');
    expect(deleted.status, deleted.text).toBe(200);
    expect(Date.parse(deleted.body.closingsOwedUntil as string) - Date.now()).toBeGreaterThan(
      6 * 24 * 3600 * 1000,
    );
    expect((await team(r2)('GET', '/api/v1/subscriptions/pay-sub')).status).toBe(404);
    w.clock.tick();
    w.sim.resolveIncident('stripe', inc, 'Fixed');
    const [resolved] = await arrived(hook, 'incident.resolved');
    expect(resolved?.verified).toBe(true);
    expect(resolved?.webhookId).toMatch(/:pay-sub:pay-hook$/);
    w.clock.tick();
    w.sim.openIncident('stripe', { title: 'Again', body: 'Looking' });
    await morePolls([r1, r2], 3);
    await queuesIdle(r1);
    await queuesIdle(r2);
    expect(hook.of(PATH, 'incident.opened')).toHaveLength(1);
    expect(hook.hits.every((h) => h.verified)).toBe(true);
    expect(hook.hits.map((h) => h.type)).toEqual([
      'incident.opened',
      'incident.updated',
      'incident.resolved',
    ]);

    // The audit has every change, who made it and from where; no secret anywhere.
    const audit = await team(r2)('GET', '/api/v1/audit');
    expect(
      (audit.body.entries as { action: string; kind: string; name: string }[]).map(
        (e) => `${e.action} ${e.kind} ${e.name}`,
      ),
    ).toEqual([
      'delete subscription pay-sub',
      'update subscription pay-sub',
      'update subscription pay-sub',
      'create subscription pay-sub',
      'create channel pay-hook',
      `create token ${created.body.id as string}`,
    ]);
    const dump = await dumpPrefix(w.tr.redis, w.tr.prefix);
    for (const s of [...secretForms(SECRET), PATH, token, SECRET_KEY]) {
      expect(dump.includes(s), 'secret in Redis').toBe(false);
      for (const d of [r1, r2]) expect(d.proc.output().includes(s), 'secret in a log').toBe(false);
    }
  }, 120_000);
});
