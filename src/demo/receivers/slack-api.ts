/**
 * A local stand-in for Slack's Web API (`chat.postMessage`, `chat.update`), written from Slack's
 * method reference (docs.slack.dev/reference/methods/chat.postMessage, …/chat.update and
 * docs.slack.dev/apis/web-api/rate-limits), for the demo and the tests:
 *
 * - methods are `POST <url>/<method>`, with `application/x-www-form-urlencoded` (what
 *   `@slack/web-api` sends: `blocks` is a JSON string) or `application/json` bodies;
 * - the token comes as `Authorization: Bearer xoxb-…` (or a `token` form field): none →
 *   `not_authed`, another → `invalid_auth`;
 * - every answer is HTTP 200 with `{"ok":true,…}` or `{"ok":false,"error":"<code>"}`, except a rate
 *   limit: HTTP 429 with `Retry-After: <seconds>` and `{"ok":false,"error":"ratelimited"}`;
 * - chat.postMessage needs a known `channel` (id or `#name`, else `channel_not_found`) and `text`
 *   or `blocks` (else `no_text`); `blocks` must be an array of ≤ 50 typed blocks (else
 *   `invalid_blocks`); text over 40,000 characters is `msg_too_long`; `thread_ts` must name a
 *   parent of the channel (else `thread_not_found`) and `reply_broadcast` shows the reply in the
 *   channel too. It answers `{ok, channel: <id>, ts, message}`; ts values are unique per receiver;
 * - chat.update needs the channel's id and the `ts` of one of its messages (else
 *   `channel_not_found` / `message_not_found`); text without blocks removes the blocks, as Slack
 *   documents;
 * - `failNext` scripts the next answers (429 ratelimited with Retry-After, `ok:false` with any error
 *   code, an HTTP status such as 500); `hold` keeps requests waiting until released;
 * - interactivity (docs.slack.dev/interactivity/handling-user-interaction and
 *   …/authentication/verifying-requests-from-slack): `responseUrl()` makes a `response_url` whose
 *   POSTs are kept in `responses`; `blockActions` builds the `block_actions` payload Slack sends
 *   when a button of a message is clicked, and `signRequest` signs a body as Slack does.
 */
import { createHmac } from 'node:crypto';
import { startReceiverServer } from './http.js';

/** Slack's documented limits the receiver enforces. */
export const SLACK_API_TEXT_MAX = 40_000;
export const SLACK_API_BLOCKS_MAX = 50;
const BODY_MAX_BYTES = 1024 * 1024;

export interface SlackApiChannel {
  /** Conversation id, e.g. `C0123ABCD`. */
  id: string;
  /** Name without `#`, e.g. `alerts`. */
  name?: string;
}

export interface SlackApiReply {
  ts: string;
  text: string;
  blocks: unknown[];
  /** Posted with `reply_broadcast`: also shown in the channel. */
  broadcast: boolean;
  username: string | null;
  iconEmoji: string | null;
}

export interface SlackApiMessage {
  ts: string;
  /** The current text and blocks (after chat.update). */
  text: string;
  blocks: unknown[];
  replies: SlackApiReply[];
  /** How many times chat.update changed it. */
  edits: number;
  username: string | null;
  iconEmoji: string | null;
}

export interface SlackApiCall {
  /** `chat.postMessage`, `chat.update`, … */
  method: string;
  /** The parsed arguments (`blocks` parsed from its JSON string). */
  body: Record<string, unknown>;
  /** The bearer token presented (or the `token` field), null when none. */
  token: string | null;
  /** The answer, once sent: HTTP status and Slack's error code (null when ok). */
  answer: { status: number; error: string | null } | null;
}

export type SlackApiFailure =
  /** HTTP 429, `Retry-After: <retryAfter>`, `{"ok":false,"error":"ratelimited"}`. */
  | { type: 'ratelimited'; retryAfter: number }
  /** HTTP 200 `{"ok":false,"error":"<error>"}`. */
  | { type: 'error'; error: string }
  /** An HTTP status (500, 502, 503…) with a short text body. */
  | { type: 'http'; status: number };

export interface SlackApiEvent {
  kind: 'post' | 'reply' | 'update';
  channel: string;
  ts: string;
  text: string;
}

export interface SlackApiReceiverOptions {
  /** The bot token the receiver accepts. */
  token: string;
  /** The workspace's channels the bot is in: ids, or ids with names. */
  channels: readonly (string | SlackApiChannel)[];
  /** Called for every accepted post, reply and update (the demo prints them). */
  onEvent?: (event: SlackApiEvent) => void;
}

export interface SlackApiHold {
  /** Lets the held requests (and later ones) through. */
  release(): void;
}

export interface SlackApiReceiver {
  /** The Web API base URL, e.g. `http://127.0.0.1:PORT/api` (the config's `apiUrl`). */
  url: string;
  /** Parents of a channel (id or `#name`) in posting order, with their replies. */
  messages(channel: string): SlackApiMessage[];
  /** Every request in arrival order (recorded before any hold or answer). */
  calls: SlackApiCall[];
  /** Answers the next `times` requests (of `method`, when given) with `failure`. */
  failNext(failure: SlackApiFailure, options?: { times?: number; method?: string }): void;
  /** Holds requests (of `method`, when given) until `release()`. */
  hold(method?: string): SlackApiHold;
  /** Resolves once `count` requests have arrived. */
  waitForCalls(count: number, timeoutMs?: number): Promise<SlackApiCall[]>;
  /** A new `response_url` of this receiver (`<origin>/response/<n>`). */
  responseUrl(): string;
  /** What was POSTed to the response URLs, in order (parsed JSON bodies). */
  responses: { url: string; body: unknown }[];
  /** Deletes a parent (as a user deleting it would): later updates get `message_not_found`. */
  deleteMessage(channel: string, ts: string): boolean;
  close(): Promise<void>;
}

interface Scripted {
  failure: SlackApiFailure;
  method: string | undefined;
  remaining: number;
}

interface Gate {
  method: string | undefined;
  open: boolean;
  waiting: (() => void)[];
}

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Form or JSON arguments; `blocks` parsed from its JSON string (unparsable stays a string). */
function parseArguments(
  body: string,
  contentType: string | undefined,
): Record<string, unknown> | null {
  const type = (contentType ?? '').toLowerCase();
  if (type.startsWith('application/json')) {
    try {
      const parsed: unknown = JSON.parse(body);
      return isObject(parsed) ? parsed : null;
    } catch {
      return null;
    }
  }
  if (!type.startsWith('application/x-www-form-urlencoded')) return null;
  const args: Record<string, unknown> = Object.fromEntries(new URLSearchParams(body));
  for (const key of ['blocks', 'attachments']) {
    const raw = args[key];
    if (typeof raw === 'string') {
      try {
        args[key] = JSON.parse(raw) as unknown;
      } catch {
        // left as a string: judged invalid below
      }
    }
  }
  return args;
}

function flag(value: unknown): boolean {
  return value === true || value === 'true' || value === '1' || value === 1;
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** `no_text`, `invalid_blocks`, `msg_too_long` or null for a message's text and blocks. */
function contentProblem(args: Record<string, unknown>): string | null {
  const text = args.text;
  const blocks = args.blocks;
  const hasText = typeof text === 'string' && text.trim() !== '';
  if (blocks !== undefined) {
    if (
      !Array.isArray(blocks) ||
      blocks.length > SLACK_API_BLOCKS_MAX ||
      !blocks.every((block) => isObject(block) && typeof block.type === 'string')
    ) {
      return 'invalid_blocks';
    }
  }
  const hasBlocks = Array.isArray(blocks) && blocks.length > 0;
  if (!hasText && !hasBlocks) return 'no_text';
  if (typeof text === 'string' && text.length > SLACK_API_TEXT_MAX) return 'msg_too_long';
  return null;
}

/** Starts the receiver on a free port of 127.0.0.1. */
export async function startSlackApiReceiver(
  options: SlackApiReceiverOptions,
): Promise<SlackApiReceiver> {
  const channels: SlackApiChannel[] = options.channels.map((c) =>
    typeof c === 'string' ? { id: c } : c,
  );
  const byChannel = new Map<string, SlackApiMessage[]>(channels.map((c) => [c.id, []]));
  const calls: SlackApiCall[] = [];
  const script: Scripted[] = [];
  const gates: Gate[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let sequence = 0;

  /** An id, `#name` or `name` → the channel id (null when unknown). */
  const resolveChannel = (ref: unknown, idsOnly = false): string | null => {
    if (typeof ref !== 'string' || ref === '') return null;
    const byId = channels.find((c) => c.id === ref);
    if (byId !== undefined) return byId.id;
    if (idsOnly) return null;
    const name = ref.startsWith('#') ? ref.slice(1) : ref;
    return channels.find((c) => c.name !== undefined && c.name === name)?.id ?? null;
  };

  const nextTs = (): string => {
    sequence++;
    return `${Math.floor(Date.now() / 1000)}.${String(sequence).padStart(6, '0')}`;
  };

  const fail = (error: string): Answer => ({ status: 200, body: { ok: false, error } });

  function postMessage(args: Record<string, unknown>): Answer {
    const channelId = resolveChannel(args.channel);
    if (channelId === null) return fail('channel_not_found');
    const problem = contentProblem(args);
    if (problem !== null) return fail(problem);
    const parents = byChannel.get(channelId) ?? [];
    const text = typeof args.text === 'string' ? args.text : '';
    const blocks = Array.isArray(args.blocks) ? (args.blocks as unknown[]) : [];
    const username = optionalString(args.username);
    const iconEmoji = optionalString(args.icon_emoji);
    const threadTs = optionalString(args.thread_ts);
    const ts = nextTs();
    if (threadTs !== null) {
      const parent = parents.find((m) => m.ts === threadTs);
      if (parent === undefined) return fail('thread_not_found');
      const broadcast = flag(args.reply_broadcast);
      parent.replies.push({ ts, text, blocks, broadcast, username, iconEmoji });
      options.onEvent?.({ kind: 'reply', channel: channelId, ts, text });
    } else {
      parents.push({ ts, text, blocks, replies: [], edits: 0, username, iconEmoji });
      options.onEvent?.({ kind: 'post', channel: channelId, ts, text });
    }
    return {
      status: 200,
      body: {
        ok: true,
        channel: channelId,
        ts,
        message: {
          type: 'message',
          subtype: 'bot_message',
          bot_id: 'B0STATUSWATCH',
          text,
          blocks,
          ts,
          ...(threadTs === null ? {} : { thread_ts: threadTs }),
          ...(username === null ? {} : { username }),
        },
      },
    };
  }

  function update(args: Record<string, unknown>): Answer {
    // chat.update takes the conversation id only.
    const channelId = resolveChannel(args.channel, true);
    if (channelId === null) return fail('channel_not_found');
    const ts = optionalString(args.ts);
    const parents = byChannel.get(channelId) ?? [];
    const target =
      ts === null
        ? undefined
        : (parents.find((m) => m.ts === ts) ??
          parents.flatMap((m) => m.replies).find((r) => r.ts === ts));
    if (target === undefined) return fail('message_not_found');
    const problem = contentProblem(args);
    if (problem !== null) return fail(problem);
    if (typeof args.text === 'string') target.text = args.text;
    // Docs: text without blocks removes the blocks; blocks replace them.
    target.blocks = Array.isArray(args.blocks) ? (args.blocks as unknown[]) : [];
    if ('edits' in target) target.edits++;
    options.onEvent?.({ kind: 'update', channel: channelId, ts: target.ts, text: target.text });
    return {
      status: 200,
      body: {
        ok: true,
        channel: channelId,
        ts: target.ts,
        text: target.text,
        message: { type: 'message', text: target.text, blocks: target.blocks, ts: target.ts },
      },
    };
  }

  function scripted(method: string): Answer | null {
    const index = script.findIndex((s) => s.method === undefined || s.method === method);
    const next = script[index];
    if (next === undefined) return null;
    next.remaining--;
    if (next.remaining <= 0) script.splice(index, 1);
    const { failure } = next;
    switch (failure.type) {
      case 'ratelimited':
        return {
          status: 429,
          headers: { 'retry-after': String(failure.retryAfter) },
          body: { ok: false, error: 'ratelimited' },
        };
      case 'error':
        return fail(failure.error);
      case 'http':
        return { status: failure.status, body: {} };
    }
  }

  function judge(
    method: string,
    args: Record<string, unknown> | null,
    token: string | null,
  ): Answer {
    const failure = scripted(method);
    if (failure !== null) return failure;
    if (token === null) return fail('not_authed');
    if (token !== options.token) return fail('invalid_auth');
    if (args === null) return fail('invalid_form_data');
    switch (method) {
      case 'chat.postMessage':
        return postMessage(args);
      case 'chat.update':
        return update(args);
      default:
        return fail('unknown_method');
    }
  }

  const gateFor = (method: string): Gate | undefined =>
    gates.find((g) => !g.open && (g.method === undefined || g.method === method));

  const responses: { url: string; body: unknown }[] = [];
  let responseUrls = 0;
  const server = await startReceiverServer(
    async ({ url, headers, body: raw, overLimit, method: verb }) => {
      const body = overLimit ? null : raw.toString('utf8');
      if (url.pathname.startsWith('/response/')) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(body ?? '');
        } catch {
          parsed = body;
        }
        responses.push({ url: `${server.origin}${url.pathname}`, body: parsed });
        return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' };
      }
      const method = url.pathname.startsWith('/api/') ? url.pathname.slice('/api/'.length) : '';
      const args = body === null ? null : parseArguments(body, headers['content-type']);
      const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1] ?? null;
      const token = bearer ?? optionalString(args?.token);
      const call: SlackApiCall = { method, body: args ?? {}, token, answer: null };
      calls.push(call);
      for (const waiter of [...waiters]) {
        if (calls.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      for (let gate = gateFor(method); gate !== undefined; gate = gateFor(method)) {
        const held = gate;
        await new Promise<void>((resolve) => held.waiting.push(resolve));
      }
      const answer: Answer =
        verb !== 'POST' || method === ''
          ? { status: 404, body: { ok: false, error: 'unknown_method' } }
          : judge(method, args, token);
      call.answer = {
        status: answer.status,
        error:
          answer.body.ok === true
            ? null
            : typeof answer.body.error === 'string'
              ? answer.body.error
              : null,
      };
      if (answer.status >= 500) {
        return {
          status: answer.status,
          headers: { 'content-type': 'text/plain' },
          body: 'upstream error',
        };
      }
      return {
        status: answer.status,
        headers: { 'content-type': 'application/json; charset=utf-8', ...answer.headers },
        body: JSON.stringify(answer.body),
      };
    },
    { maxBytes: BODY_MAX_BYTES },
  );

  return {
    url: `${server.origin}/api`,
    calls,
    responses,
    responseUrl() {
      responseUrls++;
      return `${server.origin}/response/${String(responseUrls)}`;
    },
    messages(channel) {
      const id = resolveChannel(channel);
      return id === null ? [] : (byChannel.get(id) ?? []);
    },
    failNext(failure, { times = 1, method } = {}) {
      script.push({ failure, method, remaining: times });
    },
    hold(method) {
      const gate: Gate = { method, open: false, waiting: [] };
      gates.push(gate);
      return {
        release() {
          gate.open = true;
          for (const resolve of gate.waiting.splice(0)) resolve();
        },
      };
    },
    async waitForCalls(count, timeoutMs = 5_000) {
      if (calls.length < count) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            reject(new Error(`timed out waiting for ${count} calls (got ${calls.length})`));
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
      return calls;
    },
    deleteMessage(channel, ts) {
      const id = resolveChannel(channel);
      const parents = id === null ? undefined : byChannel.get(id);
      const index = parents?.findIndex((m) => m.ts === ts) ?? -1;
      if (parents === undefined || index === -1) return false;
      parents.splice(index, 1);
      return true;
    },
    async close() {
      for (const gate of gates) {
        gate.open = true;
        for (const resolve of gate.waiting.splice(0)) resolve();
      }
      await server.close();
    },
  };
}

/** What a user clicking a button of a message makes Slack send (the fields Slack documents). */
export interface BlockActionsInput {
  /** The conversation id and the message (as the stand-in keeps it). */
  channelId: string;
  message: Pick<SlackApiMessage, 'ts' | 'text' | 'blocks'>;
  /** The clicked button's `action_id`; its `value` is read from the message's blocks. */
  actionId: string;
  user: { id: string; username: string };
  responseUrl: string;
  /** Overrides the button's value (a forged or stale value). */
  value?: string;
}

/**
 * The form body Slack POSTs to the app's Request URL: `payload=<json>`, a `block_actions`
 * payload with the user, the container (channel and message ts), the message itself and the
 * action (action_id, block_id, value).
 */
export function blockActions(input: BlockActionsInput): string {
  const actions = input.message.blocks.filter(
    (b): b is { type: string; block_id?: string; elements?: Record<string, unknown>[] } =>
      typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'actions',
  );
  const block = actions.find((b) => b.elements?.some((e) => e.action_id === input.actionId));
  const button = block?.elements?.find((e) => e.action_id === input.actionId);
  const payload = {
    type: 'block_actions',
    user: {
      id: input.user.id,
      username: input.user.username,
      name: input.user.username,
      team_id: 'T0STAND',
    },
    api_app_id: 'A0STATUSWATCH',
    token: 'deprecated-verification-token',
    container: {
      type: 'message',
      message_ts: input.message.ts,
      channel_id: input.channelId,
      is_ephemeral: false,
    },
    trigger_id: '1.2.3',
    team: { id: 'T0STAND', domain: 'standin' },
    channel: { id: input.channelId, name: 'alerts' },
    message: {
      type: 'message',
      ts: input.message.ts,
      text: input.message.text,
      blocks: input.message.blocks,
    },
    response_url: input.responseUrl,
    actions: [
      {
        type: 'button',
        action_id: input.actionId,
        block_id: block?.block_id ?? 'unknown',
        text: button?.text ?? { type: 'plain_text', text: '?' },
        value: input.value ?? (typeof button?.value === 'string' ? button.value : ''),
        action_ts: String(Date.now() / 1000),
      },
    ],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/**
 * The headers Slack adds to a request signed with the app's signing secret:
 * `X-Slack-Request-Timestamp` (Unix seconds) and `X-Slack-Signature`, `v0=` and the hex
 * HMAC-SHA256 of `v0:<timestamp>:<body>`.
 */
export function signRequest(
  signingSecret: string,
  body: string,
  timestampSeconds: number,
): Record<string, string> {
  const timestamp = String(Math.floor(timestampSeconds));
  const digest = createHmac('sha256', signingSecret)
    .update(`v0:${timestamp}:${body}`)
    .digest('hex');
  return {
    'content-type': 'application/x-www-form-urlencoded',
    'x-slack-request-timestamp': timestamp,
    'x-slack-signature': `v0=${digest}`,
  };
}
