/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * Team-scoped silences through `/api/v1/silences` on a real daemon (`node dist/cli.js run`, real
 * Redis, the simulator as upstream): a team silences its own subscriptions only, never sees or
 * expires another team's silences (404), admins see all, every change is audited, and a silence
 * drops the next matching transition for that subscription while another team's is delivered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  receiver,
  webhookSecret,
  world,
  type Client,
  type Receiver,
  type World,
} from './api-helpers.js';

const SECRET_KEY = newKey();
const SECRET_A = webhookSecret('silenceA');
const SECRET_B = webhookSecret('silenceB');
const PATH_A = '/hooks/silence-a';
const PATH_B = '/hooks/silence-b';

let w: World;
let hook: Receiver;
let d: Daemon;
let admin: Client;
let teamA: Client;
let teamB: Client;
let silenceId = '';

async function token(team: string): Promise<string> {
  const res = await admin('POST', '/api/v1/tokens', { team });
  expect(res.status, res.text).toBe(201);
  return res.body.token as string;
}

const ids = (res: { body: { silences: { id: string }[] } }): string[] =>
  res.body.silences.map((s) => s.id);

beforeAll(async () => {
  w = await world('api-s');
  hook = await receiver({ [PATH_A]: SECRET_A, [PATH_B]: SECRET_B });
  w.cleanups.push(() => hook.close());
  const file = await writeConfig(
    w.dir,
    baseConfig(w, {
      channels: {
        ops: { type: 'webhook', url: `${hook.base}/hooks/ops`, secret: webhookSecret('ops') },
      },
      subscriptions: [{ name: 'platform', services: ['github'], channels: ['ops'] }],
    }),
  );
  d = await startDaemon(file, { STATUSWATCH_SECRET_KEY: SECRET_KEY });
  admin = client(d.url, ADMIN_TOKEN);
  teamA = client(d.url, await token('team-a'));
  teamB = client(d.url, await token('team-b'));
  for (const [team, name, path, secret] of [
    [teamA, 'a', PATH_A, SECRET_A],
    [teamB, 'b', PATH_B, SECRET_B],
  ] as const) {
    const channel = await team('POST', '/api/v1/channels', {
      name: `${name}-hook`,
      type: 'webhook',
      url: `${hook.base}${path}`,
      secret,
    });
    expect(channel.status, channel.text).toBe(201);
    const sub = await team('POST', '/api/v1/subscriptions', {
      name: `${name}-sub`,
      services: ['stripe'],
      events: ['incident.opened'],
      channels: [`${name}-hook`],
    });
    expect(sub.status, sub.text).toBe(201);
  }
}, 40_000);

afterAll(async () => {
  await killAll();
  for (const c of w.cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('/api/v1/silences', () => {
  it('team A silences its own subscription and lists it', async () => {
    const created = await teamA('POST', '/api/v1/silences', {
      matchers: { subscriptions: ['a-sub'], services: ['stripe'] },
      duration: '1h',
      author: 'alice',
      comment: 'maintenance',
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.state).toBe('active');
    expect(created.body.matchers).toEqual({ subscriptions: ['a-sub'], services: ['stripe'] });
    silenceId = created.body.id as string;
    expect(created.headers.location).toBe(`/api/v1/silences/${silenceId}`);
    expect(ids(await teamA('GET', '/api/v1/silences'))).toEqual([silenceId]);
    const one = await teamA('GET', `/api/v1/silences/${silenceId}`);
    expect(one.status).toBe(200);
    expect(one.body.author).toBe('alice');
  });

  it('team B can neither see, read nor expire it (404)', async () => {
    expect(ids(await teamB('GET', '/api/v1/silences?all=1'))).toEqual([]);
    for (const [method, path] of [
      ['GET', `/api/v1/silences/${silenceId}`],
      ['DELETE', `/api/v1/silences/${silenceId}`],
      ['POST', `/api/v1/silences/${silenceId}/expire`],
    ] as const) {
      const res = await teamB(method, path);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await teamA('GET', `/api/v1/silences/${silenceId}`)).body.state).toBe('active');
  });

  it("team A cannot silence another team's or a config subscription, nor without a subscriptions matcher (400)", async () => {
    const base = { duration: '1h', author: 'alice' };
    const cases: [Record<string, unknown>, string][] = [
      [{ subscriptions: ['a-sub', 'b-sub'] }, 'matchers.subscriptions[1]'],
      [{ subscriptions: ['platform'] }, 'matchers.subscriptions[0]'],
      [{ services: ['stripe'] }, 'matchers.subscriptions'],
    ];
    for (const [matchers, field] of cases) {
      const res = await teamA('POST', '/api/v1/silences', { ...base, matchers });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.field).toBe(field);
    }
    // The shared validation still names its own fields.
    const bad = await teamA('POST', '/api/v1/silences', {
      matchers: { subscriptions: ['a-sub'], events: ['nope'] },
      author: 'alice',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('matchers.events[0]');
    expect(ids(await admin('GET', '/api/v1/silences'))).toEqual([silenceId]);
  });

  it('a time past 9999-12-31 is refused with its field named (a silence ending then broke every page that wrote it as a date)', async () => {
    const far = await teamA('POST', '/api/v1/silences', {
      matchers: { subscriptions: ['a-sub'] },
      endsAt: 9_000_000_000_000_000,
      author: 'alice',
    });
    expect(far.status, far.text).toBe(400);
    expect(far.body.error.field).toBe('endsAt');
    expect(far.text).toContain('9999-12-31');
    const token = await admin('POST', '/api/v1/tokens', { team: 'team-a', expiresAt: 1e16 });
    expect(token.status, token.text).toBe(400);
    expect(token.body.error.field).toBe('expiresAt');
    expect(ids(await admin('GET', '/api/v1/silences'))).toEqual([silenceId]);
  });

  it('an admin sees and creates any silence; team A does not see it', async () => {
    const created = await admin('POST', '/api/v1/silences', {
      matchers: { services: ['github'] },
      duration: '2h',
      author: 'ops',
    });
    expect(created.status, created.text).toBe(201);
    const all = ids(await admin('GET', '/api/v1/silences'));
    expect(all).toEqual([silenceId, created.body.id]);
    expect(ids(await teamA('GET', '/api/v1/silences'))).toEqual([silenceId]);
    expect((await teamA('GET', `/api/v1/silences/${created.body.id as string}`)).status).toBe(404);
    const expired = await admin('DELETE', `/api/v1/silences/${created.body.id as string}`);
    expect(expired.status).toBe(200);
    expect(expired.body.state).toBe('expired');
  });

  it("the silence drops A's next matching transition while B's is delivered", async () => {
    await morePolls(d, 2, { kinds: ['incidents'] });
    w.clock.tick();
    w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Looking' });
    await waitFor(() => hook.of(PATH_B, 'incident.opened').length > 0, {
      timeoutMs: 15_000,
      what: "team B's incident.opened",
    });
    await queuesIdle(d);
    expect(hook.of(PATH_A)).toEqual([]);
  });

  it('team A expires its silence; the changes are in its audit', async () => {
    const expired = await teamA('POST', `/api/v1/silences/${silenceId}/expire`);
    expect(expired.status, expired.text).toBe(200);
    expect(expired.body.state).toBe('expired');
    expect(ids(await teamA('GET', '/api/v1/silences'))).toEqual([]);
    expect(ids(await teamA('GET', '/api/v1/silences?all=1'))).toEqual([silenceId]);
    const audit = await teamA('GET', '/api/v1/audit');
    const lines = (audit.body.entries as { action: string; kind: string; name: string }[])
      .filter((e) => e.kind === 'silence')
      .map((e) => `${e.action} ${e.name}`);
    expect(lines).toEqual([`expire ${silenceId}`, `create ${silenceId}`]);
    const adminAudit = await admin('GET', '/api/v1/audit');
    expect(
      (adminAudit.body.entries as { kind: string; team: string }[])
        .filter((e) => e.kind === 'silence')
        .map((e) => e.team),
    ).toEqual(['team-a', '*', '*', 'team-a']);
  });
});
