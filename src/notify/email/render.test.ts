import { describe, expect, it } from 'vitest';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  transition,
} from '../../../test/notify-helpers.js';
import type { Notification } from '../types.js';
import { deliveryMessageId, incidentThreadId, renderEmail, SUBJECT_MAX } from './render.js';

describe('renderEmail', () => {
  it('renders subject, text and HTML for one incident', () => {
    const mail = renderEmail(notification([transition('incident.opened')]), {
      subjectPrefix: '[statuswatch]',
    });
    expect(mail.subject).toBe('[statuswatch] Stripe: incident opened — Card payments failing');
    expect(mail.text).toContain('Stripe: incident opened — Card payments failing');
    expect(mail.text).toContain('Service: Stripe (stripe)');
    expect(mail.text).toContain('Latest update: We are investigating elevated error rates.');
    expect(mail.text).toContain('Official status page: https://status.stripe.com/');
    expect(mail.text).toContain('Subscription: payments');
    expect(mail.html).toContain(
      '<a href="https://status.stripe.com/">https://status.stripe.com/</a>',
    );
  });

  it('threads all mails about one incident under the opened mail', () => {
    const opened = renderEmail(notification([transition('incident.opened')]));
    const updated = renderEmail(notification([transition('incident.updated', { id: 'tupd' })]));
    const resolved = renderEmail(notification([transition('incident.resolved', { id: 'tres' })]));
    const root = incidentThreadId('stripe', 'inc-1');
    expect(root).toMatch(/^<incident\.[0-9a-f]{32}@statuswatch>$/);
    expect(opened).toMatchObject({ messageId: root, inReplyTo: null, references: null });
    expect(updated).toMatchObject({
      messageId: deliveryMessageId('tupd:payments:oncall'),
      inReplyTo: root,
      references: root,
    });
    expect(resolved).toMatchObject({ inReplyTo: root, references: root });
    expect(resolved.messageId).not.toBe(updated.messageId);
    // Deterministic: a retry renders the same ids.
    expect(
      renderEmail(notification([transition('incident.updated', { id: 'tupd' })])).messageId,
    ).toBe(updated.messageId);
    // Another incident, another thread.
    expect(incidentThreadId('stripe', 'inc-2')).not.toBe(root);
    expect(incidentThreadId('stripe2', 'inc-1')).not.toBe(root);
  });

  it('does not thread non-incident events', () => {
    const mail = renderEmail(
      notification([
        transition('status.changed', {
          previous: { status: 'operational' },
          current: { status: 'degraded' },
          incident: null,
        }),
      ]),
    );
    expect(mail.inReplyTo).toBeNull();
    expect(mail.messageId).toMatch(/^<n\.[0-9a-f]{32}@statuswatch>$/);
  });

  it('keeps hostile text out of headers and markup', () => {
    const mail = renderEmail(notification([hostileTransition()]), { subjectPrefix: '[sw]' });
    expect(mail.subject).not.toMatch(/[\r\n]/);
    expect(mail.subject.length).toBeLessThanOrEqual(SUBJECT_MAX);
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).not.toMatch(/<a href="https:\/\/evil/);
    expect(mail.text.length).toBeLessThan(12_000);
  });

  it('lists a batch most severe first', () => {
    const mail = renderEmail(
      notification(
        [
          transition('incident.resolved', { id: 'r' }),
          transition('incident.opened', {
            id: 'o',
            incident: { ...transition().incident!, id: 'i2', title: 'Outage' },
          }),
        ],
        { type: 'batch' },
      ),
    );
    expect(mail.subject).toBe('2 changes for payments: Stripe: incident opened — Outage');
    expect(mail.text.indexOf('incident opened')).toBeLessThan(
      mail.text.indexOf('incident resolved'),
    );
    expect(mail.inReplyTo).toBeNull();
  });
});

const HOUR = 3_600_000;

describe('renderEmail for batch-like notifications', () => {
  it('a 40-transition batch is one mail naming all 40 services, most severe first', () => {
    const n = notification(manyServices(40), { type: 'batch' });
    const mail = renderEmail(n, { subjectPrefix: '[sw]' });
    expect(mail.subject).toBe(
      '[sw] 40 changes for payments: Service 00: status operational → major outage',
    );
    for (let i = 0; i < 40; i++) {
      const name = `Service ${String(i).padStart(2, '0')}`;
      expect(mail.text).toContain(`Service: ${name} (svc-`);
      expect(mail.html).toContain(`${name}: `);
    }
    expect(
      mail.text.startsWith(
        '40 changes for payments\n\n40 changes for payments, most severe first.\n\n',
      ),
    ).toBe(true);
    // All outages (even) before all score drops (odd).
    expect(mail.text.indexOf('Service 38: status')).toBeLessThan(
      mail.text.indexOf('Service 01: score'),
    );
    expect(mail.text).not.toContain('more.');
    expect(mail).toMatchObject({
      messageId: deliveryMessageId(n.id),
      inReplyTo: null,
      references: null,
    });
  });

  it('a batch with a title keeps the count in the subject', () => {
    const mail = renderEmail(
      notification(manyServices(3), { type: 'batch', title: 'Storm at payments' }),
    );
    expect(mail.subject).toBe('Storm at payments (3 changes for payments)');
    expect(mail.html).toContain(
      '<h1 style="font-size:18px;margin:0 0 12px">Storm at payments</h1>',
    );
  });

  it('lists at most 50 and says how many more', () => {
    const mail = renderEmail(notification(manyServices(60), { type: 'batch' }));
    // 30 outages first, then the first 20 score drops (odd 01…39).
    expect(mail.text).toContain('Service 58: status');
    expect(mail.text).toContain('Service 39: score');
    expect(mail.text).not.toContain('Service 41: ');
    expect(mail.text).toContain('…and 10 more.');
  });

  it.each<[Notification['type']]>([['batch'], ['reminder'], ['catchup'], ['digest']])(
    'a %s about an incident is its own thread root (no In-Reply-To)',
    (type) => {
      const n = notification([transition('incident.updated', { id: 'tupd' })], { type });
      expect(renderEmail(n)).toMatchObject({
        messageId: deliveryMessageId(n.id),
        inReplyTo: null,
        references: null,
      });
    },
  );

  it('a reminder about one transition says how long it has been open', () => {
    const createdAt = Date.UTC(2026, 0, 1, 16, 0);
    const mail = renderEmail(
      notification([transition('incident.opened')], { type: 'reminder', createdAt }),
    );
    expect(mail.subject).toBe(
      'Reminder: still open — Stripe: incident opened — Card payments failing (open for 4h)',
    );
    expect(mail.text).toContain('Reminder: still open for subscription payments.');
    expect(mail.text).toContain(
      '\nStripe: incident opened — Card payments failing (open for 4h)\n\nService: Stripe (stripe)',
    );
    expect(mail.inReplyTo).toBeNull();
  });

  it('a reminder about several lists each with its duration', () => {
    const createdAt = Date.UTC(2026, 0, 1, 12, 0);
    const mail = renderEmail(
      notification(
        [
          transition('score.dropped', {
            id: 'drop',
            incident: null,
            previous: { score: 92 },
            current: { score: 80 },
            observedAt: createdAt - 2 * HOUR,
          }),
          transition('incident.opened', { observedAt: createdAt - 30 * 60_000 }),
        ],
        { type: 'reminder', createdAt },
      ),
    );
    expect(mail.subject).toBe('Reminder: 2 still open for payments');
    expect(mail.text).toContain('Reminder: 2 still open for payments, most severe first.');
    expect(mail.text.indexOf('Card payments failing (open for 30m)')).toBeGreaterThan(0);
    expect(mail.text.indexOf('Card payments failing (open for 30m)')).toBeLessThan(
      mail.text.indexOf('Stripe: score dropped 92 → 80 (open for 2h)'),
    );
  });

  it('a catch-up keeps the chronological order, resolutions included', () => {
    const mail = renderEmail(
      notification(
        [
          transition('incident.opened', { id: 'o', observedAt: Date.UTC(2026, 0, 1, 23, 5) }),
          transition('incident.resolved', { id: 'r', observedAt: Date.UTC(2026, 0, 2, 1, 40) }),
        ],
        { type: 'catchup' },
      ),
    );
    expect(mail.subject).toBe('Quiet hours ended: 2 notifications held');
    expect(mail.text).toContain(
      'Quiet hours ended: 2 notifications held for subscription payments, oldest first.',
    );
    const opened = mail.text.indexOf(
      'incident opened — Card payments failing (2026-01-01 23:05 UTC)',
    );
    const resolved = mail.text.indexOf(
      'incident resolved — Card payments failing (2026-01-02 01:40 UTC)',
    );
    expect(opened).toBeGreaterThan(0);
    expect(resolved).toBeGreaterThan(opened);
    expect(mail.inReplyTo).toBeNull();
  });

  it('a digest has the title as subject, the summary lines, then the transitions', () => {
    const mail = renderEmail(
      notification(manyServices(2), {
        type: 'digest',
        title: 'Weekly digest for payments',
        summary: ['Incidents: 3 opened, 2 resolved', 'SLA: adyen margin −0.40 pp'],
      }),
      { subjectPrefix: '[sw]' },
    );
    expect(mail.subject).toBe('[sw] Weekly digest for payments');
    expect(mail.text).toContain(
      'Weekly digest for payments\n\nDigest for payments: 2 changes in this period, most severe first.\n\n- Incidents: 3 opened, 2 resolved\n- SLA: adyen margin −0.40 pp\n\nService 00: status operational → major outage (2026-01-01 11:00 UTC)',
    );
    expect(mail.html).toContain(
      '<ul>\n<li>Incidents: 3 opened, 2 resolved</li>\n<li>SLA: adyen margin −0.40 pp</li>\n</ul>',
    );
    expect(mail.inReplyTo).toBeNull();
  });

  it('an empty digest says so', () => {
    const mail = renderEmail(notification([], { id: 'digest:payments:mail', type: 'digest' }));
    expect(mail.subject).toBe('Digest for payments: no changes');
    expect(mail.text).toContain('Digest for subscription payments: no changes in this period.');
    expect(mail.messageId).toBe(deliveryMessageId('digest:payments:mail'));
  });

  it.each<[Notification['type']]>([['batch'], ['reminder'], ['catchup'], ['digest']])(
    'hostile title and summary stay inert in a %s',
    (type) => {
      const mail = renderEmail(
        notification([...manyServices(2), hostileTransition()], {
          type,
          title: HOSTILE_HEADING,
          summary: [HOSTILE_HEADING, `<img src=x onerror=alert(1)> ${'y'.repeat(20_000)}`],
        }),
        { subjectPrefix: '[sw]' },
      );
      expect(mail.subject).not.toMatch(/[\r\n]/);
      expect(mail.subject.length).toBeLessThanOrEqual(SUBJECT_MAX);
      expect(mail.subject.startsWith('[sw] <!channel> Digest <@U123>')).toBe(true);
      expect(mail.html).not.toContain('<script>');
      expect(mail.html).not.toContain('<img');
      expect(mail.html).not.toMatch(/<a href="https:\/\/evil/);
      expect(mail.html).toContain(
        '&lt;!channel&gt; Digest &lt;@U123&gt; &lt;https://evil.example|click&gt; &lt;script&gt;alert(1)&lt;/script&gt; Bcc: victim@example.com',
      );
      if (type === 'digest') {
        expect(mail.html).toContain('<li>&lt;img src=x onerror=alert(1)&gt; yyy');
        // Each summary line is bounded.
        expect(mail.text).not.toContain('y'.repeat(1000));
      }
    },
  );
});
