/**
 * A rendered message template (`../template.ts`, plain text: PagerDuty shows text as text) laid
 * over the events of one delivery: the title becomes the summary, the text `custom_details.message`.
 * For a test, only the trigger (the resolve that follows keeps its own summary). Pure.
 */
import { headerSafe, truncate } from '../text.js';
import { templatedPerTransition, type RenderedTemplate, type TemplateSource } from '../template.js';
import type { Notification } from '../types.js';
import { SUMMARY_MAX, type PagerdutyRequest } from './render.js';

export function applyPagerdutyTemplate(
  requests: PagerdutyRequest[],
  template: RenderedTemplate | null,
  options: { firstOnly?: boolean } = {},
): PagerdutyRequest[] {
  if (template === null) return requests;
  const title =
    template.title !== undefined && template.title !== ''
      ? truncate(headerSafe(template.title), SUMMARY_MAX)
      : null;
  const text = template.text !== undefined && template.text !== '' ? template.text : null;
  return requests.map((request, index): PagerdutyRequest => {
    if (options.firstOnly === true && index > 0) return request;
    const patch = <P extends { summary: string; custom_details: Record<string, unknown> }>(
      payload: P,
    ): P => ({
      ...payload,
      ...(title === null ? {} : { summary: title }),
      custom_details: { ...payload.custom_details, ...(text === null ? {} : { message: text }) },
    });
    return request.endpoint === 'enqueue'
      ? { endpoint: 'enqueue', body: { ...request.body, payload: patch(request.body.payload) } }
      : { endpoint: 'change', body: { ...request.body, payload: patch(request.body.payload) } };
  });
}

/** The requests of a notification with its templates (`templatedPerTransition`). */
export function templatedPagerdutyRequests(
  notification: Notification,
  render: (notification: Notification) => PagerdutyRequest[],
  templates: TemplateSource | undefined,
): PagerdutyRequest[] {
  return templatedPerTransition(notification, templates, {
    render,
    apply: applyPagerdutyTemplate,
  });
}
