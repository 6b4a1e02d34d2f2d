import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  HOSTILE_TITLE,
  hostileTransition,
  LONG_SUMMARY,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import type { Transition } from '../../diff/transition.js';
import type { Notification } from '../types.js';
import {
  escapeTeamsMarkdown,
  renderTeams,
  renderTeamsRequest,
  TEAMS_LIST_LIMIT,
  TEAMS_MAX_BODY_BYTES,
  TEAMS_RENDER_BUDGET_BYTES,
  teamsBodySize,
  teamsMeasuredSize,
  type AdaptiveCard,
  type TeamsElement,
  type TeamsFact,
  type TeamsOpenUrlAction,
  type TeamsTextBlock,
} from './render.js';

function cardOf(n: Notification): AdaptiveCard {
  return renderTeams(n).attachments[0].content;
}

function walk(elements: readonly TeamsElement[], visit: (e: TeamsElement) => void): void {
  for (const element of elements) {
    visit(element);
    if (element.type === 'Container') walk(element.items, visit);
  }
}

function textBlocks(card: AdaptiveCard): TeamsTextBlock[] {
  const found: TeamsTextBlock[] = [];
  walk(card.body, (e) => {
    if (e.type === 'TextBlock') found.push(e);
  });
  return found;
}

function factsOf(card: AdaptiveCard): TeamsFact[] {
  const found: TeamsFact[] = [];
  walk(card.body, (e) => {
    if (e.type === 'FactSet') found.push(...e.facts);
  });
  return found;
}

function actionsOf(card: AdaptiveCard): TeamsOpenUrlAction[] {
  const found: TeamsOpenUrlAction[] = [...(card.actions ?? [])];
  walk(card.body, (e) => {
    if (e.type === 'ActionSet') found.push(...e.actions);
  });
  return found;
}

/** Every Markdown-rendered string of the card: TextBlock texts, fact titles and values. */
function markdownTexts(card: AdaptiveCard): string[] {
  return [
    ...textBlocks(card).map((b) => b.text),
    ...factsOf(card).flatMap((f) => [f.title, f.value]),
  ];
}

/** Characters of `set` in `text` that are not preceded by a backslash escape. */
function unescaped(text: string, set = '[]()<>*_`#|~{}&'): string[] {
  const found: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (c === '\\') {
      i++;
      continue;
    }
    if (set.includes(c)) found.push(c);
  }
  return found;
}

function expectWithinLimits(n: Notification): string {
  const { body } = renderTeamsRequest(n);
  expect(teamsBodySize(body)).toBeLessThanOrEqual(TEAMS_MAX_BODY_BYTES);
  expect(teamsMeasuredSize(body)).toBeLessThanOrEqual(TEAMS_RENDER_BUDGET_BYTES);
  return body;
}

describe('renderTeams: a single event', () => {
  it('renders incident.opened as one Adaptive Card 1.4: heading, facts, update, footer, links', () => {
    const message = renderTeams(notification([transition('incident.opened')]));
    expect(message.type).toBe('message');
    expect(message.attachments).toHaveLength(1);
    const attachment = message.attachments[0];
    expect(attachment.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(attachment.contentUrl).toBeNull();
    const card = attachment.content;
    expect(card.$schema).toBe('http://adaptivecards.io/schemas/adaptive-card.json');
    expect(card.type).toBe('AdaptiveCard');
    expect(card.version).toBe('1.4');
    expect(card.body[0]).toEqual({
      type: 'TextBlock',
      text: 'Stripe: incident opened — Card payments failing',
      wrap: true,
      size: 'Large',
      weight: 'Bolder',
      color: 'Attention',
    });
    expect(card.body[1]).toEqual({
      type: 'FactSet',
      facts: [
        { title: 'Service', value: 'Stripe' },
        { title: 'Event', value: 'Incident opened' },
        { title: 'Status', value: 'investigating' },
        { title: 'Incident', value: 'Card payments failing' },
        { title: 'Started', value: '2026-01-01 00:00 UTC' },
        { title: 'Subscription', value: 'payments' },
      ],
    });
    expect(card.body.slice(2, 4)).toEqual([
      { type: 'TextBlock', text: 'Latest update', wrap: true, weight: 'Bolder', spacing: 'Medium' },
      {
        type: 'TextBlock',
        text: 'We are investigating elevated error rates.',
        wrap: true,
        spacing: 'Small',
      },
    ]);
    expect(card.body[4]).toMatchObject({
      type: 'TextBlock',
      text: 'Subscription: payments · Delivery: tincidentopened0123456789abcdef:payments:oncall',
      isSubtle: true,
    });
    expect(card.body).toHaveLength(5);
    expect(card.actions).toEqual([
      { type: 'Action.OpenUrl', title: 'Official status page', url: 'https://status.stripe.com/' },
      { type: 'Action.OpenUrl', title: 'Service page', url: 'https://stripe.com/' },
    ]);
  });

  it('colors the heading by role: opening attention, closing good, update warning', () => {
    const color = (t: Transition): unknown => cardOf(notification([t])).body[0];
    expect(color(transition('incident.resolved'))).toMatchObject({ color: 'Good' });
    expect(color(transition('incident.updated'))).toMatchObject({ color: 'Warning' });
    expect(color(transition('sla.breached'))).toMatchObject({ color: 'Attention' });
    expect(
      color(
        transition('status.changed', {
          previous: { status: 'major_outage' },
          current: { status: 'operational' },
        }),
      ),
    ).toMatchObject({ color: 'Good' });
  });

  it('shows status before → after and no incident facts for a status change', () => {
    const card = cardOf(
      notification([
        transition('status.changed', {
          previous: { status: 'operational' },
          current: { status: 'partial_outage', summary: 'Degraded EU' },
        }),
      ]),
    );
    expect(card.body[0]).toMatchObject({ text: 'Stripe: status operational → partial outage' });
    expect(factsOf(card)).toEqual([
      { title: 'Service', value: 'Stripe' },
      { title: 'Event', value: 'Status changed' },
      { title: 'Status', value: 'operational → partial outage' },
      { title: 'Subscription', value: 'payments' },
    ]);
    expect(textBlocks(card).map((b) => b.text)).toContain('Degraded EU');
  });

  it('emits only http(s) links: javascript:, data: and relative URLs become no action', () => {
    const base = transition('incident.opened');
    const card = cardOf(
      notification([
        {
          ...base,
          service: {
            ...base.service,
            officialStatusUrl: 'javascript:alert(1)',
            canonicalUrl: 'data:text/html,<script>alert(1)</script>',
          },
        },
      ]),
    );
    expect(actionsOf(card)).toEqual([]);
    expect(card.actions).toBeUndefined();
    const relative = cardOf(
      notification([
        { ...base, service: { ...base.service, officialStatusUrl: '/status', canonicalUrl: null } },
      ]),
    );
    expect(actionsOf(relative)).toEqual([]);
  });
});

describe('escapeTeamsMarkdown', () => {
  it('escapes every Markdown special character and neutralises links', () => {
    expect(escapeTeamsMarkdown('[click](https://evil.example)')).toBe(
      '\\[click\\]\\(https://evil.example\\)',
    );
    expect(escapeTeamsMarkdown('*bold* _it_ `code` ~s~ a|b #1 <b>&amp; {{DATE(x)}} \\')).toBe(
      '\\*bold\\* \\_it\\_ \\`code\\` \\~s\\~ a\\|b \\#1 \\<b\\>\\&amp; \\{\\{DATE\\(x\\)\\}\\} \\\\',
    );
  });

  it('escapes list markers at line starts, normalises line breaks and drops control characters', () => {
    expect(escapeTeamsMarkdown('- a\r\n+ b\r1. c\n2) d\u0007\u202e')).toBe(
      '\\- a\n\\+ b\n1\\. c\n2\\) d',
    );
    expect(escapeTeamsMarkdown('a\n\n\n\nb')).toBe('a\n\nb');
    expect(escapeTeamsMarkdown('x - y 1. z')).toBe('x - y 1. z');
  });
});

describe('renderTeams: hostile upstream text', () => {
  it('renders a hostile title, name and update inert', () => {
    const n = notification([hostileTransition()]);
    const body = expectWithinLimits(n);
    const card = cardOf(n);
    for (const text of markdownTexts(card)) expect(unescaped(text)).toEqual([]);
    for (const raw of ['<script>', '](', '<https://evil.example|click>', '<!channel>', '<@U123>']) {
      expect(body).not.toContain(raw);
    }
    expect(card.body[0]).toMatchObject({
      text: expect.stringContaining('\\<script\\>alert\\(1\\)\\</script\\>') as unknown,
    });
    // The header-injection attempt stays on one line.
    expect(factsOf(card).find((f) => f.title === 'Incident')?.value).not.toContain('\n');
    for (const action of actionsOf(card)) expect(action.url).toMatch(/^https?:\/\//);
  });

  it('renders a Markdown link in an incident title as text, never as a link', () => {
    const base = transition('incident.opened');
    const card = cardOf(
      notification([
        {
          ...base,
          incident: {
            ...base.incident!,
            title: 'Reset here: [login](javascript:alert(1)) **now**',
          },
        },
      ]),
    );
    const incident = factsOf(card).find((f) => f.title === 'Incident')?.value ?? '';
    expect(incident).toBe('Reset here: \\[login\\]\\(javascript:alert\\(1\\)\\) \\*\\*now\\*\\*');
    expect(unescaped(incident)).toEqual([]);
    expect(actionsOf(card).every((a) => !a.url.startsWith('javascript:'))).toBe(true);
  });

  it('renders a hostile digest title and summary inert', () => {
    const n = notification(manyServices(3), {
      type: 'digest',
      title: HOSTILE_HEADING,
      summary: [HOSTILE_HEADING, '[x](https://evil.example)'],
    });
    const card = cardOf(n);
    for (const text of markdownTexts(card)) expect(unescaped(text)).toEqual([]);
    expect(card.body[0]).toMatchObject({
      text: expect.stringMatching(/^\\<!channel\\> Digest/) as unknown,
    });
  });
});

describe('renderTeams: the 28 KB limit', () => {
  it('holds for a 10k-character hostile summary and update', () => {
    const body = expectWithinLimits(notification([hostileTransition()]));
    expect(LONG_SUMMARY.length).toBeGreaterThan(10_000);
    expect(body).toContain('…');
  });

  it('holds for 10k characters that all expand (escapes, non-ASCII, emoji)', () => {
    const worst = `${'<'.repeat(4000)}${'é'.repeat(3000)}${'😀'.repeat(2000)}`;
    const base = hostileTransition();
    const t: Transition = {
      ...base,
      service: { ...base.service, name: worst },
      current: { ...base.current, summary: worst },
      incident: { ...base.incident!, title: worst, latestUpdate: worst },
    };
    for (const n of [
      notification([t]),
      notification([t], { type: 'test' }),
      notification([t], { type: 'reminder' }),
      notification(
        Array.from({ length: 30 }, () => t),
        { type: 'batch', title: worst },
      ),
      notification(
        Array.from({ length: 30 }, () => t),
        {
          type: 'digest',
          title: worst,
          summary: Array.from({ length: 100 }, () => worst),
        },
      ),
    ]) {
      const body = expectWithinLimits(n);
      // Still a card that says what happened.
      expect(JSON.parse(body)).toMatchObject({ type: 'message' });
    }
  });

  it('holds for a 500-transition batch: 20 listed and "…and 480 more"', () => {
    const n = notification(manyServices(500), { type: 'batch' });
    expectWithinLimits(n);
    const card = cardOf(n);
    expect(card.body[0]).toMatchObject({ text: '500 changes for payments', color: 'Attention' });
    expect(card.body.filter((e) => e.type === 'Container')).toHaveLength(TEAMS_LIST_LIMIT);
    expect(textBlocks(card).map((b) => b.text)).toContain('…and 480 more');
  });

  it('holds for 500 hostile transitions, listing fewer and counting the rest', () => {
    const n = notification(
      Array.from({ length: 500 }, () => hostileTransition()),
      { type: 'batch' },
    );
    expectWithinLimits(n);
    const card = cardOf(n);
    const listed = card.body.filter((e) => e.type === 'Container').length;
    expect(listed).toBeGreaterThan(0);
    expect(listed).toBeLessThanOrEqual(TEAMS_LIST_LIMIT);
    expect(textBlocks(card).map((b) => b.text)).toContain(`…and ${500 - listed} more`);
  });

  it('the pessimistic measure is never below the UTF-8 size', () => {
    for (const text of ['plain', "<&>'+", 'é😀', '"\\\n']) {
      const json = JSON.stringify({ text });
      expect(teamsMeasuredSize(json)).toBeGreaterThanOrEqual(teamsBodySize(json));
    }
  });
});

describe('renderTeams: every notification type', () => {
  it('test: says it is a test', () => {
    const card = cardOf(notification([transition('incident.opened')], { type: 'test' }));
    expect(card.body[0]).toMatchObject({
      text: '\\[test\\] Stripe: incident opened — Card payments failing',
    });
    expect(card.body[1]).toMatchObject({
      text: 'This is a test notification from statuswatch \\(sample event\\).',
      isSubtle: true,
    });
    expect(factsOf(card).length).toBeGreaterThan(0);
  });

  it('test without a sample: a list card', () => {
    const card = cardOf(notification([], { type: 'test' }));
    expect(card.body[0]).toMatchObject({ text: '0 changes for payments', color: 'Default' });
  });

  it('reminder about one transition: the event card under a reminder heading', () => {
    const t = transition('incident.opened');
    const card = cardOf(
      notification([t], { type: 'reminder', createdAt: t.observedAt + 4 * 3_600_000 }),
    );
    expect(card.body[0]).toMatchObject({
      text: 'Reminder: still open — Stripe: incident opened — Card payments failing \\(open for 4h\\)',
    });
    expect(card.body[1]).toMatchObject({ text: 'Reminder: still open \\(open for 4h\\).' });
    expect(card.actions).toHaveLength(2);
  });

  it('reminder about several, batch, catch-up: heading, one container per transition', () => {
    const reminder = cardOf(notification(manyServices(3), { type: 'reminder' }));
    expect(reminder.body[0]).toMatchObject({ text: 'Reminder: 3 still open for payments' });
    expect(reminder.body.filter((e) => e.type === 'Container')).toHaveLength(3);

    const batch = cardOf(notification(manyServices(4), { type: 'batch', title: 'Payments burst' }));
    expect(batch.body[0]).toMatchObject({ text: 'Payments burst' });
    expect(batch.body[1]).toMatchObject({ text: '4 changes for payments', weight: 'Bolder' });
    const containers = batch.body.filter((e) => e.type === 'Container');
    expect(containers).toHaveLength(4);
    // Most severe first: the outages (even) before the score drops (odd).
    expect(containers[0]).toMatchObject({
      items: [
        { type: 'TextBlock', text: 'Service 00: status operational → major outage' },
        { type: 'ActionSet', actions: [{ title: 'Service page', url: 'https://svc-00.example/' }] },
      ],
    });

    const catchup = cardOf(notification(manyServices(3), { type: 'catchup' }));
    expect(catchup.body[0]).toMatchObject({ text: 'Quiet hours ended: 3 notifications held' });
    const first = catchup.body.find((e) => e.type === 'Container');
    // Chronological order, with the time.
    expect(first?.type === 'Container' ? first.items[0] : null).toMatchObject({
      text: 'Service 00: status operational → major outage \\(2026-01-01 11:00 UTC\\)',
    });
  });

  it('digest: heading, summary lines as a list, transitions', () => {
    const card = cardOf(
      notification(manyServices(2), {
        type: 'digest',
        summary: ['Open: 1 incident', '*Stripe* SLA margin −0.40 pp'],
      }),
    );
    expect(card.body[0]).toMatchObject({ text: 'Digest for payments: 2 changes' });
    expect(card.body[1]).toMatchObject({
      type: 'TextBlock',
      text: '- Open: 1 incident\n- \\*Stripe\\* SLA margin −0.40 pp',
    });
    expect(card.body.filter((e) => e.type === 'Container')).toHaveLength(2);
    const empty = cardOf(notification([], { type: 'digest' }));
    expect(empty.body[0]).toMatchObject({ text: 'Digest for payments: no changes' });
  });

  it('a long digest summary is cut with "…and N more lines"', () => {
    const summary = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const card = cardOf(notification([], { type: 'digest', summary }));
    const text = (card.body[1] as TeamsTextBlock).text;
    expect(text.split('\n')).toHaveLength(31);
    expect(text.endsWith('- …and 10 more lines')).toBe(true);
  });

  it('renders the hostile fixture title in every type within the limit', () => {
    const t = hostileTransition();
    for (const type of ['event', 'test', 'reminder', 'batch', 'catchup', 'digest'] as const) {
      const n = notification([t, t], { type, title: HOSTILE_TITLE, summary: [HOSTILE_TITLE] });
      expectWithinLimits(n);
      for (const text of markdownTexts(cardOf(n))) expect(unescaped(text)).toEqual([]);
    }
  });
});
