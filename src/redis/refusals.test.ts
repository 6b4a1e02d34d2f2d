import { describe, expect, it } from 'vitest';
import { refusalBackoff, refusalOf } from './refusals.js';

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
