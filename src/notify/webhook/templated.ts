/**
 * A rendered message template (`../template.ts`, plain text: JSON carries text as data) added to a
 * Standard Webhooks request: `data.rendered = { title?, text? }`, and the body signed again. A
 * request without templates is left as it was, byte for byte. Pure.
 */
import type { RenderedTemplate } from '../template.js';
import { signWebhook, type WebhookKey, type WebhookRequest } from './render.js';

export function applyWebhookTemplate(
  request: WebhookRequest,
  template: RenderedTemplate | null,
  key: WebhookKey,
): WebhookRequest {
  if (template === null) return request;
  const payload = JSON.parse(request.body) as { data: Record<string, unknown> };
  payload.data.rendered = {
    ...(template.title === undefined ? {} : { title: template.title }),
    ...(template.text === undefined ? {} : { text: template.text }),
  };
  const body = JSON.stringify(payload);
  const id = request.headers['webhook-id'] ?? '';
  const timestamp = Number(request.headers['webhook-timestamp'] ?? '0');
  const headers = Object.assign(Object.create(null) as Record<string, string>, request.headers);
  headers['webhook-signature'] = signWebhook(id, timestamp, body, key);
  return { body, headers };
}
