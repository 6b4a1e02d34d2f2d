import { describe, expect, it } from 'vitest';
import { hostileTransition, notification, transition } from '../../../test/notify-helpers.js';
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
    expect(mail.subject).toBe('2 events for payments: Stripe: incident opened — Outage');
    expect(mail.text.indexOf('incident opened')).toBeLessThan(
      mail.text.indexOf('incident resolved'),
    );
    expect(mail.inReplyTo).toBeNull();
  });
});
