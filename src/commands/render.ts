import type { ChannelConfig } from '../config/schema.js';
import type { EventKind } from '../config/events.js';
import type { Notification } from '../notify/types.js';
import { renderSlack } from '../notify/slack/render.js';
import { renderEmail } from '../notify/email/render.js';
import { renderWebhookRequest } from '../notify/webhook/render.js';
import { decodeWebhookSecret } from '../notify/webhook/config.js';
import { sampleTransition } from './samples.js';
import { isSensitiveHeader, REDACTED } from '../config/redact.js';

export function sampleNotification(
  kind: EventKind,
  channel: string,
  type: Notification['type'],
  now: number,
): Notification {
  const t = sampleTransition(kind, now);
  return {
    id: `${t.id}:sample:${channel}`,
    type,
    subscription: 'sample',
    channel,
    transitions: [t],
    createdAt: now,
  };
}

/** Exactly what a channel would receive for a sample transition of `kind` (secrets are not printed). */
export function renderForChannel(
  kind: EventKind,
  name: string,
  config: ChannelConfig,
  now = Date.now(),
): string {
  const n = sampleNotification(kind, name, 'event', now);
  switch (config.type) {
    case 'slack': {
      const payload = renderSlack(
        n,
        config.mention === undefined ? {} : { mention: config.mention },
      );
      return `POST <slack webhook URL of ${name}>\ncontent-type: application/json\n\n${JSON.stringify(payload, null, 2)}\n`;
    }
    case 'email': {
      const mail = renderEmail(
        n,
        config.subjectPrefix === undefined ? {} : { subjectPrefix: config.subjectPrefix },
      );
      const head = [
        `From: ${config.from}`,
        `To: ${config.to.join(', ')}`,
        `Subject: ${mail.subject}`,
        `Message-ID: ${mail.messageId}`,
        ...(mail.inReplyTo === null ? [] : [`In-Reply-To: ${mail.inReplyTo}`]),
        ...(mail.references === null ? [] : [`References: ${mail.references}`]),
      ];
      return `${head.join('\n')}\n\n--- text/plain ---\n${mail.text}\n\n--- text/html ---\n${mail.html}\n`;
    }
    case 'webhook': {
      const key = decodeWebhookSecret(config.secret) ?? new Uint8Array(16);
      const req = renderWebhookRequest(n, key, now, config.headers ?? {});
      const headers = Object.entries(req.headers).map(
        ([k, v]) => `${k}: ${isSensitiveHeader(k) ? REDACTED : v}`,
      );
      return `POST <webhook URL of ${name}>\n${headers.join('\n')}\n\n${JSON.stringify(JSON.parse(req.body), null, 2)}\n`;
    }
  }
}
