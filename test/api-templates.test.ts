/* eslint-disable @typescript-eslint/no-unsafe-member-access -- API answers are JSON, read field by field */
/**
 * Message templates through `/api/v1`, in-process on real Redis and real HTTP on 127.0.0.1: a
 * subscription's templates must name channels the subscription delivers to (400 naming the
 * field), `parent` needs a Slack app channel (config-file or stored), a batch-like template is
 * checked against its own variables (400 naming the field and the line); a channel's preview
 * carries the console links of `server.publicUrl` (in the message and in a template's `links`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newKey } from '../src/api/crypto.js';
import type { TenancyApi } from '../src/api/index.js';
import { channelConfigSchema, type ChannelConfig } from '../src/config/schema.js';
import { tenancySelfService } from '../src/console/tenancy-api.js';
import { startApi } from './helpers/api-daemon.js';
import { testRedis, type TestRedis } from './helpers/redis.js';
import { client, type Client } from './api-helpers.js';

const ADMIN = 'adm_tmpl_ADMINTOKEN_0123456789abcdef';
const PUBLIC_URL = 'https://statuswatch.example.test/';
const env = { STATUSWATCH_SECRET_KEY: newKey() };
const SECRET = `whsec_${Buffer.from('0123456789abcdef0123').toString('base64')}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const CONFIG_CHANNELS: Record<string, ChannelConfig> = {
  shared: channelConfigSchema.parse({
    type: 'webhook',
    url: 'https://hooks.example/s',
    secret: SECRET,
  }),
  chat: channelConfigSchema.parse({
    type: 'slack',
    botToken: 'xoxb-1-2-abc',
    channel: 'C0123ABCD',
  }),
};

async function api(
  publicUrl: string | undefined,
): Promise<{ admin: Client; url: string; tenancy: TenancyApi; tr: TestRedis }> {
  // Each API its own prefix, removed after the test (a test may start two).
  const t = await testRedis('api-tmpl');
  cleanups.push(() => t.cleanup());
  const d = await startApi(t, {
    env,
    config: () => ({
      channels: CONFIG_CHANNELS,
      subscriptions: [],
      adminToken: ADMIN,
      publicUrl,
    }),
  });
  cleanups.push(() => d.close());
  return { admin: client(d.url, ADMIN), url: d.url, tenancy: d.api, tr: t };
}

async function team(admin: Client, url: string, name: string): Promise<Client> {
  const res = await admin('POST', '/api/v1/tokens', { team: name });
  expect(res.status, res.text).toBe(201);
  return client(url, res.body.token as string);
}

const hook = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'webhook',
  url: `https://hooks.example/${name}`,
  secret: SECRET,
  ...extra,
});

/** Each refused field with its message (`field: message`), from the API's error answer. */
function fields(res: {
  body: { error: { message: string; issues?: { field: string; message: string }[] } };
}): string[] {
  const { error } = res.body;
  return error.issues === undefined
    ? [error.message]
    : error.issues.map((i) => `${i.field}: ${i.message}`);
}

describe('subscription templates through the API', () => {
  it('templates for a channel the subscription does not list, or that does not exist, are refused naming the field', async () => {
    const { admin, url } = await api(undefined);
    const a = await team(admin, url, 'payments');
    expect((await a('POST', '/api/v1/channels', hook('pc'))).status).toBe(201);
    const sub = (templates: unknown) => ({
      name: 'pay',
      services: ['stripe'],
      channels: ['pc'],
      templates,
    });
    for (const name of ['shared', 'nowhere']) {
      const res = await a(
        'POST',
        '/api/v1/subscriptions',
        sub({ [name]: { default: { text: 'x' } } }),
      );
      expect(res.status, res.text).toBe(400);
      expect(fields(res)).toEqual([
        `templates.${name}: not a channel of this subscription (its channels: pc): its templates would never be used`,
      ]);
    }
    // `parent` on a webhook channel; a digest template reading an event's variable (its line).
    const parent = await a('POST', '/api/v1/subscriptions', sub({ pc: { parent: { text: 'x' } } }));
    expect(parent.status, parent.text).toBe(400);
    expect(fields(parent)).toEqual([
      expect.stringMatching(/^templates\.pc\.parent: only for a Slack app channel/),
    ]);
    const digest = await a(
      'POST',
      '/api/v1/subscriptions',
      sub({ pc: { digest: { text: '{{ count }}\n{{ service.name }}' } } }),
    );
    expect(digest.status, digest.text).toBe(400);
    expect(fields(digest)).toEqual([
      'templates.pc.digest.text: line 2: unknown variable "service.name"',
    ]);
    // Nothing was stored by the refusals; a valid one is.
    expect((await a('GET', '/api/v1/subscriptions')).body.subscriptions).toEqual([]);
    const ok = await a(
      'POST',
      '/api/v1/subscriptions',
      sub({
        pc: {
          digest: { title: '{{ title }}', text: '{% for e in events %}{{ e.line }}\n{% endfor %}' },
        },
      }),
    );
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.templates.pc.digest.title).toBe('{{ title }}');
  });

  it('`parent` is accepted for a Slack app channel of the config file', async () => {
    const { admin } = await api(undefined);
    const res = await admin('POST', '/api/v1/subscriptions', {
      name: 'chatty',
      team: 'payments',
      services: ['stripe'],
      channels: ['chat', 'shared'],
      templates: {
        chat: { parent: { title: '{{ episode.heading }}', text: '{{ episode.state }}' } },
      },
    });
    expect(res.status, res.text).toBe(201);
    const shared = await admin('PUT', '/api/v1/subscriptions/chatty', {
      name: 'chatty',
      team: 'payments',
      services: ['stripe'],
      channels: ['chat', 'shared'],
      templates: { shared: { parent: { text: 'x' } } },
    });
    expect(shared.status, shared.text).toBe(400);
    expect(fields(shared)).toEqual([
      expect.stringMatching(/^templates\.shared\.parent: only for a Slack app channel/),
    ]);
  });
});

describe('channel previews through the API', () => {
  it('with server.publicUrl the preview carries the console links, also in a template', async () => {
    const { admin, url } = await api(PUBLIC_URL);
    const a = await team(admin, url, 'payments');
    const created = await a(
      'POST',
      '/api/v1/channels',
      hook('pc', {
        templates: {
          'incident.opened': { text: 'open {{ links.console }} | {{ links.silence }}' },
        },
      }),
    );
    expect(created.status, created.text).toBe(201);
    const res = await a('GET', '/api/v1/channels/pc/preview?event=incident.opened');
    expect(res.status, res.text).toBe(200);
    const preview = res.body.preview as string;
    expect(preview).toContain('"console": "https://statuswatch.example.test/services/');
    expect(preview).toMatch(
      /"text": "open https:\/\/statuswatch\.example\.test\/services\/[^ ]+#t-[^ ]+ \| https:\/\/statuswatch\.example\.test\/silences\?/,
    );
  });

  it('without server.publicUrl there are no console links', async () => {
    const { admin, url } = await api(undefined);
    const a = await team(admin, url, 'payments');
    expect((await a('POST', '/api/v1/channels', hook('pc'))).status).toBe(201);
    const res = await a('GET', '/api/v1/channels/pc/preview?event=incident.opened');
    expect(res.status, res.text).toBe(200);
    expect(res.body.preview).not.toContain('statuswatch.example.test');
    expect(res.body.preview).not.toContain('"links"');
  });

  it("the console's preview carries them too", async () => {
    const { tenancy, tr: t } = await api(PUBLIC_URL);
    const self = tenancySelfService(tenancy, t.redis, t.keys);
    const admin = { id: 'admin', team: null };
    const text = await self.previewChannel(admin, 'chat', 'incident.opened');
    expect(text).toContain('<https://statuswatch.example.test/services/');
    expect(text).toContain('|Silence…>');
  });
});
