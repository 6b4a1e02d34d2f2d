import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import {
  BATCH_LIST_LIMIT,
  limitMrkdwn,
  renderSlack,
  SLACK_LIMITS,
  slackLink,
  type SlackPayload,
} from './render.js';

function allText(payload: SlackPayload): string[] {
  const texts = [payload.text];
  for (const block of payload.blocks) {
    if (block.type === 'header' || block.type === 'section') texts.push(block.text.text);
    if (block.type === 'context') texts.push(...block.elements.map((e) => e.text));
  }
  return texts;
}

function expectWithinLimits(payload: SlackPayload): void {
  expect(payload.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
  expect(payload.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
  for (const block of payload.blocks) {
    if (block.type === 'header')
      expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.headerText);
    if (block.type === 'section')
      expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
  }
}

describe('renderSlack', () => {
  it('renders a single incident with service, change, incident, update, links and context', () => {
    const payload = renderSlack(notification([transition('incident.opened')]));
    expect(payload.text).toBe('Stripe: incident opened — Card payments failing');
    expect(payload.blocks[0]).toEqual({
      type: 'header',
      text: {
        type: 'plain_text',
        text: 'Stripe: incident opened — Card payments failing',
        emoji: false,
      },
    });
    const sections = payload.blocks.map((b) => (b.type === 'section' ? b.text.text : null));
    expect(sections.slice(1, 4)).toEqual([
      '*Stripe* · Incident opened\n*Change:* investigating\n*Incident:* Card payments failing',
      '*Latest update:*\n>We are investigating elevated error rates.',
      '<https://stripe.com/|Service page>  ·  <https://status.stripe.com/|Official status page>',
    ]);
    expect(payload.blocks).toHaveLength(5);
    expect(payload.blocks[4]).toEqual({
      type: 'context',
      elements: [
        {
          type: 'mrkdwn',
          text: `Subscription: payments · Delivery: ${notification([transition()]).id}`,
        },
      ],
    });
  });

  it('shows before → after for a status change', () => {
    const payload = renderSlack(
      notification([
        transition('status.changed', {
          previous: { status: 'operational' },
          current: { status: 'partial_outage' },
          incident: null,
        }),
      ]),
    );
    expect(payload.text).toBe('Stripe: status operational → partial outage');
    expect(allText(payload).join('\n')).toContain('*Change:* operational → partial outage');
  });

  it('prepends the configured mention, unescaped, to the text and the first section', () => {
    const payload = renderSlack(notification([transition()]), { mention: '<!here>' });
    expect(payload.text.startsWith('<!here> ')).toBe(true);
    const section = payload.blocks.find((b) => b.type === 'section');
    expect(section?.type === 'section' && section.text.text.startsWith('<!here> ')).toBe(true);
  });

  it('keeps hostile upstream text inert and within Slack limits', () => {
    const payload = renderSlack(notification([hostileTransition()]));
    const joined = allText(payload).join('\n');
    for (const raw of [
      '<!channel>',
      '<!here>',
      '<@U123>',
      '<@U999>',
      '<https://evil.example|click>',
      '<script>',
    ]) {
      expect(joined).not.toContain(raw);
    }
    expect(joined).toContain('&lt;!channel&gt;');
    const head = payload.blocks[0];
    expect(head?.type === 'header' && /[\r\n]/.test(head.text.text)).toBe(false);
    expect(joined).toContain('&lt;https://evil.example|click&gt;');
    // The only links are the catalog ones.
    expect(joined.match(/<[^>]*>/g)).toEqual([
      '<https://stripe.com/|Service page>',
      '<https://status.stripe.com/|Official status page>',
    ]);
    expectWithinLimits(payload);
  });

  it('never links a non-http URL and escapes | and > inside links', () => {
    expect(slackLink('javascript:alert(1)', 'x')).toBeNull();
    expect(slackLink(null, 'x')).toBeNull();
    expect(slackLink('https://x.example/a|b>c?q=1&r=2', 'Status <page>')).toBe(
      '<https://x.example/a%7Cb%3Ec?q=1&amp;r=2|Status &lt;page&gt;>',
    );
    const payload = renderSlack(
      notification([
        transition('incident.opened', {
          service: {
            feedId: 'x',
            name: 'X',
            canonicalUrl: 'javascript:alert(1)',
            officialStatusUrl: 'ftp://x',
          },
        }),
      ]),
    );
    expect(allText(payload).join('\n')).not.toContain('javascript:');
    expect(allText(payload).join('\n')).not.toContain('ftp://');
  });

  it('lists a batch most severe first, at most 20, with "…and N more"', () => {
    const transitions = [
      transition('incident.resolved', { id: 'resolved' }),
      ...Array.from({ length: 30 }, (_, i) =>
        transition('score.dropped', {
          id: `drop${i}`,
          previous: { score: 90 },
          current: { score: 80 - i },
          incident: null,
        }),
      ),
      transition('incident.opened', { id: 'opened' }),
    ];
    const payload = renderSlack(notification(transitions, { type: 'batch' }));
    expectWithinLimits(payload);
    const sections = payload.blocks.flatMap((b) => (b.type === 'section' ? [b.text.text] : []));
    const items = sections.filter((s) => s.startsWith('• '));
    expect(items).toHaveLength(BATCH_LIST_LIMIT);
    expect(items[0]).toContain('incident opened');
    expect(items[1]).toContain('score dropped 90 → 80');
    expect(sections).toContain('…and 12 more');
    expect(payload.blocks[0]).toMatchObject({
      type: 'header',
      text: { text: '32 changes for payments' },
    });
    expect(payload.text).toBe(
      '32 changes for payments: Stripe: incident opened — Card payments failing',
    );
  });

  it('keeps a batch of hostile events within limits', () => {
    const payload = renderSlack(
      notification(
        Array.from({ length: 60 }, () => hostileTransition()),
        { type: 'batch' },
      ),
    );
    expectWithinLimits(payload);
    expect(allText(payload).join('\n')).not.toContain('<!channel>');
  });

  it('marks a test notification', () => {
    const payload = renderSlack(notification([transition()], { type: 'test' }));
    expect(payload.text.startsWith('[test] ')).toBe(true);
    expect(allText(payload).join('\n')).toContain('test notification');
  });
});

function sectionTexts(payload: SlackPayload): string[] {
  return payload.blocks.flatMap((b) => (b.type === 'section' ? [b.text.text] : []));
}

function headerText(payload: SlackPayload): string | null {
  const head = payload.blocks[0];
  return head?.type === 'header' ? head.text.text : null;
}

/** Every `<…>` in the payload: only catalog links may be there (no mention, no smuggled link). */
function controlSequences(payload: SlackPayload): string[] {
  return (
    allText(payload)
      .join('\n')
      .match(/<[^>]*>/g) ?? []
  );
}

const HOUR = 3_600_000;

describe('renderSlack for batch-like notifications', () => {
  it('a 40-transition batch lists 20 most severe first plus "…and 20 more" within limits', () => {
    const payload = renderSlack(notification(manyServices(40), { type: 'batch' }));
    expectWithinLimits(payload);
    expect(headerText(payload)).toBe('40 changes for payments');
    const sections = sectionTexts(payload);
    const items = sections.filter((s) => s.startsWith('• '));
    expect(items).toHaveLength(20);
    // The 20 outages (even services) come before every score drop.
    expect(items.map((s) => /Service (\d\d)/.exec(s)?.[1])).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i * 2).padStart(2, '0')),
    );
    expect(items[0]).toBe(
      '• Service 00: status operational → major outage\n   <https://svc-00.example/|Service page>',
    );
    expect(sections.at(-1)).toBe('…and 20 more');
    expect(payload.text).toBe(
      '40 changes for payments: Service 00: status operational → major outage',
    );
    expect(payload.blocks.at(-1)?.type).toBe('context');
    expect(JSON.stringify(payload).length).toBeLessThan(16_000);
  });

  it('a batch with a title uses it as heading and still says how many', () => {
    const payload = renderSlack(
      notification(manyServices(3), { type: 'batch', title: 'Storm at payments' }),
      { mention: '<!here>' },
    );
    expect(headerText(payload)).toBe('Storm at payments');
    expect(sectionTexts(payload)[0]).toBe('<!here> *3 changes for payments*');
    expect(payload.text).toBe(
      '<!here> Storm at payments: Service 00: status operational → major outage',
    );
  });

  it('a reminder about one transition reads as a reminder with the full event detail', () => {
    const opened = transition('incident.opened', { observedAt: Date.UTC(2026, 0, 1, 8, 0) });
    const payload = renderSlack(
      notification([opened], { type: 'reminder', createdAt: Date.UTC(2026, 0, 1, 12, 0) }),
    );
    const heading =
      'Reminder: still open — Stripe: incident opened — Card payments failing (open for 4h)';
    expect(headerText(payload)).toBe(heading);
    expect(payload.text).toBe(heading);
    const sections = sectionTexts(payload);
    expect(sections[0]).toBe('_Reminder: still open (open for 4h)._');
    expect(sections[1]).toBe(
      '*Stripe* · Incident opened\n*Change:* investigating\n*Incident:* Card payments failing',
    );
    expect(sections).toContain(
      '<https://stripe.com/|Service page>  ·  <https://status.stripe.com/|Official status page>',
    );
  });

  it('a reminder about several lists each with how long it has been open', () => {
    const createdAt = Date.UTC(2026, 0, 1, 12, 0);
    const payload = renderSlack(
      notification(
        [
          transition('sla.at_risk', {
            id: 'sla',
            incident: null,
            current: { status: 'at_risk', margin: 0.05 },
            observedAt: createdAt - 90 * 60_000,
          }),
          transition('incident.opened', { observedAt: createdAt - 26 * HOUR }),
        ],
        { type: 'reminder', createdAt },
      ),
    );
    expect(headerText(payload)).toBe('Reminder: 2 still open for payments');
    const items = sectionTexts(payload).filter((s) => s.startsWith('• '));
    expect(items.map((s) => s.split('\n')[0])).toEqual([
      '• Stripe: incident opened — Card payments failing (open for 1d 2h)',
      '• Stripe: SLA at risk (margin +0.05 pp) (open for 1h 30m)',
    ]);
  });

  it('a catch-up keeps the chronological order, resolutions included', () => {
    const payload = renderSlack(
      notification(
        [
          transition('incident.opened', { id: 'o', observedAt: Date.UTC(2026, 0, 1, 23, 5) }),
          transition('incident.resolved', { id: 'r', observedAt: Date.UTC(2026, 0, 2, 1, 40) }),
        ],
        { type: 'catchup' },
      ),
    );
    expectWithinLimits(payload);
    expect(headerText(payload)).toBe('Quiet hours ended: 2 notifications held');
    const items = sectionTexts(payload).filter((s) => s.startsWith('• '));
    expect(items.map((s) => s.split('\n')[0])).toEqual([
      '• Stripe: incident opened — Card payments failing (2026-01-01 23:05 UTC)',
      '• Stripe: incident resolved — Card payments failing (2026-01-02 01:40 UTC)',
    ]);
  });

  it('a catch-up with a title uses it and keeps the count', () => {
    const payload = renderSlack(
      notification(manyServices(2), { type: 'catchup', title: 'Good morning' }),
    );
    expect(headerText(payload)).toBe('Good morning');
    expect(sectionTexts(payload)[0]).toBe('*Quiet hours ended: 2 notifications held*');
  });

  it('a digest shows the title, every summary line, then the transitions (limited)', () => {
    const payload = renderSlack(
      notification(manyServices(25), {
        type: 'digest',
        title: 'Weekly digest for payments',
        summary: ['Incidents: 3 opened, 2 resolved', 'Still open: Stripe (open for 2d)'],
      }),
    );
    expectWithinLimits(payload);
    expect(headerText(payload)).toBe('Weekly digest for payments');
    const sections = sectionTexts(payload);
    expect(sections[0]).toBe('*Digest for payments: 25 changes*');
    expect(sections[1]).toBe('Incidents: 3 opened, 2 resolved\nStill open: Stripe (open for 2d)');
    const items = sections.filter((s) => s.startsWith('• '));
    expect(items).toHaveLength(BATCH_LIST_LIMIT);
    expect(items[0]?.split('\n')[0]).toBe(
      '• Service 00: status operational → major outage (2026-01-01 11:00 UTC)',
    );
    expect(sections.at(-1)).toBe('…and 5 more');
    expect(payload.text).toBe('Weekly digest for payments');
  });

  it('an empty digest still renders its heading and summary', () => {
    const payload = renderSlack(
      notification([], { id: 'digest:payments:oncall', type: 'digest', summary: ['Quiet week'] }),
    );
    expect(headerText(payload)).toBe('Digest for payments: no changes');
    expect(sectionTexts(payload)).toEqual(['Quiet week']);
    expect(payload.blocks.at(-1)?.type).toBe('context');
  });

  it('keeps a huge summary within the section and block limits', () => {
    const summary = Array.from({ length: 400 }, (_, i) => `line ${i} ${'z'.repeat(100)}`);
    const payload = renderSlack(
      notification(manyServices(40), { type: 'digest', title: 'Big', summary }),
    );
    expectWithinLimits(payload);
    const joined = sectionTexts(payload).join('\n');
    expect(joined).toContain('line 0 ');
    expect(joined).toMatch(/…and \d+ more lines/);
  });

  it.each(['batch', 'reminder', 'catchup', 'digest'] as const)(
    'hostile title and summary stay inert in a %s',
    (type) => {
      const payload = renderSlack(
        notification([...manyServices(3), hostileTransition()], {
          type,
          title: HOSTILE_HEADING,
          summary: [HOSTILE_HEADING, `<!everyone> ${'&'.repeat(5000)}`],
        }),
      );
      expectWithinLimits(payload);
      const joined = allText(payload).join('\n');
      for (const raw of ['<!channel>', '<!everyone>', '<@U123>', '<script>', '<https://evil']) {
        expect(joined).not.toContain(raw);
      }
      expect(headerText(payload)).toBe(
        '&lt;!channel&gt; Digest &lt;@U123&gt; &lt;https://evil.example|click&gt; &lt;script&gt;alert(1)&lt;/script&gt; Bcc: victim@example.com',
      );
      // Only catalog links: no mention or link from any text.
      for (const sequence of controlSequences(payload)) {
        expect(sequence).toMatch(
          /^<https:\/\/(svc-\d\d\.example|stripe\.com|status\.stripe\.com)\/\|/,
        );
      }
      if (type === 'digest') {
        expect(sectionTexts(payload)[1]).toContain('&lt;!everyone&gt; &amp;&amp;');
      }
    },
  );
});

describe('limitMrkdwn', () => {
  it('never leaves half an entity or half a link', () => {
    expect(limitMrkdwn('abc &amp; def', 7)).toBe('abc …');
    expect(limitMrkdwn('abc <https://x.example|x> def', 12)).toBe('abc …');
    expect(limitMrkdwn('short', 10)).toBe('short');
  });
});
