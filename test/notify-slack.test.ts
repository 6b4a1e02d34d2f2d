import { afterEach, describe, expect, it } from 'vitest';
import { createSlackNotifier } from '../src/notify/slack/index.js';
import { slackChannelConfigSchema } from '../src/notify/slack/config.js';
import { channelConfigSchema } from '../src/config/schema.js';
import { createNotifier } from '../src/notify/registry.js';
import { SLACK_LIMITS } from '../src/notify/slack/render.js';
import { DeliveryError, type Notifier } from '../src/notify/types.js';
import {
  HOSTILE_HEADING,
  hostileTransition,
  manyServices,
  notification,
  refusedUrl,
  startReceiver,
  transition,
  type Receiver,
  type Reply,
} from './notify-helpers.js';

interface SentBlock {
  type: string;
  text?: { text: string };
  elements?: { text: string }[];
}
interface SentPayload {
  text: string;
  blocks: SentBlock[];
  username?: string;
  icon_emoji?: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  reply?: (req: { body: string }, index: number) => Reply,
  extra: Record<string, unknown> = {},
  timeoutMs?: number,
): Promise<{ receiver: Receiver; notifier: Notifier }> {
  const receiver = await startReceiver(reply);
  const config = slackChannelConfigSchema.parse({
    type: 'slack',
    webhookUrl: receiver.url,
    ...extra,
  });
  const notifier = createSlackNotifier(config, timeoutMs === undefined ? {} : { timeoutMs });
  cleanups.push(
    () => receiver.close(),
    () => notifier.close(),
  );
  return { receiver, notifier };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

describe('Slack notifier against a local webhook endpoint', () => {
  it('POSTs one Block Kit message with the configured username and icon', async () => {
    const { receiver, notifier } = await setup(undefined, {
      username: 'statuswatch',
      iconEmoji: ':rotating_light:',
      mention: '<!here>',
    });
    await notifier.send(notification([transition('incident.opened')]));
    const [request] = await receiver.waitFor(1);
    expect(receiver.received).toHaveLength(1);
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/hooks/T000/B000/s3cr3tT0kenPart');
    expect(request?.headers['content-type']).toContain('application/json');
    const payload = JSON.parse(request!.body) as SentPayload;
    expect(payload.username).toBe('statuswatch');
    expect(payload.icon_emoji).toBe(':rotating_light:');
    expect(payload.text).toBe('<!here> Stripe: incident opened — Card payments failing');
    expect(payload.blocks[0]).toEqual({
      type: 'header',
      text: {
        type: 'plain_text',
        text: 'Stripe: incident opened — Card payments failing',
        emoji: false,
      },
    });
    expect(
      payload.blocks.some((b) =>
        b.text?.text.includes('<https://status.stripe.com/|Official status page>'),
      ),
    ).toBe(true);
  });

  it('delivers hostile upstream text inert and within Slack limits', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(notification([hostileTransition()]));
    const [request] = await receiver.waitFor(1);
    const body = request!.body;
    for (const raw of [
      '<!channel>',
      '<!here>',
      '<@U123>',
      '<@U999>',
      '<https://evil.example|click>',
      '<script>',
    ]) {
      expect(body).not.toContain(raw);
    }
    const payload = JSON.parse(body) as SentPayload;
    expect(payload.text).toContain('&lt;!here&gt;');
    expect(payload.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
    expect(payload.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    for (const block of payload.blocks) {
      if (block.type === 'header')
        expect(block.text!.text.length).toBeLessThanOrEqual(SLACK_LIMITS.headerText);
      if (block.type === 'section')
        expect(block.text!.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    }
    expect(body.length).toBeLessThan(20_000);
  });

  it('delivers a 40-transition batch as one message: 20 listed and "…and 20 more"', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(notification(manyServices(40), { type: 'batch' }));
    const [request] = await receiver.waitFor(1);
    expect(receiver.received).toHaveLength(1);
    const payload = JSON.parse(request!.body) as SentPayload;
    expect(payload.blocks[0]?.text?.text).toBe('40 changes for payments');
    const sections = payload.blocks.flatMap((b) =>
      b.type === 'section' && b.text !== undefined ? [b.text.text] : [],
    );
    expect(sections.filter((s) => s.startsWith('• '))).toHaveLength(20);
    expect(sections).toContain('…and 20 more');
    expect(payload.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    for (const text of sections) expect(text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
  });

  it('delivers a digest with hostile title and summary inert', async () => {
    const { receiver, notifier } = await setup();
    await notifier.send(
      notification(manyServices(2), {
        type: 'digest',
        title: HOSTILE_HEADING,
        summary: [HOSTILE_HEADING],
      }),
    );
    const [request] = await receiver.waitFor(1);
    for (const raw of ['<!channel>', '<@U123>', '<https://evil.example|click>', '<script>']) {
      expect(request!.body).not.toContain(raw);
    }
    const payload = JSON.parse(request!.body) as SentPayload;
    const escaped =
      '&lt;!channel&gt; Digest &lt;@U123&gt; &lt;https://evil.example|click&gt; &lt;script&gt;alert(1)&lt;/script&gt; Bcc: victim@example.com';
    expect(payload.blocks[0]?.text?.text).toBe(escaped);
    expect(payload.blocks.some((b) => b.text?.text === escaped)).toBe(true);
    expect(payload.text).toBe(escaped);
  });

  it('a 500 is retryable and sent once (no retries inside the client)', async () => {
    const { receiver, notifier } = await setup(() => ({ status: 500, body: 'internal_error' }));
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({
      retryable: true,
      reason: 'server',
      httpStatus: 500,
      code: 'delivery_retryable',
    });
    expect(receiver.received).toHaveLength(1);
  });

  it('a 429 with Retry-After: 7 is retryable after 7 s', async () => {
    const { receiver, notifier } = await setup(() => ({
      status: 429,
      headers: { 'retry-after': '7' },
      body: 'rate_limited',
    }));
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 7000,
    });
    expect(receiver.received).toHaveLength(1);
  });

  it("a 404 (channel_not_found) is permanent and names Slack's error word", async () => {
    const { receiver, notifier } = await setup(() => ({ status: 404, body: 'channel_not_found' }));
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({
      retryable: false,
      reason: 'client',
      httpStatus: 404,
      code: 'delivery_permanent',
    });
    expect(error.message).toContain('channel_not_found');
    expect(receiver.received).toHaveLength(1);
  });

  it('a 403 is a permanent auth failure', async () => {
    const { notifier } = await setup(() => ({ status: 403, body: 'invalid_token' }));
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: false, reason: 'auth', httpStatus: 403 });
  });

  it('a refused connection is a retryable network failure', async () => {
    const notifier = createSlackNotifier(
      slackChannelConfigSchema.parse({ type: 'slack', webhookUrl: await refusedUrl() }),
    );
    cleanups.push(() => notifier.close());
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'network', httpStatus: null });
    expect(error.message).toContain('could not reach the receiver');
    expect(error.message).not.toContain('refused');
    expect(error.detail).toContain('ECONNREFUSED');
  });

  it("a channel's timeoutMs applies, as the daemon builds the channel from its config", async () => {
    const receiver = await startReceiver(() => ({ status: 200, hang: true }));
    cleanups.push(() => receiver.close());
    const config = channelConfigSchema.parse({
      type: 'slack',
      webhookUrl: receiver.url,
      timeoutMs: 300,
    });
    const notifier = createNotifier(config);
    cleanups.push(() => notifier.close());
    const started = Date.now();
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    // 300 ms, not the 10 s default (a wide margin for a busy machine).
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an endpoint that never answers times out, retryable', async () => {
    const { receiver, notifier } = await setup(() => ({ status: 200, hang: true }), {}, 300);
    const error = await failure(notifier.send(notification([transition()])));
    expect(error).toMatchObject({ retryable: true, reason: 'timeout' });
    expect(receiver.received).toHaveLength(1);
  });
});
