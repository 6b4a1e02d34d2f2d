/**
 * The API's Redis store in-process, on real Redis: two stores on one prefix stand for two
 * replicas (optimistic transactions settle a race), the merged runtime view follows the version
 * counter and hears the change notifications, tombstones keep owed closings and reserve names,
 * and no key means no secrets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { newKey, SecretBox } from '../src/api/crypto.js';
import { ApiError } from '../src/api/errors.js';
import { ApiRuntime } from '../src/api/runtime.js';
import { ApiStore, type ConfigView } from '../src/api/store.js';
import type { Actor } from '../src/api/tokens.js';
import type { ChannelConfig } from '../src/config/schema.js';
import { testRedis, type TestRedis } from './helpers/redis.js';
import { waitFor } from './helpers/wait.js';

const log = pino({ level: 'silent' });
const config: ConfigView = { channels: {}, subscriptions: [] };
const teamA: Actor = { tokenId: 'ta', team: 'a', admin: false, address: 'test' };
const teamB: Actor = { tokenId: 'tb', team: 'b', admin: false, address: 'test' };
const box = SecretBox.fromEnv({ STATUSWATCH_SECRET_KEY: newKey() });
const hook = (name: string) => ({
  name,
  type: 'webhook',
  url: 'https://hooks.example/a/TOKEN123',
  secret: `whsec_${Buffer.from('0123456789abcdef0123').toString('base64')}`,
});

let tr: TestRedis | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  await tr?.cleanup();
  tr = undefined;
});

async function store(b: SecretBox | null = box): Promise<ApiStore> {
  tr ??= await testRedis('api-s');
  const s = new ApiStore({ redis: tr.redis, keys: tr.keys, config: () => config, box: b });
  closers.push(() => s.close());
  return s;
}

/** The merged runtime view on `s`, telling `onChannels` of every channel set. */
function runtimeOn(
  s: ApiStore,
  onChannels: (channels: Record<string, ChannelConfig>) => void,
  pollMs?: number,
): ApiRuntime {
  return new ApiRuntime({
    store: s,
    config: () => config,
    box,
    log,
    onChannels,
    ...(pollMs === undefined ? {} : { pollMs }),
  });
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiError) return err.status;
    throw err;
  }
}

describe('ApiStore', () => {
  it('two replicas racing to create one name: one wins, the other gets 409', async () => {
    const [r1, r2] = [await store(), await store()];
    for (let i = 0; i < 5; i += 1) {
      const results = await Promise.all([
        status(r1.putChannel(teamA, hook(`race-${i}`), 'create')),
        status(r2.putChannel(teamB, hook(`race-${i}`), 'create')),
      ]);
      expect(results.sort()).toEqual([200, 409]);
    }
    expect(Number(await r1.version())).toBe(5);
  });

  it('the runtime follows the version: new objects, deletions as owed closings, channel tombstones', async () => {
    const s = await store();
    let channels: Record<string, ChannelConfig> = {};
    const runtime = runtimeOn(s, (c) => (channels = c));
    await runtime.refresh();
    expect(runtime.subscriptions()).toEqual([]);
    await s.putChannel(teamA, hook('a-hook'), 'create');
    await s.putSubscription(
      teamA,
      { name: 'a-sub', services: ['stripe'], channels: ['a-hook'] },
      'create',
    );
    await runtime.refresh();
    expect(runtime.subscriptions().map((x) => x.name)).toEqual(['a-sub']);
    expect(Object.keys(channels)).toEqual(['a-hook']);
    expect(channels['a-hook']).toMatchObject({ url: 'https://hooks.example/a/TOKEN123' });

    // In use: the channel cannot go; the subscription can, and is owed its closings.
    expect(await status(s.deleteChannel(teamA, 'a-hook'))).toBe(409);
    await s.deleteSubscription(teamA, 'a-sub');
    await s.deleteChannel(teamA, 'a-hook');
    await runtime.refresh();
    expect(runtime.subscriptions()).toEqual([]);
    expect([...runtime.owedClosings()]).toEqual(['a-sub']);
    // The deleted channel still delivers (closings, retries) but is listed nowhere.
    expect(Object.keys(channels)).toEqual(['a-hook']);
    expect((await s.listChannels(teamA)).map((c) => c.name)).toEqual([]);

    // Their names stay team a's while they are owed; team a may use them again.
    expect(await status(s.putChannel(teamB, hook('a-hook'), 'create'))).toBe(409);
    expect(
      await status(
        s.putSubscription(teamB, { name: 'a-sub', services: ['*'], channels: ['x'] }, 'create'),
      ),
    ).toBe(409);
    await s.putChannel(teamA, hook('a-hook'), 'create');
    await s.putSubscription(
      teamA,
      { name: 'a-sub', services: ['github'], channels: ['a-hook'] },
      'create',
    );
    await runtime.refresh();
    expect(runtime.subscriptions().map((x) => x.name)).toEqual(['a-sub']);
    // The re-created one does not watch stripe: the old one's closings are still owed.
    expect([...runtime.owedClosings()]).toEqual(['a-sub']);
  });

  it("the runtime hears a change at once through the store's notifications (no poll)", async () => {
    const [s, other] = [await store(), await store()];
    let channels: Record<string, ChannelConfig> = {};
    // No fallback poll within the test: only the change notification can bring the channel.
    const runtime = runtimeOn(s, (c) => (channels = c), 3_600_000);
    await runtime.start();
    closers.push(() => runtime.stop());
    expect(Object.keys(channels)).toEqual([]);
    await other.putChannel(teamA, hook('heard'), 'create');
    await waitFor(() => Object.keys(channels).includes('heard'), {
      what: 'the runtime to hear of the new channel',
    });
  });

  it('without STATUSWATCH_SECRET_KEY: a channel with secrets is refused naming the field; one without is stored', async () => {
    const s = await store(null);
    let caught: unknown;
    try {
      await s.putChannel(teamA, hook('no-key'), 'create');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).status).toBe(503);
    expect((caught as ApiError).field).toBe('url');
    expect(await s.version()).toBe('0');
    const email = {
      name: 'mail',
      type: 'email',
      from: 'sw@example.com',
      to: ['oncall@example.com'],
      smtp: { host: 'smtp.example.com', port: 25 },
    };
    const { view } = await s.putChannel(teamA, email, 'create');
    expect(view).toMatchObject({ name: 'mail', type: 'email', team: 'a', source: 'api' });
  });
});
