import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKeys, reconnectOnReadonly, type RedisClient } from '../redis.js';
import {
  REFUSAL_HINTS,
  REFUSAL_SUMMARY_MS,
  RedisRefusals,
  refusalBackoff,
  refusalOf,
  type RefusalState,
} from './refusals.js';

/** What ioredis rejects with: an Error whose message is the reply, its code the first word. */
const reply = (message: string): Error => Object.assign(new Error(message), { name: 'ReplyError' });

describe('refusalOf: a Redis error reply → the refusal it is', () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'.", 'oom'],
    ["READONLY You can't write against a read only replica.", 'readonly'],
    ['NOREPLICAS Not enough good replicas to write.', 'noreplicas'],
    ["NOPERM User sw has no permissions to run the 'xadd' command", 'noperm'],
    [
      'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
      'busy',
    ],
    ['LOADING Redis is loading the dataset in memory', 'loading'],
    [
      'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
      'misconf',
    ],
    [
      "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
      'masterdown',
    ],
    ['ERR max number of clients reached', 'maxclients'],
    [
      "ERR The user executing the script can't run this command or subcommand script: abc",
      'noperm',
    ],
    // BullMQ quotes the reply inside its own message.
    ["Failed to add job: OOM command not allowed when used memory > 'maxmemory'.", 'oom'],
    // ioredis wraps a reply that came before any command.
    [
      'Command queue state error. If you can reproduce this, please report it. Last reply: ERR max number of clients reached',
      'maxclients',
    ],
  ])('%s → %s', (message, reason) => {
    expect(refusalOf(reply(message))).toBe(reason);
  });

  it.each([
    "ERR wrong number of arguments for 'set' command",
    'WRONGTYPE Operation against a key holding the wrong kind of value',
    'Connection is closed.',
    'NOSCRIPT No matching script.',
    // A code word inside someone else's text is not a reply code.
    'the subscriber said OOM once',
  ])('%s is not a refusal', (message) => {
    expect(refusalOf(new Error(message))).toBeNull();
  });

  it('finds a refusal in the cause chain (bounded)', () => {
    const inner = reply("READONLY You can't write against a read only replica.");
    expect(refusalOf(new Error('job failed', { cause: inner }))).toBe('readonly');
    let deep: Error = inner;
    for (let i = 0; i < 6; i++) deep = new Error('wrapped', { cause: deep });
    expect(refusalOf(deep)).toBeNull();
    expect(refusalOf('OOM not an Error')).toBeNull();
  });

  it('backs off 250 ms doubling to 2 s', () => {
    expect([1, 2, 3, 4, 5, 20].map(refusalBackoff)).toEqual([250, 500, 1000, 2000, 2000, 2000]);
  });
});

describe('reconnectOnReadonly: the reconnect of a connection by address', () => {
  it('asks for a reconnect (without re-sending the command) on READONLY', () => {
    expect(
      reconnectOnReadonly(reply("READONLY You can't write against a read only replica.")),
    ).toBe(1);
  });

  it.each([
    "OOM command not allowed when used memory > 'maxmemory'.",
    'NOREPLICAS Not enough good replicas to write.',
    "NOPERM User sw has no permissions to run the 'xadd' command",
    'LOADING Redis is loading the dataset in memory',
    'ERR max number of clients reached',
    'Connection is closed.',
    // Only a reply that starts with the code: not a script's text that mentions it.
    'ERR Error running script: READONLY mentioned',
  ])('not on %s', (message) => {
    expect(reconnectOnReadonly(reply(message))).toBe(false);
  });
});

describe('RedisRefusals: what an episode logs', () => {
  const oom = reply("OOM command not allowed when used memory > 'maxmemory'.");
  const readonly = reply("READONLY You can't write against a read only replica.");
  interface Line {
    level: 'info' | 'warn' | 'error';
    fields: Record<string, unknown>;
  }
  let lines: Line[];
  let refusals: RedisRefusals;
  let ended: RefusalState[];

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
    lines = [];
    const at =
      (level: Line['level']) =>
      (fields: Record<string, unknown>): void => {
        lines.push({ level, fields });
      };
    const log = { info: at('info'), warn: at('warn'), error: at('error') };
    // Never `ready`: the probes stay idle, only what is noted here drives the episode.
    const redis = { status: 'end' } as unknown as RedisClient;
    refusals = new RedisRefusals(redis, () => Date.now());
    refusals.watch(log as never, createKeys('refusals-unit'));
    ended = [];
    refusals.on('accepting', (state) => ended.push(state));
  });

  afterEach(() => {
    refusals.close();
    vi.useRealTimers();
  });

  const events = (): unknown[] => lines.map((l) => l.fields.event);

  it('one start line with the hint, at most one summary a minute with counts, one end line', () => {
    // A job's refusal alone opens no logged episode; Redis's own refusal (a probe) confirms it.
    refusals.note(oom, { queue: 'poll' });
    expect(lines).toEqual([]);
    refusals.note(oom, {}, true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      fields: { event: 'redis:refusing', reason: 'oom', hint: REFUSAL_HINTS.oom },
    });
    expect(refusals.current()?.reasons).toEqual(['oom']);
    // Hundreds of refusals within the first minute: no line.
    for (let i = 0; i < 300; i++) {
      refusals.note(oom, { queue: 'deliveries' });
      vi.advanceTimersByTime(150);
    }
    expect(events()).toEqual(['redis:refusing']);
    vi.advanceTimersByTime(REFUSAL_SUMMARY_MS - 300 * 150);
    expect(events()).toEqual(['redis:refusing', 'redis:still_refusing']);
    expect(lines[1]).toMatchObject({
      level: 'warn',
      fields: {
        reasons: ['oom'],
        refusedMs: REFUSAL_SUMMARY_MS,
        refusals: { oom: 302 },
        lastMinute: { oom: 302 },
      },
    });
    // A second reason: its own start line, once.
    refusals.note(readonly, {}, true);
    refusals.note(readonly, {}, true);
    for (let i = 0; i < 5; i++) refusals.note(oom);
    expect(events()).toEqual(['redis:refusing', 'redis:still_refusing', 'redis:refusing']);
    expect(lines[2]?.fields).toMatchObject({ reason: 'readonly', hint: REFUSAL_HINTS.readonly });
    vi.advanceTimersByTime(REFUSAL_SUMMARY_MS - 1);
    expect(lines).toHaveLength(3);
    vi.advanceTimersByTime(1);
    expect(lines).toHaveLength(4);
    expect(lines[3]?.fields).toMatchObject({
      event: 'redis:still_refusing',
      reasons: ['oom', 'readonly'],
      refusedMs: 2 * REFUSAL_SUMMARY_MS,
      refusals: { oom: 307, readonly: 2 },
      lastMinute: { oom: 5, readonly: 2 },
    });
    // Ten minutes more: ten summaries, one a minute.
    vi.advanceTimersByTime(10 * REFUSAL_SUMMARY_MS);
    expect(lines.filter((l) => l.fields.event === 'redis:still_refusing')).toHaveLength(12);
    expect(lines).toHaveLength(14);
    vi.advanceTimersByTime(REFUSAL_SUMMARY_MS / 2);
    refusals.accepted('write');
    expect(lines).toHaveLength(15);
    expect(lines[14]).toMatchObject({
      level: 'info',
      fields: {
        event: 'redis:accepting',
        refusedMs: 12.5 * REFUSAL_SUMMARY_MS,
        refusals: { oom: 307, readonly: 2 },
      },
    });
    expect(ended).toHaveLength(1);
    expect(refusals.current()).toBeNull();
    // Over: no summary follows.
    vi.advanceTimersByTime(5 * REFUSAL_SUMMARY_MS);
    expect(lines).toHaveLength(15);
  });

  it('a refusal only a job saw, then a write that succeeds: no line at all', () => {
    refusals.note(oom, { queue: 'poll' });
    vi.advanceTimersByTime(3 * REFUSAL_SUMMARY_MS);
    expect(refusals.current()).toBeNull();
    refusals.accepted('write');
    expect(lines).toEqual([]);
    expect(ended).toHaveLength(1);
  });

  it('a missing permission is not ended by a write, only by the permission check', () => {
    refusals.note(reply("NOPERM User sw has no permissions to run the 'xadd' command"), {}, true);
    refusals.accepted('write');
    expect(refusals.current()?.reasons).toEqual(['noperm']);
    refusals.accepted('permissions');
    expect(events()).toEqual(['redis:refusing', 'redis:accepting']);
  });

  it('maxclients ends when the connection is ready again', () => {
    refusals.note(reply('ERR max number of clients reached'), {}, true);
    expect(lines[0]?.fields).toMatchObject({
      reason: 'maxclients',
      hint: REFUSAL_HINTS.maxclients,
    });
    refusals.accepted('connection');
    expect(events()).toEqual(['redis:refusing', 'redis:accepting']);
  });
});
