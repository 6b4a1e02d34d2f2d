/**
 * The web console over plain HTTP against the real daemon (App in process, real Redis, the
 * simulator, a webhook receiver): login sessions, CSRF, the CSP, JSON for every page, team
 * isolation in the console and at the API, Atom feeds. The browser tests are console.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSP } from '../src/console/index.js';
import { tenancyAuth } from '../src/console/tenancy-api.js';
import { consoleWorld, delivered, TEAM_A, TEAM_B, type World } from './helpers/console-world.js';
import { consoleLogin } from './helpers/console-login.js';
import { waitFor } from './helpers/wait.js';

let w: World;

beforeAll(async () => {
  w = await consoleWorld();
}, 60_000);

afterAll(async () => {
  await w.close();
});

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the body's shape
async function json<T>(path: string, token: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${w.base}${path}`, {
    headers: { ...bearer(token), accept: 'application/json' },
  });
  return { status: res.status, body: (await res.json()) as T };
}

describe('web console over HTTP', () => {
  it('sends strangers to the login page, scripts get 401, and every page carries the CSP', async () => {
    const res = await fetch(`${w.base}/notifications?x=1`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/login?next=%2Fnotifications%3Fx%3D1');
    expect(res.headers.get('content-security-policy')).toBe(CSP);
    const api = await fetch(`${w.base}/?format=json`);
    expect(api.status).toBe(401);
    const wrong = await fetch(`${w.base}/`, { headers: bearer('swt_nope'), redirect: 'manual' });
    expect(wrong.status).toBe(303);
    const page = await fetch(`${w.base}/`, { headers: bearer(w.tokens.payments) });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CSP);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style>| style="| on[a-z]+="/);
    expect(html).toContain('<script src="/static/console.js" defer></script>');
    const js = await fetch(`${w.base}/static/console.js`);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    // The ops routes are untouched.
    expect((await fetch(`${w.base}/healthz`)).status).toBe(200);
    expect((await fetch(`${w.base}/nope`)).status).toBe(404);
  });

  it("an admin session ends when the config file's admin token changes (a restart with a rotated token)", async () => {
    let current: string | undefined = w.tokens.admin;
    const auth = tenancyAuth(w.app.api, () => current);
    const viewer = await auth.authenticate(w.tokens.admin, '127.0.0.1');
    expect(viewer).toMatchObject({ team: null, label: 'admin' });
    // The session keeps a digest of the token, never the token.
    expect(JSON.stringify(viewer)).not.toContain(w.tokens.admin);
    expect(await auth.stillValid?.(viewer!)).toBe(true);
    current = `${w.tokens.admin}-rotated`;
    expect(await auth.stillValid?.(viewer!)).toBe(false);
    current = undefined;
    expect(await auth.stillValid?.(viewer!)).toBe(false);
    // A session stored before sessions kept the digest is not trusted either.
    current = w.tokens.admin;
    expect(await auth.stillValid?.({ id: viewer!.id, team: null, label: 'admin' })).toBe(false);
  });

  it('after the login it goes back to a local path only: not to one a browser reads as another origin', async () => {
    const page = await fetch(`${w.base}/login`);
    const loginCookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const after = async (next: string): Promise<string | null> => {
      const res = await fetch(`${w.base}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, token: w.tokens.payments, next }),
      });
      expect(res.status).toBe(303);
      return res.headers.get('location');
    };
    expect(await after('/notifications?x=1')).toBe('/notifications?x=1');
    for (const next of [
      '/\t/evil.example',
      '/\n/evil.example',
      '//evil.example',
      '/\\evil.example',
      'https://evil.example',
    ])
      expect(await after(next)).toBe('/');
  });

  it('a login is a session; a POST without the CSRF token is refused (403), with it accepted', async () => {
    const { cookie, csrf, setCookie } = await consoleLogin(w.base, w.tokens.payments);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toMatch(/Secure/); // plain HTTP, no trusted proxy
    expect(csrf).not.toBe('');
    const form = (extra: Record<string, string>) =>
      new URLSearchParams({ services: 'stripe', duration: '5m', comment: 'csrf test', ...extra });
    const post = (body: URLSearchParams) =>
      fetch(`${w.base}/silences`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    expect((await post(form({}))).status).toBe(403);
    expect((await post(form({ csrf: `${csrf}x` }))).status).toBe(403);
    const ok = await post(form({ csrf }));
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/silences?notice=silenced');
    const list = await fetch(`${w.base}/silences?format=json`, { headers: { cookie } });
    const body = (await list.json()) as {
      silences: { id: string; matchers: { subscriptions: string[] } }[];
    };
    const mine = body.silences.find((s) => s.matchers.subscriptions.includes(TEAM_A.subscription));
    expect(mine).toBeDefined();
    // The team's silence is limited to its subscriptions; expire it again (with the token).
    const expired = await fetch(`${w.base}/silences/${mine!.id}/expire`, {
      method: 'POST',
      headers: { ...bearer(w.tokens.payments), accept: 'application/json' },
    });
    expect(expired.status).toBe(200);
    // Team B cannot expire (or see) team A's silence.
    const foreign = await fetch(`${w.base}/silences/${mine!.id}/expire`, {
      method: 'POST',
      headers: { ...bearer(w.tokens.search), accept: 'application/json' },
    });
    expect(foreign.status).toBe(404);
    // The login form itself needs its CSRF cookie.
    const forged = await fetch(`${w.base}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: w.tokens.payments, csrf: 'x' }),
    });
    expect(forged.status).toBe(403);
    // Logout ends the session.
    const out = await fetch(`${w.base}/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf }),
    });
    expect(out.status).toBe(303);
    expect((await fetch(`${w.base}/`, { headers: { cookie }, redirect: 'manual' })).status).toBe(
      303,
    );
  });

  it("team A's console and API never show team B's objects", async () => {
    type Overview = { services: { feedId: string }[]; subscriptions: string[] };
    const a = await json<Overview>('/', w.tokens.payments);
    expect(a.body.subscriptions).toEqual([TEAM_A.subscription]);
    expect(a.body.services.map((s) => s.feedId).sort()).toEqual([...TEAM_A.services].sort());
    const b = await json<Overview>('/', w.tokens.search);
    expect(b.body.services.map((s) => s.feedId)).toEqual(TEAM_B.services);
    const admin = await json<Overview>('/', w.tokens.admin);
    expect(admin.body.services.map((s) => s.feedId).sort()).toEqual(
      ['github', 'slack', 'stripe', 'twilio'].sort(),
    );
    expect((await json('/services/slack', w.tokens.payments)).status).toBe(404);
    expect((await json('/services/stripe', w.tokens.payments)).status).toBe(200);
    expect((await json('/services/stripe', w.tokens.search)).status).toBe(404);
    const subs = await json<{ subscriptions: { name: string }[] }>(
      '/subscriptions',
      w.tokens.payments,
    );
    expect(subs.body.subscriptions.map((s) => s.name)).toEqual([TEAM_A.subscription]);
    const feeds = await fetch(`${w.base}/feeds/${TEAM_B.subscription}/rotate`, {
      method: 'POST',
      headers: { ...bearer(w.tokens.payments), accept: 'application/json' },
    });
    expect(feeds.status).toBe(404);
    // At the API (#13) too.
    const api = await json<{ subscriptions: { name: string }[] }>(
      '/api/v1/subscriptions',
      w.tokens.payments,
    );
    expect(api.body.subscriptions.map((s) => s.name)).toEqual([TEAM_A.subscription]);
    expect(
      (await json(`/api/v1/subscriptions/${TEAM_B.subscription}`, w.tokens.payments)).status,
    ).toBe(404);
  });

  it('an incident shows on the overview, the service page (with its delivery), the notifications and the Atom feed', async () => {
    const rotate = await fetch(`${w.base}/feeds/${TEAM_A.subscription}/rotate`, {
      method: 'POST',
      headers: { ...bearer(w.tokens.payments), accept: 'application/json' },
    });
    const { url: feedUrl } = (await rotate.json()) as { url: string };
    expect(feedUrl).toMatch(/\/feeds\/[A-Za-z0-9_-]{32}\.atom$/);

    w.sim.openIncident('github', { title: 'Git operations <degraded> & "slow"', body: 'Looking' });
    const hit = await delivered(
      w,
      (h) => h.feedId === 'github' && h.type === 'incident.opened',
      'github opened',
    );
    expect(hit.id).toMatch(new RegExp(`:${TEAM_A.subscription}:hook$`));

    type Overview = { services: { feedId: string; openIncidents: { title: string }[] }[] };
    const overview = await json<Overview>('/', w.tokens.payments);
    const github = overview.body.services.find((s) => s.feedId === 'github');
    expect(github?.openIncidents.map((i) => i.title)).toContain(
      'Git operations <degraded> & "slow"',
    );
    // Most troubled first.
    expect(overview.body.services[0]?.feedId).toBe('github');

    type Service = {
      incidents: { title: string; open: boolean }[];
      transitions: { kind: string; deliveries: { id: string; outcome: string }[] }[];
    };
    const service = await waitFor(
      async () => {
        const s = await json<Service>('/services/github', w.tokens.payments);
        const opened = s.body.transitions.find((t) => t.kind === 'incident.opened');
        return opened?.deliveries[0]?.outcome === 'sent' ? s.body : false;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'the delivery marked sent' },
    );
    expect(service.incidents[0]).toMatchObject({
      open: true,
      title: 'Git operations <degraded> & "slow"',
    });
    expect(service.transitions[0]?.deliveries[0]?.id).toBe(hit.id);

    const html = await (
      await fetch(`${w.base}/services/github`, { headers: bearer(w.tokens.payments) })
    ).text();
    expect(html).toContain('Git operations &lt;degraded&gt; &amp; &quot;slow&quot;');
    expect(html).toContain('<svg');

    type Notifications = { deliveries: { id: string; outcome: string }[] };
    const n = await json<Notifications>('/notifications?outcome=sent', w.tokens.payments);
    expect(n.body.deliveries.map((d) => d.id)).toContain(hit.id);
    expect((await json<Notifications>('/notifications', w.tokens.search)).body.deliveries).toEqual(
      [],
    );

    const feed = await fetch(feedUrl);
    expect(feed.headers.get('content-type')).toMatch(/application\/atom\+xml/);
    const xml = await feed.text();
    expect(xml).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    expect(xml).toContain('Git operations &lt;degraded&gt; &amp; &quot;slow&quot;');
    // Rotating kills the old URL.
    await fetch(`${w.base}/feeds/${TEAM_A.subscription}/rotate`, {
      method: 'POST',
      headers: { ...bearer(w.tokens.payments), accept: 'application/json' },
    });
    expect((await fetch(feedUrl)).status).toBe(404);
  });

  it('self-service through the API stores: teams own their subscriptions, admins name the team, channels preview and test', async () => {
    const post = (path: string, token: string, body: Record<string, unknown>) =>
      fetch(`${w.base}${path}`, {
        method: 'POST',
        headers: {
          ...bearer(token),
          accept: 'application/json',
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
    const created = await post('/subscriptions', w.tokens.payments, {
      name: 'payments-extra',
      services: 'stripe, github',
      channels: ['hook'],
      events: ['incident.opened', 'incident.resolved'],
    });
    expect(created.status).toBe(200);
    const mine = await json<{ subscriptions: { name: string; team: string; events: string[] }[] }>(
      '/subscriptions',
      w.tokens.payments,
    );
    expect(mine.body.subscriptions.find((s) => s.name === 'payments-extra')).toMatchObject({
      team: TEAM_A.team,
      events: ['incident.opened', 'incident.resolved'],
    });
    // Team B can neither see nor delete it; team A can.
    expect((await post('/subscriptions/payments-extra/delete', w.tokens.search, {})).status).toBe(
      404,
    );
    expect((await post('/subscriptions/payments-extra/delete', w.tokens.payments, {})).status).toBe(
      200,
    );
    // An admin names the owning team (the API requires it), and gets the field named otherwise.
    const noTeam = await post('/subscriptions', w.tokens.admin, {
      name: 'x1',
      services: 'slack',
      channels: 'hook',
    });
    expect(noTeam.status).toBe(400);
    expect(JSON.stringify(await noTeam.json())).toContain('team');
    // The same refusal to a browser: the form again (400), its issue shown, what was typed kept.
    const noTeamPage = await fetch(`${w.base}/subscriptions`, {
      method: 'POST',
      headers: {
        ...bearer(w.tokens.admin),
        accept: 'text/html',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'x1', services: 'slack', channels: 'hook' }),
    });
    expect(noTeamPage.status).toBe(400);
    const refusedPage = await noTeamPage.text();
    expect(refusedPage).toMatch(/<div class="notice error" role="alert">\s*<ul>\s*<li>team/);
    expect(refusedPage).toContain('value="x1"');
    // A channel whose fields are not a JSON object is refused naming the field.
    const badFields = await post('/channels', w.tokens.payments, {
      name: 'c1',
      type: 'webhook',
      fields: '[1]',
    });
    expect(badFields.status).toBe(400);
    expect(await badFields.json()).toMatchObject({ error: { code: 'invalid', field: 'fields' } });
    const forB = await post('/subscriptions', w.tokens.admin, {
      name: 'search-extra',
      team: TEAM_B.team,
      services: 'slack',
      channels: 'hook',
    });
    expect(forB.status).toBe(200);
    const b = await json<{ subscriptions: { name: string }[] }>('/subscriptions', w.tokens.search);
    expect(b.body.subscriptions.map((s) => s.name)).toContain('search-extra');

    // Config-file channels are previewed by admins only (the preview shows the operator's
    // headers and endpoints), and secrets are hidden from them too.
    const refused = await fetch(`${w.base}/channels?preview=hook&event=incident.opened`, {
      headers: bearer(w.tokens.payments),
    });
    const refusedText = await refused.text();
    expect(refusedText).not.toContain('Preview of hook for incident.opened');
    expect(refusedText).not.toContain('console-WEBHOOKSECRET');
    const preview = await fetch(`${w.base}/channels?preview=hook&event=incident.opened`, {
      headers: bearer(w.tokens.admin),
    });
    const text = await preview.text();
    expect(preview.status).toBe(200);
    expect(text).toContain('Preview of hook for incident.opened');
    expect(text).not.toContain('console-WEBHOOKSECRET');
    expect(text).not.toContain(w.sink.url);
    // Config-file channels are tested by admins only.
    expect((await post('/channels/hook/test', w.tokens.payments, {})).status).toBe(403);
    const tested = await post('/channels/hook/test', w.tokens.admin, {});
    expect(((await tested.json()) as { ok: boolean }).ok).toBe(true);
    await delivered(w, (h) => h.type === 'test', 'the test notification');

    type Audit = { entries: { name: string; team: string }[] };
    const audit = await json<Audit>('/audit', w.tokens.search);
    expect(audit.body.entries.map((e) => e.name)).toContain('search-extra');
    expect(audit.body.entries.every((e) => e.team === TEAM_B.team)).toBe(true);
  });
});
