import { describe, expect, it } from 'vitest';
import { channelConfigSchema } from '../../config/schema.js';
import { renderForChannel } from '../../commands/render.js';
import { redactChannel } from '../kinds.js';

const TOKEN = 'xoxb-111-222-SecretBotTokenValue';

function issues(input: unknown): string[] {
  const result = channelConfigSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('slack channel: incoming webhook or Slack app', () => {
  it('accepts either mode and nothing in between, each error naming its field', () => {
    expect(issues({ type: 'slack', webhookUrl: 'https://hooks.slack.com/services/T/B/x' })).toEqual(
      [],
    );
    expect(issues({ type: 'slack', botToken: TOKEN, channel: 'C0123ABCD' })).toEqual([]);
    expect(issues({ type: 'slack' })).toEqual([
      'webhookUrl: required: an incoming-webhook URL, or botToken and channel for a Slack app',
    ]);
    expect(
      issues({ type: 'slack', webhookUrl: 'https://hooks.slack.com/x', botToken: TOKEN }),
    ).toContain(
      'botToken: give either webhookUrl (incoming webhook) or botToken (Slack app), not both',
    );
    expect(issues({ type: 'slack', botToken: TOKEN })).toEqual([
      'channel: required with botToken: a channel id such as C0123ABCD or a name such as #alerts',
    ]);
    expect(
      issues({ type: 'slack', webhookUrl: 'https://hooks.slack.com/x', channel: 'C0123ABCD' }),
    ).toEqual([
      'channel: only for a Slack app (with botToken); an incoming webhook posts where it was made for',
    ]);
    expect(issues({ type: 'slack', botToken: 'xoxp-user-token', channel: 'C0123ABCD' })).toEqual([
      'botToken: expected a Slack bot token: "xoxb-" followed by letters, digits and dashes',
    ]);
  });

  it('redacts the bot token and previews chat.postMessage without it', () => {
    const config = channelConfigSchema.parse({
      type: 'slack',
      botToken: TOKEN,
      channel: '#alerts',
      mention: '<!here>',
    });
    expect(redactChannel(config)).toMatchObject({ botToken: '[REDACTED]', channel: '#alerts' });
    const text = renderForChannel('incident.opened', 'chat', config, Date.UTC(2026, 0, 1));
    expect(text).toContain('POST https://slack.com/api/chat.postMessage');
    expect(text).toContain('"channel": "#alerts"');
    expect(text).not.toContain('SecretBotTokenValue');
  });
});
