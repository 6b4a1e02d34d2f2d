import { afterEach, describe, expect, it } from 'vitest';
import { emailChannelConfigSchema } from '../src/notify/email/config.js';
import { createEmailNotifier } from '../src/notify/email/index.js';
import { deliveryMessageId, incidentThreadId } from '../src/notify/email/render.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  refusedUrl,
  startSmtp,
  transition,
  type SmtpBehaviour,
  type SmtpSink,
} from './notify-helpers.js';
import { testRedis } from './helpers/redis.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  behaviour: SmtpBehaviour = {},
  extra: Record<string, unknown> = {},
  smtpExtra: Record<string, unknown> = {},
): Promise<{ sink: SmtpSink; notifier: Notifier }> {
  const sink = await startSmtp(behaviour);
  const config = emailChannelConfigSchema.parse({
    type: 'email',
    smtp: { host: '127.0.0.1', port: sink.port, ...smtpExtra },
    from: 'statuswatch <statuswatch@example.com>',
    to: ['sre@example.com', 'oncall@example.com'],
    ...extra,
  });
  const notifier = createEmailNotifier(config);
  cleanups.push(
    () => sink.close(),
    () => notifier.close(),
  );
  return { sink, notifier };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

describe('e-mail: recipients the server defers', () => {
  it('one recipient deferred (451) while the other accepts: retried for the deferred one only, and a permanent refusal (550) is final', async () => {
    const tr = await testRedis('mail');
    let greylisted = true;
    const sink = await startSmtp({
      rcpt: (address) =>
        address === 'oncall@example.com' && greylisted
          ? 451
          : address === 'gone@example.com'
            ? 550
            : undefined,
    });
    const config = emailChannelConfigSchema.parse({
      type: 'email',
      smtp: { host: '127.0.0.1', port: sink.port, pool: false },
      from: 'statuswatch@example.com',
      to: ['sre@example.com', 'oncall@example.com', 'gone@example.com'],
    });
    const notifier = createEmailNotifier(config, {
      state: { redis: tr.redis, key: (...parts) => tr.keys.key(...parts) },
    });
    cleanups.push(
      () => tr.cleanup(),
      () => sink.close(),
      () => notifier.close(),
    );
    const n = notification([transition('incident.opened')]);
    const deferred = await failure(notifier.send(n));
    expect(deferred).toMatchObject({ retryable: true, reason: 'server' });
    expect(deferred.message).toContain('deferred 1 of 3 recipient(s)');
    expect((await sink.waitFor(1)).map((m) => m.envelope.to)).toEqual([['sre@example.com']]);
    greylisted = false;
    await notifier.send(n); // the retry
    const mails = await sink.waitFor(2);
    expect(mails.map((m) => m.envelope.to)).toEqual([['sre@example.com'], ['oncall@example.com']]);
    // The same Message-ID: one mail, twice delivered in parts; its header names every recipient.
    expect(mails[1]?.parsed.messageId).toBe(mails[0]?.parsed.messageId);
    expect(JSON.stringify(mails[1]?.parsed.to)).toContain('sre@example.com');
    expect(await tr.redis.keys(`${tr.prefix}*deferred*`)).toEqual([]);
  });
});

describe.each([true, false])(
  'e-mail notifier against an in-process SMTP server (pool: %s)',
  (pool) => {
    it('sends one mail with subject, text, HTML and the configured envelope', async () => {
      const { sink, notifier } = await setup({}, { subjectPrefix: '[statuswatch]' }, { pool });
      await notifier.send(notification([transition('incident.opened')]));
      const [mail] = await sink.waitFor(1);
      expect(sink.mails).toHaveLength(1);
      expect(mail?.envelope).toEqual({
        from: 'statuswatch@example.com',
        to: ['sre@example.com', 'oncall@example.com'],
      });
      const parsed = mail!.parsed;
      expect(parsed.subject).toBe('[statuswatch] Stripe: incident opened — Card payments failing');
      expect(parsed.from?.value).toEqual([
        { address: 'statuswatch@example.com', name: 'statuswatch' },
      ]);
      expect(parsed.text).toContain('Latest update: We are investigating elevated error rates.');
      expect(parsed.html).toContain('<a href="https://status.stripe.com/">');
      expect(parsed.messageId).toBe(incidentThreadId('stripe', 'inc-1'));
    });

    it('threads an update and a resolution under the opened mail', async () => {
      const { sink, notifier } = await setup({}, {}, { pool });
      await notifier.send(notification([transition('incident.opened')]));
      await notifier.send(notification([transition('incident.updated', { id: 'tupd' })]));
      await notifier.send(notification([transition('incident.resolved', { id: 'tres' })]));
      const mails = await sink.waitFor(3);
      const root = incidentThreadId('stripe', 'inc-1');
      expect(mails.map((m) => m.parsed.messageId)).toEqual([
        root,
        expect.stringMatching(/^<n\./),
        expect.stringMatching(/^<n\./),
      ]);
      expect(mails[1]?.parsed.inReplyTo).toBe(root);
      expect(mails[1]?.parsed.references).toBe(root);
      expect(mails[2]?.parsed.inReplyTo).toBe(root);
      expect(mails[1]?.parsed.messageId).not.toBe(mails[2]?.parsed.messageId);
    });

    it('keeps hostile text inert: no injected header, no extra recipient, no markup', async () => {
      const { sink, notifier } = await setup({}, {}, { pool });
      await notifier.send(notification([hostileTransition()]));
      const [mail] = await sink.waitFor(1);
      expect(mail?.envelope.to).toEqual(['sre@example.com', 'oncall@example.com']);
      const headerSection = mail!.raw.split(/\r?\n\r?\n/)[0] ?? '';
      expect(headerSection).not.toMatch(/^bcc:/im);
      expect(mail?.parsed.headers.has('bcc')).toBe(false);
      expect(mail?.parsed.bcc).toBeUndefined();
      expect(mail?.parsed.subject).not.toMatch(/[\r\n]/);
      expect(mail?.parsed.subject).toContain('Subject Bcc: victim@example.com');
      expect(mail?.parsed.html).not.toContain('<script>');
      expect(mail?.parsed.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect((mail?.parsed.text ?? '').length).toBeLessThan(12_000);
    });

    it('sends a 40-transition batch as one mail naming all 40, its own thread root', async () => {
      const { sink, notifier } = await setup({}, {}, { pool });
      const n = notification(manyServices(40), { type: 'batch' });
      await notifier.send(n);
      const [mail] = await sink.waitFor(1);
      expect(sink.mails).toHaveLength(1);
      const parsed = mail!.parsed;
      expect(parsed.subject).toBe(
        '40 changes for payments: Service 00: status operational → major outage',
      );
      for (let i = 0; i < 40; i++) {
        const id = String(i).padStart(2, '0');
        expect(parsed.text).toContain(`Service: Service ${id} (svc-${id})`);
        expect(parsed.html).toContain(`Service ${id} (svc-${id})`);
      }
      expect(parsed.messageId).toBe(deliveryMessageId(n.id));
      expect(parsed.inReplyTo).toBeUndefined();
      expect(parsed.headers.has('in-reply-to')).toBe(false);
      expect(parsed.references).toBeUndefined();
    });

    it('a digest with a hostile title and summary injects no header and no markup', async () => {
      const { sink, notifier } = await setup({}, { subjectPrefix: '[sw]' }, { pool });
      await notifier.send(
        notification([transition('incident.updated')], {
          type: 'digest',
          title: HOSTILE_HEADING,
          summary: [HOSTILE_HEADING, 'Still open: 1'],
        }),
      );
      const [mail] = await sink.waitFor(1);
      expect(mail?.envelope.to).toEqual(['sre@example.com', 'oncall@example.com']);
      const headerSection = mail!.raw.split(/\r?\n\r?\n/)[0] ?? '';
      expect(headerSection).not.toMatch(/^bcc:/im);
      expect(mail?.parsed.headers.has('bcc')).toBe(false);
      expect(mail?.parsed.subject).toBe(
        '[sw] <!channel> Digest <@U123> <https://evil.example|click> <script>alert(1)</script> Bcc: victim@example.com',
      );
      expect(mail?.parsed.html).not.toContain('<script>');
      expect(mail?.parsed.html).toContain(
        '<li>&lt;!channel&gt; Digest &lt;@U123&gt; &lt;https://evil.example|click&gt; &lt;script&gt;alert(1)&lt;/script&gt; Bcc: victim@example.com</li>',
      );
      expect(mail?.parsed.text).toContain('- Still open: 1');
      // An update about an incident, but a digest: no reply into the incident's thread.
      expect(mail?.parsed.inReplyTo).toBeUndefined();
    });

    it('a 550 at RCPT is permanent', async () => {
      const { sink, notifier } = await setup({ rcptCode: 550 }, {}, { pool });
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({
        retryable: false,
        reason: 'client',
        code: 'delivery_permanent',
      });
      expect(error.message).toContain('550');
      expect(sink.mails).toHaveLength(0);
    });

    it('a 451 at DATA is retryable', async () => {
      const { sink, notifier } = await setup({ dataCode: 451 }, {}, { pool });
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({
        retryable: true,
        reason: 'server',
        code: 'delivery_retryable',
      });
      expect(error.message).toContain('451');
      expect(sink.mails).toHaveLength(0);
    });

    it('authenticates with the configured credentials', async () => {
      const { sink, notifier } = await setup(
        { auth: { user: 'sw', pass: 'smtp-Pa55word!' } },
        {},
        { pool, auth: { user: 'sw', pass: 'smtp-Pa55word!' } },
      );
      await notifier.send(notification([transition()]));
      expect(await sink.waitFor(1)).toHaveLength(1);
    });

    it('a rejected login is a permanent auth failure', async () => {
      const { notifier } = await setup(
        { auth: { user: 'sw', pass: 'right' } },
        {},
        { pool, auth: { user: 'sw', pass: 'wrong-Pa55' } },
      );
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({ retryable: false, reason: 'auth' });
    });

    it('a temporary login failure (454) is retryable, not an auth failure', async () => {
      const { sink, notifier } = await setup(
        { auth: { user: 'sw', pass: 'right' }, authCode: 454 },
        {},
        { pool, auth: { user: 'sw', pass: 'right' } },
      );
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({ retryable: true, reason: 'server' });
      expect(error.message).toContain('454');
      expect(sink.mails).toHaveLength(0);
    });

    it('a refused connection is a retryable network failure', async () => {
      const port = Number(new URL(await refusedUrl()).port);
      const config = emailChannelConfigSchema.parse({
        type: 'email',
        smtp: { host: '127.0.0.1', port, pool },
        from: 'statuswatch@example.com',
        to: ['sre@example.com'],
      });
      const notifier = createEmailNotifier(config);
      cleanups.push(() => notifier.close());
      const error = await failure(notifier.send(notification([transition()])));
      expect(error).toMatchObject({ retryable: true, reason: 'network' });
      expect(error.message).toContain('could not reach the receiver');
      expect(error.message).not.toContain('refused');
      expect(error.detail).toContain('ECONNREFUSED');
    });
  },
);
