/**
 * Slack app mode against the local Slack Web API receiver and the real Redis: one living message
 * per episode, replicas, restarts, lost parents, failures, retries and secret scrubbing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { startSlackApiReceiver, type SlackApiReceiver } from '../src/demo/receivers/slack-api.js';
import type { Transition } from '../src/diff/transition.js';
import {
  slackAppChannelConfigSchema,
  type SlackAppChannelConfig,
} from '../src/notify/slack/app-config.js';
import { createSlackAppNotifier } from '../src/notify/slack/app.js';
import { DeliveryError, type Notification, type Notifier } from '../src/notify/types.js';
import { testRedis, type TestRedis } from './helpers/redis.js';
import {
  exposedText,
  manyServices,
  notification,
  refusedUrl,
  transition,
} from './notify-helpers.js';

const TOKEN = 'xoxb-1111-2222-s3cr3tB0tT0kenValue';
const CHANNEL_ID = 'C0ALERTS1';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  tr: TestRedis;
  receiver: SlackApiReceiver;
  /** A notifier as one replica would build it (its own Redis connection by default). */
  replica: (options?: {
    config?: Record<string, unknown>;
    redis?: Redis;
    state?: boolean;
  }) => Notifier;
}

async function setup(): Promise<Setup> {
  const tr = await testRedis('slackapp');
  const receiver = await startSlackApiReceiver({
    token: TOKEN,
    channels: [{ id: CHANNEL_ID, name: 'alerts' }, 'C0OTHER01'],
  });
  cleanups.push(
    () => tr.cleanup(),
    () => receiver.close(),
  );
  const replica: Setup['replica'] = (options = {}) => {
    const config: SlackAppChannelConfig = slackAppChannelConfigSchema.parse({
      type: 'slack',
      botToken: TOKEN,
      channel: '#alerts',
      apiUrl: receiver.url,
      ...options.config,
    });
    let redis = options.redis;
    if (redis === undefined) {
      const own = tr.redis.duplicate();
      cleanups.push(() => {
        own.disconnect();
        return Promise.resolve();
      });
      redis = own;
    }
    const notifier = createSlackAppNotifier(
      config,
      options.state === false
        ? {}
        : { state: { redis, key: (...parts: string[]) => tr.keys.key(...parts) } },
    );
    cleanups.push(() => notifier.close());
    return notifier;
  };
  return { tr, receiver, replica };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const caught: unknown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(DeliveryError);
  return caught as DeliveryError;
}

function event(t: Transition): Notification {
  return notification([t], { type: 'event' });
}

const opened = (): Transition => transition('incident.opened');
const updated = (): Transition =>
  transition('incident.updated', {
    current: { status: 'identified', updateCount: 2 },
    incident: {
      id: 'inc-1',
      title: 'Card payments failing',
      status: 'identified',
      started: 1_767_225_600,
      updateCount: 2,
      latestUpdate: 'The cause is identified; a fix is rolling out.',
    },
    observedAt: Date.UTC(2026, 0, 1, 12, 10, 0),
  });
const resolved = (): Transition =>
  transition('incident.resolved', { observedAt: Date.UTC(2026, 0, 1, 12, 40, 0) });

const methods = (receiver: SlackApiReceiver): string[] => receiver.calls.map((c) => c.method);

function blockTexts(blocks: unknown[]): string {
  return JSON.stringify(blocks);
}

async function refKeys(tr: TestRedis): Promise<string[]> {
  return tr.redis.keys(`{${tr.prefix}}:slack-app:ref:*`);
}

describe('Slack app mode: one living message per episode', () => {
  it('posts the opening, then edits the parent and replies in its thread; the closing is broadcast', async () => {
    const { receiver, replica, tr } = await setup();
    const notifier = replica({ config: { mention: '<!here>', username: 'statuswatch' } });

    await notifier.send(event(opened()));
    let [parent] = receiver.messages(CHANNEL_ID);
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(parent?.text).toBe('<!here> 🔴 Stripe: Card payments failing');
    expect(parent?.username).toBe('statuswatch');
    expect(parent?.replies).toEqual([]);

    await notifier.send(event(updated()));
    [parent] = receiver.messages(CHANNEL_ID);
    expect(parent?.edits).toBe(1);
    expect(parent?.replies).toHaveLength(1);
    expect(parent?.replies[0]?.broadcast).toBe(false);
    expect(parent?.replies[0]?.text).toContain('incident updated (identified)');
    expect(blockTexts(parent!.blocks)).toContain('a fix is rolling out');

    await notifier.send(event(resolved()));
    const parents = receiver.messages('#alerts');
    expect(parents).toHaveLength(1);
    [parent] = parents;
    expect(parent?.text).toContain('Resolved: Stripe: Card payments failing');
    expect(parent?.text).toContain('✅');
    expect(blockTexts(parent!.blocks)).toContain('open for 40m');
    expect(parent?.edits).toBe(2);
    expect(parent?.replies).toHaveLength(2);
    expect(parent?.replies[1]?.broadcast).toBe(true);
    expect(parent?.replies[1]?.text).toContain('incident resolved');

    expect(methods(receiver)).toEqual([
      'chat.postMessage',
      'chat.update',
      'chat.postMessage',
      'chat.update',
      'chat.postMessage',
    ]);
    // The config names #alerts; updates and replies use the id Slack answered.
    expect(receiver.calls[0]?.body.channel).toBe('#alerts');
    for (const call of receiver.calls.slice(1)) expect(call.body.channel).toBe(CHANNEL_ID);
    expect(receiver.calls.every((c) => c.token === TOKEN)).toBe(true);
    expect(await refKeys(tr)).toHaveLength(1);

    // After the closing, the next opening of the same episode key starts a new parent.
    await notifier.send(event({ ...opened(), id: 'tincidentopened-again-0001' }));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(2);
    expect(receiver.messages(CHANNEL_ID)[1]?.text).toContain('🔴');
  });

  it('two replicas sending the same opening post one parent; the update then edits it', async () => {
    const { receiver, replica } = await setup();
    const a = replica();
    const b = replica();

    // Replica A's post is held in flight, so B finds the episode claimed and waits for it.
    const gate = receiver.hold('chat.postMessage');
    const sentByA = a.send(event(opened()));
    await receiver.waitForCalls(1);
    const sentByB = b.send(event(opened()));
    gate.release();
    await Promise.all([sentByA, sentByB]);
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(methods(receiver)).toEqual(['chat.postMessage']);

    // Both replicas handle the same update: one edit, one reply.
    await Promise.all([a.send(event(updated())), b.send(event(updated()))]);
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(1);
    expect(parents[0]?.edits).toBe(1);
    expect(parents[0]?.replies).toHaveLength(1);

    // Different deliveries of the same episode at once: each edits and replies, never a new parent.
    await Promise.all([
      a.send(event({ ...updated(), id: 'tincidentupdated-second-0001' })),
      b.send(event({ ...updated(), id: 'tincidentupdated-third-00001' })),
    ]);
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(receiver.messages(CHANNEL_ID)[0]?.replies).toHaveLength(3);
  });

  it('two replicas racing with the opening unheld still post exactly one parent', async () => {
    const { receiver, replica } = await setup();
    const replicas = [replica(), replica(), replica()];
    await Promise.all(replicas.map((r) => r.send(event(opened()))));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(methods(receiver).filter((m) => m === 'chat.postMessage')).toHaveLength(1);
  });

  it('a restarted notifier (new instance, new connection) edits the same parent', async () => {
    const { receiver, replica } = await setup();
    const before = replica();
    await before.send(event(opened()));
    await before.close();
    const after = replica();
    await after.send(event(updated()));
    await after.send(event(resolved()));
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(1);
    expect(parents[0]?.edits).toBe(2);
    expect(parents[0]?.replies).toHaveLength(2);
  });

  it('posts a new parent when the old one was deleted (message_not_found); later updates go to it', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    await notifier.send(event(opened()));
    const first = receiver.messages(CHANNEL_ID)[0]!;
    expect(receiver.deleteMessage(CHANNEL_ID, first.ts)).toBe(true);

    await notifier.send(event(updated()));
    const [second] = receiver.messages(CHANNEL_ID);
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(second?.ts).not.toBe(first.ts);
    expect(second?.text).toContain('Card payments failing');
    expect(receiver.calls.at(-2)?.answer?.error).toBe('message_not_found');

    await notifier.send(event(resolved()));
    const [final] = receiver.messages(CHANNEL_ID);
    expect(final?.ts).toBe(second?.ts);
    expect(final?.text).toContain('Resolved');
    expect(final?.replies).toHaveLength(1);
    expect(final?.replies[0]?.broadcast).toBe(true);
  });

  it.each([
    'cant_update_message',
    'edit_window_closed',
    'channel_not_found',
    'not_in_channel',
    'is_archived',
  ])('posts a new parent when chat.update answers %s', async (code) => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    await notifier.send(event(opened()));
    receiver.failNext({ type: 'error', error: code }, { method: 'chat.update' });
    await notifier.send(event(updated()));
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(2);
    await notifier.send(event(resolved()));
    expect(receiver.messages(CHANNEL_ID)[0]?.edits).toBe(0);
    expect(receiver.messages(CHANNEL_ID)[1]?.edits).toBe(1);
    expect(receiver.messages(CHANNEL_ID)[1]?.replies).toHaveLength(1);
  });

  it('a wrong token is a permanent auth failure', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica({ config: { botToken: 'xoxb-9999-wrong-T0ken' } });
    const error = await failure(notifier.send(event(opened())));
    expect(error.retryable).toBe(false);
    expect(error.reason).toBe('auth');
    expect(error.message).toBe('Slack chat.postMessage: invalid_auth');
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(0);
    expect(await exposedText(error)).not.toContain('xoxb-9999-wrong-T0ken');
  });

  it.each(['token_revoked', 'account_inactive', 'not_authed'])(
    '%s is a permanent auth failure',
    async (code) => {
      const { receiver, replica } = await setup();
      receiver.failNext({ type: 'error', error: code });
      const error = await failure(replica().send(event(opened())));
      expect(error).toMatchObject({ retryable: false, reason: 'auth' });
      expect(error.message).toContain(code);
    },
  );

  it('an unknown channel is a permanent client failure', async () => {
    const { receiver, replica } = await setup();
    const error = await failure(
      replica({ config: { channel: 'C0UNKNOWN1' } }).send(event(opened())),
    );
    expect(error).toMatchObject({ retryable: false, reason: 'client', httpStatus: 200 });
    expect(error.message).toBe('Slack chat.postMessage: channel_not_found');
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(0);
  });

  it.each(['not_in_channel', 'is_archived', 'msg_too_long', 'invalid_blocks'])(
    '%s is permanent',
    async (code) => {
      const { receiver, replica } = await setup();
      receiver.failNext({ type: 'error', error: code });
      const error = await failure(replica().send(event(opened())));
      expect(error).toMatchObject({ retryable: false, reason: 'client' });
    },
  );

  it('429 ratelimited with Retry-After: 3 is retryable after 3000 ms, and the retry posts one parent', async () => {
    const { receiver, replica, tr } = await setup();
    const notifier = replica();
    receiver.failNext({ type: 'ratelimited', retryAfter: 3 }, { method: 'chat.postMessage' });
    const error = await failure(notifier.send(event(opened())));
    expect(error).toMatchObject({
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 3000,
    });
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(0);
    expect(await refKeys(tr)).toHaveLength(0);

    await notifier.send(event(opened()));
    await notifier.send(event(opened()));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(await refKeys(tr)).toHaveLength(1);

    // Rate limited on the edit: the retry edits and replies once, on the same parent.
    receiver.failNext({ type: 'ratelimited', retryAfter: 3 }, { method: 'chat.update' });
    const again = await failure(notifier.send(event(updated())));
    expect(again).toMatchObject({ retryable: true, reason: 'rate_limited', retryAfterMs: 3000 });
    await notifier.send(event(updated()));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(1);
    expect(receiver.messages(CHANNEL_ID)[0]?.replies).toHaveLength(1);
  });

  it('a retry after a failed reply posts only the reply (no second edit, parent or reply)', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    await notifier.send(event(opened()));
    receiver.failNext({ type: 'http', status: 500 }, { method: 'chat.postMessage' });
    const error = await failure(notifier.send(event(updated())));
    expect(error).toMatchObject({ retryable: true, reason: 'server', httpStatus: 500 });
    expect(receiver.messages(CHANNEL_ID)[0]?.edits).toBe(1);
    expect(receiver.messages(CHANNEL_ID)[0]?.replies).toHaveLength(0);

    const callsBefore = receiver.calls.length;
    await notifier.send(event(updated()));
    expect(methods(receiver).slice(callsBefore)).toEqual(['chat.postMessage']);
    expect(receiver.calls.at(-1)?.body.thread_ts).toBe(receiver.messages(CHANNEL_ID)[0]?.ts);

    // Delivered: another retry does nothing at all.
    const callsAfter = receiver.calls.length;
    await notifier.send(event(updated()));
    expect(receiver.calls.length).toBe(callsAfter);
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(1);
    expect(parents[0]?.edits).toBe(1);
    expect(parents[0]?.replies).toHaveLength(1);
  });

  it('a closing whose reply failed is retried on the same parent, then closes it', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    await notifier.send(event(opened()));
    receiver.failNext({ type: 'error', error: 'internal_error' }, { method: 'chat.postMessage' });
    const error = await failure(notifier.send(event(resolved())));
    expect(error).toMatchObject({ retryable: true, reason: 'server' });
    await notifier.send(event(resolved()));
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(1);
    expect(parents[0]?.replies).toHaveLength(1);
    expect(parents[0]?.replies[0]?.broadcast).toBe(true);
    // Closed: the next opening starts a new parent.
    await notifier.send(event({ ...opened(), id: 'tincidentopened-again-0002' }));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(2);
  });

  it('never exposes the bot token in an error, whatever failed', async () => {
    const { receiver, replica } = await setup();
    const errors: DeliveryError[] = [];
    receiver.failNext({ type: 'error', error: 'invalid_auth' });
    errors.push(await failure(replica().send(event(opened()))));
    receiver.failNext({ type: 'http', status: 503 });
    errors.push(await failure(replica().send(event(opened()))));
    receiver.failNext({ type: 'ratelimited', retryAfter: 1 });
    errors.push(await failure(replica().send(event(opened()))));
    const refused = await refusedUrl('/api');
    const offline = replica({ config: { apiUrl: refused } });
    const down = await failure(offline.send(event(opened())));
    expect(down).toMatchObject({ retryable: true, reason: 'network' });
    errors.push(down);
    const hanging = replica({ config: { timeoutMs: 200 } });
    const gate = receiver.hold();
    const slow = await failure(hanging.send(event(opened())));
    gate.release();
    expect(slow).toMatchObject({ retryable: true, reason: 'timeout' });
    errors.push(slow);
    for (const error of errors) {
      const text = await exposedText(error);
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('s3cr3tB0tT0ken');
    }
  });

  it('a grouped batch is one message listing its episodes, and brings open parents up to date', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    await notifier.send(event(opened()));
    const others = manyServices(3);
    await notifier.send(
      notification([resolved(), ...others], { type: 'batch', id: 'batch-1:payments:oncall' }),
    );
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(2);
    const [episode, list] = parents;
    expect(episode?.text).toContain('Resolved');
    expect(episode?.replies).toHaveLength(0);
    expect(list?.text).toContain('4 changes for payments');
    expect(blockTexts(list!.blocks)).toContain('4 episodes');
    for (const name of ['Service 00', 'Service 01', 'Service 02', 'Stripe']) {
      expect(blockTexts(list!.blocks)).toContain(name);
    }
    // A retried batch posts nothing new.
    await notifier.send(
      notification([resolved(), ...others], { type: 'batch', id: 'batch-1:payments:oncall' }),
    );
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(2);
    // The episode closed through the batch: its next opening starts a new parent.
    await notifier.send(event({ ...opened(), id: 'tincidentopened-again-0003' }));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(3);
  });

  it('reminders, digests and tests are plain posts, posted once per delivery', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica();
    const reminder = notification([opened()], { type: 'reminder', id: 'reminder-1' });
    await notifier.send(reminder);
    await notifier.send(reminder);
    await notifier.send(
      notification(manyServices(2), {
        type: 'digest',
        id: 'digest-1',
        summary: ['2 changes'],
      }),
    );
    await notifier.send(notification([opened()], { type: 'test', id: 'test-1' }));
    const parents = receiver.messages(CHANNEL_ID);
    expect(parents).toHaveLength(3);
    expect(parents.every((p) => p.replies.length === 0 && p.edits === 0)).toBe(true);
    expect(parents[0]?.text).toContain('Reminder');
    expect(parents[2]?.text).toContain('[test]');
  });

  it('replyBroadcast: all broadcasts every reply, none never', async () => {
    for (const [mode, expected] of [
      ['all', [true, true]],
      ['none', [false, false]],
    ] as const) {
      const { receiver, replica } = await setup();
      const notifier = replica({ config: { replyBroadcast: mode } });
      await notifier.send(event(opened()));
      await notifier.send(event(updated()));
      await notifier.send(event(resolved()));
      expect(receiver.messages(CHANNEL_ID)[0]?.replies.map((r) => r.broadcast)).toEqual(expected);
    }
  });

  it('without Redis state every event is a message of its own', async () => {
    const { receiver, replica } = await setup();
    const notifier = replica({ state: false });
    await notifier.send(event(opened()));
    await notifier.send(event(updated()));
    expect(receiver.messages(CHANNEL_ID)).toHaveLength(2);
    expect(methods(receiver)).toEqual(['chat.postMessage', 'chat.postMessage']);
  });
});

describe('Slack app config', () => {
  const base = { type: 'slack', botToken: TOKEN, channel: 'C0123ABCD' };

  it('defaults apiUrl and replyBroadcast', () => {
    const config = slackAppChannelConfigSchema.parse(base);
    expect(config.apiUrl).toBe('https://slack.com/api');
    expect(config.replyBroadcast).toBe('closing');
  });

  it('refuses a token that is not a bot token, without echoing it', () => {
    const result = slackAppChannelConfigSchema.safeParse({ ...base, botToken: 'xoxp-user-token' });
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).not.toContain('xoxp-user-token');
  });

  it.each(['C0123ABCD', 'G0PRIVATE1', '#alerts', '#ops-alerts_eu'])(
    'accepts channel %s',
    (channel) => {
      expect(slackAppChannelConfigSchema.safeParse({ ...base, channel }).success).toBe(true);
    },
  );

  it.each(['alerts', '#', '#Alerts', 'c0123abcd', '<#C0123ABCD>', '#a b'])(
    'refuses channel %s',
    (channel) => {
      expect(slackAppChannelConfigSchema.safeParse({ ...base, channel }).success).toBe(false);
    },
  );

  it('refuses an unknown replyBroadcast and keeps the webhook mode field rules', () => {
    expect(slackAppChannelConfigSchema.safeParse({ ...base, replyBroadcast: 'some' }).success).toBe(
      false,
    );
    expect(slackAppChannelConfigSchema.safeParse({ ...base, mention: '@here' }).success).toBe(
      false,
    );
    expect(slackAppChannelConfigSchema.safeParse({ ...base, iconEmoji: 'bell' }).success).toBe(
      false,
    );
  });
});
