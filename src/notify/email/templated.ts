/**
 * A rendered message template (`../template.ts`, rendered as plain text) laid over a mail: the
 * title becomes the subject (after the prefix, on one line), the text the body. The HTML part is
 * the same text HTML-escaped: a template is text in a mail, never markup. Pure.
 */
import { escapeHtml, headerSafe, truncate } from '../text.js';
import type { RenderedTemplate } from '../template.js';
import type { Notification } from '../types.js';
import { SUBJECT_MAX, type EmailMessage } from './render.js';

export function applyEmailTemplate(
  mail: EmailMessage,
  rendered: RenderedTemplate | null,
  notification: Notification,
  subjectPrefix: string | undefined,
): EmailMessage {
  if (rendered === null) return mail;
  let subject = mail.subject;
  if (rendered.title !== undefined && rendered.title !== '') {
    const prefix = headerSafe(subjectPrefix ?? '');
    subject = truncate(
      headerSafe(prefix === '' ? rendered.title : `${prefix} ${rendered.title}`),
      SUBJECT_MAX,
    );
  }
  const footer = `Subscription: ${notification.subscription} · Delivery: ${notification.id}`;
  const body = rendered.text !== undefined && rendered.text !== '' ? rendered.text : null;
  const text = body === null ? mail.text : `${body}\n\n--\n${footer}\nSent by statuswatch.\n`;
  const html =
    body === null
      ? mail.html.replace(
          `<title>${escapeHtml(mail.subject)}</title>`,
          `<title>${escapeHtml(subject)}</title>`,
        )
      : `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>\n<body style="font-family:sans-serif;font-size:14px">\n<div style="white-space:pre-wrap">${escapeHtml(body)}</div>\n<p style="color:#666;font-size:12px;margin-top:24px">${escapeHtml(footer)}<br>Sent by statuswatch.</p>\n</body></html>\n`;
  return { ...mail, subject, text, html };
}
