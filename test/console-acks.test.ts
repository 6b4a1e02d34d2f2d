/**
 * Acknowledging from the console (docs/acting-on-alerts.md) over plain HTTP against the real
 * daemon: the service page of an open, notified incident offers Acknowledge per subscription; the
 * POST needs the session's CSRF token, acts through the API's path (tenancy, audit) and redirects
 * back with a notice; the page then shows who acknowledged, when and through what. Another team
 * cannot acknowledge it. Then the same in Chromium (playwright-core, Debian's /usr/bin/chromium;
 * skipped when it is missing): the button is clicked on the page.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleWorld, delivered, TEAM_A, type World } from './helpers/console-world.js';
import { consoleLogin, type ConsoleSession } from './helpers/console-login.js';
import { waitFor } from './helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing) console.warn(`console ack browser test skipped: ${CHROMIUM} is missing`);

let w: World;

beforeAll(async () => {
  w = await consoleWorld();
}, 60_000);

afterAll(async () => {
  await w.close();
});

/** Logs in through the form: the session cookie and the page's CSRF token. */
const login = (token: string): Promise<ConsoleSession> => consoleLogin(w.base, token);

function postAck(cookie: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${w.base}/acks`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

/** The hidden fields of the Acknowledge form of `subscription` on a service page. */
function ackForm(page: string, subscription: string): Record<string, string> | null {
  const li = new RegExp(`<li data-ack="${subscription}">([\\s\\S]*?)</li>`).exec(page)?.[1];
  if (li === undefined || !li.includes('action="/acks"')) return null;
  const fields: Record<string, string> = {};
  for (const m of li.matchAll(/<input\s+type="hidden"\s+name="([^"]+)"\s+value="([^"]*)"/g))
    fields[m[1] ?? ''] = (m[2] ?? '').replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  return fields;
}

describe('acknowledging from the console', () => {
  it('acks an open incident (CSRF required, another team refused) and shows who acked it', async () => {
    const a = await login(w.tokens.payments);
    const b = await login(w.tokens.search);
    w.sim.openIncident('stripe', { title: 'Card payments failing', body: 'Investigating' });
    await delivered(w, (h) => h.feedId === 'stripe' && h.type === 'incident.opened', 'opened');

    // The service page offers Acknowledge for the team's subscription once the team was told.
    const fields = await waitFor(
      async () => {
        const page = await (
          await fetch(`${w.base}/services/stripe`, { headers: { cookie: a.cookie } })
        ).text();
        return ackForm(page, TEAM_A.subscription) ?? false;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'the Acknowledge button' },
    );
    expect(fields).toMatchObject({
      csrf: a.csrf,
      subscription: TEAM_A.subscription,
      service: 'stripe',
    });
    expect(fields.subject).toMatch(/^incident:/);
    const episode = {
      subscription: TEAM_A.subscription,
      service: 'stripe',
      subject: fields.subject ?? '',
    };

    // No CSRF token, or a wrong one: refused, nothing acknowledged.
    expect((await postAck(a.cookie, episode)).status).toBe(403);
    expect((await postAck(a.cookie, { ...episode, csrf: `${a.csrf}x` })).status).toBe(403);
    // Another team's session (its own valid token) cannot act on team A's subscription.
    const foreign = await postAck(b.cookie, { ...episode, csrf: b.csrf });
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).not.toContain('acknowledged by');
    const stillOpen = await (
      await fetch(`${w.base}/services/stripe`, { headers: { cookie: a.cookie } })
    ).text();
    expect(ackForm(stillOpen, TEAM_A.subscription)).not.toBeNull();

    // With the token: acknowledged, back to the service page with a notice.
    const ok = await postAck(a.cookie, { ...episode, csrf: a.csrf });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/services/stripe?notice=acknowledged');
    const after = await (
      await fetch(`${w.base}${ok.headers.get('location') ?? ''}`, {
        headers: { cookie: a.cookie },
      })
    ).text();
    expect(after).toContain('Acknowledged: no more reminders of it for that subscription.');
    expect(after).toMatch(
      new RegExp(
        `${TEAM_A.subscription}: acknowledged by payments at\\s*<time datetime="[^"]+">[^<]+</time>\\s*\\(via\\s+console\\)`,
      ),
    );
    expect(ackForm(after, TEAM_A.subscription)).toBeNull();

    // Pressed again (a second tab): the first acknowledgement is kept.
    const again = await postAck(a.cookie, { ...episode, csrf: a.csrf });
    expect(again.headers.get('location')).toBe('/services/stripe?notice=ack-kept');

    // The same path as the API: one audit entry, via console, in the team's audit log.
    const audit = await w.app.api.store.audit.read({ limit: 50, visible: () => true });
    const acks = audit.filter((e) => e.kind === 'ack');
    expect(acks.map((e) => [e.name, e.team, e.action])).toEqual([
      [`${TEAM_A.subscription}/stripe|${episode.subject}`, TEAM_A.team, 'acknowledge'],
    ]);
    expect(acks[0]?.diff).toContainEqual({ field: 'via', to: 'console' });

    // JSON for scripts: the service page carries the ack.
    const json = (await (
      await fetch(`${w.base}/services/stripe?format=json`, { headers: { cookie: a.cookie } })
    ).json()) as { incidents: { open: boolean; acks: { subscription: string; ack: unknown }[] }[] };
    expect(json.incidents.find((i) => i.open)?.acks).toMatchObject([
      {
        subscription: TEAM_A.subscription,
        service: 'stripe',
        subject: episode.subject,
        ack: { by: 'console:payments', name: 'payments', via: 'console' },
      },
    ]);
  });

  it('refuses an ack of something not open (409 for scripts, a notice for browsers)', async () => {
    const a = await login(w.tokens.payments);
    const episode = {
      subscription: TEAM_A.subscription,
      service: 'github',
      subject: 'incident:never-opened',
      csrf: a.csrf,
    };
    const res = await postAck(a.cookie, episode);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/services/github?notice=ack-not-open');
    const script = await fetch(`${w.base}/acks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${w.tokens.payments}`,
        accept: 'application/json',
        'content-type': 'application/json',
      },
      body: JSON.stringify(episode),
    });
    expect(script.status).toBe(409);
    expect(((await script.json()) as { error: { code: string } }).error.code).toBe('not_open');
  });
});

describe.skipIf(missing)('acknowledging from the console in Chromium', () => {
  it('the Acknowledge button acks the open incident and the page says who', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    try {
      w.sim.openIncident('github', { title: 'Webhooks delayed', body: 'Looking' });
      await delivered(w, (h) => h.feedId === 'github' && h.type === 'incident.opened', 'opened');
      const page = await (
        await browser.newContext({ viewport: { width: 1280, height: 900 } })
      ).newPage();
      await page.goto(`${w.base}/services/github`);
      expect(new URL(page.url()).pathname).toBe('/login');
      await page.locator('#token').fill(w.tokens.payments);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL((u) => u.pathname === '/services/github');
      const row = page.locator(`li[data-ack="${TEAM_A.subscription}"]`);
      // Told a moment after the delivery: the page refreshes its timeline by itself.
      await row.getByRole('button', { name: 'Acknowledge' }).waitFor({ timeout: 15_000 });
      await row.getByRole('button', { name: 'Acknowledge' }).click();
      await page.waitForURL((u) => u.searchParams.get('notice') === 'acknowledged');
      await page
        .getByText('Acknowledged: no more reminders of it for that subscription.')
        .waitFor();
      expect((await row.textContent())?.replace(/\s+/g, ' ')).toMatch(
        new RegExp(`${TEAM_A.subscription}: acknowledged by payments at .+ \\(via console\\)`),
      );
      expect(await row.getByRole('button', { name: 'Acknowledge' }).count()).toBe(0);
    } finally {
      await browser.close().catch(() => undefined);
    }
  }, 60_000);
});
