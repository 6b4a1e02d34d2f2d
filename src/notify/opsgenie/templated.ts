/**
 * A rendered message template (`../template.ts`, plain text) laid over the requests of one
 * delivery: a create-alert gets the title as its message and the text as its description; a note
 * or a close gets the text as its note. For a test, only the first request. Pure.
 */
import { headerSafe, truncate } from '../text.js';
import { templatedPerTransition, type RenderedTemplate, type TemplateSource } from '../template.js';
import type { Notification } from '../types.js';
import { OPSGENIE_LIMITS } from './config.js';
import { type OpsgenieRequest } from './render.js';

export function applyOpsgenieTemplate(
  requests: OpsgenieRequest[],
  template: RenderedTemplate | null,
  options: { firstOnly?: boolean } = {},
): OpsgenieRequest[] {
  if (template === null) return requests;
  const title =
    template.title !== undefined && template.title !== '' ? headerSafe(template.title) : null;
  const text = template.text !== undefined && template.text !== '' ? template.text : null;
  return requests.map((request, index): OpsgenieRequest => {
    if (options.firstOnly === true && index > 0) return request;
    switch (request.action) {
      case 'create':
        return {
          ...request,
          body: {
            ...request.body,
            ...(title === null ? {} : { message: truncate(title, OPSGENIE_LIMITS.message) }),
            ...(text === null ? {} : { description: truncate(text, OPSGENIE_LIMITS.description) }),
          },
        };
      case 'note':
      case 'close':
        return text === null
          ? request
          : { ...request, body: { ...request.body, note: truncate(text, OPSGENIE_LIMITS.note) } };
      case 'priority':
        return request;
    }
  });
}

/** The requests of a notification with its templates (`templatedPerTransition`). */
export function templatedOpsgenieRequests(
  notification: Notification,
  render: (notification: Notification) => OpsgenieRequest[],
  templates: TemplateSource | undefined,
): OpsgenieRequest[] {
  return templatedPerTransition(notification, templates, {
    render,
    apply: applyOpsgenieTemplate,
  });
}
