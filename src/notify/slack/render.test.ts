import { describe, expect, it } from 'vitest';
import { hostileTransition, notification, transition } from '../../../test/notify-helpers.js';
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
      text: { text: '32 events for payments' },
    });
    expect(payload.text).toBe(
      '32 events for payments: Stripe: incident opened — Card payments failing',
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

describe('limitMrkdwn', () => {
  it('never leaves half an entity or half a link', () => {
    expect(limitMrkdwn('abc &amp; def', 7)).toBe('abc …');
    expect(limitMrkdwn('abc <https://x.example|x> def', 12)).toBe('abc …');
    expect(limitMrkdwn('short', 10)).toBe('short');
  });
});
