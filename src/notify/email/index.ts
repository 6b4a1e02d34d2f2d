/**
 * The e-mail notifier: renders, sends over SMTP with nodemailer (pooled when `smtp.pool`),
 * classifies. Only rendered, header-safe values reach headers; the envelope (who receives the
 * mail) comes from the channel config alone, never from message content. Nodemailer's own
 * requeueing is off (BullMQ retries); file and URL access in message content is disabled.
 */
import nodemailer from 'nodemailer';
import { z } from 'zod';
import type { SendMailOptions, SMTPPoolOptions, SMTPTransportOptions } from 'nodemailer';
import { toError } from '../../errors.js';
import { classifyError } from '../classify.js';
import { scrubDeliveryError } from '../secrets.js';
import { DeliveryError, type Notification, type Notifier } from '../types.js';
import { emailChannelConfigSchema, type EmailChannelConfig } from './config.js';
import { REDACTED } from '../../config/secret-text.js';
import { defineChannelKind, type NotifierDeps } from '../kind.js';
import { renderEmail } from './render.js';
import { applyEmailTemplate } from './templated.js';
import { previewTemplates, renderTemplates, templatesFor } from '../template.js';
import { egressSocket } from '../../egress/connect.js';

export interface EmailNotifierDeps {
  /** SMTP connect/greeting/socket timeouts in milliseconds; default 10 s / 10 s / 30 s. */
  timeouts?: { connectionMs?: number; greetingMs?: number; socketMs?: number };
  /**
   * Redis (`NotifierDeps.state`): the recipients a server deferred (4xx) are kept there under
   * the delivery id, so the retry goes to them only. Without it, a deferral of some recipients
   * is not retried (the others would get the mail twice).
   */
  state?: NotifierDeps['state'];
  /** The egress policy of the SMTP connection (`NotifierDeps.egress`). */
  egress?: NotifierDeps['egress'];
  /** The subscriptions' templates and the failure log (`NotifierDeps.templates`). */
  templates?: NotifierDeps['templates'];
}

/** How long the recipients still owed a delivery are kept (longer than its retries). */
const DEFERRED_TTL_MS = 24 * 3600_000;

/** What nodemailer reports of the recipients the server refused while it accepted others. */
const sentInfoSchema = z.looseObject({
  rejectedErrors: z
    .array(z.looseObject({ recipient: z.string(), responseCode: z.number().optional() }))
    .optional(),
});

/** `Name <addr@example.com>` → `addr@example.com`; a bare address stays as it is. */
export function mailboxAddress(mailbox: string): string {
  const named = /<([^<>\s]+)>\s*$/.exec(mailbox.trim());
  return named?.[1] ?? mailbox.trim();
}

/** The SMTP password in the forms it may take on the wire (AUTH PLAIN / LOGIN are base64). */
function smtpSecrets(config: EmailChannelConfig): string[] {
  const auth = config.smtp.auth;
  if (auth === undefined || auth.pass === '') return [];
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  return [
    auth.pass,
    b64(auth.pass),
    b64(`\u0000${auth.user}\u0000${auth.pass}`),
    b64(`${auth.user}\u0000${auth.user}\u0000${auth.pass}`),
  ];
}

export function createEmailNotifier(
  config: EmailChannelConfig,
  deps: EmailNotifierDeps = {},
): Notifier {
  const { smtp } = config;
  const options: SMTPTransportOptions = {
    host: smtp.host,
    port: smtp.port,
    connectionTimeout: deps.timeouts?.connectionMs ?? 10_000,
    greetingTimeout: deps.timeouts?.greetingMs ?? 10_000,
    socketTimeout: deps.timeouts?.socketMs ?? 30_000,
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
    debug: false,
  };
  if (smtp.secure !== undefined) options.secure = smtp.secure;
  if (smtp.requireTLS !== undefined) options.requireTLS = smtp.requireTLS;
  if (smtp.auth !== undefined) options.auth = { user: smtp.auth.user, pass: smtp.auth.pass };
  // The policy applies where the socket is made: the host is resolved and checked once, and
  // nodemailer is handed a socket to the checked address.
  if (deps.egress !== undefined) options.getSocket = egressSocket(deps.egress);
  if (smtp.tls?.rejectUnauthorized !== undefined) {
    options.tls = { rejectUnauthorized: smtp.tls.rejectUnauthorized };
  }
  const transporter = smtp.pool
    ? nodemailer.createTransport({
        ...options,
        pool: true,
        maxRequeues: 0,
      } satisfies SMTPPoolOptions)
    : nodemailer.createTransport(options);
  const secrets = smtpSecrets(config);
  const envelope = { from: mailboxAddress(config.from), to: [...config.to] };

  async function send(notification: Notification): Promise<void> {
    const mail = applyEmailTemplate(
      renderEmail(notification, { subjectPrefix: config.subjectPrefix }),
      renderTemplates(
        notification,
        'plain',
        templatesFor(config.templates, deps.templates, notification.subscription),
      ),
      notification,
      config.subjectPrefix,
    );
    const state = deps.state;
    const deferredKey = state?.key('email', 'deferred', notification.id);
    // A retry after a server deferred some recipients goes to those only (the others have it).
    const owed =
      state === undefined || deferredKey === undefined
        ? []
        : (await state.redis.smembers(deferredKey)).map((a) => a.toLowerCase());
    const to =
      owed.length === 0 ? [...config.to] : config.to.filter((a) => owed.includes(a.toLowerCase()));
    if (owed.length > 0 && to.length === 0 && state !== undefined && deferredKey !== undefined) {
      // None of them is a recipient any more (the config changed): nothing is owed.
      await state.redis.del(deferredKey);
      return;
    }
    const message: SendMailOptions = {
      from: config.from,
      // The header names every recipient, also in a copy sent to the ones still owed it.
      to: [...config.to],
      envelope: owed.length === 0 ? envelope : { from: envelope.from, to },
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      messageId: mail.messageId,
      disableFileAccess: true,
      disableUrlAccess: true,
    };
    if (mail.inReplyTo !== null) message.inReplyTo = mail.inReplyTo;
    if (mail.references !== null) message.references = mail.references;
    let info: unknown;
    try {
      info = await transporter.sendMail(message);
    } catch (caught) {
      const verdict = classifyError(toError(caught));
      throw scrubDeliveryError(verdict.withMessage(`e-mail: ${verdict.message}`), secrets);
    }
    // Some recipients refused and others accepted (nodemailer throws when every recipient is
    // refused). A permanent refusal (5xx) is final; the ones the server deferred (4xx, such as
    // greylisting) are kept and the delivery is retried for them only.
    const refused = sentInfoSchema.safeParse(info).data?.rejectedErrors ?? [];
    const deferred = refused
      .filter((e) => e.responseCode !== undefined && e.responseCode >= 400 && e.responseCode < 500)
      .map((e) => e.recipient);
    if (state !== undefined && deferredKey !== undefined) {
      const m = state.redis.multi().del(deferredKey);
      if (deferred.length > 0)
        m.sadd(deferredKey, ...deferred).pexpire(deferredKey, DEFERRED_TTL_MS);
      await m.exec();
      if (deferred.length > 0)
        throw new DeliveryError({
          message: `e-mail: the server deferred ${String(deferred.length)} of ${String(to.length)} recipient(s) (4xx); retried for them only`,
          retryable: true,
          reason: 'server',
        });
    }
  }

  return {
    send,
    close(): Promise<void> {
      transporter.close();
      return Promise.resolve();
    },
  };
}

export const emailKind = defineChannelKind({
  type: 'email',
  schema: emailChannelConfigSchema,
  title: 'E-mail over SMTP (plain text and HTML, threaded per episode)',
  secretPaths: ['smtp.auth.pass'],
  secrets: smtpSecrets,
  redact: (config) =>
    config.smtp.auth === undefined
      ? config
      : { ...config, smtp: { ...config.smtp, auth: { ...config.smtp.auth, pass: REDACTED } } },
  describe: (config) =>
    `email via ${config.smtp.host}:${config.smtp.port} from ${config.from} to ${config.to.join(', ')}`,
  preview: (notification, _name, config) => {
    const { rendered, notes } = previewTemplates(notification, 'plain', config.templates);
    const mail = applyEmailTemplate(
      renderEmail(notification, { subjectPrefix: config.subjectPrefix }),
      rendered,
      notification,
      config.subjectPrefix,
    );
    const head = [
      `From: ${config.from}`,
      `To: ${config.to.join(', ')}`,
      `Subject: ${mail.subject}`,
      `Message-ID: ${mail.messageId}`,
      ...(mail.inReplyTo === null ? [] : [`In-Reply-To: ${mail.inReplyTo}`]),
      ...(mail.references === null ? [] : [`References: ${mail.references}`]),
    ];
    const end = notes.length === 0 ? '' : `${notes.join('\n')}\n`;
    return `${head.join('\n')}\n\n--- text/plain ---\n${mail.text}\n\n--- text/html ---\n${mail.html}\n${end}`;
  },
  destinations: (config) => [
    { field: 'smtp.host', host: config.smtp.host, port: config.smtp.port },
  ],
  create: (config, deps) =>
    createEmailNotifier(config, {
      ...(deps.state === undefined ? {} : { state: deps.state }),
      ...(deps.egress === undefined ? {} : { egress: deps.egress }),
      ...(deps.templates === undefined ? {} : { templates: deps.templates }),
    }),
});
