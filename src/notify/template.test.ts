import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { EVENT_KINDS } from '../config/events.js';
import { channelConfigSchema, configSchema } from '../config/schema.js';
import { ConfigError, parseConfig } from '../config/load.js';
import { validateChannel } from '../api/model.js';
import { ApiError } from '../api/errors.js';
import { renderForChannel } from '../commands/render.js';
import { sampleTransition } from '../commands/samples.js';
import type { Transition } from '../diff/transition.js';
import { kindOf, type ChannelConfig } from './kinds.js';
import { renderEpisodeParent } from './slack/app-render.js';
import { applySlackParentTemplate } from './slack/templated.js';
import {
  renderTemplates,
  slackTemplateMapSchema,
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

// ------------------------------------------------ batch-like messages and the living message

type ListKind = 'batch' | 'reminder' | 'catchup' | 'digest';
const LIST_KINDS: readonly ListKind[] = ['batch', 'reminder', 'catchup', 'digest'];

function listOf(type: ListKind, transitions: Transition[]): Notification {
  return {
    id: `${type}:payments:oncall`,
    type,
    subscription: 'payments',
    channel: 'oncall',
    transitions,
    createdAt: NOW + 60_000,
    ...(type === 'digest' ? { summary: ['SUMMARYLINE: 1 incident still open'] } : {}),
  };
}

function two(): Transition[] {
  return [
    sampleTransition('incident.opened', NOW),
    { ...sampleTransition('status.changed', NOW + 1000), id: 'status-change-1' },
  ];
}

function preview(base: string, templates: Record<string, unknown>, n: Notification): string {
  const config = channel(base, templates);
  return kindOf(config).preview(n, 'oncall', config, NOW);
}

const LIST_TEMPLATE = {
  title: 'LISTTITLE {{ kind }} {{ count }}',
  text: 'LISTTEXT {{ event }}: {{ summary }}{% for e in events %}\n- ITEM {{ e.service.name }} {{ e.kind }} ({{ e.line }}){% endfor %}{% for l in lines %}\n{{ l }}{% endfor %}',
};

describe('batch-like templates on every channel kind', () => {
  const templates = {
    batch: LIST_TEMPLATE,
    reminder: LIST_TEMPLATE,
    catchup: LIST_TEMPLATE,
    digest: LIST_TEMPLATE,
    default: { title: 'EVENTTITLE {{ kind }}', text: 'EVENTTEXT {{ kind }}' },
  };

  for (const base of Object.keys(BASE)) {
    it(`${base}: batch, reminder, catch-up and digest take their own template`, () => {
      for (const type of LIST_KINDS) {
        const out = preview(base, templates, listOf(type, two()));
        const perTransition = base === 'pagerduty' || base === 'opsgenie';
        if (perTransition && type === 'reminder') {
          // PagerDuty and Opsgenie re-notify themselves: nothing is sent, nothing to template.
          expect(out, `${base} ${type}`).toMatch(/^\(nothing is sent/);
        } else if (perTransition && type !== 'digest') {
          // One alert per transition: each takes its own kind's template, not the list's.
          expect(out, `${base} ${type}`).not.toContain('LISTTEXT');
          expect(out, `${base} ${type}`).toContain('EVENTTEXT incident.opened');
          expect(out, `${base} ${type}`).toContain('EVENTTEXT status.changed');
        } else {
          expect(out, `${base} ${type}`).toContain(`LISTTITLE ${type} 2`);
          expect(out, `${base} ${type}`).toContain('LISTTEXT');
          expect(out, `${base} ${type}`).toContain('ITEM Stripe incident.opened');
          expect(out, `${base} ${type}`).toContain('ITEM Stripe status.changed');
          expect(out, `${base} ${type}`).not.toContain('EVENTTEXT');
          if (type === 'digest') expect(out).toContain('SUMMARYLINE: 1 incident still open');
        }
      }
    });
  }

  it('`default` shapes single events only: batch-like messages without their own key are unchanged', () => {
    for (const base of Object.keys(BASE)) {
      for (const type of LIST_KINDS) {
        const n = listOf(type, two());
        const none = kindOf(channelConfigSchema.parse(BASE[base])).preview(
          n,
          'oncall',
          channelConfigSchema.parse(BASE[base]),
          NOW,
        );
        const withDefault = preview(base, { default: { title: 'x', text: 'y' } }, n);
        if (base === 'pagerduty' || base === 'opsgenie') {
          if (type === 'digest') expect(withDefault, `${base} ${type}`).toBe(none);
        } else {
          expect(withDefault, `${base} ${type}`).toBe(none);
        }
      }
    }
  });

  it('the list variables: title, summary, count, the digest lines, each item with its line and links', () => {
    const n = {
      ...listOf('reminder', two()),
      links: {
        console: 'https://sw.example.test/?subscription=payments',
        silence: 'https://sw.example.test/silences',
      },
    };
    const rendered = renderTemplates(n, 'plain', {
      channel: {
        reminder: {
          title: '{{ title }}',
          text: '{{ summary }} | {{ count }} | {{ time }} | {{ links.console }} | {% for e in events %}[{{ e.line }} / {{ e.incident.title | default: "-" }}]{% endfor %}',
        },
      },
    });
    expect(rendered?.title).toBe('Reminder: 2 still open for payments');
    expect(rendered?.text).toContain(
      'Reminder: 2 still open for payments | 2 | 2026-01-01T12:01:00.000Z',
    );
    expect(rendered?.text).toContain('https://sw.example.test/?subscription=payments');
    expect(rendered?.text).toContain(
      '[Stripe: incident opened — Elevated API error rates (open for 1m) / Elevated API error rates]',
    );
    expect(rendered?.text).toContain('(open for less than a minute) / -]');
  });

  it('keeps hostile upstream text inert in list templates (Slack, Teams, e-mail HTML)', () => {
    const list = {
      batch: {
        title: '{{ events[0].incident.title }}',
        text: '{% for e in events %}*{{ e.service.name }}* {{ e.incident.title }} {{ e.line }}\n{% endfor %}',
      },
    };
    const n = listOf('batch', [hostile(), sampleTransition('status.changed', NOW)]);
    const slack = renderTemplates(n, 'slack', { channel: list });
    for (const text of [slack?.title ?? '', slack?.text ?? '']) {
      expect(text).not.toMatch(/<[!@#]|<https?:/);
    }
    expect(slack?.text).toContain('&lt;!channel&gt;');
    const slackOut = preview('slack', list, n);
    const live = slackOut.match(/<[!@#][^>]*>|<https?:[^>]*>/g) ?? [];
    expect(live.every((m) => m === '<!here>' || m.startsWith('<https://status'))).toBe(true);

    const teams = renderTemplates(n, 'teams', { channel: list });
    expect(teams?.text).toContain('\\<script\\>');
    expect(teams?.text).not.toMatch(/(^|[^\\])[[<]/);

    const mail = preview('email', list, n);
    const html = mail.slice(mail.indexOf('--- text/html ---'));
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toContain('href="https://evil');
  });

  it('a runaway digest or batch template is stopped; the default is used and a warning told', () => {
    const warnings: TemplateFailure[] = [];
    const started = performance.now();
    const digest = renderTemplates(listOf('digest', two()), 'slack', {
      channel: {
        digest: {
          text: '{% for e in events %}{% for i in (1..100000000) %}x{% endfor %}{% endfor %}',
        },
        batch: { title: '{% for i in (1..500) %}0123456789{% endfor %}', text: 'ok {{ count }}' },
      },
      warn: (f) => warnings.push(f),
    });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(digest).toBeNull();
    const batch = renderTemplates(listOf('batch', two()), 'plain', {
      channel: {
        batch: { title: '{% for i in (1..500) %}0123456789{% endfor %}', text: 'ok {{ count }}' },
      },
      warn: (f) => warnings.push(f),
    });
    expect(batch).toEqual({ text: 'ok 2' });
    expect(warnings).toEqual([
      expect.objectContaining({
        channel: 'oncall',
        kind: 'digest',
        field: 'text',
        reason: expect.stringMatching(/limit exceeded/) as string,
      }),
      expect.objectContaining({
        kind: 'batch',
        field: 'title',
        reason: expect.stringMatching(/over the limit of 4096/) as string,
      }),
    ]);
    // The delivery's message is the default rendering.
    const config = channel('slack', {
      digest: {
        text: '{% for e in events %}{% for i in (1..100000000) %}x{% endfor %}{% endfor %}',
      },
    });
    const out = kindOf(config).preview(listOf('digest', two()), 'oncall', config, NOW);
    expect(
      out.startsWith(
        kindOf(channelConfigSchema.parse(BASE.slack)).preview(
          listOf('digest', two()),
          'oncall',
          channelConfigSchema.parse(BASE.slack),
          NOW,
        ),
      ),
    ).toBe(true);
    expect(out).toMatch(/\(template digest text failed: .*limit exceeded.*; default rendering\)/);
  });

  it('an event of several transitions takes the batch template', () => {
    const rendered = renderTemplates({ ...listOf('batch', two()), type: 'event' }, 'plain', {
      channel: { batch: { text: '{{ kind }} {{ count }}' } },
    });
    expect(rendered).toEqual({ text: 'batch 2' });
  });
});

describe('validation of the new keys', () => {
  it('a list template is checked against the list variables, with the field and line', () => {
    expect(templateProblems('{{ count }}\n{{ service.name }}', 'list')).toEqual([
      'line 2: unknown variable "service.name"',
    ]);
    const result = channelConfigSchema.safeParse({
      ...BASE.webhook,
      templates: { digest: { text: 'ok {{ lines }}\n{{ incident.title }}' } },
    });
    expect(result.success).toBe(false);
    const issue = result.error?.issues[0];
    expect(issue?.path).toEqual(['templates', 'digest', 'text']);
    expect(issue?.message).toBe('line 2: unknown variable "incident.title"');
    try {
      validateChannel({
        ...BASE.email,
        templates: { batch: { title: '{{ count }}', text: '{% if %}' } },
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect(JSON.stringify((error as ApiError).issues)).toContain('templates.batch.text');
      expect(JSON.stringify((error as ApiError).issues)).toContain('line 1');
    }
  });

  it('`parent` is for Slack app channels only, with the episode variables', () => {
    expect(
      channelConfigSchema.safeParse({
        ...BASE['slack-app'],
        templates: {
          parent: {
            title: '{{ episode.heading }}',
            text: '{{ episode.state }} {{ episode.opened }} {{ summary }}',
          },
        },
      }).success,
    ).toBe(true);
    const bad = channelConfigSchema.safeParse({
      ...BASE['slack-app'],
      templates: { parent: { text: '{{ episode.status }}' } },
    });
    expect(bad.error?.issues[0]?.message).toMatch(
      /^line 1: unknown variable "episode.status" \(episode has: state, opened, heading\)/,
    );
    const webhook = channelConfigSchema.safeParse({
      ...BASE.slack,
      templates: { parent: { text: 'x' } },
    });
    expect(webhook.error?.issues.map((i) => [i.path, i.message])).toEqual([
      [['templates', 'parent'], expect.stringMatching(/^only for a Slack app/)],
    ]);
    const email = channelConfigSchema.safeParse({
      ...BASE.email,
      templates: { parent: { text: 'x' } },
    });
    expect(email.success).toBe(false);
    expect(JSON.stringify(email.error?.issues)).toContain('parent');
  });

  const yaml = (templates: string, channelsYaml = '') => `
upstream: { baseUrl: "https://status.example.test" }
redis: { url: "redis://127.0.0.1:6379" }
channels:
  oncall: { type: webhook, url: "https://hooks.example.test/sw", secret: "whsec_${Buffer.from('statuswatch-test-signing-key-32b').toString('base64')}" }
  chat: { type: slack, webhookUrl: "https://hooks.slack.test/services/T0/B0/x" }
${channelsYaml}
subscriptions:
  - name: payments
    services: [stripe]
    channels: [oncall]
    templates:
${templates}
`;

  it('a subscription template for a channel it does not deliver to (or that does not exist) is refused at load', () => {
    expect(() =>
      parseConfig(yaml('      oncall: { digest: { text: "{{ count }}" } }'), {}),
    ).not.toThrow();
    for (const name of ['chat', 'nowhere']) {
      expect(() => parseConfig(yaml(`      ${name}: { default: { text: "x" } }`), {})).toThrow(
        new RegExp(
          `subscriptions\\[0\\]\\.templates\\.${name} \\(line \\d+\\): not a channel of this subscription \\(its channels: oncall\\)`,
        ),
      );
    }
    expect(() => parseConfig(yaml('      oncall: { parent: { text: "x" } }'), {})).toThrow(
      /subscriptions\[0\]\.templates\.oncall\.parent \(line \d+\): only for a Slack app channel/,
    );
    const error = (() => {
      try {
        parseConfig(yaml('      nowhere: { default: { text: "x" } }'), {});
      } catch (caught) {
        return caught;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(ConfigError);
  });
});

describe('the living message of a Slack app (`parent`)', () => {
  it('replaces the heading and the state and event sections; the mention and context line stay; upstream text inert', () => {
    const t = hostile();
    const n = event(t);
    const payload = renderEpisodeParent(n, t, { openedAt: NOW - 60_000 }, { mention: '<!here>' });
    const templated = applySlackParentTemplate(
      payload,
      n,
      t,
      NOW - 60_000,
      {
        channel: {
          parent: {
            title: 'P {{ episode.state }}: {{ incident.title }}',
            text: 'since {{ episode.opened }} — {{ episode.heading }}',
          },
        },
      },
      '<!here>',
    );
    const [header, body, ...rest] = templated.blocks;
    expect(header?.type).toBe('header');
    expect(JSON.stringify(header)).toContain('P open: &lt;!channel&gt;');
    expect(JSON.stringify(body)).toContain('<!here> since 2026-01-01T11:59:00.000Z — 🔴 Stripe');
    expect(rest.map((b) => b.type)).toEqual(['context']);
    expect(rest[0]).toEqual(payload.blocks[payload.blocks.length - 1]);
    const live = JSON.stringify(templated).match(/<[!@#][^>]*>|<https?:[^>]*>/g) ?? [];
    expect(live.every((m) => m === '<!here>')).toBe(true);
    expect(templated.text.startsWith('<!here> P open')).toBe(true);
  });

  it('without a `parent` template the living message is unchanged; a closing reads resolved', () => {
    const t = sampleTransition('incident.resolved', NOW);
    const n = event(t);
    const payload = renderEpisodeParent(n, t, { openedAt: null });
    expect(
      applySlackParentTemplate(
        payload,
        n,
        t,
        null,
        { channel: { default: { text: 'x' } } },
        undefined,
      ),
    ).toEqual(payload);
    const resolved = applySlackParentTemplate(
      payload,
      n,
      t,
      null,
      { channel: { parent: { text: '{{ episode.state }} [{{ episode.opened }}]' } } },
      undefined,
    );
    expect(JSON.stringify(resolved.blocks)).toContain('resolved []');
  });

  it('the app channel preview shows the templated living message and a templated thread reply', () => {
    const out = renderForChannel(
      'incident.updated',
      'oncall',
      channel('slack-app', {
        parent: { title: 'PARENT {{ episode.state }}' },
        'incident.updated': { text: 'REPLY {{ change }}' },
      }),
      NOW,
    );
    const [parentPart, replyPart] = out.split('(later changes of the episode');
    expect(parentPart).toContain('PARENT open');
    expect(parentPart).not.toContain('REPLY');
    expect(replyPart).toContain('"thread_ts": "<parent ts>"');
    expect(replyPart).toContain('REPLY');
  });
});

describe('previews carry the console links of server.publicUrl', () => {
  it('the links show in the default rendering and in `links.*` of a template', () => {
    const publicUrl = 'https://statuswatch.example.test/';
    for (const base of Object.keys(BASE)) {
      const plain = channelConfigSchema.parse(BASE[base]);
      const out = renderForChannel('incident.opened', 'oncall', plain, NOW, publicUrl);
      expect(out, base).toContain('https://statuswatch.example.test/services/stripe#t-');
      expect(out, base).toContain('https://statuswatch.example.test/silences?');
      const without = renderForChannel('incident.opened', 'oncall', plain, NOW);
      expect(without, base).not.toContain('statuswatch.example.test');
    }
    const templated = renderForChannel(
      'incident.opened',
      'oncall',
      channel('webhook', { default: { text: 'console: {{ links.console }}' } }),
      NOW,
      publicUrl,
    );
    expect(templated).toMatch(
      /"text": "console: https:\/\/statuswatch\.example\.test\/services\/stripe#t-/,
    );
  });
});

describe('docs/templates.md', () => {
  it('its YAML examples are valid templates for their keys', () => {
    const text = readFileSync(new URL('../../docs/templates.md', import.meta.url), 'utf8');
    const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    let checked = 0;
    for (const block of blocks) {
      const doc = parseYaml(block) as {
        channels?: Record<string, { templates?: unknown }>;
        subscriptions?: { templates?: Record<string, unknown> }[];
      };
      const maps = [
        ...Object.values(doc.channels ?? {}).map((c) => c.templates),
        ...(doc.subscriptions ?? []).flatMap((s) => Object.values(s.templates ?? {})),
      ].filter((m) => m !== undefined);
      for (const map of maps) {
        const result = slackTemplateMapSchema.safeParse(map);
        expect(result.error?.issues ?? [], JSON.stringify(map)).toEqual([]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});
