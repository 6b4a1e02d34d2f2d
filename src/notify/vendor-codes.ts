/**
 * The vendor error codes a team may read (docs/security.md): a failed send shows a team
 * its outcome class, retryable or permanent, the HTTP status and at most one code from these
 * fixed lists — never the text a receiver chose, which a team pointing a channel at a server of
 * its choice could use to read that server's answers through statuswatch. A code a receiver
 * answers that is not listed reads `unknown_error` (Slack) or nothing (the others); the operator's
 * log has the receiver's words (`DeliveryError.detail`).
 */

/** Slack's `ok:false` words that no retry fixes: the token is wrong, revoked or lacks a scope. */
export const SLACK_AUTH_ERRORS: ReadonlySet<string> = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'missing_scope',
  'no_permission',
  'not_allowed_token_type',
]);

/**
 * Slack's documented `error` words: incoming webhooks ("Handling errors" of "Sending messages
 * using incoming webhooks") and the Web API methods used here (chat.postMessage, chat.update),
 * including the errors common to every method.
 */
export const SLACK_ERROR_CODES: ReadonlySet<string> = new Set([
  // incoming webhooks
  'invalid_payload',
  'user_not_found',
  'channel_not_found',
  'channel_is_archived',
  'action_prohibited',
  'posting_to_general_channel_denied',
  'too_many_attachments',
  'no_service',
  'no_service_id',
  'no_team',
  'team_disabled',
  'invalid_token',
  'no_active_hooks',
  'no_text',
  'invalid_blocks',
  'invalid_blocks_format',
  'too_many_blocks',
  // chat.postMessage / chat.update
  'not_in_channel',
  'is_archived',
  'msg_too_long',
  'restricted_action',
  'restricted_action_read_only_channel',
  'restricted_action_thread_only_channel',
  'restricted_action_non_threadable_channel',
  'team_access_not_granted',
  'message_limit_exceeded',
  'messages_tab_disabled',
  'as_user_not_supported',
  'ekm_access_denied',
  'message_not_found',
  'cant_update_message',
  'edit_window_closed',
  'is_inactive',
  'update_failed',
  'invalid_metadata_format',
  'duplicate_channel_not_found',
  'duplicate_message_not_found',
  // every method
  ...SLACK_AUTH_ERRORS,
  'org_login_required',
  'two_factor_setup_required',
  'access_denied',
  'accesslimited',
  'enterprise_is_restricted',
  'team_added_to_org',
  'invalid_arguments',
  'invalid_arg_name',
  'invalid_array_arg',
  'invalid_charset',
  'invalid_form_data',
  'invalid_post_type',
  'missing_post_type',
  'method_deprecated',
  'deprecated_endpoint',
  'request_timeout',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'ratelimited',
  'rate_limited',
]);

/** What a team reads of a Slack `error` word: the word when Slack documents it, else `unknown_error`. */
export function slackCode(word: string | null | undefined): string {
  return typeof word === 'string' && SLACK_ERROR_CODES.has(word) ? word : 'unknown_error';
}

/**
 * PagerDuty Events API v2's documented `message` of a 400 answer ("Event object is invalid" with
 * its `errors` list; "Event object format is unrecognized" for a body that is not an event).
 * The `errors` list itself is the operator's: it quotes fields of the request.
 */
export const PAGERDUTY_ERROR_MESSAGES: ReadonlySet<string> = new Set([
  'Event object is invalid',
  'Event object format is unrecognized',
  'Invalid routing key',
]);

/** The documented PagerDuty message of a 400 body, or null. */
export function pagerdutyCode(message: unknown): string | null {
  return typeof message === 'string' && PAGERDUTY_ERROR_MESSAGES.has(message) ? message : null;
}

/**
 * Opsgenie's documented answers (docs.opsgenie.com "Response", the Alert API): the top-level
 * `message` of a refusal. The `errors` map and the `requestId` are the operator's.
 */
export const OPSGENIE_ERROR_MESSAGES: ReadonlySet<string> = new Set([
  'Request body is not processable. Please check the errors.',
  'Key format is not valid!',
  'Could not authenticate.',
  'You are making too many requests! To avoid errors, we recommend you limit requests.',
  'Alert does not exist',
  'Internal Server Error',
]);

/** The documented Opsgenie message of a refusal, or null. */
export function opsgenieCode(message: unknown): string | null {
  return typeof message === 'string' && OPSGENIE_ERROR_MESSAGES.has(message) ? message : null;
}

/**
 * Power Automate's (Teams Workflows webhook) `error.code` values for a refused trigger call: the
 * flow is gone or off, the caller is not allowed, the body does not fit the trigger, throttled.
 */
export const TEAMS_ERROR_CODES: ReadonlySet<string> = new Set([
  'WorkflowNotFound',
  'WorkflowTriggerNotFound',
  'WorkflowTriggerIsNotEnabled',
  'WorkflowNotEnabled',
  'DirectApiAuthorizationRequired',
  'MisMatchingOAuthClaims',
  'AuthorizationFailed',
  'TriggerInputSchemaMismatch',
  'InvalidRequestContent',
  'InvalidTemplate',
  'UnsupportedMediaType',
  'TooManyRequests',
]);

/** The documented Teams / Power Automate error code, or null. */
export function teamsCode(code: string | null | undefined): string | null {
  return typeof code === 'string' && TEAMS_ERROR_CODES.has(code) ? code : null;
}
