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
  defaultPriority,
  opsgenieAlias,
  renderOpsgenieRequests,
  transitionRequests,
  type OpsgenieCreateBody,
  type OpsgenieRequest,
} from './render.js';

const ALIAS = 'statuswatch:stripe:incident:inc-1';
const CLOSE_PATH = `/v2/alerts/${encodeURIComponent(ALIAS)}/close?identifierType=alias`;
const NOTES_PATH = `/v2/alerts/${encodeURIComponent(ALIAS)}/notes?identifierType=alias`;

function createBody(request: OpsgenieRequest | undefined): OpsgenieCreateBody {
  expect(request?.action).toBe('create');
  return request?.body as OpsgenieCreateBody;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe('opsgenie render: one transition', () => {
  it('an incident opening is one create with the documented body', () => {
    const t = transition('incident.opened');
    expect(renderOpsgenieRequests(notification([t]))).toEqual([
      {
        action: 'create',
        method: 'POST',
        path: '/v2/alerts',
        alias: ALIAS,
        body: {
          message: 'Stripe: incident opened — Card payments failing',
          alias: ALIAS,
          description: [
            'Stripe: incident opened — Card payments failing',
            '',
            'Service: Stripe (stripe)',
            'Event: Incident opened (incident.opened)',
            'Incident id: inc-1',
            'Incident status: investigating',
            'Latest update: We are investigating elevated error rates.',
            'Observed: 2026-01-01 12:00 UTC',
            'Subscription: payments',
            'Official status page: https://status.stripe.com/',
            'Service page: https://stripe.com/',
          ].join('\n'),
          details: {
            feedId: 'stripe',
            service: 'Stripe',
            kind: 'incident.opened',
            subscription: 'payments',
            transitionId: 'tincidentopened0123456789abcdef',
            status: 'investigating',
            incidentId: 'inc-1',
            incidentStatus: 'investigating',
          },
          entity: 'Stripe',
          source: 'statuswatch',
          priority: 'P2',
          user: 'statuswatch',
        },
      },
    ]);
  });

  it('an update is a note and a resolution a close, both by the same alias', () => {
    const updated = transition('incident.updated', {
      incident: {
        ...transition('incident.updated').incident!,
        status: 'identified',
        latestUpdate: 'A fix is rolling out.',
      },
    });
    const resolved = transition('incident.resolved');
    expect(renderOpsgenieRequests(notification([updated]))).toEqual([
      {
        action: 'note',
        method: 'POST',
        path: NOTES_PATH,
        alias: ALIAS,
        body: {
          user: 'statuswatch',
          source: 'statuswatch',
          note: [
            'Stripe: incident updated (identified) — Card payments failing',
            'Incident status: identified',
            'Latest update: A fix is rolling out.',
            'Observed: 2026-01-01 12:00 UTC',
          ].join('\n'),
        },
      },
    ]);
    expect(renderOpsgenieRequests(notification([resolved]))).toEqual([
      {
        action: 'close',
        method: 'POST',
        path: CLOSE_PATH,
        alias: ALIAS,
        body: {
          user: 'statuswatch',
          source: 'statuswatch',
          note: [
            'Stripe: incident resolved — Card payments failing',
            'Incident status: resolved',
            'Latest update: We are investigating elevated error rates.',
            'Observed: 2026-01-01 12:00 UTC',
          ].join('\n'),
        },
      },
    ]);
  });

  it('the alias is identical across opened, updated, reopened and resolved', () => {
    const kinds = ['incident.opened', 'incident.updated', 'incident.resolved'] as const;
    const aliases = kinds.map(
      (kind) => renderOpsgenieRequests(notification([transition(kind)]))[0]?.alias,
    );
    const reopened = transition('incident.updated', {
      current: { status: 'investigating', reopened: true },
    });
    const [reopen] = renderOpsgenieRequests(notification([reopened]));
    expect(reopen?.action).toBe('create');
    expect([...aliases, reopen?.alias]).toEqual([ALIAS, ALIAS, ALIAS, ALIAS]);
  });

  it('status, SLA and upstream episodes open and close under their own alias', () => {
    const down = transition('status.changed', {
      previous: { status: 'operational' },
      current: { status: 'major_outage' },
    });
    const up = transition('status.changed', {
      previous: { status: 'major_outage' },
      current: { status: 'operational' },
    });
    const [open] = renderOpsgenieRequests(notification([down]));
    const [close] = renderOpsgenieRequests(notification([up]));
    expect(open).toMatchObject({ action: 'create', alias: 'statuswatch:stripe:status' });
    expect(createBody(open)).toMatchObject({
      message: 'Stripe: status operational → major outage',
      priority: 'P2',
      details: { status: 'major_outage' },
    });
    expect(close).toMatchObject({
      action: 'close',
      path: '/v2/alerts/statuswatch%3Astripe%3Astatus/close?identifierType=alias',
      body: { note: 'Stripe: status major outage → operational\nObserved: 2026-01-01 12:00 UTC' },
    });
    const upstream = transition('upstream.degraded', {
      feedId: 'upstream',
      subject: 'upstream:report',
      previous: { health: 'ok' },
      current: { health: 'degraded', reason: 'upstream_server_error' },
    });
    expect(renderOpsgenieRequests(notification([upstream]))[0]).toMatchObject({
      alias: 'statuswatch:upstream:upstream:report',
      body: { priority: 'P3', details: { status: 'degraded' } },
    });
  });

  it('default priorities: breach P1, incident and major outage P2, risk/degraded P3, informational P5', () => {
    const priorityOf = (t: Transition): string =>
      createBody(renderOpsgenieRequests(notification([t]))[0]).priority;
    expect(
      priorityOf(transition('sla.breached', { subject: 'sla', previous: { status: 'met' } })),
    ).toBe('P1');
    expect(priorityOf(transition('incident.opened'))).toBe('P2');
    expect(
      priorityOf(
        transition('status.changed', {
          previous: { status: 'operational' },
          current: { status: 'degraded' },
        }),
      ),
    ).toBe('P3');
    expect(
      priorityOf(transition('sla.at_risk', { subject: 'sla', previous: { status: 'met' } })),
    ).toBe('P3');
    expect(priorityOf(transition('upstream.degraded', { previous: { health: 'ok' } }))).toBe('P3');
    expect(priorityOf(transition('score.dropped', { subject: 'score' }))).toBe('P5');
    expect(defaultPriority(transition('sla.forecast'))).toBe('P5');
    expect(defaultPriority(transition('score.trend'))).toBe('P5');
  });

  it('the configured priority, responders and tags go on every create', () => {
    const requests = renderOpsgenieRequests(notification([transition('incident.opened')]), {
      priority: { 'incident.opened': 'P1' },
      responders: [
        { type: 'team', name: 'payments-oncall' },
        { type: 'user', username: 'ana@example.com' },
      ],
      tags: ['statuswatch', 'payments'],
    });
    expect(createBody(requests[0])).toMatchObject({
      priority: 'P1',
      responders: [
        { type: 'team', name: 'payments-oncall' },
        { type: 'user', username: 'ana@example.com' },
      ],
      tags: ['statuswatch', 'payments'],
    });
    const plain = createBody(
      renderOpsgenieRequests(notification([transition('incident.opened')]))[0],
    );
    expect('responders' in plain).toBe(false);
    expect('tags' in plain).toBe(false);
  });

  it('an opening that moves an open episode also adds a note and sets the new priority', () => {
    const breached = transition('sla.breached', {
      subject: 'sla',
      previous: { status: 'at_risk' },
      current: { status: 'breached', margin: -0.4 },
    });
    const requests = transitionRequests(breached, 'payments');
    expect(requests.map((r) => [r.action, r.method, r.path])).toEqual([
      ['create', 'POST', '/v2/alerts'],
      ['note', 'POST', '/v2/alerts/statuswatch%3Astripe%3Asla/notes?identifierType=alias'],
      ['priority', 'PUT', '/v2/alerts/statuswatch%3Astripe%3Asla/priority?identifierType=alias'],
    ]);
    expect(requests[1]?.body).toMatchObject({
      note: 'Stripe: SLA breached (margin \u22120.40 pp)\nObserved: 2026-01-01 12:00 UTC',
    });
    expect(requests[2]?.body).toEqual({ priority: 'P1' });
    // A first opening is the create alone.
    const atRisk = transition('sla.at_risk', { subject: 'sla', previous: { status: 'met' } });
    expect(transitionRequests(atRisk, 'payments').map((r) => r.action)).toEqual(['create']);
  });

  it('informational kinds are their own P5 alert, aliased by the transition id', () => {
    const drop = transition('score.dropped', {
      subject: 'score',
      previous: { score: 92 },
      current: { score: 80 },
    });
    const [request, ...rest] = renderOpsgenieRequests(notification([drop]));
    expect(rest).toEqual([]);
    expect(request).toMatchObject({
      action: 'create',
      alias: `statuswatch:stripe:score:${drop.id}`,
      body: { message: 'Stripe: score dropped 92 → 80', priority: 'P5' },
    });
  });
});

describe('opsgenie render: limits and hostile text', () => {
  it('a 10k title: message ≤ 130 characters, the whole title in the description', () => {
    const title = `Card payments failing ${'x'.repeat(10_000)}`;
    const t = transition('incident.opened', {
      incident: { ...transition('incident.opened').incident!, title },
    });
    const body = createBody(renderOpsgenieRequests(notification([t]))[0]);
    expect(body.message).toHaveLength(130);
    expect(body.message.startsWith('Stripe: incident opened — Card payments failing xxx')).toBe(
      true,
    );
    expect(body.message.endsWith('…')).toBe(true);
    expect(body.description.startsWith(`Stripe: incident opened — ${title}\n`)).toBe(true);
    expect(body.description).toContain('\nIncident id: inc-1\n');
    expect(body.description.length).toBeLessThanOrEqual(15_000);
  });

  it('a description past 15000 characters is cut there', () => {
    const t = transition('incident.opened', {
      incident: { ...transition('incident.opened').incident!, latestUpdate: 'u'.repeat(20_000) },
    });
    const body = createBody(renderOpsgenieRequests(notification([t]))[0]);
    expect(body.description).toHaveLength(15_000);
    expect(body.description.endsWith('…')).toBe(true);
  });

  it('the alias stays within 512 characters, distinct and stable for long keys', () => {
    const long = (id: string): Transition =>
      transition('incident.opened', {
        feedId: 'f'.repeat(400),
        subject: `incident:${id}${'i'.repeat(300)}`,
      });
    const a = opsgenieAlias(long('a'));
    const b = opsgenieAlias(long('b'));
    expect(a.length).toBeLessThanOrEqual(512);
    expect(a).not.toBe(b);
    expect(opsgenieAlias(long('a'))).toBe(a);
    const resolved = transition('incident.resolved', {
      feedId: 'f'.repeat(400),
      subject: `incident:a${'i'.repeat(300)}`,
    });
    expect(renderOpsgenieRequests(notification([resolved]))[0]?.alias).toBe(a);
  });

  it('hostile upstream text stays plain text on one line: no control characters', () => {
    const t = hostileTransition();
    const body = createBody(renderOpsgenieRequests(notification([t]))[0]);
    expect(body.message).not.toMatch(CONTROL);
    expect(body.message.length).toBeLessThanOrEqual(130);
    expect(body.message.startsWith('<!here> Stripe & <@U999>: incident opened — <!channel>')).toBe(
      true,
    );
    for (const line of body.description.split('\n')) expect(line).not.toMatch(CONTROL);
    expect(body.description).toContain('Subject Bcc: victim@example.com');
    for (const value of Object.values(body.details)) {
      expect(value).not.toMatch(CONTROL);
      expect(value.length).toBeLessThanOrEqual(500);
    }
    expect(body.entity).toBe('<!here> Stripe & <@U999>');
  });
});

describe('opsgenie render: notification types', () => {
  it('a reminder sends nothing: Opsgenie re-notifies by itself', () => {
    const n = notification([transition('incident.opened')], { type: 'reminder' });
    expect(renderOpsgenieRequests(n)).toEqual([]);
  });

  it('a batch and a catch-up send every transition, oldest first', () => {
    const opened = transition('incident.opened', { observedAt: 1000 });
    const resolved = transition('incident.resolved', { observedAt: 2000 });
    const drop = transition('score.dropped', { subject: 'score', observedAt: 1500 });
    for (const type of ['batch', 'catchup'] as const) {
      const requests = renderOpsgenieRequests(notification([resolved, drop, opened], { type }));
      expect(requests.map((r) => `${r.action} ${r.alias}`)).toEqual([
        `create ${ALIAS}`,
        `create statuswatch:stripe:score:${drop.id}`,
        `close ${ALIAS}`,
      ]);
    }
    expect(renderOpsgenieRequests(notification(manyServices(40), { type: 'batch' }))).toHaveLength(
      40,
    );
  });

  it('a digest is one P5 alert aliased by the notification id', () => {
    const n = notification(manyServices(2), {
      type: 'digest',
      id: 'digest-2026-01-01:payments:oncall',
      title: `${HOSTILE_HEADING}${'t'.repeat(500)}`,
      summary: ['Incidents: 3 opened', '', 'Still open:\nStripe'],
    });
    const requests = renderOpsgenieRequests(n);
    expect(requests).toHaveLength(1);
    const body = createBody(requests[0]);
    expect(body.alias).toBe('statuswatch:digest:digest-2026-01-01:payments:oncall');
    expect(body.priority).toBe('P5');
    expect(body.message).toHaveLength(130);
    expect(body.message).not.toMatch(CONTROL);
    expect(body.details).toEqual({
      subscription: 'payments',
      notificationId: 'digest-2026-01-01:payments:oncall',
      count: '2',
    });
    const lines = body.description.split('\n');
    expect(lines.slice(1, 5)).toEqual(['', 'Incidents: 3 opened', 'Still open: Stripe', '']);
    expect(lines.slice(5)).toEqual([
      'Service 00: status operational → major outage (2026-01-01 11:00 UTC)',
      'Service 01: score dropped 90 → 80 (2026-01-01 11:00 UTC)',
    ]);
  });

  it('a test creates a P5 alert and closes it again under statuswatch:test:<id>', () => {
    const n = notification([transition('incident.opened')], {
      type: 'test',
      id: 'test-abc:notify-test:oncall',
    });
    const alias = 'statuswatch:test:test-abc:notify-test:oncall';
    const [create, close, ...rest] = renderOpsgenieRequests(n, { tags: ['sre'] });
    expect(rest).toEqual([]);
    expect(create).toMatchObject({
      action: 'create',
      alias,
      body: {
        message: '[test] Stripe: incident opened — Card payments failing',
        alias,
        priority: 'P5',
        tags: ['sre'],
        details: {
          test: 'true',
          notificationId: 'test-abc:notify-test:oncall',
          kind: 'incident.opened',
        },
      },
    });
    expect(
      createBody(create).description.startsWith(
        'Test notification from statuswatch notify-test for channel oncall',
      ),
    ).toBe(true);
    expect(close).toEqual({
      action: 'close',
      method: 'POST',
      path: `/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`,
      alias,
      body: {
        user: 'statuswatch',
        source: 'statuswatch',
        note: 'statuswatch notify-test: test alert closed automatically.',
      },
    });
  });

  it('the same notification renders the same requests every time (retries, replicas)', () => {
    const n = notification([transition('incident.opened'), transition('incident.resolved')], {
      type: 'batch',
    });
    expect(JSON.stringify(renderOpsgenieRequests(n))).toBe(
      JSON.stringify(renderOpsgenieRequests(n)),
    );
  });
});
