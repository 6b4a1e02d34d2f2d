/**
 * "Silence…" from a notification, in a real browser: a notification rendered for a config whose
 * `server.publicUrl` is the test daemon's console carries the link; Chromium follows it, logs in
 * with a team token, lands on the prefilled form, confirms once, and the silence exists (API).
 * Debian's Chromium via playwright-core; skipped when /usr/bin/chromium is missing.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/index.js';
import { withLinks } from '../src/notify/links.js';
import { renderSlack } from '../src/notify/slack/render.js';
import { webhookPayload } from '../src/notify/webhook/render.js';
import type { Silence } from '../src/silences/model.js';
import { consoleWorld, TEAM_A, type World } from './helpers/console-world.js';
import { notification, transition } from './notify-helpers.js';
import { REDIS_URL } from './helpers/redis.js';

const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing)
  console.warn(`console link browser tests skipped: ${CHROMIUM} is missing (Debian's chromium)`);

let w: World;
let browser: Browser;

/** The "Silence…" link of a Slack message rendered with `server.publicUrl` = the console. */
function silenceLinkFromSlack(): { silence: string; console: string } {
  const config = parseConfig(
    stringify({
      upstream: { baseUrl: 'http://127.0.0.1:9' },
      redis: { url: REDIS_URL },
      server: { publicUrl: `${w.base}/` },
      channels: { chat: { type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T/B/x' } },
      subscriptions: [{ name: TEAM_A.subscription, services: ['stripe'], channels: ['chat'] }],
    }),
    {},
  );
  const n = withLinks(
    notification([transition('incident.opened')], {
      subscription: TEAM_A.subscription,
      channel: 'chat',
    }),
    config.server.publicUrl,
  );
  const text = JSON.stringify(renderSlack(n));
  const found = /<([^|>]+)\|Silence…>/.exec(text);
  expect(found).not.toBeNull();
  const silence = (found?.[1] ?? '').replace(/&amp;/g, '&');
  // The same link every channel gets (here: the webhook's data.links).
  expect(webhookPayload(n).data.links?.silence).toBe(silence);
  return { silence, console: n.links?.console ?? '' };
}

async function freshPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  return context.newPage();
}

async function loginThrough(page: Page, link: string, token: string): Promise<void> {
  await page.goto(link);
  expect(new URL(page.url()).pathname).toBe('/login');
  await page.locator('#token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => u.pathname === '/silences');
}

async function apiSilences(token: string): Promise<Silence[]> {
  const res = await fetch(`${w.base}/api/v1/silences`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { silences: Silence[] }).silences;
}

describe.skipIf(missing)('"Silence…" links from notifications (Chromium, real daemon)', () => {
  beforeAll(async () => {
    w = await consoleWorld();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser.close().catch(() => undefined);
    await w.close();
  });

  it('leads, after the login, to the prefilled form; one confirmation creates the silence', async () => {
    const links = silenceLinkFromSlack();
    const page = await freshPage();
    await loginThrough(page, links.silence, w.tokens.payments);
    // The query survived the login.
    const landed = new URL(page.url());
    expect(landed.searchParams.get('services')).toBe('stripe');
    expect(await page.locator('#s-services').inputValue()).toBe('stripe');
    expect(await page.locator('#s-duration').inputValue()).toBe('1h');
    const ticked = async (name: string): Promise<string[]> =>
      page
        .locator(`#silence-form input[name="${name}"]:checked`)
        .evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
    expect(await ticked('events')).toEqual([
      'incident.opened',
      'incident.updated',
      'incident.resolved',
    ]);
    expect(await ticked('subscriptions')).toEqual([TEAM_A.subscription]);
    expect(await ticked('channels')).toEqual([]);

    const before = Date.now();
    await page.getByRole('button', { name: 'Create silence' }).click();
    await page.getByText('Silence created.').waitFor();

    const created = (await apiSilences(w.tokens.payments)).filter(
      (s) => s.matchers.services?.includes('stripe') === true,
    );
    expect(created).toHaveLength(1);
    const [silence] = created;
    expect(silence?.matchers).toEqual({
      services: ['stripe'],
      events: ['incident.opened', 'incident.updated', 'incident.resolved'],
      subscriptions: [TEAM_A.subscription],
    });
    const startsAt = silence?.startsAt ?? 0;
    expect(startsAt).toBeGreaterThanOrEqual(before - 5_000);
    expect((silence?.endsAt ?? 0) - startsAt).toBe(60 * 60 * 1000);

    // "Open in console" is the service page (logged in now).
    await page.goto(links.console);
    expect(new URL(page.url()).pathname).toBe('/services/stripe');
    await page.locator('#transitions').waitFor();
  });

  it("another team following the link cannot silence team A's subscription", async () => {
    const links = silenceLinkFromSlack();
    const page = await freshPage();
    await loginThrough(page, links.silence, w.tokens.search);
    const foreign = page.locator(
      `#silence-form input[name="subscriptions"][value="${TEAM_A.subscription}"]`,
    );
    expect(await foreign.isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create silence' }).click();
    await page.getByText(`not your team's: ${TEAM_A.subscription}`).waitFor();
    const theirs = await apiSilences(w.tokens.search);
    expect(theirs.filter((s) => s.matchers.subscriptions?.includes(TEAM_A.subscription))).toEqual(
      [],
    );
  });
});
