/**
 * Shared fixtures for the notifier tests: sample and hostile transitions, a real local HTTP
 * receiver (stands in for Slack and webhook receivers) and a real in-process SMTP server.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { EventKind } from '../src/config/events.js';
import type { Transition } from '../src/diff/transition.js';
import type { Notification } from '../src/notify/types.js';

export const HOSTILE_TITLE =
  '<!channel> <@U123> <https://evil.example|click> <script>alert(1)</script> Subject\r\nBcc: victim@example.com';
export const LONG_SUMMARY = `${'<!channel> '.repeat(10)}${'x'.repeat(10_000)}`;

export function transition(
  kind: EventKind = 'incident.opened',
  overrides: Partial<Transition> = {},
): Transition {
  const incidentKinds: EventKind[] = ['incident.opened', 'incident.updated', 'incident.resolved'];
  return {
    id: `t${kind.replace('.', '')}0123456789abcdef`,
    kind,
    feedId: 'stripe',
    subject: incidentKinds.includes(kind) ? 'incident:inc-1' : 'status',
    service: {
      feedId: 'stripe',
      name: 'Stripe',
      canonicalUrl: 'https://stripe.com/',
      officialStatusUrl: 'https://status.stripe.com/',
    },
    previous: kind === 'incident.opened' ? null : { status: 'investigating', updateCount: 1 },
    current: { status: 'investigating', updateCount: 1 },
    incident: incidentKinds.includes(kind)
      ? {
          id: 'inc-1',
          title: 'Card payments failing',
          status: kind === 'incident.resolved' ? 'resolved' : 'investigating',
          started: 1_767_225_600,
          updateCount: 1,
          latestUpdate: 'We are investigating elevated error rates.',
        }
      : null,
    observedAt: Date.UTC(2026, 0, 1, 12, 0, 0),
    ...overrides,
  };
}

export function hostileTransition(): Transition {
  const base = transition('incident.opened');
  return {
    ...base,
    service: { ...base.service, name: '<!here> Stripe & <@U999>' },
    current: { ...base.current, summary: LONG_SUMMARY },
    incident: {
      id: 'inc-evil',
      title: HOSTILE_TITLE,
      status: 'investigating',
      started: 1_767_225_600,
      updateCount: 1,
      latestUpdate: `<!channel> ${LONG_SUMMARY}`,
    },
  };
}

export function notification(
  transitions: Transition[],
  overrides: Partial<Notification> = {},
): Notification {
  const first = transitions[0];
  return {
    id: `${first?.id ?? 'none'}:payments:oncall`,
    type: transitions.length > 1 ? 'batch' : 'event',
    subscription: 'payments',
    channel: 'oncall',
    transitions,
    createdAt: Date.UTC(2026, 0, 1, 12, 0, 5),
    ...overrides,
  };
}

/** Hostile text as the noise-control stage could build it from upstream names and titles. */
export const HOSTILE_HEADING =
  '<!channel> Digest <@U123> <https://evil.example|click> <script>alert(1)</script>\r\nBcc: victim@example.com';

/**
 * `count` transitions about distinct services `svc-00`, `svc-01`… named `Service 00`…:
 * the odd ones score drops, the even ones outages (so most-severe-first reorders them).
 */
export function manyServices(count: number): Transition[] {
  return Array.from({ length: count }, (_, i) => {
    const n = String(i).padStart(2, '0');
    const base = transition(i % 2 === 0 ? 'status.changed' : 'score.dropped');
    return {
      ...base,
      id: `tsvc${n}0123456789abcdef`,
      feedId: `svc-${n}`,
      service: {
        feedId: `svc-${n}`,
        name: `Service ${n}`,
        canonicalUrl: `https://svc-${n}.example/`,
        officialStatusUrl: null,
      },
      previous: i % 2 === 0 ? { status: 'operational' } : { score: 90 },
      current: i % 2 === 0 ? { status: 'major_outage' } : { score: 80 },
      incident: null,
      observedAt: Date.UTC(2026, 0, 1, 11, 0, i),
    };
  });
}

// ---------------------------------------------------------------- HTTP receiver

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (for timeouts); the connection is dropped when the receiver closes. */
  hang?: boolean;
  /** Answer this many ms later (a slow receiver). */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** Resolves once `count` requests have arrived (rejects after the timeout). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every request and answers with `reply`. */
export async function startReceiver(
  reply: (req: ReceivedRequest, index: number) => Reply = () => ({ status: 200, body: 'ok' }),
  path = '/hooks/T000/B000/s3cr3tT0kenPart',
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const answer = reply(entry, received.length);
      received.push(entry);
      if (answer.hang === true) {
        notify();
        return;
      }
      const send = (): void => {
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      };
      if (answer.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs);
      notify();
    });
  });
  const notify = (): void => {
    for (const waiter of [...waiters]) {
      if (received.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    async waitFor(count, timeoutMs = 5_000) {
      if (received.length < count) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(new Error(`timed out waiting for ${count} requests (got ${received.length})`));
          }, timeoutMs);
          waiters.push({
            count,
            resolve: () => {
              clearTimeout(timer);
              resolve();
            },
          });
        });
      }
      return received;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

/** A port on 127.0.0.1 that refuses connections (a server bound, then closed). */
export async function refusedUrl(path = '/hooks/T000/B000/s3cr3tT0kenPart'): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return `http://127.0.0.1:${port}${path}`;
}

// ---------------------------------------------------------------- SMTP server

export interface ReceivedMail {
  envelope: { from: string | null; to: string[] };
  raw: string;
  parsed: ParsedMail;
}

export interface SmtpSink {
  port: number;
  mails: ReceivedMail[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export interface SmtpBehaviour {
  /** Reject RCPT TO with this SMTP code. */
  rcptCode?: number;
  /** Reject the DATA with this SMTP code. */
  dataCode?: number;
  /** Require AUTH with this user/password (rejects others with 535). */
  auth?: { user: string; pass: string };
  /** Answer every AUTH with this SMTP code (454: a temporary authentication failure). */
  authCode?: number;
  /** Per recipient: the SMTP code to refuse its RCPT TO with (undefined: accept). */
  rcpt?: (address: string) => number | undefined;
}

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/** A real SMTP server (smtp-server) on 127.0.0.1 that parses every mail with mailparser. */
export async function startSmtp(behaviour: SmtpBehaviour = {}): Promise<SmtpSink> {
  const mails: ReceivedMail[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const options: SMTPServerOptions = {
    disabledCommands: behaviour.auth === undefined ? ['STARTTLS', 'AUTH'] : ['STARTTLS'],
    authOptional: behaviour.auth === undefined,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      const expected = behaviour.auth;
      if (behaviour.authCode !== undefined) {
        callback(smtpError(behaviour.authCode, 'Temporary authentication failure'));
        return;
      }
      if (
        expected !== undefined &&
        auth.username === expected.user &&
        auth.password === expected.pass
      ) {
        callback(null, { user: auth.username });
        return;
      }
      callback(smtpError(535, 'Authentication failed'));
    },
    onRcptTo(address, _session, callback) {
      const code = behaviour.rcpt?.(address.address);
      if (code !== undefined) {
        callback(smtpError(code, code < 500 ? 'Greylisted, try again later' : 'No such user'));
        return;
      }
      if (behaviour.rcptCode !== undefined) {
        callback(smtpError(behaviour.rcptCode, 'Mailbox unavailable'));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (behaviour.dataCode !== undefined) {
          callback(smtpError(behaviour.dataCode, 'Try again later'));
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const from = session.envelope.mailFrom;
        simpleParser(raw)
          .then((parsed) => {
            mails.push({
              envelope: {
                from: from === false ? null : from.address,
                to: session.envelope.rcptTo.map((r) => r.address),
              },
              raw,
              parsed,
            });
            callback();
            for (const waiter of [...waiters]) {
              if (mails.length >= waiter.count) {
                waiters.splice(waiters.indexOf(waiter), 1);
                waiter.resolve();
              }
            }
          })
          .catch((error: unknown) => {
            callback(error instanceof Error ? error : new Error(String(error)));
          });
      });
    },
  };
  const server = new SMTPServer(options);
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    mails,
    async waitFor(count, timeoutMs = 5_000) {
      if (mails.length < count) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(new Error(`timed out waiting for ${count} mails (got ${mails.length})`));
          }, timeoutMs);
          waiters.push({
            count,
            resolve: () => {
              clearTimeout(timer);
              resolve();
            },
          });
        });
      }
      return mails;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** Everything an error could expose to a log line: message, stack, JSON and the full inspected chain. */
export async function exposedText(error: unknown): Promise<string> {
  const { inspect } = await import('node:util');
  const parts: string[] = [inspect(error, { depth: 10, showHidden: true })];
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    parts.push(current.message, current.stack ?? '', JSON.stringify(current));
    current = current.cause;
  }
  return parts.join('\n');
}
