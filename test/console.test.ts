/**
 * The web console in a real browser: Debian's Chromium (headless) driven by playwright-core,
 * against the real daemon (App in process: pollers, routing, noise control, delivery and the ops
 * server), real Redis, the upstream simulator and a local webhook receiver. Skipped, with one
 * message, when /usr/bin/chromium is missing (`.ci/run` installs Debian's `chromium`).
 *
 * With STATUSWATCH_SCREENSHOTS=1 the last test also writes docs/screenshots/*.png (1280 px and
 * 390 px wide).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSP } from '../src/console/index.js';
import type { CommittedCycle } from '../src/pipeline/cycle.js';
import type { StatusEntry } from '../src/diff/state.js';
import { consoleWorld, delivered, TEAM_A, TEAM_B, type World } from './helpers/console-world.js';
import { ROOT } from './helpers/process.js';
import { waitFor } from './helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing)
  console.warn(
    `console browser tests skipped: ${CHROMIUM} is missing (install Debian's chromium package; .ci/run does)`,
  );

const HOSTILE =
  '<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)"><a href="javascript:alert(3)">click me</a> javascript:alert(4)';
const LIVE_MS = 25_000;

let w: World;
let browser: Browser;
const dialogs: string[] = [];
const contexts: BrowserContext[] = [];

async function newPage(width = 1280, height = 900, dark = false): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width, height },
    colorScheme: dark ? 'dark' : 'light',
  });
  contexts.push(context);
  const page = await context.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return page;
}

async function login(page: Page, token: string, next = '/'): Promise<void> {
  const res = await page.goto(`${w.base}${next}`);
  expect(new URL(page.url()).pathname).toBe('/login');
  expect(res?.headers()['content-security-policy']).toBe(CSP);
  await page.locator('#token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => u.pathname === next);
}

/** The `data-feed` of each row of the overview's services table, in order. */
async function feedsOn(page: Page): Promise<(string | null)[]> {
  const rows = await page.locator('#services tbody tr').all();
  return Promise.all(rows.map((r) => r.getAttribute('data-feed')));
}

async function pwned(page: Page): Promise<unknown> {
  return page.evaluate('window.__pwned');
}

describe.skipIf(missing)('web console in Chromium (real daemon, simulator, receiver)', () => {
  let teamA: Page;

  beforeAll(async () => {
    contexts.length = 0;
    w = await consoleWorld();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    teamA = await newPage();
  }, 60_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser.close().catch(() => undefined);
    await w.close();
  });

  it("logs in as a team; the overview lists the team's services only", async () => {
    await login(teamA, w.tokens.payments);
    expect((await feedsOn(teamA)).sort()).toEqual([...TEAM_A.services].sort());
    await teamA.getByText(`team ${TEAM_A.team}`).waitFor();
    // Keyboard: the skip link is the first stop and leads to the content.
    await teamA.keyboard.press('Tab');
    expect(await teamA.evaluate('document.activeElement.textContent')).toBe('Skip to content');
  });

  it('an incident appears on the overview and the service timeline without a reload; the sink receives it', async () => {
    await teamA.goto(`${w.base}/`);
    const id = w.sim.openIncident('stripe', {
      title: 'Card payments failing',
      body: 'Looking into it',
    });
    await teamA
      .locator('#services tr[data-feed="stripe"]', { hasText: 'Card payments failing' })
      .waitFor({ timeout: LIVE_MS });
    const hit = await delivered(
      w,
      (h) => h.feedId === 'stripe' && h.type === 'incident.opened',
      'stripe opened',
    );
    expect(hit.id).toMatch(new RegExp(`:${TEAM_A.subscription}:hook$`));
    // The most troubled service is first.
    expect(await teamA.locator('#services tbody tr').first().getAttribute('data-feed')).toBe(
      'stripe',
    );

    await teamA.locator('#services tr[data-feed="stripe"] a').first().click();
    await teamA.waitForURL((u) => u.pathname === '/services/stripe');
    await teamA.locator('#timeline', { hasText: 'Card payments failing' }).waitFor();
    await teamA
      .locator('#transitions', { hasText: TEAM_A.subscription })
      .locator('.o-sent')
      .first()
      .waitFor({ timeout: LIVE_MS });
    expect(await teamA.locator('svg').count()).toBeGreaterThanOrEqual(1);

    w.sim.updateIncident('stripe', id, { status: 'identified', body: 'Root cause found' });
    await teamA.locator('#timeline', { hasText: 'Root cause found' }).waitFor({ timeout: LIVE_MS });
    await delivered(
      w,
      (h) => h.feedId === 'stripe' && h.type === 'incident.updated',
      'stripe updated',
    );
  });

  it('a silence created from the page (with its preview) drops the next matching transition', async () => {
    await teamA.goto(`${w.base}/silences`);
    await teamA.locator('#s-services').fill('github');
    await teamA.locator('#s-comment').fill('vendor maintenance <b>bold</b>');
    await teamA.getByRole('button', { name: 'Preview' }).click();
    const preview = teamA.locator('#silence-preview');
    await preview.locator('code', { hasText: TEAM_A.subscription }).waitFor();
    expect(await preview.textContent()).toContain('hook');
    await teamA.getByRole('button', { name: 'Create silence' }).click();
    await teamA.getByText('Silence created.').waitFor();
    await teamA.locator('#silences', { hasText: 'vendor maintenance <b>bold</b>' }).waitFor();

    const before = w.sink.hits.length;
    w.sim.openIncident('github', { title: 'Silenced outage' });
    await teamA.goto(`${w.base}/services/github`);
    await teamA
      .locator('#transitions', { hasText: 'dropped: silenced by' })
      .waitFor({ timeout: LIVE_MS });
    await teamA.locator('#timeline', { hasText: 'Silenced outage' }).waitFor();
    // Delivery would have happened by now: nothing about github reached the sink.
    await new Promise((r) => setTimeout(r, 1000));
    expect(w.sink.hits.slice(before).filter((h) => h.feedId === 'github')).toEqual([]);
  });

  it('a dead letter is listed with its reason and retried with the button', async () => {
    w.sink.refuse = true;
    w.sim.openIncident('stripe', { title: 'Refused delivery' });
    await waitFor(
      () => w.sink.hits.find((h) => h.title === 'Refused delivery' && h.status === 400),
      {
        timeoutMs: 20_000,
        what: 'the refused delivery',
      },
    );
    await teamA.goto(`${w.base}/notifications`);
    const row = teamA.locator('#dead tr[data-dead]', { hasText: TEAM_A.subscription });
    await row.first().waitFor({ timeout: LIVE_MS });
    expect(await row.first().textContent()).toMatch(/HTTP 400|client|400/);
    w.sink.refuse = false;
    await row.first().getByRole('button', { name: 'Retry' }).click();
    await teamA.getByText('The dead letter is queued for another try.').waitFor();
    await delivered(w, (h) => h.title === 'Refused delivery', 'the retried delivery');
  });

  it('a hostile incident title is text on every page: no dialog, no script, CSP on every response', async () => {
    w.sim.openIncident('stripe', { title: HOSTILE, body: HOSTILE });
    await delivered(w, (h) => h.title === HOSTILE, 'the hostile incident');
    for (const path of [
      '/',
      '/services/stripe',
      '/notifications',
      '/silences',
      '/subscriptions',
      '/channels',
      '/feeds',
      '/audit',
    ]) {
      const res = await teamA.goto(`${w.base}${path}`);
      expect(res?.status(), path).toBe(200);
      expect(res?.headers()['content-security-policy'], path).toBe(CSP);
      if (path === '/' || path === '/services/stripe' || path === '/notifications')
        await teamA.getByText(HOSTILE).first().waitFor({ timeout: LIVE_MS });
      expect(await teamA.locator('img').count(), path).toBe(0);
      expect(await teamA.locator('a[href^="javascript:"]').count(), path).toBe(0);
      expect(await pwned(teamA), path).toBeUndefined();
    }
    // The live refresh swaps server-rendered regions: still nothing runs.
    await teamA.goto(`${w.base}/`);
    await new Promise((r) => setTimeout(r, 6000));
    expect(await pwned(teamA)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });

  it('a POST without the CSRF token is refused with 403', async () => {
    await teamA.goto(`${w.base}/silences`);
    const refused = await teamA.request.post(`${w.base}/silences`, {
      form: { services: 'stripe', duration: '1h' },
      maxRedirects: 0,
    });
    expect(refused.status()).toBe(403);
    const csrf = await teamA.locator('input[name="csrf"]').first().inputValue();
    const accepted = await teamA.request.post(`${w.base}/silences/preview`, {
      form: { services: 'stripe', duration: '1h', csrf },
      maxRedirects: 0,
    });
    expect(accepted.status()).toBe(200);
  });

  it("team B's session never shows team A's objects, and the other way round", async () => {
    const res = await teamA.goto(`${w.base}/services/slack`);
    expect(res?.status()).toBe(404);
    const teamB = await newPage();
    await login(teamB, w.tokens.search);
    expect(await feedsOn(teamB)).toEqual(TEAM_B.services);
    for (const path of ['/', '/notifications', '/silences', '/subscriptions', '/feeds', '/audit']) {
      await teamB.goto(`${w.base}${path}`);
      const text = (await teamB.locator('main').textContent()) ?? '';
      expect(text, path).not.toContain(TEAM_A.subscription);
      expect(text, path).not.toContain('Card payments failing');
    }
    expect((await teamB.goto(`${w.base}/services/stripe`))?.status()).toBe(404);
  });

  it('creates a subscription with the catalog search; it takes effect', async () => {
    await teamA.goto(`${w.base}/subscriptions`);
    await teamA.locator('#sub-name').fill('payments-more');
    await teamA.locator('#catalog-q').fill('twil');
    await teamA.getByRole('button', { name: /^Add Twilio/ }).click();
    expect(await teamA.locator('#sub-services').inputValue()).toBe('twilio');
    await teamA.locator('#subscription-form').getByLabel('hook').check();
    await teamA.getByRole('button', { name: 'Create subscription' }).click();
    await teamA.getByText('Saved.').waitFor();
    await teamA.locator('tr[data-subscription="payments-more"]').waitFor();
    // The audit log has the change, seen by the team.
    await teamA.goto(`${w.base}/audit`);
    await teamA.locator('main', { hasText: 'payments-more' }).waitFor();

    w.sim.openIncident('twilio', { title: 'SMS delayed' });
    const hit = await delivered(
      w,
      (h) => h.feedId === 'twilio' && h.id.endsWith(':payments-more:hook'),
      'twilio via payments-more',
    );
    expect(hit.type).toBe('incident.opened');
    await teamA.goto(`${w.base}/`);
    await teamA
      .locator('#services tr[data-feed="twilio"]', { hasText: 'SMS delayed' })
      .waitFor({ timeout: LIVE_MS });
  });

  it('works at phone width: nothing wider than the screen', async () => {
    const phone = await newPage(390, 844);
    await login(phone, w.tokens.admin);
    for (const path of ['/', '/services/stripe', '/notifications', '/silences']) {
      await phone.goto(`${w.base}${path}`);
      expect(
        await phone.evaluate('document.documentElement.scrollWidth'),
        path,
      ).toBeLessThanOrEqual(390);
    }
    // Dark mode follows the system setting.
    await phone.emulateMedia({ colorScheme: 'dark' });
    expect(await phone.evaluate('getComputedStyle(document.body).backgroundColor')).toBe(
      'rgb(13, 17, 23)',
    );
  });
});

const SCREENSHOTS = process.env.STATUSWATCH_SCREENSHOTS === '1';

describe.skipIf(missing || !SCREENSHOTS)(
  'screenshots for the README (STATUSWATCH_SCREENSHOTS=1)',
  () => {
    it('writes docs/screenshots/*.png at 1280 px and 390 px', async () => {
      w = await consoleWorld();
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu'],
      });
      try {
        await seedHistory(w);
        const stripe = w.sim.openIncident('stripe', {
          title: 'Elevated card payment failures in EU',
          body: 'Investigating',
        });
        w.sim.updateIncident('stripe', stripe, {
          status: 'identified',
          body: 'A database failover is in progress',
        });
        const gh = w.sim.openIncident('github', { title: 'Delayed Actions runs' });
        await delivered(w, (h) => h.feedId === 'github', 'github opened');
        w.sim.resolveIncident('github', gh, 'Recovered');
        await delivered(
          w,
          (h) => h.feedId === 'github' && h.type === 'incident.resolved',
          'github resolved',
        );
        w.sink.refuse = true;
        w.sim.openIncident('slack', { title: 'Messages delayed' });
        await waitFor(() => w.sink.hits.find((h) => h.feedId === 'slack'), {
          what: 'slack refused',
        });
        w.sink.refuse = false;
        await new Promise((r) => setTimeout(r, 2000));
        const dir = join(ROOT, 'docs', 'screenshots');
        await mkdir(dir, { recursive: true });
        const shots: [number, string, string, boolean?][] = [
          [1280, '/', 'overview-1280.png'],
          [1280, '/', 'overview-dark-1280.png', true],
          [1280, '/services/stripe', 'service-1280.png'],
          [1280, '/notifications', 'notifications-1280.png'],
          [390, '/', 'overview-390.png'],
          [390, '/services/stripe', 'service-390.png'],
        ];
        for (const [width, path, file, dark] of shots) {
          const page = await newPage(width, width > 500 ? 900 : 844, dark === true);
          await login(page, w.tokens.admin, path);
          await page.screenshot({ path: join(dir, file), fullPage: true });
        }
      } finally {
        for (const c of contexts) await c.close().catch(() => undefined);
        await browser.close();
        await w.close();
      }
    }, 90_000);
  },
);

/**
 * What the pipeline would have recorded over the last 90 days (for the screenshots): SLA margins
 * and scores every 3 hours for 30 days and daily before, and a few status changes.
 */
async function seedHistory(w: World): Promise<void> {
  const now = Date.now();
  const H = 3_600_000;
  const feeds = ['stripe', 'github', 'slack', 'twilio'];
  const rate = { limit: null, remaining: null, reset: null };
  const base = { transitions: [], changed: new Map(), rateLimit: rate };
  const hours = [
    ...Array.from({ length: 60 }, (_, d) => (90 - d) * 24),
    ...Array.from({ length: 241 }, (_, i) => 720 - i * 3),
  ];
  for (const h of hours) {
    const at = now - h * H;
    const wave = (f: number): number => Math.sin(h / (30 + f * 11)) + 0.4 * Math.sin(h / 7);
    const dip = (feedId: string): number => (feedId === 'stripe' && h < 80 ? (80 - h) / 80 : 0);
    const sla: CommittedCycle = {
      ...base,
      kind: 'sla',
      now: at,
      data: {
        summary: { servicesTracked: null, complianceRate: null, servicesBreachingSla: null },
        services: feeds.map((feedId, f) => {
          const margin = Math.round((0.22 + 0.08 * wave(f) - 0.3 * dip(feedId)) * 1000) / 1000;
          return {
            feedId,
            name: feedId,
            slaTarget: 99.9,
            uptime30d: 99.9 + margin,
            status: margin < 0.1 ? 'at_risk' : 'met',
            statusRaw: margin < 0.1 ? 'at_risk' : 'met',
            margin,
          };
        }),
      },
    };
    const scores: CommittedCycle = {
      ...base,
      kind: 'scores',
      now: at,
      data: {
        summary: { servicesScored: null, avgScore: null, topService: null },
        scores: feeds.map((feedId, f) => ({
          feedId,
          name: feedId,
          score: Math.round(86 + 4 * wave(f) - 12 * dip(feedId)),
          grade: 'A',
          tier: null,
          components: { uptime: null, incidents: null, resolution: null, sla: null },
        })),
      },
    };
    await w.app.history.record(sla, () => true);
    await w.app.history.record(scores, () => true);
  }
  const status = (feedId: string, s: StatusEntry['status']): [string, StatusEntry] => [
    feedId,
    {
      variant: 'A',
      status: s,
      raw: s,
      sourceKind: 'official',
      evidence: 'fresh',
      seq: 0,
      pending: null,
    },
  ];
  // The live cycles recorded "operational" at start: forget it, so the older baseline counts.
  await w.tr.redis.del(w.tr.keys.key('hist', 'status-last'));
  const changes: [number, [string, StatusEntry][]][] = [
    [40 * 24, feeds.map((f) => status(f, 'operational'))],
    [12 * 24, [status('github', 'degraded')]],
    [12 * 24 - 5, [status('github', 'operational')]],
    [3 * 24, [status('stripe', 'partial_outage')]],
    [3 * 24 - 2, [status('stripe', 'degraded')]],
    [2 * 24, [status('stripe', 'operational')]],
  ];
  for (const [h, entries] of changes) {
    await w.app.history.record(
      {
        ...base,
        kind: 'status',
        now: now - h * H,
        changed: new Map(entries),
        data: {
          variant: 'A',
          total: 0,
          generated: null,
          ageSeconds: null,
          includes: null,
          services: [],
        },
      },
      () => true,
    );
  }
}
