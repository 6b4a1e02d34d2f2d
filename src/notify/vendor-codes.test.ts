import { describe, expect, it } from 'vitest';
import {
  OPSGENIE_ERROR_MESSAGES,
  opsgenieCode,
  PAGERDUTY_ERROR_MESSAGES,
  pagerdutyCode,
  SLACK_ERROR_CODES,
  slackCode,
  TEAMS_ERROR_CODES,
  teamsCode,
} from './vendor-codes.js';

describe('vendor codes a team may read', () => {
  it('passes documented Slack words and hides any other', () => {
    for (const word of [
      'channel_not_found',
      'invalid_auth',
      'not_in_channel',
      'is_archived',
      'ratelimited',
      'invalid_payload',
      'channel_is_archived',
      'no_service',
    ]) {
      expect(slackCode(word)).toBe(word);
    }
    expect(slackCode('canary_4b1e_secret_banner')).toBe('unknown_error');
    expect(slackCode('')).toBe('unknown_error');
    expect(slackCode(null)).toBe('unknown_error');
    expect(slackCode(undefined)).toBe('unknown_error');
    // Case matters: Slack's words are lower-case.
    expect(slackCode('Invalid_Auth')).toBe('unknown_error');
  });

  it("passes PagerDuty's documented 400 messages only", () => {
    expect(pagerdutyCode('Event object is invalid')).toBe('Event object is invalid');
    expect(pagerdutyCode('Event object format is unrecognized')).toBe(
      'Event object format is unrecognized',
    );
    expect(pagerdutyCode('Event object is invalid: CANARY')).toBeNull();
    expect(pagerdutyCode(42)).toBeNull();
    expect(pagerdutyCode(undefined)).toBeNull();
  });

  it("passes Opsgenie's documented messages only", () => {
    expect(opsgenieCode('Request body is not processable. Please check the errors.')).toBe(
      'Request body is not processable. Please check the errors.',
    );
    expect(opsgenieCode('Key format is not valid!')).toBe('Key format is not valid!');
    expect(opsgenieCode('CANARY')).toBeNull();
    expect(opsgenieCode({ message: 'Key format is not valid!' })).toBeNull();
  });

  it("passes Power Automate's documented Teams codes only", () => {
    expect(teamsCode('WorkflowNotFound')).toBe('WorkflowNotFound');
    expect(teamsCode('DirectApiAuthorizationRequired')).toBe('DirectApiAuthorizationRequired');
    expect(teamsCode('ScriptedFailure')).toBeNull();
    expect(teamsCode(null)).toBeNull();
  });

  it('keeps the lists short, fixed and free of anything a receiver could smuggle text in', () => {
    for (const word of SLACK_ERROR_CODES) expect(word).toMatch(/^[a-z_]{1,64}$/);
    for (const code of TEAMS_ERROR_CODES) expect(code).toMatch(/^[A-Za-z]{1,64}$/);
    for (const text of [...PAGERDUTY_ERROR_MESSAGES, ...OPSGENIE_ERROR_MESSAGES])
      expect(text).toMatch(/^[\w .!,]{1,100}$/);
    expect(SLACK_ERROR_CODES.size).toBeLessThan(100);
  });
});
