import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { CHANNEL_TYPES, type ChannelType } from '../notify/kinds.js';
import { readBounded, startReceiverServer } from './receivers/http.js';

/**
 * The demo's sinks: one per channel kind, as `src/notify/kinds.ts` lists them (the only list of
 * kinds), and the Slack Web API stand-in of the Slack app.
 */
export type Sink = ChannelType | 'slack-app';
export const SINKS: readonly Sink[] = [...CHANNEL_TYPES, 'slack-app'];

/** What a local sink received, ready to print. */
export interface Received {
  sink: Sink;
  /** Event kind(s) the message is about (from the webhook body; parsed from text for the others). */
  summary: string;
  lines: string[];
}

/** The whole request body as UTF-8 text (read by the receivers' one body reader). */
export async function readBody(req: IncomingMessage): Promise<string> {
  return (await readBounded(req, Infinity)).body.toString('utf8');
}

/** Listens on a free port of 127.0.0.1 and returns the base URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface SlackBody {
  text?: string;
  blocks?: { type: string; text?: { text?: string }; elements?: { text?: string }[] }[];
}

/** A local stand-in for a Slack incoming webhook: answers `ok` and reports the message text. */
export async function slackSink(
  onMessage: (r: Received) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = await startReceiverServer(({ body }) => {
    const parsed = JSON.parse(body.toString('utf8')) as SlackBody;
    const lines: string[] = [];
    for (const b of parsed.blocks ?? []) {
      if (b.text?.text !== undefined) lines.push(...b.text.text.split('\n'));
      for (const e of b.elements ?? []) if (e.text !== undefined) lines.push(e.text);
    }
    onMessage({ sink: 'slack', summary: parsed.text ?? '', lines });
    return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' };
  });
  return { url: `${server.origin}/services/T000/B000/demo`, close: () => server.close() };
}

/**
 * A received Standard Webhooks request checked with the official library: its string headers
 * (what `verify` takes) and whether the signature holds.
 */
export function verifyDelivery(
  wh: Webhook,
  body: string,
  raw: IncomingHttpHeaders,
): { headers: Record<string, string>; verified: boolean } {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') headers[k] = v;
  try {
    wh.verify(body, headers);
    return { headers, verified: true };
  } catch {
    return { headers, verified: false };
  }
}

/** A local webhook receiver that verifies every delivery with the official standardwebhooks library. */
export async function webhookSink(
  secret: string,
  onMessage: (r: Received) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const wh = new Webhook(secret.replace(/^whsec_/, ''));
  const server = await startReceiverServer(({ body: bytes, headers: raw }) => {
    const body = bytes.toString('utf8');
    const { headers, verified } = verifyDelivery(wh, body, raw);
    const parsed = JSON.parse(body) as {
      type: string;
      data: { eventId?: string; events?: unknown[] };
    };
    onMessage({
      sink: 'webhook',
      summary: parsed.type,
      lines: [
        `webhook-id ${headers['webhook-id'] ?? '?'}  signature ${verified ? 'verified' : 'INVALID'}`,
        body.length > 300 ? `${body.slice(0, 300)}…` : body,
      ],
    });
    return { status: verified ? 204 : 400 };
  });
  return { url: `${server.origin}/hooks/statuswatch`, close: () => server.close() };
}

/** An in-process SMTP server that parses every mail it accepts. */
export async function smtpSink(
  onMessage: (r: Received) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          const text = (mail.text ?? '').split('\n').filter((l) => l.trim() !== '');
          const thread =
            mail.inReplyTo === undefined ? '' : `  (thread: in reply to ${mail.inReplyTo})`;
          onMessage({
            sink: 'email',
            summary: mail.subject ?? '',
            lines: [`Message-ID ${mail.messageId ?? '?'}${thread}`, ...text.slice(0, 6)],
          });
          callback();
        })
        .catch((err: unknown) => {
          callback(err instanceof Error ? err : new Error(String(err)));
        });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address() as AddressInfo;
  return {
    port: address.port,
    close: () =>
      new Promise((r) => {
        server.close(() => {
          r();
        });
      }),
  };
}
