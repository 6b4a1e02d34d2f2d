/**
 * Message templates end to end: a channel from the config with a template delivers the templated
 * text to a real local receiver (through the registry, as the delivery worker sends); a
 * subscription's template overrides the channel's; a template that blows its limits is dropped
 * for that delivery — the default rendering is sent and a warning told.
 */
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../src/config/schema.js';
import { createNotifier } from '../src/notify/registry.js';
import type { TemplateFailure } from '../src/notify/template.js';
import type { Notifier } from '../src/notify/types.js';
import { hostileTransition, notification, startReceiver, transition } from './notify-helpers.js';

const SECRET = `whsec_${Buffer.from('statuswatch-test-signing-key-32b').toString('base64')}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function configWith(channels: Record<string, unknown>, templates?: unknown) {
  return configSchema.parse({
    upstream: { baseUrl: 'https://status.example.test' },
    redis: { url: 'redis://127.0.0.1:6379' },
    channels,
    subscriptions: [
      {
        name: 'payments',
        services: ['stripe'],
        channels: Object.keys(channels),
        ...(templates === undefined ? {} : { templates }),
      },
    ],
  });
}

describe('message templates, delivered', () => {
  it('a config channel with a template delivers the templated text (webhook, signed)', async () => {
    const receiver = await startReceiver(undefined, '/hook');
    const config = configWith(
      {
        oncall: {
          type: 'webhook',
          url: receiver.url,
          secret: SECRET,
          templates: {
            'incident.opened': {
              title: '{{ service.name }} is down',
              text: '{{ incident.title }}\nstatus: {{ incident.status }}',
            },
            default: { text: 'other: {{ summary }}' },
          },
        },
      },
      { oncall: { 'incident.opened': { title: 'payments: {{ summary }}' } } },
    );
    const subscription = config.subscriptions[0];
    const warnings: TemplateFailure[] = [];
    const channel = config.channels.oncall;
    if (channel === undefined) throw new Error('no channel');
    const notifier: Notifier = createNotifier(channel, {
      templates: {
        subscription: (name) =>
          name === subscription?.name ? subscription.templates?.oncall : undefined,
        warn: (f) => warnings.push(f),
      },
    });
    cleanups.push(
      () => receiver.close(),
      () => notifier.close(),
    );
    await notifier.send(notification([transition('incident.opened')]));
    await notifier.send(notification([transition('status.changed')]));
    const [opened, changed] = await receiver.waitFor(2);
    const verify = (body: string, headers: Record<string, unknown>) =>
      new Webhook(SECRET).verify(body, headers as Record<string, string>) as {
        data: { rendered?: { title?: string; text?: string } };
      };
    const first = verify(opened?.body ?? '', opened?.headers ?? {});
    expect(first.data.rendered).toEqual({
      // The subscription's title over the channel's; the channel's text.
      title: 'payments: Stripe: incident opened — Card payments failing',
      text: 'Card payments failing\nstatus: investigating',
    });
    const second = verify(changed?.body ?? '', changed?.headers ?? {});
    expect(second.data.rendered?.text).toMatch(/^other: Stripe: status /);
    expect(warnings).toEqual([]);
  });

  it('Slack: hostile upstream text stays inert; a runaway template falls back to the default with a warning', async () => {
    const receiver = await startReceiver();
    const channels = {
      chat: {
        type: 'slack',
        webhookUrl: receiver.url,
        mention: '<!here>',
        templates: {
          'incident.opened': {
            title: 'Opened: {{ incident.title }}',
            text: '*{{ service.name }}*',
          },
          'incident.resolved': { text: '{% for i in (1..100000000) %}x{% endfor %}' },
        },
      },
    };
    const config = configWith(channels);
    const warnings: TemplateFailure[] = [];
    const channel = config.channels.chat;
    if (channel === undefined) throw new Error('no channel');
    const notifier = createNotifier(channel, { templates: { warn: (f) => warnings.push(f) } });
    cleanups.push(
      () => receiver.close(),
      () => notifier.close(),
    );
    await notifier.send(notification([hostileTransition()]));
    const started = performance.now();
    await notifier.send(notification([transition('incident.resolved')]));
    expect(performance.now() - started).toBeLessThan(2000);
    const [hostile, resolved] = await receiver.waitFor(2);
    const live = (hostile?.body ?? '').match(/<[!@#][^>]*>|<https?:[^>]*>/g) ?? [];
    expect(live.every((m) => m === '<!here>')).toBe(true);
    expect(hostile?.body).toContain('Opened: &lt;!channel&gt;');
    expect(hostile?.body).toContain('*&lt;!here&gt; Stripe &amp; &lt;@U999&gt;*');
    // The default rendering of the resolution (its usual header), and the warning.
    expect(resolved?.body).toContain('incident resolved');
    expect(resolved?.body).not.toContain('xxxx');
    expect(warnings).toEqual([
      expect.objectContaining({ channel: 'oncall', kind: 'incident.resolved', field: 'text' }),
    ]);
  });
});
