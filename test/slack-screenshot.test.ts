/**
 * The Slack living message with its buttons, as the docs show it (docs/acting-on-alerts.md, issue
 * #31). Slack cannot be reached from here, so the real app-mode renderer's Block Kit
 * (src/notify/slack/app-render.ts) is turned into a static page styled like a Slack message
 * (test/helpers/slack-html.ts): an approximation of Slack's look, from the real blocks.
 *
 * Always: the pages hold the four buttons, then the acknowledgement note without Acknowledge, and
 * upstream `<!channel>` / `<http://x|y>` stay inert text. With STATUSWATCH_SCREENSHOTS=1 and
 * /usr/bin/chromium present, Chromium (playwright-core) also writes
 * docs/screenshots/slack-message-buttons.png and slack-message-acknowledged.png (700 px wide).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleTransition } from '../src/commands/samples.js';
import type { Transition } from '../src/diff/transition.js';
import { renderEpisodeParent, withActionNotes } from '../src/notify/slack/app-render.js';
import type { SlackPayload } from '../src/notify/slack/render.js';
import { formatUtc } from '../src/notify/text.js';
import type { Notification } from '../src/notify/types.js';
import { slackMessageHtml, type SlackHtmlOptions } from './helpers/slack-html.js';
import { ROOT } from './helpers/process.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.STATUSWATCH_SCREENSHOTS === '1';
const OPENED = Date.UTC(2026, 10, 27, 9, 12, 0);
const ACKED = Date.UTC(2026, 10, 27, 9, 15, 0);
const ALICE = 'U0ALICE1';
const PAGE: SlackHtmlOptions = { users: { [ALICE]: 'alice' }, time: '9:12 AM' };
const LABELS = ['Acknowledge', 'Silence 1h', 'Silence 4h', 'Silence until resolved'];

function notificationOf(t: Transition): Notification {
  return {
    id: `${t.id}:payments:oncall`,
    type: 'event',
    subscription: 'payments',
    channel: 'oncall',
    transitions: [t],
    createdAt: t.observedAt,
  };
}

/** An open episode's parent as a channel with a signing secret gets it: with the buttons. */
function openParent(t: Transition, mention?: string): SlackPayload {
  return renderEpisodeParent(
    notificationOf(t),
    t,
    { openedAt: OPENED },
    { buttons: true, mention },
  );
}

/** The same after Acknowledge: the note as src/notify/slack/interactions.ts writes it. */
function ackedParent(parent: SlackPayload): SlackPayload {
  const note = `:white_check_mark: Acknowledged by <@${ALICE}> at ${formatUtc(ACKED)}`;
  return { ...parent, blocks: withActionNotes(parent.blocks, [note], true) };
}

function pages(): { buttons: string; acknowledged: string } {
  const parent = openParent(sampleTransition('incident.opened', OPENED));
  return {
    buttons: slackMessageHtml(parent, PAGE),
    acknowledged: slackMessageHtml(ackedParent(parent), PAGE),
  };
}

/** The text of each `<button>` of a page. */
function buttonLabels(html: string): string[] {
  return [...html.matchAll(/<button[^>]*>([^<]*)<\/button>/g)].map((m) => m[1] ?? '');
}

describe('the Slack message page (from the app-mode renderer)', () => {
  it('an open incident: its facts, links and the four buttons, Acknowledge primary', () => {
    const { buttons } = pages();
    expect(buttonLabels(buttons)).toEqual(LABELS);
    expect(buttons).toContain('<button type="button" class="primary">Acknowledge</button>');
    expect(buttons).toContain('Stripe: Elevated API error rates</div>');
    expect(buttons).toContain('<b>Open</b> · since 2026-11-27 09:12 UTC');
    expect(buttons).toContain(
      '<blockquote>We are investigating elevated error rates on the Charges API.</blockquote>',
    );
    expect(buttons).toContain('<a href="https://status.stripe.com/">Official status page</a>');
    expect(buttons).not.toContain('Acknowledged by');
  });

  it('acknowledged: the note with the user, and no Acknowledge button', () => {
    const { acknowledged } = pages();
    expect(buttonLabels(acknowledged)).toEqual(LABELS.slice(1));
    expect(acknowledged).not.toContain('>Acknowledge<');
    expect(acknowledged).toContain(
      'Acknowledged by <span class="mention">@alice</span> at 2026-11-27 09:15 UTC',
    );
    // The note comes before the buttons, as Slack shows it.
    expect(acknowledged.indexOf('Acknowledged by')).toBeLessThan(
      acknowledged.indexOf('<div class="actions">'),
    );
  });

  it('keeps upstream <!channel>, <http://x|y> and <script> inert text', () => {
    const base = sampleTransition('incident.opened', OPENED);
    const hostile: Transition = {
      ...base,
      service: { ...base.service, name: 'Stripe <@U999>' },
      incident: {
        ...(base.incident ?? { id: 'inc-1', status: 'investigating', started: 0, updateCount: 1 }),
        title: '<!channel> pay <http://x|y> *now*',
        latestUpdate: '<!channel> see <http://x|y> <script>alert(1)</script>\n> not a quote',
      },
    };
    const html = slackMessageHtml(openParent(hostile), PAGE);
    expect(html).toContain('&lt;!channel&gt; pay &lt;http://x|y&gt; <b>now</b>');
    expect(html).toContain('&lt;!channel&gt; see &lt;http://x|y&gt; &lt;script&gt;alert(1)');
    expect(html).toContain('&gt; not a quote');
    expect(html).toContain('Stripe &lt;@U999&gt;');
    expect(html).not.toContain('href="http://x"');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('class="mention');
    expect(buttonLabels(html)).toEqual(LABELS);
    // A mention from the channel config is a real one: the checks above could fail.
    const trusted = slackMessageHtml(openParent(hostile, '<!here>'), PAGE);
    expect(trusted).toContain('<span class="mention broadcast">@here</span>');
  });
});

const missing = !existsSync(CHROMIUM);

describe.skipIf(missing || !SCREENSHOTS)(
  'screenshots for docs/acting-on-alerts.md (STATUSWATCH_SCREENSHOTS=1)',
  () => {
    it('writes docs/screenshots/slack-message-*.png at 700 px', async () => {
      // Loaded here only: a run without the variable never starts Chromium.
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu'],
      });
      try {
        const dir = join(ROOT, 'docs', 'screenshots');
        await mkdir(dir, { recursive: true });
        const { buttons, acknowledged } = pages();
        const shots: [string, string, string[]][] = [
          ['slack-message-buttons.png', buttons, LABELS],
          ['slack-message-acknowledged.png', acknowledged, LABELS.slice(1)],
        ];
        for (const [file, html, labels] of shots) {
          const context = await browser.newContext({
            viewport: { width: 700, height: 300 },
            deviceScaleFactor: 1,
          });
          try {
            const page = await context.newPage();
            await page.setContent(html);
            expect(await page.locator('button').allTextContents()).toEqual(labels);
            await page.screenshot({ path: join(dir, file), fullPage: true });
          } finally {
            await context.close();
          }
        }
      } finally {
        await browser.close();
      }
    }, 60_000);
  },
);
