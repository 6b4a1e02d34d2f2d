import { describe, expect, it } from 'vitest';
import { canonicalHost, EgressPolicy, parseAllowEntry, refusedRange } from './policy.js';

describe('refusedRange', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.1.2', 'a loopback address'],
    ['10.1.2.3', 'a private (RFC 1918) address'],
    ['172.16.0.1', 'a private (RFC 1918) address'],
    ['172.31.255.255', 'a private (RFC 1918) address'],
    ['192.168.1.1', 'a private (RFC 1918) address'],
    ['169.254.169.254', 'a link-local address'],
    ['168.63.129.16', 'a cloud platform address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['0.0.0.0', 'an unspecified ("this network") address'],
    ['224.0.0.1', 'a multicast address'],
    ['255.255.255.255', 'a reserved address'],
    ['198.18.0.1', 'a reserved (benchmarking) address'],
    ['::1', 'a loopback address'],
    ['::', 'an unspecified address'],
    ['fd00::1', 'a unique-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fe80::1', 'a link-local address'],
    ['ff02::1', 'a multicast address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['::ffff:a9fe:a9fe', 'a link-local address'],
    ['::7f00:1', 'an IPv4-compatible address'],
    ['64:ff9b::7f00:1', 'a NAT64 address'],
    ['2002:7f00:1::', 'a 6to4 address'],
    ['2001:db8::1', 'a reserved (documentation) address'],
    ['100::1', 'a reserved address'],
  ])('%s is refused as %s', (address, what) => {
    expect(refusedRange(address)).toBe(what);
  });

  it.each([
    '93.184.216.34',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:1.1.1.1',
  ])('%s is public', (address) => {
    expect(refusedRange(address)).toBeNull();
  });
});

describe('canonicalHost', () => {
  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
    ['::1', '::1'],
    ['LocalHost.', 'localhost'],
    ['Hooks.Example.COM', 'hooks.example.com'],
  ])('%s → %s', (host, canonical) => {
    expect(canonicalHost(host)).toBe(canonical);
  });

  it('is null for what is no host', () => {
    expect(canonicalHost('a b')).toBeNull();
    expect(canonicalHost('[::1')).toBeNull();
  });
});

describe('parseAllowEntry', () => {
  it('reads CIDRs, addresses and host:port', () => {
    expect(parseAllowEntry('10.20.0.0/16')).toMatchObject({
      kind: 'cidr',
      bits: 16,
      family: 'ipv4',
    });
    expect(parseAllowEntry('fd00::/8')).toMatchObject({ kind: 'cidr', bits: 8, family: 'ipv6' });
    expect(parseAllowEntry('10.20.0.5')).toMatchObject({ kind: 'cidr', bits: 32 });
    expect(parseAllowEntry('SMTP.internal:25')).toEqual({
      kind: 'hostPort',
      text: 'SMTP.internal:25',
      host: 'smtp.internal',
      port: 25,
    });
    expect(parseAllowEntry('[fd00::5]:2525')).toMatchObject({ host: 'fd00::5', port: 2525 });
  });

  it.each([
    '10.0.0.0/33',
    'fd00::/129',
    'smtp.internal',
    'smtp.internal:0',
    'smtp.internal:70000',
    'a b:25',
    '/8',
  ])('%s is refused with a message', (text) => {
    expect(typeof parseAllowEntry(text)).toBe('string');
  });
});

describe('EgressPolicy', () => {
  const entry = (text: string) => {
    const e = parseAllowEntry(text);
    if (typeof e === 'string') throw new Error(e);
    return e;
  };

  it('refuses internal addresses by default and lets public ones go', () => {
    const policy = new EgressPolicy();
    expect(policy.refusal('127.0.0.1', '127.0.0.1', 80)).toBe('a loopback address');
    expect(policy.refusal('1.1.1.1', 'one.example', 443)).toBeNull();
  });

  it('allows a CIDR on any port, including its IPv4-mapped spelling', () => {
    const policy = new EgressPolicy([entry('127.0.0.0/8')]);
    expect(policy.refusal('127.0.0.1', 'x', 1)).toBeNull();
    expect(policy.refusal('::ffff:7f00:1', 'x', 1)).toBeNull();
    expect(policy.refusal('::1', 'x', 1)).toBe('a loopback address');
  });

  it('allows host:port for that host and port only', () => {
    const policy = new EgressPolicy([entry('smtp.internal:25'), entry('127.0.0.1:2525')]);
    expect(policy.refusal('10.1.1.1', 'smtp.internal', 25)).toBeNull();
    expect(policy.refusal('10.1.1.1', 'smtp.internal', 587)).toBe('a private (RFC 1918) address');
    expect(policy.refusal('10.1.1.1', 'other.internal', 25)).toBe('a private (RFC 1918) address');
    expect(policy.refusal('127.0.0.1', 'localhost', 2525)).toBeNull();
    expect(policy.refusal('127.0.0.1', 'localhost', 2526)).toBe('a loopback address');
  });
});
