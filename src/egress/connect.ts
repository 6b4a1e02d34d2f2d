/**
 * The egress policy where connections are made: a `lookup` that refuses a name resolving to a
 * refused address, an undici connector that refuses refused literals and uses that lookup, and a
 * nodemailer `getSocket` that connects only to an address it has checked. The address checked is
 * the address connected to (no second resolution between the check and the connect), so a name
 * that changes what it resolves to between a check and a send is refused too.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { connect as netConnect, isIP, type LookupFunction, type Socket } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { LOOP_HEADER } from '../server/own-sockets.js';
import { canonicalHost, EgressDeniedError, isLocalhostName, type EgressPolicy } from './policy.js';

/** The refusal's words: what a team may see (its own destination's class), never an answer. */
function denied(host: string, what: string, named: boolean): EgressDeniedError {
  return new EgressDeniedError(
    named
      ? `destination ${host} resolves to an address the egress policy (server.egress) refuses`
      : `destination ${host} is ${what}, refused by the egress policy (server.egress)`,
  );
}

/**
 * The refusal for a destination given as written (before any DNS): an IP literal in any spelling.
 * Null when it may go on (a name is judged by what it resolves to).
 */
export function literalRefusal(
  policy: EgressPolicy,
  host: string,
  port: number,
): EgressDeniedError | null {
  const canonical = canonicalHost(host);
  if (canonical === null) return new EgressDeniedError(`destination ${host} is not a valid host`);
  if (policy.allowsHostPort(canonical, port)) return null;
  if (isIP(canonical) === 0) return null;
  const what = policy.refusal(canonical, canonical, port);
  return what === null ? null : denied(canonical, what, false);
}

/**
 * `literalRefusal`, and `localhost` (RFC 6761: loopback whatever a resolver says) judged as
 * 127.0.0.1: for a channel being stored, where a DNS answer cannot be had (no resolution).
 */
export function writtenRefusal(
  policy: EgressPolicy,
  host: string,
  port: number,
): EgressDeniedError | null {
  const literal = literalRefusal(policy, host, port);
  const canonical = canonicalHost(host);
  if (literal !== null || canonical === null || !isLocalhostName(canonical)) return literal;
  const what = policy.refusal('127.0.0.1', canonical, port);
  return what === null ? null : denied(canonical, 'a loopback name', false);
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** Every address of a name (`dns.lookup` with `all: true`): the system resolver, or a test's. */
export type Resolver = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, options, callback) => {
  dnsLookup(hostname, options, callback);
};

/**
 * A `net.connect` lookup for `host:port` that resolves every address and refuses the destination
 * when any of them is refused (a name may not mix a public and an internal address). The
 * addresses it checks are the ones it hands the socket: one resolution per connect, none cached.
 */
export function checkedLookup(
  policy: EgressPolicy,
  port: number,
  resolve: Resolver = systemResolver,
): LookupFunction {
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const canonical = canonicalHost(hostname) ?? hostname;
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err !== null) {
        callback(err, []);
        return;
      }
      const bad = addresses.find((a) => policy.refusal(a.address, canonical, port) !== null);
      if (bad !== undefined || addresses.length === 0) {
        callback(denied(canonical, '', true), []);
        return;
      }
      if (options.all === true) callback(null, addresses);
      else {
        const [first] = addresses;
        callback(null, first?.address ?? '', first?.family ?? 4);
      }
    });
  };
  return lookup;
}

/** Options of an undici Agent's connector (its `connect` option as an object). */
export type ConnectOptions = buildConnector.BuildOptions;

/**
 * An undici connector that applies `policy` to every connection: literals are judged before the
 * socket is opened, names through `checkedLookup`. `host:port` exceptions connect unchecked.
 */
export function egressConnector(
  policy: EgressPolicy,
  options: ConnectOptions = {},
): buildConnector.connector {
  const open = buildConnector(options);
  const checked = new Map<number, buildConnector.connector>();
  return (opts, callback) => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const host = canonicalHost(opts.hostname) ?? opts.hostname;
    const refusal = literalRefusal(policy, host, port);
    if (refusal !== null) {
      queueMicrotask(() => {
        callback(refusal, null);
      });
      return;
    }
    if (isIP(host) !== 0 || policy.allowsHostPort(host, port)) {
      open(opts, callback);
      return;
    }
    let connector = checked.get(port);
    if (connector === undefined) {
      connector = buildConnector({ ...options, lookup: checkedLookup(policy, port) });
      checked.set(port, connector);
    }
    connector(opts, callback);
  };
}

/** `headers` of a request with the loop header added (undici takes several forms). */
function withLoopHeader(
  headers: Dispatcher.DispatchOptions['headers'],
): NonNullable<Dispatcher.DispatchOptions['headers']> {
  if (headers === null || headers === undefined) return { [LOOP_HEADER]: '1' };
  if (Array.isArray(headers) && !Array.isArray(headers[0])) return [...headers, LOOP_HEADER, '1'];
  if (Symbol.iterator in headers) {
    const flat: string[] = [];
    for (const [name, value] of headers as Iterable<[string, string | string[] | undefined]>) {
      if (value === undefined) continue;
      for (const one of typeof value === 'string' ? [value] : value) flat.push(name, one);
    }
    return [...flat, LOOP_HEADER, '1'];
  }
  return { ...headers, [LOOP_HEADER]: '1' };
}

/**
 * An Agent whose every request carries the loop header. An override of `dispatch` (which
 * `request`, `stream` and the rest all go through) rather than `compose`: a composed interceptor
 * wraps each request's handler twice (undici's new handler API and back) and parses the
 * answer's headers an extra time, a visible share of a webhook's CPU in a storm of deliveries.
 */
class LoopHeaderAgent extends Agent {
  override dispatch(options: Agent.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return super.dispatch({ ...options, headers: withLoopHeader(options.headers) }, handler);
  }
}

/**
 * The Agent a notifier owns: every request it sends carries the loop header (so the ops server
 * of any replica refuses, unchecked and uncounted, a request that came back to this installation,
 * also through its public ingress), and with a policy every connection it makes goes through
 * `egressConnector`; without one (a config-file channel the operator exempts) a plain connector.
 */
export function egressAgent(
  policy: EgressPolicy | undefined,
  options: Omit<Agent.Options, 'connect'> & { connect?: ConnectOptions } = {},
): Dispatcher {
  const { connect, ...rest } = options;
  return policy === undefined
    ? new LoopHeaderAgent(options)
    : new LoopHeaderAgent({ ...rest, connect: egressConnector(policy, connect) });
}

/** What nodemailer hands a `getSocket` option (the transport's own options). */
interface SocketRequest {
  host?: string | undefined;
  port?: number | string | undefined;
  connectionTimeout?: number | string | undefined;
}

/**
 * A nodemailer `getSocket` that applies `policy`: it resolves the SMTP host itself, checks every
 * address, and hands nodemailer a socket already connected to the checked one (implicit TLS and
 * STARTTLS then run on it as usual, with the host name for SNI). A `host:port` exception, and an
 * allowed literal, leave the connection to nodemailer.
 */
export function egressSocket(
  policy: EgressPolicy,
): (
  options: SocketRequest,
  callback: (err: Error | null, socket?: false | { connection: Socket }) => void,
) => void {
  return (options, callback) => {
    const host = canonicalHost(options.host ?? 'localhost') ?? options.host ?? '';
    const port = Number(options.port ?? 25);
    if (policy.allowsHostPort(host, port)) {
      callback(null, false);
      return;
    }
    const refusal = literalRefusal(policy, host, port);
    if (refusal !== null) {
      callback(refusal);
      return;
    }
    const timeoutMs = Number(options.connectionTimeout ?? 10_000);
    let settled = false;
    // A literal is connected to as it is (checked above); a name through the checked lookup.
    const socket: Socket = netConnect(
      isIP(host) !== 0 ? { host, port } : { host, port, lookup: checkedLookup(policy, port) },
    );
    const finish = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeListener('error', finish);
      if (err === null) callback(null, { connection: socket });
      else {
        socket.destroy();
        callback(err);
      }
    };
    const timer = setTimeout(() => {
      // Not ETIMEDOUT (a `timeout`): a connect that times out reads as any network failure, as
      // undici's connect timeout does, so a filtered port reads like a closed one.
      finish(Object.assign(new Error('SMTP connect timed out'), { code: 'ECONNECT_TIMEOUT' }));
    }, timeoutMs);
    socket.once('connect', () => {
      finish(null);
    });
    socket.once('error', finish);
  };
}

/**
 * The refusal for a destination when a channel is stored: a literal is judged as written, a name
 * by what it resolves to now (a name that does not resolve yet is accepted: the connect-time check
 * still applies to every send). Null when it may be stored.
 */
export async function destinationRefusal(
  policy: EgressPolicy,
  host: string,
  port: number,
): Promise<EgressDeniedError | null> {
  const written = writtenRefusal(policy, host, port);
  const canonical = canonicalHost(host);
  if (written !== null || canonical === null || isIP(canonical) !== 0) return written;
  if (policy.allowsHostPort(canonical, port)) return null;
  const addresses = await new Promise<LookupAddress[]>((resolve) => {
    dnsLookup(canonical, { all: true }, (err, found) => {
      resolve(err === null ? found : []);
    });
  });
  return addresses.some((a) => policy.refusal(a.address, canonical, port) !== null)
    ? denied(canonical, '', true)
    : null;
}
