/**
 * The Slack app's buttons (docs/acting-on-alerts.md): Slack POSTs a `block_actions` interaction
 * to the ops server (`server.slackInteractionsPath`), form-encoded `payload=<json>`. In order:
 *
 * 1. The body is read bounded (`MAX_BODY_BYTES`); `X-Slack-Request-Timestamp` must be within
 *    5 minutes of our clock.
 * 2. The signature, before anything in the body is read: `X-Slack-Signature` is
 *    `v0=hex(HMAC-SHA256(signingSecret, "v0:" + timestamp + ":" + rawBody))`, compared in constant
 *    time with that of every app-mode channel that has a `signingSecret`. The channels whose
 *    secret matches are the ones the request may act for (one Slack app, one secret: channels
 *    sharing an app share its trust). None: 401, nothing read, nothing done.
 * 3. Replay: the signature is remembered (SET NX, 10 minutes, `slack:seen:<hash>`); a second
 *    request with it is a 401.
 * 4. 200 at once (Slack wants an answer within 3 s), then the action runs in the background:
 *    the button's `value` is only the hash of the episode's reference (`scopeRef`); the reference
 *    (Redis, `message-store.ts`) names the subscription, channel and episode, and must be the
 *    message the button was pressed on. The channel must be one whose secret verified, still an
 *    app channel of that subscription; the episode must be open and told (the told ledger).
 * 5. Acknowledge (`AckService.record`) or silence that lifecycle for that subscription (a silence
 *    on service + subject + subscription through the API store: quota-checked and audited; the
 *    closing still arrives, silences never drop a closing whose opening was told), then
 *    `chat.update` of the message with the channel's own bot token. A refusal is told to the
 *    Slack user through `response_url` (ephemeral), without naming anything of another team.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import { WebClient } from '@slack/web-api';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { ChannelConfig, SubscriptionConfig } from '../../config/schema.js';
import { egressAgent } from '../../egress/connect.js';
import { toError, errorCode } from '../../errors.js';
import type { Keys, RedisClient } from '../../redis.js';
import type { AckService } from '../../api/acks.js';
import type { Actor } from '../../api/tokens.js';
import { UNTIL_RESOLVED_MAX_MS } from '../../noise/acks.js';
import { lifecycleKey } from '../../noise/policy.js';
import type { NoiseStore } from '../../noise/store.js';
import type { Silence, SilenceDraft } from '../../silences/model.js';
import { BodyError, parseJsonText, readBodyText } from '../../server/body.js';
import { httpError, sendError } from '../../server/http-error.js';
import { sameDigest } from '../../server/secret-compare.js';
import { episodeKey } from '../episode.js';
import type { NotifierDeps } from '../kind.js';
import { formatUtc } from '../text.js';
import { SLACK_APP_DEFAULT_API_URL } from './app-config.js';
import {
  SLACK_ACTIONS,
  SLACK_ACTIONS_BLOCK,
  SLACK_NOTES_BLOCK,
  actionsBlock,
  notesBlock,
} from './app-render.js';
import { createSlackMessageStore, isScopeRef, type SlackMessageRef } from './message-store.js';

/** Where Slack posts the interactions unless `server.slackInteractionsPath` says otherwise. */
export const DEFAULT_SLACK_INTERACTIONS_PATH = '/slack/interactions';
/** Slack's payload repeats the whole message (≤ 50 blocks): bounded well above that. */
export const MAX_BODY_BYTES = 512 * 1024;
/** Requests older or newer than this are refused (Slack's own advice: 5 minutes). */
export const MAX_SKEW_MS = 5 * 60 * 1000;
/** A signature is remembered this long: both sides of the window. */
const SEEN_TTL_MS = 2 * MAX_SKEW_MS;
/** At most this many notes on a message (the oldest go first). */
const MAX_NOTES = 5;

const SILENCE_FOR: Record<string, number | 'resolved'> = {
  [SLACK_ACTIONS.silence1h]: 3600_000,
  [SLACK_ACTIONS.silence4h]: 4 * 3600_000,
  [SLACK_ACTIONS.silenceResolved]: 'resolved',
};

/** The fields of a `block_actions` payload we use; everything else is ignored. */
const payloadSchema = z.object({
  type: z.string(),
  user: z.object({
    id: z.string().regex(/^[UW][A-Z0-9]{1,30}$/),
    username: z.string().max(200).optional(),
    name: z.string().max(200).optional(),
  }),
  container: z
    .object({ channel_id: z.string().max(64), message_ts: z.string().max(64) })
    .partial()
    .optional(),
  response_url: z.string().max(2000).optional(),
  message: z.object({ blocks: z.array(z.record(z.string(), z.unknown())).max(60) }).optional(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2000).optional() }))
    .min(1)
    .max(5),
});

type Payload = z.output<typeof payloadSchema>;

/** An app-mode channel that takes the buttons: it has a bot token and a signing secret. */
interface AppChannel {
  name: string;
  botToken: string;
  signingSecret: string;
  apiUrl: string;
  timeoutMs: number;
}

export interface SlackInteractionsOptions {
  redis: RedisClient;
  keys: Keys;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** `server.slackInteractionsPath`. */
  path: () => string;
  /** Every channel in force (config file and API), by name. */
  channels: () => Readonly<Record<string, ChannelConfig>>;
  /** Every live subscription. */
  subscriptions: () => readonly SubscriptionConfig[];
  /** What a channel's client may use (its egress policy). */
  deps: (channel: string) => NotifierDeps;
  noise: NoiseStore;
  acks: AckService;
  /** Stores a silence quota-checked and audited (the API store), routing sees it at once. */
  createSilence: (actor: Actor, draft: SilenceDraft) => Promise<Silence>;
  now?: () => number;
}

class Refusal extends Error {}

function appChannelOf(name: string, config: ChannelConfig | undefined): AppChannel | null {
  if (config?.type !== 'slack') return null;
  const c = config as ChannelConfig & {
    botToken?: string;
    signingSecret?: string;
    apiUrl?: string;
    timeoutMs?: number;
  };
  if (c.botToken === undefined || c.signingSecret === undefined) return null;
  return {
    name,
    botToken: c.botToken,
    signingSecret: c.signingSecret,
    apiUrl: c.apiUrl ?? SLACK_APP_DEFAULT_API_URL,
    timeoutMs: c.timeoutMs ?? 10_000,
  };
}

/** `v0=` and the hex HMAC-SHA256 of `v0:{timestamp}:{body}` under `secret`. */
export function slackSignature(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`, 'utf8').digest('hex')}`;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** A name for the audit log and the silence's author: printable, bounded. */
function displayName(user: Payload['user']): string | null {
  const raw = user.username ?? user.name;
  if (raw === undefined) return null;
  const clean = raw.replace(/[^\p{L}\p{N} ._'-]/gu, '').slice(0, 80);
  return clean === '' ? null : clean;
}

export class SlackInteractions {
  private readonly now: () => number;
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly o: SlackInteractionsOptions) {
    this.now = o.now ?? Date.now;
  }

  path(): string {
    return this.o.path();
  }

  /** Resolves when every action started so far has finished (tests, stop). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    await this.idle();
  }

  /** Refusals are the ops server's one error (`sendError`); Slack reads only their status. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if ((req.method ?? 'GET').toUpperCase() !== 'POST') {
      sendError(res, httpError(405, 'POST only', { allow: 'POST' }));
      return;
    }
    let body: string;
    try {
      body = await readBodyText(req, MAX_BODY_BYTES);
    } catch (caught) {
      if (caught instanceof BodyError && caught.problem === 'too_large') {
        req.resume();
        sendError(res, httpError(413, 'body too large'));
        return;
      }
      throw caught;
    }
    const timestamp = header(req, 'x-slack-request-timestamp') ?? '';
    const signature = header(req, 'x-slack-signature') ?? '';
    const refuse = (reason: string): undefined => {
      this.o.log.warn(
        { event: 'slack:interaction_refused', reason },
        `Slack interaction refused: ${reason}`,
      );
      sendError(res, httpError(401, 'request not verified'));
      return undefined;
    };
    if (!/^\d{1,12}$/.test(timestamp)) {
      refuse('no timestamp');
      return;
    }
    if (Math.abs(this.now() - Number(timestamp) * 1000) > MAX_SKEW_MS) {
      refuse('stale');
      return;
    }
    if (!/^v0=[0-9a-f]{64}$/.test(signature)) {
      refuse('no signature');
      return;
    }
    const verified = this.verify(timestamp, body, signature);
    if (verified.length === 0) {
      refuse('bad signature');
      return;
    }
    const seen = await this.o.redis.set(
      this.o.keys.key('slack', 'seen', createHash('sha256').update(signature).digest('hex')),
      '1',
      'PX',
      SEEN_TTL_MS,
      'NX',
    );
    if (seen !== 'OK') {
      refuse('replayed');
      return;
    }
    let payload: Payload;
    try {
      const form = new URLSearchParams(body);
      const parsed = payloadSchema.safeParse(parseJsonText(form.get('payload') ?? ''));
      if (!parsed.success) throw new Error('not a block_actions payload');
      payload = parsed.data;
    } catch {
      sendError(res, httpError(400, 'not an interaction payload'));
      return;
    }
    res.writeHead(200, { 'cache-control': 'no-store' });
    res.end();
    if (payload.type !== 'block_actions') return;
    const work = this.act(payload, verified).catch((caught: unknown) => {
      this.o.log.error(
        { event: 'slack:interaction_failed', err: toError(caught).message },
        'Slack interaction failed',
      );
    });
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }

  /** The app channels whose signing secret signed this request (constant-time comparisons). */
  private verify(timestamp: string, body: string, signature: string): AppChannel[] {
    const presented = Buffer.from(signature.slice(3), 'hex');
    const out: AppChannel[] = [];
    for (const [name, config] of Object.entries(this.o.channels())) {
      const app = appChannelOf(name, config);
      if (app === null) continue;
      const expected = Buffer.from(
        slackSignature(app.signingSecret, timestamp, body).slice(3),
        'hex',
      );
      if (sameDigest(presented, expected)) out.push(app);
    }
    return out;
  }

  private async act(payload: Payload, verified: readonly AppChannel[]): Promise<void> {
    const [first] = verified;
    if (first === undefined) return;
    const action = payload.actions[0];
    const user = payload.user;
    let channel: AppChannel = first;
    try {
      if (action === undefined || !Object.values(SLACK_ACTIONS).includes(action.action_id as never))
        throw new Refusal('This button is not one of statuswatch’s.');
      if (!isScopeRef(action.value)) throw new Refusal('This button is not one of statuswatch’s.');
      const messages = createSlackMessageStore({
        redis: this.o.redis,
        key: (...parts) => this.o.keys.key(...parts),
      });
      const ref = await messages.getRefByHash(action.value);
      const scope = ref?.scope;
      if (ref === null || scope === undefined)
        throw new Refusal('This alert can no longer be acted on from Slack.');
      const own = verified.find((c) => c.name === scope.channel);
      if (own === undefined) {
        this.o.log.warn(
          { event: 'slack:interaction_refused', reason: 'other channel' },
          'Slack interaction refused: the message belongs to a channel whose secret did not sign it',
        );
        throw new Refusal('This message was not sent through this Slack app: nothing was done.');
      }
      channel = own;
      if (
        payload.container?.channel_id !== ref.channelId ||
        payload.container.message_ts !== ref.ts
      )
        throw new Refusal('This is not the alert’s current message: nothing was done.');
      const sub = this.o.subscriptions().find((s) => s.name === scope.subscription);
      if (sub === undefined || !sub.channels.includes(scope.channel))
        throw new Refusal('This alert’s subscription or channel is gone: nothing was done.');
      if (ref.closed) throw new Refusal('This alert is resolved already: nothing was done.');
      const told = (
        await this.o.noise.toldOfRoute({ subscription: sub.name, channel: scope.channel })
      ).find((e) => episodeKey(e.opening) === scope.episode);
      if (told === undefined)
        throw new Refusal('This alert is resolved already: nothing was done.');
      const { feedId, subject } = told.opening;
      const name = displayName(user);
      const actor: Actor = {
        tokenId: `slack:${user.id}`,
        team: await this.o.acks.teamOf(sub.name),
        admin: false,
        address: `slack:${channel.name}`,
      };
      const now = this.now();
      let note: string;
      let acked = ref.acked === true;
      if (action.action_id === SLACK_ACTIONS.ack) {
        const view = await this.o.acks.record(actor, sub, feedId, subject, {
          by: `slack:${user.id}`,
          name,
          via: 'slack',
        });
        if (view === null) throw new Refusal('This alert is resolved already: nothing was done.');
        acked = true;
        note = view.created
          ? `:white_check_mark: Acknowledged by <@${user.id}> at ${formatUtc(now)}`
          : `:white_check_mark: Acknowledged already (${view.name ?? view.by}, ${view.at})`;
      } else {
        const span = SILENCE_FOR[action.action_id];
        if (span === undefined) throw new Refusal('This button is not one of statuswatch’s.');
        const endsAt = now + (span === 'resolved' ? UNTIL_RESOLVED_MAX_MS : span);
        let silence: Silence;
        try {
          silence = await this.o.createSilence(actor, {
            matchers: { services: [feedId], subjects: [subject], subscriptions: [sub.name] },
            startsAt: now,
            endsAt,
            author: `Slack ${name ?? user.id} (${user.id})`,
            comment: `from Slack: ${span === 'resolved' ? 'until resolved' : `for ${String(span / 3600_000)}h`}`,
          });
        } catch (caught) {
          throw new Refusal(`Could not silence (${errorCode(caught)}): nothing was done.`);
        }
        if (span === 'resolved')
          await this.o.noise.acks.addUntilResolved(
            lifecycleKey(told.opening),
            silence.id,
            endsAt - now,
          );
        note =
          span === 'resolved'
            ? `:no_bell: Silenced until resolved by <@${user.id}> (${formatUtc(now)})`
            : `:no_bell: Silenced until ${formatUtc(endsAt)} by <@${user.id}>`;
        this.o.log.info(
          { event: 'silence:created', silenceId: silence.id, via: 'slack', user: user.id },
          `silence ${silence.id} created from Slack`,
        );
      }
      await this.update(messages, scope, ref, payload, channel, note, acked);
    } catch (caught) {
      if (!(caught instanceof Refusal)) throw caught;
      await this.respond(channel, payload.response_url, caught.message);
    }
  }

  /** Records the note on the reference and edits the message (under the episode's claim). */
  private async update(
    messages: ReturnType<typeof createSlackMessageStore>,
    scope: NonNullable<SlackMessageRef['scope']>,
    seen: SlackMessageRef,
    payload: Payload,
    channel: AppChannel,
    note: string,
    acked: boolean,
  ): Promise<void> {
    await messages.withClaim(scope, async () => {
      const ref = (await messages.getRef(scope)) ?? seen;
      const notes = [...(ref.notes ?? []), note].slice(-MAX_NOTES);
      await messages.setRef(scope, { ...ref, notes, acked: acked || ref.acked === true });
      if (ref.ts !== seen.ts || ref.channelId !== seen.channelId) return;
      // The message's own blocks (ours, as Slack echoes them in the signed payload), our notes
      // and buttons replaced.
      const blocks = (payload.message?.blocks ?? []).filter(
        (b) => b['block_id'] !== SLACK_ACTIONS_BLOCK && b['block_id'] !== SLACK_NOTES_BLOCK,
      );
      const buttons = ref.closed ? [] : [actionsBlock(scopeValue(payload), acked)];
      try {
        await this.call(channel, 'chat.update', {
          channel: ref.channelId,
          ts: ref.ts,
          blocks: [...blocks.slice(0, 48), notesBlock(notes), ...buttons],
        });
      } catch (caught) {
        this.o.log.warn(
          { event: 'slack:update_failed', channel: channel.name, code: errorCode(caught) },
          `Slack chat.update after a button failed (${errorCode(caught)})`,
        );
        await this.respond(
          channel,
          payload.response_url,
          `${note} (the message could not be updated)`,
        );
      }
    });
  }

  /** One Web API call with the channel's bot token, through its egress policy. */
  private async call(
    channel: AppChannel,
    method: 'chat.update',
    args: Record<string, unknown>,
  ): Promise<void> {
    const dispatcher = this.dispatcher(channel);
    try {
      const client = new WebClient(channel.botToken, {
        slackApiUrl: `${channel.apiUrl.replace(/\/+$/, '')}/`,
        timeout: channel.timeoutMs,
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        allowAbsoluteUrls: false,
        fetch: (url, init) =>
          undiciFetch(url, {
            method: init?.method ?? 'POST',
            headers: init?.headers ?? {},
            body: typeof init?.body === 'string' ? init.body : null,
            redirect: 'error',
            signal: init?.signal ?? null,
            dispatcher,
          }),
      });
      await client.apiCall(method, args);
    } finally {
      await dispatcher.close();
    }
  }

  private dispatcher(channel: AppChannel): Dispatcher {
    return egressAgent(this.o.deps(channel.name).egress);
  }

  /**
   * Tells the Slack user (ephemeral, through `response_url`), only when that URL is Slack's own
   * (`hooks.slack.com` over https) or on the channel's API origin (a proxy, the tests' stand-in).
   */
  private async respond(channel: AppChannel, url: string | undefined, text: string): Promise<void> {
    if (url === undefined || !URL.canParse(url)) return;
    const target = new URL(url);
    const api = new URL(channel.apiUrl);
    const slacks =
      channel.apiUrl === SLACK_APP_DEFAULT_API_URL &&
      target.protocol === 'https:' &&
      target.hostname === 'hooks.slack.com';
    if (!slacks && target.origin !== api.origin) return;
    const dispatcher = this.dispatcher(channel);
    try {
      const response = await undiciFetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ response_type: 'ephemeral', replace_original: false, text }),
        redirect: 'error',
        signal: AbortSignal.timeout(channel.timeoutMs),
        dispatcher,
      });
      await response.body?.cancel();
    } catch (caught) {
      this.o.log.warn(
        { event: 'slack:respond_failed', channel: channel.name, code: errorCode(caught) },
        'Slack response_url answer failed',
      );
    } finally {
      await dispatcher.close();
    }
  }
}

/** The button value of the pressed action (a checked `scopeRef`). */
function scopeValue(payload: Payload): string {
  return payload.actions[0]?.value ?? '';
}
