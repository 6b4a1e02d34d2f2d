/**
 * The egress policy (pure: no DNS, no sockets): which addresses a channel may connect to.
 *
 * By default every address outside the public unicast space is refused: loopback, private
 * (RFC 1918), link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, unique-local,
 * multicast, unspecified, documentation, benchmarking and the other reserved ranges, IPv6 outside
 * 2000::/3, and the IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) judged by that
 * address. An operator allows exceptions explicitly (`server.egress.allow`): a CIDR or an address
 * (any port), or `host:port` (that name or address, that port only).
 *
 * Every spelling of an IPv4 address (decimal `2130706433`, hex `0x7f000001`, octal `0177.0.0.1`,
 * short `127.1`) is brought to its dotted form by the WHATWG URL parser before it is judged, and
 * a host name is judged by the addresses it resolves to at connect time (`connect.ts`).
 */
import { BlockList, isIP } from 'node:net';
import { StatuswatchError } from '../errors.js';

/** A refused range and the words an error uses for it. */
interface Range {
  cidr: string;
  what: string;
}

const V4_RANGES: readonly Range[] = [
  { cidr: '0.0.0.0/8', what: 'an unspecified ("this network") address' },
  { cidr: '10.0.0.0/8', what: 'a private (RFC 1918) address' },
  { cidr: '100.64.0.0/10', what: 'a carrier-grade NAT address' },
  { cidr: '127.0.0.0/8', what: 'a loopback address' },
  { cidr: '169.254.0.0/16', what: 'a link-local address' },
  { cidr: '172.16.0.0/12', what: 'a private (RFC 1918) address' },
  // Azure's platform endpoint (WireServer): public on paper, answers only from inside Azure.
  { cidr: '168.63.129.16/32', what: 'a cloud platform address' },
  { cidr: '192.0.0.0/24', what: 'a reserved address' },
  { cidr: '192.0.2.0/24', what: 'a reserved (documentation) address' },
  { cidr: '192.88.99.0/24', what: 'a reserved address' },
  { cidr: '192.168.0.0/16', what: 'a private (RFC 1918) address' },
  { cidr: '198.18.0.0/15', what: 'a reserved (benchmarking) address' },
  { cidr: '198.51.100.0/24', what: 'a reserved (documentation) address' },
  { cidr: '203.0.113.0/24', what: 'a reserved (documentation) address' },
  { cidr: '224.0.0.0/4', what: 'a multicast address' },
  { cidr: '240.0.0.0/4', what: 'a reserved address' },
];

/** Inside 2000::/3 (everything outside it is refused as well). */
const V6_RANGES: readonly Range[] = [
  { cidr: '2001::/23', what: 'a reserved address' },
  { cidr: '2001:db8::/32', what: 'a reserved (documentation) address' },
  { cidr: '2002::/16', what: 'a 6to4 address' },
  { cidr: '3fff::/20', what: 'a reserved (documentation) address' },
];

const V6_OUTSIDE: readonly Range[] = [
  { cidr: '::/128', what: 'an unspecified address' },
  { cidr: '::1/128', what: 'a loopback address' },
  { cidr: 'fc00::/7', what: 'a unique-local address' },
  { cidr: 'fe80::/10', what: 'a link-local address' },
  { cidr: 'ff00::/8', what: 'a multicast address' },
];

function blockOf(cidr: string): BlockList {
  const [address = '', bits = ''] = cidr.split('/');
  const list = new BlockList();
  list.addSubnet(address, Number(bits), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  return list;
}

const V4 = V4_RANGES.map((r) => ({ ...r, list: blockOf(r.cidr) }));
const V6 = [...V6_OUTSIDE, ...V6_RANGES].map((r) => ({ ...r, list: blockOf(r.cidr) }));
const GLOBAL_UNICAST = blockOf('2000::/3');

/** The 32 bits of an IPv4 address carried in the last two groups of an IPv6 one. */
function embeddedV4(groups: readonly number[]): string {
  const hi = groups[6] ?? 0;
  const lo = groups[7] ?? 0;
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** The eight 16-bit groups of a canonical IPv6 address. */
function groupsOf(address: string): number[] {
  let text = address;
  // A trailing dotted IPv4 part (`::ffff:127.0.0.1`) becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

/**
 * The words for the refused range `address` is in, or null for a public unicast address.
 * `address` is an IP address as `net.isIP` takes it (IPv6 without brackets).
 */
export function refusedRange(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return V4.find((r) => r.list.check(address, 'ipv4'))?.what ?? null;
  if (family !== 6) return 'not an IP address';
  const groups = groupsOf(address.toLowerCase().replace(/%.*$/, ''));
  const zeros = (n: number): boolean => groups.slice(0, n).every((g) => g === 0);
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the
  // IPv4 address inside decides, so no spelling of 127.0.0.1 gets through as IPv6.
  if (zeros(5) && groups[5] === 0xffff) return refusedRange(embeddedV4(groups));
  if (zeros(6) && ((groups[6] ?? 0) !== 0 || (groups[7] ?? 0) > 1))
    return 'an IPv4-compatible address';
  if (groups[0] === 0x64 && groups[1] === 0xff9b) return 'a NAT64 address';
  const hit = V6.find((r) => r.list.check(address, 'ipv6'));
  if (hit !== undefined) return hit.what;
  return GLOBAL_UNICAST.check(address, 'ipv6') ? null : 'a reserved address';
}

/**
 * A host as the URL parser sees it: IPv4 in every spelling becomes dotted, IPv6 loses its
 * brackets, a name is lower-cased without a trailing dot. Null when it is no valid host.
 */
export function canonicalHost(host: string): string | null {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const literal = isIP(bare) === 6 ? `[${bare}]` : bare;
  let hostname: string;
  try {
    hostname = new URL(`http://${literal}/`).hostname;
  } catch {
    return null;
  }
  if (hostname.startsWith('[')) return hostname.slice(1, -1);
  return hostname.replace(/\.$/, '');
}

/** A name that is loopback whatever a resolver says (RFC 6761): `localhost` and `*.localhost`. */
export function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** One parsed `server.egress.allow` entry. */
export type AllowEntry =
  | { kind: 'cidr'; text: string; address: string; bits: number; family: 'ipv4' | 'ipv6' }
  | { kind: 'hostPort'; text: string; host: string; port: number };

/**
 * Parses an allow entry: `10.20.0.5/32`, `fd00::/8`, `10.20.0.5` (one address, any port),
 * `smtp.internal:25`, `10.20.0.5:25`, `[fd00::5]:25`. Returns an error message instead when it is
 * none of these.
 */
export function parseAllowEntry(text: string): AllowEntry | string {
  const value = text.trim();
  const slash = value.indexOf('/');
  if (slash >= 0) {
    const address = value.slice(0, slash);
    const bitsText = value.slice(slash + 1);
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || !/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max)
      return 'expected a CIDR such as 10.20.0.0/16 or fd00::/8';
    return {
      kind: 'cidr',
      text: value,
      address,
      bits: Number(bitsText),
      family: family === 4 ? 'ipv4' : 'ipv6',
    };
  }
  const family = isIP(value);
  if (family !== 0) {
    return {
      kind: 'cidr',
      text: value,
      address: value,
      bits: family === 4 ? 32 : 128,
      family: family === 4 ? 'ipv4' : 'ipv6',
    };
  }
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  const host = match?.[1] === undefined ? null : canonicalHost(match[1]);
  if (host === null || host === '' || !(port >= 1 && port <= 65_535))
    return 'expected a CIDR (10.20.0.0/16), an IP address, or host:port (smtp.internal:25, [fd00::5]:25)';
  return { kind: 'hostPort', text: value, host, port };
}

/** The code of `EgressDeniedError` (the delivery classifier reads it as a `policy` failure). */
export const EGRESS_DENIED = 'EGRESS_DENIED';

/** Thrown (and passed to socket callbacks) when the policy refuses a destination. */
export class EgressDeniedError extends StatuswatchError {
  constructor(message: string) {
    super(EGRESS_DENIED, message);
  }
}

/** The policy API-created channels (and, when the operator says so, config-file ones) follow. */
export class EgressPolicy {
  private readonly allowed = new BlockList();
  private readonly hostPorts = new Set<string>();

  constructor(entries: readonly AllowEntry[] = []) {
    for (const e of entries) {
      if (e.kind === 'cidr') this.allowed.addSubnet(e.address, e.bits, e.family);
      else this.hostPorts.add(`${e.host}|${String(e.port)}`);
    }
  }

  /** Whether `host:port` (canonical host) is an explicit `host:port` exception. */
  allowsHostPort(host: string, port: number): boolean {
    return this.hostPorts.has(`${host}|${String(port)}`);
  }

  /**
   * Why a connection to `address` (an IP the destination `host:port` resolved to, or the literal
   * itself) is refused, or null when it may go.
   */
  refusal(address: string, host: string, port: number): string | null {
    if (this.allowsHostPort(host, port) || this.allowsHostPort(address, port)) return null;
    const family = isIP(address);
    if (family === 0) return 'not an IP address';
    if (this.allowed.check(address, family === 4 ? 'ipv4' : 'ipv6')) return null;
    return refusedRange(address);
  }
}
