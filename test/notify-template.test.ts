/**
 * Message templates end to end: a channel from the config with a template delivers the templated
 * text to a real local receiver (through the registry, as the delivery worker sends); a
 * subscription's template overrides the channel's; a template that blows its limits is dropped
 * for that delivery — the default rendering is sent and a warning told.
 */
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../src/config/schema.js';
import { startSlackApiReceiver } from '../src/demo/receivers/slack-api.js';
import { createNotifier } from '../src/notify/registry.js';
import { createSlackAppNotifier } from '../src/notify/slack/app.js';
import { slackAppConfigOf, slackKindSchema } from '../src/notify/slack/index.js';
import type { TemplateFailure } from '../src/notify/template.js';
import type { Notifier } from '../src/notify/types.js';
import { testRedis } from './helpers/redis.js';
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

describe('batch-like templates and the living message, delivered', () => {
  it('a digest takes its template with the console links; a runaway reminder template falls back to the default with a warning', async () => {
    const receiver = await startReceiver(undefined, '/hook');
    const config = configWith({
      oncall: {
        type: 'webhook',
        url: receiver.url,
        secret: SECRET,
        templates: {
          digest: {
            title: '{{ title }}',
            text: '{{ count }} changes{% for e in events %}\n- {{ e.line }}{% endfor %}\nconsole: {{ links.console }}',
          },
          reminder: {
            text: '{% for e in events %}{% for i in (1..100000000) %}x{% endfor %}{% endfor %}',
          },
        },
      },
    });
    const channel = config.channels.oncall;
    if (channel === undefined) throw new Error('no channel');
    const warnings: TemplateFailure[] = [];
    const notifier = createNotifier(channel, {
      publicUrl: 'https://statuswatch.example.test',
      templates: { warn: (f) => warnings.push(f) },
    });
    cleanups.push(
      () => receiver.close(),
      () => notifier.close(),
    );
    const two = [transition('incident.opened'), transition('status.changed')];
    await notifier.send(
      notification(two, { id: 'digest-1', type: 'digest', title: 'Daily digest' }),
    );
    await notifier.send(
      notification([transition('incident.opened')], { id: 'reminder-1', type: 'reminder' }),
    );
    const [digest, reminder] = await receiver.waitFor(2);
    const verify = (body: string, headers: Record<string, unknown>) =>
      new Webhook(SECRET).verify(body, headers as Record<string, string>) as {
        type: string;
        data: { rendered?: { title?: string; text?: string } };
      };
    const d = verify(digest?.body ?? '', digest?.headers ?? {});
    expect(d.type).toBe('digest');
    expect(d.data.rendered?.title).toBe('Daily digest');
    expect(d.data.rendered?.text).toMatch(
      /^2 changes\n- Stripe: incident opened — Card payments failing \(2026-01-01 12:00 UTC\)\n- Stripe: status/,
    );
    expect(d.data.rendered?.text).toContain(
      'console: https://statuswatch.example.test/?subscription=payments',
    );
    // The reminder went out in its default form (no data.rendered), and the warning says why.
    const r = verify(reminder?.body ?? '', reminder?.headers ?? {});
    expect(r.type).toBe('reminder');
    expect(r.data.rendered).toBeUndefined();
    expect(warnings).toEqual([
      expect.objectContaining({
        channel: 'oncall',
        kind: 'reminder',
        field: 'text',
        reason: expect.stringMatching(/limit exceeded/) as string,
      }),
    ]);
  });

  it('Slack app: the living message takes `parent`, the thread reply its kind, a grouped batch `batch`', async () => {
    const tr = await testRedis('tmpl-app');
    const slack = await startSlackApiReceiver({ token: 'xoxb-1-2-tmpl', channels: ['C0TMPL001'] });
    cleanups.push(
      () => tr.cleanup(),
      () => slack.close(),
    );
    // The `slack` kind's schema (as the config loads it): `parent` is for app mode only.
    const config = slackAppConfigOf(
      slackKindSchema.parse({
        type: 'slack',
        botToken: 'xoxb-1-2-tmpl',
        channel: 'C0TMPL001',
        apiUrl: slack.url,
        mention: '<!here>',
        templates: {
          parent: {
            title: 'LIVE {{ episode.state }}: {{ incident.title }}',
            text: '*{{ service.name }}* is {{ episode.state }} — {{ incident.update }}',
          },
          'incident.updated': { text: 'UPDATE {{ change }}' },
          batch: {
            title: 'BATCH {{ count }}',
            text: '{% for e in events %}• {{ e.summary }}\n{% endfor %}',
          },
        },
      }),
    );
    if (config === null) throw new Error('not app mode');
    const notifier = createSlackAppNotifier(config, {
      state: { redis: tr.redis, key: (...parts: string[]) => tr.keys.key(...parts) },
    });
    cleanups.push(() => notifier.close());
    const hostile = hostileTransition();
    await notifier.send(notification([hostile]));
    let [parent] = slack.messages('C0TMPL001');
    expect(parent?.text).toBe(
      '<!here> LIVE open: &lt;!channel&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt; &lt;script&gt;alert(1)&lt;/script&gt; Subject Bcc: victim@example.com',
    );
    expect(JSON.stringify(parent?.blocks)).toContain('is open — &lt;!channel&gt;');

    const updated = transition('incident.updated', {
      id: 'tupd',
      incident: { ...hostile.incident!, status: 'identified' },
    });
    await notifier.send(notification([updated], { id: 'tupd:payments:oncall' }));
    [parent] = slack.messages('C0TMPL001');
    expect(parent?.edits).toBe(1);
    expect(parent?.replies).toHaveLength(1);
    expect(parent?.replies[0]?.text).toContain('incident updated');
    expect(JSON.stringify(parent?.replies[0]?.blocks)).toContain(
      'UPDATE investigating → identified',
    );
    // Nothing live but the channel's mention, in the parent and its reply.
    const live = JSON.stringify(parent).match(/<[!@#][^>]*>|<https?:[^>]*>/g) ?? [];
    expect(
      live.every(
        (m) =>
          m === '<!here>' ||
          m.startsWith('<https://stripe.com/') ||
          m.startsWith('<https://status.stripe.com/'),
      ),
    ).toBe(true);

    const batch = [
      transition('incident.opened', {
        id: 'b1',
        feedId: 'adyen',
        subject: 'incident:b1',
        service: { ...hostile.service, feedId: 'adyen', name: 'Adyen' },
      }),
      transition('status.changed', { id: 'b2' }),
    ];
    await notifier.send(notification(batch, { id: 'batch-1' }));
    const messages = slack.messages('C0TMPL001');
    const listing = messages[messages.length - 1];
    expect(listing?.text).toBe('<!here> BATCH 2');
    expect(JSON.stringify(listing?.blocks)).toContain('• Adyen: incident opened');
  });
});
