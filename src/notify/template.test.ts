import { describe, expect, it } from 'vitest';
import { EVENT_KINDS } from '../config/events.js';
import { channelConfigSchema, configSchema } from '../config/schema.js';
import { validateChannel } from '../api/model.js';
import { ApiError } from '../api/errors.js';
import { renderForChannel } from '../commands/render.js';
import { sampleTransition } from '../commands/samples.js';
import type { Transition } from '../diff/transition.js';
import { kindOf, type ChannelConfig } from './kinds.js';
import {
  renderTemplates,
  templateProblems,
  type TemplateFailure,
  type TemplateMap,
} from './template.js';
import type { Notification } from './types.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

const BASE: Record<string, Record<string, unknown>> = {
  slack: {
    type: 'slack',
    webhookUrl: 'https://hooks.slack.test/services/T0/B0/x',
    mention: '<!here>',
  },
  'slack-app': { type: 'slack', botToken: 'xoxb-1-2-abc', channel: 'C0123ABCD' },
  email: {
    type: 'email',
    smtp: { host: 'smtp.example.test', port: 25 },
    from: 'sw@example.test',
    to: ['sre@example.test'],
  },
  webhook: {
    type: 'webhook',
    url: 'https://hooks.example.test/sw',
    secret: `whsec_${Buffer.from('statuswatch-test-signing-key-32b').toString('base64')}`,
  },
  teams: { type: 'teams', webhookUrl: 'https://flows.example.test/workflows/x' },
  pagerduty: { type: 'pagerduty', routingKey: 'R0123456789abcdef0123456789abcde' },
  opsgenie: { type: 'opsgenie', apiKey: 'genie-key-0123' },
};

function channel(base: string, templates: TemplateMap | Record<string, unknown>): ChannelConfig {
  return channelConfigSchema.parse({ ...BASE[base], templates });
}

function event(t: Transition, overrides: Partial<Notification> = {}): Notification {
  return {
    id: `${t.id}:payments:oncall`,
    type: 'event',
    subscription: 'payments',
    channel: 'oncall',
    transitions: [t],
    createdAt: NOW,
    ...overrides,
  };
}

const HOSTILE =
  '<!channel> <https://evil.example|x> *bold* <script>alert(1)</script> [y](https://evil.example)';

function hostile(): Transition {
  const t = sampleTransition('incident.opened', NOW);
  return {
    ...t,
    service: { ...t.service, name: `Stripe ${HOSTILE}` },
    incident: t.incident === null ? null : { ...t.incident, title: HOSTILE, latestUpdate: HOSTILE },
  };
}

describe('template validation', () => {
  it('names the line of a syntax error, an unknown tag, filter or variable', () => {
    expect(templateProblems('ok\n{% if %}')).toEqual([expect.stringMatching(/^line 2: /)]);
    expect(templateProblems('{{ service.name }}\n{{ sevice.name }}')).toEqual([
      'line 2: unknown variable "sevice.name"',
    ]);
    expect(templateProblems('{{ incident.titel }}')[0]).toMatch(
      /^line 1: unknown variable "incident.titel" \(incident has: id, title/,
    );
    expect(templateProblems('a\n\n{{ summary | raw }}')).toEqual(['line 3: undefined filter: raw']);
    expect(templateProblems('{% include "x" %}')[0]).toMatch(/^line 1: tag "include" not found/);
    // Loop variables, assignments and the open maps are fine.
    expect(
      templateProblems(
        '{% assign s = service.name %}{% for i in (1..3) %}{{ forloop.index }}{{ s }}{% endfor %}{{ current.status }}{{ previous.score }}{{ links.console }}',
      ),
    ).toEqual([]);
  });

  it('is refused when the config loads, naming the field and the line', () => {
    const result = configSchema.shape.channels.safeParse({
      oncall: {
        ...BASE.slack,
        templates: { 'incident.opened': { title: '{{ summary }}', text: 'x\n{{ sevice }}' } },
      },
    });
    expect(result.success).toBe(false);
    const issue = result.error?.issues[0];
    expect(issue?.path).toEqual(['oncall', 'templates', 'incident.opened', 'text']);
    expect(issue?.message).toBe('line 2: unknown variable "sevice"');
    // An unknown event kind is refused too.
    expect(channelConfigSchema.safeParse({ ...BASE.slack, templates: { nope: {} } }).success).toBe(
      false,
    );
  });

  it('is refused when the API stores it, naming the field and the line', () => {
    let caught: unknown;
    try {
      validateChannel({ ...BASE.webhook, templates: { default: { title: '{% for %}' } } });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    const text = JSON.stringify(caught, Object.getOwnPropertyNames(caught));
    expect(text).toContain('templates.default.title');
    expect(text).toContain('line 1:');
  });
});

describe('escaping', () => {
  const templates = {
    default: {
      title: '<!channel> {{ incident.title }}',
      text: '*{{ service.name }}* <https://operator.example|runbook> [z](https://evil.example)\n{{ incident.update }}',
    },
  };

  it('keeps hostile upstream text (and live syntax in the template) inert on Slack', () => {
    const out = renderForChannel('incident.opened', 'oncall', channel('slack', templates), NOW);
    const rendered = renderTemplates(event(hostile()), 'slack', { channel: templates });
    expect(rendered?.text).toContain('&lt;!channel&gt; &lt;https://evil.example|x&gt; *bold*');
    for (const text of [rendered?.title ?? '', rendered?.text ?? '']) {
      expect(text).not.toMatch(/<[!@#]|<https?:/);
      expect(text).not.toContain('<script>');
    }
    // The channel's own mention is kept, nothing else is live.
    expect(out).toContain('<!here> *Stripe*');
    const live = out.match(/<[!@#][^>]*>|<https?:[^>]*>/g) ?? [];
    expect(live.length).toBeGreaterThan(0);
    expect(live.every((m) => m === '<!here>')).toBe(true);
  });

  it('keeps hostile upstream text inert in Teams card text and e-mail HTML', () => {
    const teams = renderTemplates(event(hostile()), 'teams', { channel: templates });
    expect(teams?.text).toContain('\\<script\\>');
    expect(teams?.text).toContain('\\[y\\]\\(https://evil.example\\)');
    expect(teams?.text).toContain('\\[z\\]'); // the template's own link syntax too
    expect(teams?.text).not.toMatch(/(^|[^\\])[[<]/);

    const mailConfig = channel('email', templates);
    const notification = event(hostile());
    const mail = kindOf(mailConfig).preview(notification, 'mail', mailConfig, NOW);
    const html = mail.slice(mail.indexOf('--- text/html ---'));
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toContain('href="https://evil');
  });
});

describe('limits', () => {
  it('stops an endless loop quickly; the default rendering is used and a warning told', () => {
    for (const text of [
      '{% for i in (1..100000000) %}x{% endfor %}',
      '{% for i in (1..2000000) %}{% for j in (1..1000) %}x{% endfor %}{% endfor %}',
    ]) {
      const warnings: TemplateFailure[] = [];
      const started = performance.now();
      const rendered = renderTemplates(event(sampleTransition('status.changed', NOW)), 'slack', {
        channel: { default: { text } },
        warn: (f) => warnings.push(f),
      });
      expect(performance.now() - started).toBeLessThan(1000);
      expect(rendered).toBeNull();
      expect(warnings).toEqual([
        expect.objectContaining({
          channel: 'oncall',
          kind: 'status.changed',
          field: 'text',
          reason: expect.stringMatching(/limit exceeded/) as string,
        }),
      ]);
    }
  });

  it('refuses a huge output (title 4 KB, text 16 KB) and keeps the field that rendered', () => {
    const warnings: TemplateFailure[] = [];
    const rendered = renderTemplates(event(sampleTransition('sla.breached', NOW)), 'plain', {
      channel: {
        default: {
          title: '{% for i in (1..500) %}0123456789{% endfor %}',
          text: 'fine {{ kind }}',
        },
      },
      warn: (f) => warnings.push(f),
    });
    expect(rendered).toEqual({ text: 'fine sla.breached' });
    expect(warnings[0]?.reason).toMatch(/over the limit of 4096/);
  });

  it('a failed template leaves the preview as the default rendering, with a note', () => {
    const plain = renderForChannel(
      'incident.opened',
      'oncall',
      channelConfigSchema.parse(BASE.webhook),
      NOW,
    );
    const broken = renderForChannel(
      'incident.opened',
      'oncall',
      channel('webhook', { default: { text: '{% for i in (1..100000000) %}x{% endfor %}' } }),
      NOW,
    );
    expect(broken.startsWith(plain)).toBe(true);
    expect(broken).toMatch(
      /\(template incident.opened text failed: .*limit exceeded.*; default rendering\)/,
    );
  });
});

describe('every event kind on every channel kind', () => {
  const templates = {
    default: {
      title: 'TITLEMARK {{ kind }} {{ service.name }}',
      text: 'TEXTMARK {{ event }}: {{ summary }} / {{ change }} / {{ subscription }}',
    },
  };

  for (const base of Object.keys(BASE)) {
    it(`${base}: the template shapes title and text of every kind`, () => {
      const config = channel(base, templates);
      for (const kind of EVENT_KINDS) {
        const out = renderForChannel(kind, 'oncall', config, NOW);
        expect(out, `${base} ${kind}`).toContain('TEXTMARK');
        // An Opsgenie note (an update, a closing) has no title.
        if (base !== 'opsgenie' || out.includes('"message"')) {
          expect(out, `${base} ${kind}`).toContain('TITLEMARK');
        }
      }
    });
  }

  it('a kind without a template (and no default) renders exactly as without templates', () => {
    for (const base of Object.keys(BASE)) {
      const none = channelConfigSchema.parse(BASE[base]);
      const other = channel(base, { 'sla.breached': { title: 'x', text: 'y' } });
      expect(renderForChannel('incident.opened', 'oncall', other, NOW)).toBe(
        renderForChannel('incident.opened', 'oncall', none, NOW),
      );
    }
  });

  it('a subscription template overrides the channel one field by field', () => {
    const rendered = renderTemplates(event(sampleTransition('incident.opened', NOW)), 'plain', {
      channel: { default: { title: 'channel title', text: 'channel text' } },
      subscription: { 'incident.opened': { text: 'subscription text for {{ subscription }}' } },
    });
    expect(rendered).toEqual({ title: 'channel title', text: 'subscription text for payments' });
  });
});
