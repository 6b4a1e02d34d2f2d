import { describe, expect, it } from 'vitest';
import { notification, transition } from '../../test/notify-helpers.js';
import { renderEmail } from './email/render.js';
import {
  DEFAULT_SILENCE_DURATION,
  MAX_LINKED_SERVICES,
  lifecycleKinds,
  notificationLinks,
  transitionAnchor,
  withLinks,
} from './links.js';
import { renderOpsgenieRequests } from './opsgenie/render.js';
import { renderPagerduty } from './pagerduty/render.js';
import { renderSlack } from './slack/render.js';
import { renderTeams } from './teams/render.js';
import { webhookPayload } from './webhook/render.js';
import type { Notification } from './types.js';

const PUBLIC = 'https://statuswatch.example.com';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 10);

function silenceQuery(url: string): URLSearchParams {
  const parsed = new URL(url);
  expect(parsed.origin + parsed.pathname).toBe(`${PUBLIC}/silences`);
  expect(parsed.hash).toBe('#silence-form');
  return parsed.searchParams;
}

describe('notificationLinks (pure)', () => {
  it('none without a public URL, and none for a test notification', () => {
    const n = notification([transition('incident.opened')]);
    expect(notificationLinks(undefined, n)).toBeUndefined();
    expect(notificationLinks('', n)).toBeUndefined();
    expect(notificationLinks(PUBLIC, { ...n, type: 'test' })).toBeUndefined();
    expect(withLinks(n, undefined)).toBe(n);
  });

  it("one event: the service page at the transition's row, and a silence of its lifecycle", () => {
    const t = transition('incident.updated');
    const links = notificationLinks(`${PUBLIC}/`, notification([t]));
    expect(links?.console).toBe(`${PUBLIC}/services/stripe#${transitionAnchor(t.id)}`);
    const q = silenceQuery(links?.silence ?? '');
    expect(q.get('services')).toBe('stripe');
    expect(q.getAll('events')).toEqual([
      'incident.opened',
      'incident.updated',
      'incident.resolved',
    ]);
    expect(q.getAll('subscriptions')).toEqual(['payments']);
    expect(q.get('duration')).toBe(DEFAULT_SILENCE_DURATION);
    expect(q.has('channels')).toBe(false);
  });

  it('lifecycles group the kinds of one story; other kinds stand alone', () => {
    expect(lifecycleKinds('sla.breached')).toEqual([
      'sla.at_risk',
      'sla.breached',
      'sla.recovered',
    ]);
    expect(lifecycleKinds('upstream.recovered')).toEqual([
      'upstream.degraded',
      'upstream.recovered',
    ]);
    expect(lifecycleKinds('score.dropped')).toEqual(['score.dropped']);
    expect(lifecycleKinds('status.changed')).toEqual(['status.changed']);
  });

  it('percent-encodes what comes from a transition (feedId, ids, subscription)', () => {
    const t = transition('status.changed', {
      id: 'a b#c',
      feedId: 'we?ird/feed&x=1',
    });
    const links = notificationLinks(PUBLIC, notification([t], { subscription: 'pay ments&x' }));
    expect(links?.console).toBe(
      `${PUBLIC}/services/we%3Fird%2Ffeed%26x%3D1#${encodeURIComponent('t-a b#c')}`,
    );
    const q = silenceQuery(links?.silence ?? '');
    expect(q.get('services')).toBe('we?ird/feed&x=1');
    expect(q.getAll('subscriptions')).toEqual(['pay ments&x']);
    expect(links?.silence).not.toMatch(/[\s<>"|]/);
  });

  it('a batch: the first transition, every service (bounded) and every kind', () => {
    const feeds = Array.from({ length: MAX_LINKED_SERVICES + 5 }, (_, i) => `svc-${String(i)}`);
    const list = feeds.map((feedId, i) =>
      transition(i === 0 ? 'sla.breached' : 'incident.opened', { feedId, id: `t${String(i)}` }),
    );
    const links = notificationLinks(PUBLIC, notification(list));
    expect(links?.console).toBe(`${PUBLIC}/services/svc-0#t-t0`);
    const q = silenceQuery(links?.silence ?? '');
    expect(q.get('services')?.split(',')).toEqual(feeds.slice(0, MAX_LINKED_SERVICES));
    expect(q.getAll('events').sort()).toEqual(
      [...lifecycleKinds('sla.breached'), ...lifecycleKinds('incident.opened')].sort(),
    );
  });

  it('upstream kinds open the overview; a digest opens the subscription and silences it only', () => {
    const up = transition('upstream.degraded', { feedId: 'upstream', id: 'tu' });
    expect(notificationLinks(PUBLIC, notification([up]))?.console).toBe(`${PUBLIC}/#upstream`);
    const digest = notificationLinks(
      PUBLIC,
      notification([transition('incident.opened')], { type: 'digest' }),
    );
    expect(digest?.console).toBe(`${PUBLIC}/?subscription=payments`);
    const q = silenceQuery(digest?.silence ?? '');
    expect([...q.keys()].sort()).toEqual(['duration', 'subscriptions']);
  });
});

describe('renderers: the links appear only with publicUrl', () => {
  const plain = notification([transition('incident.opened')]);
  const linked = withLinks(plain, PUBLIC);
  const links = linked.links!;

  const renders: Record<string, (n: Notification) => string> = {
    slack: (n) => JSON.stringify(renderSlack(n)),
    email: (n) => JSON.stringify(renderEmail(n)),
    teams: (n) => JSON.stringify(renderTeams(n)),
    pagerduty: (n) => JSON.stringify(renderPagerduty(n, { routingKey: 'rk' }, NOW)),
    opsgenie: (n) => JSON.stringify(renderOpsgenieRequests(n)),
    webhook: (n) => JSON.stringify(webhookPayload(n)),
  };
  for (const [kind, render] of Object.entries(renders)) {
    it(`${kind}: without links the output is as before; with them it carries both`, () => {
      const without = render(plain);
      expect(without).not.toContain('statuswatch.example.com');
      expect(render({ ...plain, links: undefined })).toBe(without);
      const withThem = render(linked);
      expect(withThem).not.toBe(without);
      expect(withThem).toContain('statuswatch.example.com/services/stripe');
      expect(withThem).toContain('statuswatch.example.com/silences?');
    });
  }

  it('slack: a context line of two mrkdwn links (the & of the query escaped)', () => {
    const context = renderSlack(linked).blocks.at(-1);
    expect(context?.type).toBe('context');
    const text = context?.type === 'context' ? (context.elements[1]?.text ?? '') : '';
    expect(text).toBe(
      `<${links.console}|Open in console>  ·  <${links.silence.replace(/&/g, '&amp;')}|Silence…>`,
    );
  });

  it('email: text lines and HTML anchors', () => {
    const mail = renderEmail(linked);
    expect(mail.text).toContain(`Open in console: ${links.console}\nSilence…: ${links.silence}`);
    expect(mail.html).toContain(`<a href="${links.silence.replace(/&/g, '&amp;')}">Silence…</a>`);
  });

  it('teams: two Action.OpenUrl buttons', () => {
    const [attachment] = renderTeams(linked).attachments;
    expect(attachment.content.actions?.slice(-2)).toEqual([
      { type: 'Action.OpenUrl', title: 'Open in console', url: links.console },
      { type: 'Action.OpenUrl', title: 'Silence…', url: links.silence },
    ]);
  });

  it('pagerduty: the links array; opsgenie: details', () => {
    const [event] = renderPagerduty(linked, { routingKey: 'rk' }, NOW);
    expect(event?.body.links.slice(-2)).toEqual([
      { href: links.console, text: 'Open in console' },
      { href: links.silence, text: 'Silence…' },
    ]);
    const [create] = renderOpsgenieRequests(linked);
    const body = create?.body as { details: Record<string, string> };
    expect(body.details.consoleUrl).toBe(links.console);
    expect(body.details.silenceUrl).toBe(links.silence);
  });

  it('webhook: data.links for an event and for a batch', () => {
    expect(webhookPayload(linked).data.links).toEqual(links);
    const batch = withLinks(
      notification([transition('incident.opened'), transition('status.changed')]),
      PUBLIC,
    );
    expect(webhookPayload(batch).data.links).toEqual(batch.links);
  });
});
