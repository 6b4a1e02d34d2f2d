/**
 * `checkedLookup` on real sockets: the address checked is the address connected to. A name is
 * resolved once per connect, by the connect's own lookup, and every answer is judged: a resolver
 * that answers an accepted address first (a write-time check) and loopback next (DNS rebinding)
 * is refused on the connect, and a connect that passes goes to the very address that was checked.
 *
 * Safety: the resolvers below answer made-up names; every connect's lookup is fenced (an answer
 * the checked lookup hands on that is not loopback fails the test instead of being dialled), and
 * the only accepted addresses are loopback ones an exception allows, so nothing but loopback is
 * ever connected to. A public-looking answer is only checked (refused, or inspected), never dialled.
 */
import type { LookupAddress } from 'node:dns';
import { connect, type LookupFunction, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { countingListener, type CountingListener } from '../../test/helpers/egress.js';
import { checkedLookup, type Resolver } from './connect.js';
import { EGRESS_DENIED, EgressPolicy, parseAllowEntry, type AllowEntry } from './policy.js';

type Counting = CountingListener;

const open: Counting[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});

/** A silent listener on `host:port` (0: any) that counts connections. */
async function counting(host: string, port = 0): Promise<Counting> {
  const l = await countingListener(host, port);
  open.push(l);
  return l;
}

/** Listeners on each of `hosts`, all on one port. */
async function onOnePort(hosts: readonly string[]): Promise<Counting[]> {
  for (let tries = 0; tries < 20; tries += 1) {
    const first = await counting(hosts[0] ?? '127.0.0.1');
    try {
      const rest: Counting[] = [];
      for (const host of hosts.slice(1)) rest.push(await counting(host, first.port));
      return [first, ...rest];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      await Promise.all(open.splice(0).map((l) => l.close()));
    }
  }
  throw new Error('no free port on every host');
}

function policyOf(...allow: string[]): EgressPolicy {
  return new EgressPolicy(allow.map((a) => parseAllowEntry(a) as AllowEntry));
}

/** A resolver answering `answers[i]` on its i-th call (the last one from then on). */
function scripted(answers: readonly (readonly string[])[]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = (
    hostname: string,
    _options: unknown,
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ): void => {
    const answer = answers[Math.min(calls.length, answers.length - 1)] ?? [];
    calls.push(hostname);
    queueMicrotask(() => {
      callback(
        null,
        answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    });
  };
  return Object.assign(resolver, { calls });
}

const LOOPBACK = /^127\.|^::1$/;

/** `lookup` behind a fence: an answer it hands on that is not loopback is never dialled. */
function fenced(lookup: LookupFunction, breaches: string[]): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, options, (err, address, family) => {
      const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const outside = all.filter((a) => a !== '' && !LOOPBACK.test(a));
      if (err === null && outside.length > 0) {
        breaches.push(...outside);
        callback(new Error('fenced: not a loopback address'), '', 4);
        return;
      }
      callback(err, address, family);
    });
  };
}

/** Connects to `host:port` through `lookup`: the socket, or the error. */
function dial(
  host: string,
  port: number,
  lookup: LookupFunction,
): Promise<{ socket: Socket } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, lookup });
    socket.once('connect', () => {
      resolve({ socket });
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy();
      resolve({ error });
    });
  });
}

/** One call of `lookup` by itself, as a check before any connect (nothing is dialled). */
function inspect(lookup: LookupFunction, host: string): Promise<{ err: unknown; found: string[] }> {
  return new Promise((resolve) => {
    lookup(host, { all: true }, (err, address) => {
      const found = Array.isArray(address) ? address.map((a) => a.address) : [address];
      resolve({ err, found });
    });
  });
}

describe('checkedLookup: the address checked is the address connected to', () => {
  it('a name answering a public-looking address first, then loopback (rebinding), is refused on the connect’s own lookup', async () => {
    const [v4] = await onOnePort(['127.0.0.1']);
    if (v4 === undefined) throw new Error('no listener');
    const resolver = scripted([['93.184.215.14'], ['127.0.0.1']]);
    const lookup = checkedLookup(new EgressPolicy(), v4.port, resolver);
    // The first answer, as a check before the send would see it: accepted (inspected only).
    const before = await inspect(lookup, 'rebind.example');
    expect(before).toEqual({ err: null, found: ['93.184.215.14'] });
    // The connect resolves again, itself, and judges what it got: loopback, refused.
    const breaches: string[] = [];
    const result = await dial('rebind.example', v4.port, fenced(lookup, breaches));
    expect('error' in result && result.error.code).toBe(EGRESS_DENIED);
    expect(resolver.calls).toEqual(['rebind.example', 'rebind.example']);
    expect(breaches).toEqual([]);
    expect(v4.connections).toBe(0);
  });

  it('an accepted answer, then a refused one: the connect goes to the address it checked, resolving once', async () => {
    // 127.0.0.2 stands for an address the policy accepts (an exception allows it); 127.0.0.3
    // is refused. Both listen on one port: whichever the socket reaches is counted.
    const [allowed, refused] = await onOnePort(['127.0.0.2', '127.0.0.3']);
    if (allowed === undefined || refused === undefined) throw new Error('no listeners');
    const resolver = scripted([['127.0.0.2'], ['127.0.0.3']]);
    const breaches: string[] = [];
    const lookup = checkedLookup(policyOf('127.0.0.2/32'), allowed.port, resolver);
    const result = await dial('service.example', allowed.port, fenced(lookup, breaches));
    if (!('socket' in result)) throw result.error;
    expect(result.socket.remoteAddress).toBe('127.0.0.2');
    result.socket.destroy();
    expect(resolver.calls).toHaveLength(1);
    expect(allowed.connections).toBe(1);
    expect(refused.connections).toBe(0);
    // The next connect resolves anew: 127.0.0.3 now, refused before any socket reaches it.
    const again = await dial('service.example', allowed.port, fenced(lookup, breaches));
    expect('error' in again && again.error.code).toBe(EGRESS_DENIED);
    expect(resolver.calls).toHaveLength(2);
    expect(refused.connections).toBe(0);
    expect(breaches).toEqual([]);
  });

  it('every answer is judged: one refused address among accepted ones refuses the name; a reserved public-looking answer is refused', async () => {
    const [allowed] = await onOnePort(['127.0.0.2']);
    if (allowed === undefined) throw new Error('no listener');
    const policy = policyOf('127.0.0.2/32');
    const breaches: string[] = [];
    for (const answer of [
      ['127.0.0.2', '10.0.0.1'],
      ['10.0.0.1', '127.0.0.2'],
      ['127.0.0.2', '::1'],
      ['203.0.113.5'],
      ['169.254.169.254'],
      ['::ffff:127.0.0.1'],
      [],
    ]) {
      const resolver = scripted([answer]);
      const lookup = fenced(checkedLookup(policy, allowed.port, resolver), breaches);
      const result = await dial('mixed.example', allowed.port, lookup);
      expect('error' in result && result.error.code, answer.join(',')).toBe(EGRESS_DENIED);
      expect(resolver.calls, answer.join(',')).toHaveLength(1);
    }
    expect(breaches).toEqual([]);
    expect(allowed.connections).toBe(0);
  });

  it('a resolver error is passed on as it is (nothing dialled)', async () => {
    const resolver: Resolver = (_hostname, _options, callback) => {
      callback(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }), []);
    };
    const result = await dial('missing.example', 9, checkedLookup(new EgressPolicy(), 9, resolver));
    expect('error' in result && result.error.code).toBe('ENOTFOUND');
  });
});
