import { afterEach, describe, expect, it, vi } from 'vitest';
import { startKeeper } from './queues.js';
import { RedisRefusals, type RefusalReason } from './redis/refusals.js';
import type { RedisClient } from './redis.js';

/** A Redis error reply as ioredis rejects a command with it. */
function reply(message: string): Error {
  const err = new Error(message);
  err.name = 'ReplyError';
  return err;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('startKeeper', () => {
  it('counts a refusal of Redis in the refusal model (not a line per tick) and logs any other failure', async () => {
    vi.useFakeTimers();
    // Never `ready`: the model's probes stay idle; only what the keeper notes reaches it.
    const refusals = new RedisRefusals({ status: 'end' } as unknown as RedisClient);
    const counted: RefusalReason[] = [];
    refusals.on('refusal', (reason) => counted.push(reason));
    const failures = [
      reply(
        'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
      ),
      reply("OOM command not allowed when used memory > 'maxmemory'."),
      new Error('stored subscription is not valid JSON'),
    ];
    const warned: Record<string, unknown>[] = [];
    const stop = startKeeper(
      1000,
      () => Promise.reject(failures.shift() ?? new Error('no more')),
      { warn: (fields: Record<string, unknown>) => warned.push(fields) } as never,
      { event: 'keeper:failed', message: 'could not keep', refusals },
    );
    await vi.advanceTimersByTimeAsync(3000);
    stop();
    refusals.close();
    expect(counted).toEqual(['busy', 'oom']);
    expect(warned).toEqual([
      { event: 'keeper:failed', err: 'stored subscription is not valid JSON' },
    ]);
  });

  it('logs every failure, refusals included, when no refusal model is given', async () => {
    vi.useFakeTimers();
    const warned: Record<string, unknown>[] = [];
    const stop = startKeeper(
      1000,
      () => Promise.reject(reply("OOM command not allowed when used memory > 'maxmemory'.")),
      { warn: (fields: Record<string, unknown>) => warned.push(fields) } as never,
      { event: 'keeper:failed', message: 'could not keep' },
    );
    await vi.advanceTimersByTimeAsync(2000);
    stop();
    expect(warned.map((w) => w.event)).toEqual(['keeper:failed', 'keeper:failed']);
  });
});
