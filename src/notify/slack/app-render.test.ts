import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import type { Transition } from '../../diff/transition.js';
import {
  episodeHeading,
  groupEpisodes,
  renderEpisodeList,
  renderEpisodeParent,
  renderEpisodeReply,
  renderSlackApp,
  SLACK_ACTIONS,
  SLACK_ACTIONS_BLOCK,
  statusEmoji,
  withActionNotes,
} from './app-render.js';
import { renderSlack, SLACK_LIMITS, type SlackPayload } from './render.js';

const OPENED_AT = Date.UTC(2026, 0, 1, 12, 0, 0);

const updated = (): Transition =>
  transition('incident.updated', {
    current: { status: 'identified', updateCount: 2 },
    incident: {
      id: 'inc-1',
      title: 'Card payments failing',
      status: 'identified',
      started: 1_767_225_600,
      updateCount: 2,
      latestUpdate: 'A fix is rolling out.',
    },
    observedAt: Date.UTC(2026, 0, 1, 12, 10, 0),
  });
const resolved = (): Transition =>
  transition('incident.resolved', { observedAt: Date.UTC(2026, 0, 1, 12, 40, 0) });

function texts(payload: SlackPayload): string[] {
  const found = [payload.text];
  for (const block of payload.blocks) {
    if (block.type === 'header' || block.type === 'section') found.push(block.text.text);
    if (block.type === 'context') found.push(...block.elements.map((e) => e.text));
  }
  return found;
}

function sections(payload: SlackPayload): string[] {
  return payload.blocks.flatMap((b) => (b.type === 'section' ? [b.text.text] : []));
}

function expectWithinLimits(payload: SlackPayload): void {
  expect(payload.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
  expect(payload.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
  for (const block of payload.blocks) {
    if (block.type === 'header')
      expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.headerText);
    if (block.type === 'section')
      expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    if (block.type === 'context')
      for (const e of block.elements)
        expect(e.text.length).toBeLessThanOrEqual(SLACK_LIMITS.contextElementText);
  }
}

function expectInert(payload: SlackPayload): void {
  const body = JSON.stringify(payload);
  for (const raw of [
    '<!channel>',
    '<!here>',
    '<@U123>',
    '<@U999>',
    '<https://evil.example|click>',
    '<script>',
  ]) {
    expect(body).not.toContain(raw);
  }
}

describe('renderEpisodeParent', () => {
  it('shows the open episode: status emoji heading, open line, then the webhook-mode facts', () => {
    const n = notification([transition('incident.opened')]);
    const parent = renderEpisodeParent(n, n.transitions[0]!, { openedAt: OPENED_AT });
    expect(parent.text).toBe('🔴 Stripe: Card payments failing');
    expect(parent.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: '🔴 Stripe: Card payments failing', emoji: false },
    });
    expect(sections(parent)[0]).toBe(
      '*Open* · since 2026-01-01 12:00 UTC · last change: Incident opened, 2026-01-01 12:00 UTC',
    );
    // The rest is exactly what the webhook mode renders for the event, minus its header.
    expect(parent.blocks.slice(2)).toEqual(renderSlack(n).blocks.slice(1));
  });

  it('marks the closed episode resolved with how long it was open', () => {
    const n = notification([resolved()]);
    const parent = renderEpisodeParent(n, resolved(), { openedAt: OPENED_AT });
    expect(parent.text).toBe('✅ Resolved: Stripe: Card payments failing');
    expect(sections(parent)[0]).toBe('*Resolved* 2026-01-01 12:40 UTC · open for 40m');
    expect(texts(parent).join('\n')).toContain('*Change:* investigating → resolved');
  });

  it('leaves out what it does not know (no opening time)', () => {
    const parent = renderEpisodeParent(notification([updated()]), updated(), { openedAt: null });
    expect(parent.text).toBe('🟠 Stripe: Card payments failing');
    expect(sections(parent)[0]).toBe(
      '*Open* · last change: Incident updated, 2026-01-01 12:10 UTC',
    );
    expect(texts(parent).join('\n')).toContain('>A fix is rolling out.');
  });

  it('heads a non-incident episode with its event line', () => {
    const down = transition('status.changed', {
      previous: { status: 'operational' },
      current: { status: 'major_outage' },
      incident: null,
    });
    const up = transition('status.changed', {
      previous: { status: 'major_outage' },
      current: { status: 'operational' },
      incident: null,
    });
    expect(episodeHeading(down)).toBe('🔴 Stripe: status operational → major outage');
    expect(episodeHeading(up)).toBe('✅ Resolved: Stripe: status major outage → operational');
    expect(statusEmoji(transition('score.dropped', { incident: null }))).toBe('🟡');
  });

  it('prepends the configured mention to the text and the facts', () => {
    const n = notification([transition('incident.opened')]);
    const parent = renderEpisodeParent(
      n,
      n.transitions[0]!,
      { openedAt: null },
      {
        mention: '<!subteam^S0123ABC>',
      },
    );
    expect(parent.text).toBe('<!subteam^S0123ABC> 🔴 Stripe: Card payments failing');
    expect(sections(parent)[1]).toMatch(/^<!subteam\^S0123ABC> \*Stripe\*/);
  });

  it('keeps hostile upstream text inert and within Slack limits', () => {
    const n = notification([hostileTransition()]);
    const parent = renderEpisodeParent(n, hostileTransition(), { openedAt: OPENED_AT });
    expectInert(parent);
    expectWithinLimits(parent);
    expect(parent.text).toContain('&lt;!here&gt; Stripe &amp; &lt;@U999&gt;');
  });
});

describe('renderEpisodeReply', () => {
  it('says what changed, quotes the latest update and names the delivery', () => {
    const n = notification([updated()]);
    const reply = renderEpisodeReply(n, updated(), { mention: '<!here>' });
    expect(reply.text).toBe('🟠 Stripe: incident updated (identified) — Card payments failing');
    expect(sections(reply)).toEqual([
      '🟠 *Stripe: incident updated (identified) — Card payments failing*\n*Change:* investigating → identified',
      '*Latest update:*\n>A fix is rolling out.',
    ]);
    expect(reply.blocks.at(-1)).toEqual({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: `Delivery: ${n.id}` }],
    });
  });

  it('carries the mention only when broadcast to the channel', () => {
    const n = notification([resolved()]);
    const reply = renderEpisodeReply(n, resolved(), { mention: '<!here>', broadcast: true });
    expect(reply.text).toBe('<!here> ✅ Stripe: incident resolved — Card payments failing');
  });

  it('keeps hostile upstream text inert and within Slack limits', () => {
    const n = notification([hostileTransition()]);
    const reply = renderEpisodeReply(n, hostileTransition(), { broadcast: true });
    expectInert(reply);
    expectWithinLimits(reply);
  });
});

describe('renderEpisodeList (grouped batches)', () => {
  it('lists one line per episode with its latest state and how many changes it had', () => {
    const other = manyServices(1)[0]!;
    const n = notification([transition('incident.opened'), updated(), resolved(), other], {
      type: 'batch',
    });
    const { parent, episodes } = renderEpisodeList(n);
    expect(episodes.map((e) => [e.key, e.changes, e.latest.kind])).toEqual([
      ['statuswatch:svc-00:status', 1, 'status.changed'],
      ['statuswatch:stripe:incident:inc-1', 3, 'incident.resolved'],
    ]);
    expect(parent.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: '4 changes for payments', emoji: false },
    });
    const list = sections(parent);
    expect(list[0]).toBe('*2 episodes* · 4 changes');
    expect(list[1]).toMatch(/^🔴 Service 00: status operational → major outage\n/);
    expect(list[2]).toMatch(
      /^✅ Stripe: incident resolved — Card payments failing _\(3 changes\)_\n/,
    );
    expect(parent.text).toBe(
      '4 changes for payments: 🔴 Service 00: status operational → major outage',
    );
  });

  it('lists at most 20 episodes, then "…and N more", within limits', () => {
    const { parent } = renderEpisodeList(notification(manyServices(40), { type: 'batch' }));
    const list = sections(parent);
    expect(list.filter((s) => /^(🔴|🟡)/.test(s))).toHaveLength(20);
    expect(list).toContain('…and 20 more');
    expectWithinLimits(parent);
  });

  it('keeps a hostile title and hostile items inert', () => {
    const { parent } = renderEpisodeList(
      notification([hostileTransition(), ...manyServices(2)], {
        type: 'batch',
        title: HOSTILE_HEADING,
      }),
      { mention: '<!here>' },
    );
    const body = JSON.stringify({ ...parent, text: parent.text.replace(/^<!here> /, '') });
    for (const raw of ['<!channel>', '<@U123>', '<https://evil.example|click>', '<script>']) {
      expect(body).not.toContain(raw);
    }
    expect(parent.text.startsWith('<!here> ')).toBe(true);
    expectWithinLimits(parent);
  });

  it('groups by episode key: the latest by observation time wins', () => {
    const later = { ...updated(), observedAt: Date.UTC(2026, 0, 1, 13, 0, 0) };
    const groups = groupEpisodes([later, resolved()]);
    expect(groups).toHaveLength(1);
    expect(groups[0]?.latest.kind).toBe('incident.updated');
  });
});

describe('renderSlackApp', () => {
  it('renders an event as an episode, a batch as a list, everything else as a plain post', () => {
    const event = renderSlackApp(notification([transition('incident.opened')]));
    expect(event.kind).toBe('episode');
    const batch = renderSlackApp(notification(manyServices(3), { type: 'batch' }));
    expect(batch.kind).toBe('list');
    for (const type of ['reminder', 'catchup', 'digest', 'test'] as const) {
      const n = notification(manyServices(2), { type });
      const rendered = renderSlackApp(n, { openedAt: null }, { mention: '<!here>' });
      expect(rendered).toEqual({ kind: 'post', post: renderSlack(n, { mention: '<!here>' }) });
    }
  });
});

describe('the living message buttons', () => {
  const actionsOf = (payload: SlackPayload) =>
    payload.blocks.find((b) => b.type === 'actions' && b.block_id === SLACK_ACTIONS_BLOCK);

  it('an open episode of a channel with a signing secret carries the four buttons, valued by its reference only', () => {
    const n = notification([transition('incident.opened')], { type: 'event' });
    const first = n.transitions[0] as Transition;
    const parent = renderEpisodeParent(n, first, { openedAt: OPENED_AT }, { buttons: true });
    const actions = actionsOf(parent);
    expect(actions?.type === 'actions' ? actions.elements.map((e) => e.action_id) : []).toEqual(
      Object.values(SLACK_ACTIONS),
    );
    const values =
      actions?.type === 'actions' ? new Set(actions.elements.map((e) => e.value)) : new Set();
    expect(values.size).toBe(1);
    expect([...values][0]).toMatch(/^[0-9a-f]{32}$/);
    // Without the secret, and on a closing: no buttons.
    expect(actionsOf(renderEpisodeParent(n, first, { openedAt: OPENED_AT }))).toBeUndefined();
    const closing = transition('incident.resolved');
    expect(
      actionsOf(renderEpisodeParent(n, closing, { openedAt: OPENED_AT }, { buttons: true })),
    ).toBeUndefined();
    // Acknowledged: the notes go before the buttons, Acknowledge is gone.
    const acked = withActionNotes(parent.blocks, ['Acknowledged by <@U1> at …'], true);
    const after = acked.find((b) => b.type === 'actions');
    expect(after?.type === 'actions' ? after.elements.map((e) => e.action_id) : []).not.toContain(
      SLACK_ACTIONS.ack,
    );
    expect(JSON.stringify(acked)).toContain('Acknowledged by <@U1>');
  });
});
