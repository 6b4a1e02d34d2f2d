/**
 * Slack app mode: one living message per episode, through the Web API with a bot token.
 *
 * For an `event`, the first notification of an episode (or any notification while the episode has
 * no open message) posts a parent with `chat.postMessage` and stores its reference; later ones
 * edit the parent to the episode's current state (`chat.update`) and post the change as a thread
 * reply (`thread_ts`, `reply_broadcast` per `replyBroadcast`, by default on the closing). The
 * closing marks the reference closed, so the next opening starts a new parent. A parent that can
 * no longer be edited (`message_not_found`, `cant_update_message`, `edit_window_closed`) is
 * replaced by a new one. A `batch` is one message listing its episodes; a batch or a catch-up
 * also brings the open parents of its episodes up to date. Reminders, digests and tests are
 * plain posts.
 *
 * `@slack/web-api` talks HTTP through the `fetch` we hand it (undici's, on our dispatcher), with a
 * per-request timeout, no retries of its own (BullMQ retries) and rate-limited calls rejected,
 * so a 429 becomes a retryable DeliveryError carrying Retry-After. Each send runs under the
 * episode's claim in Redis (`message-store.ts`) and records what it did, so replicas never post
 * two parents and a retry never repeats a reply.
 */
import {
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
  LogLevel,
  type FetchFunction,
  type Logger,
} from '@slack/web-api';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { egressAgent } from '../../egress/connect.js';
import type { Transition } from '../../diff/transition.js';
import { toError } from '../../errors.js';
import { applySlackParentTemplate } from './templated.js';
import { classifyError, classifyHttpStatus, parseRetryAfter } from '../classify.js';
import { episodeKey } from '../episode.js';
import type { NotifierDeps } from '../kind.js';
import { scrubDeliveryError } from '../secrets.js';
import { DeliveryError, type FailureReason, type Notification, type Notifier } from '../types.js';
import { headerSafe, truncate } from '../text.js';
import { SLACK_AUTH_ERRORS, slackCode } from '../vendor-codes.js';
import { slackAppSecrets, type SlackAppChannelConfig } from './app-config.js';
import {
  groupEpisodes,
  isClosing,
  renderEpisodeParent,
  renderEpisodeReply,
  renderSlackApp,
  type SlackAppRenderOptions,
} from './app-render.js';
import {
  createSlackMessageStore,
  type SlackDeliveryProgress,
  type SlackMessageAddress,
  type SlackMessageScope,
  type SlackMessageStore,
} from './message-store.js';
import type { SlackPayload } from './render.js';
import { withActionNotes } from './app-render.js';
import type { SlackMessageRef } from './message-store.js';
import { applySlackTemplate } from './templated.js';
import { renderTemplates, templatesFor } from '../template.js';

export const DEFAULT_SLACK_APP_TIMEOUT_MS = 10_000;

/** `ok:false` codes Slack documents as transient (its side). */
const TRANSIENT_ERRORS = new Set([
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'team_added_to_org',
]);
const RATE_LIMITED_ERRORS = new Set(['ratelimited', 'rate_limited']);
/**
 * chat.update answers meaning the parent is gone, frozen or out of reach (the channel's Slack
 * conversation changed since it was posted, and the bot left or archived the old one): post a
 * new one where the channel now points. A post that fails there too fails as any post does.
 */
const PARENT_GONE_ERRORS = new Set([
  'message_not_found',
  'cant_update_message',
  'edit_window_closed',
  'channel_not_found',
  'not_in_channel',
  'is_archived',
]);

type SlackMethod = 'chat.postMessage' | 'chat.update';

/** A failed Slack call: the DeliveryError, plus Slack's `error` code when it answered `ok:false`. */
class SlackCallError extends DeliveryError {
  readonly slackError: string | null;

  constructor(
    init: ConstructorParameters<typeof DeliveryError>[0] & { slackError?: string | null },
  ) {
    super(init);
    this.slackError = init.slackError ?? null;
  }
}

/** The library logs request failures itself; ours are in the DeliveryError. */
const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => LogLevel.ERROR,
  setName: () => undefined,
};

/** Slack error codes are short snake_case words; anything else is not kept. */
function errorWord(value: unknown): string {
  return typeof value === 'string' && /^[a-z_]{1,64}$/.test(value) ? value : 'unknown_error';
}

/** A value the receiver chose, printable and bounded: for the operator's `detail` only. */
function detailWord(value: unknown): string {
  return typeof value === 'string' ? truncate(headerSafe(value), 200) : String(value);
}

function platformVerdict(word: string): { retryable: boolean; reason: FailureReason } {
  if (RATE_LIMITED_ERRORS.has(word)) return { retryable: true, reason: 'rate_limited' };
  if (SLACK_AUTH_ERRORS.has(word)) return { retryable: false, reason: 'auth' };
  if (TRANSIENT_ERRORS.has(word)) return { retryable: true, reason: 'server' };
  return { retryable: false, reason: 'client' };
}

/** The last HTTP answer of one call (for Retry-After and a 429 without a usable header). */
interface LastResponse {
  status: number | null;
  retryAfter: string | null;
}

function toCallError(
  method: SlackMethod,
  caught: unknown,
  last: LastResponse,
  now: number,
): SlackCallError {
  const error = toError(caught);
  const prefix = `Slack ${method}`;
  if (error instanceof WebAPIPlatformError) {
    const word = errorWord(error.data.error);
    const verdict = platformVerdict(word);
    const seconds = error.data.response_metadata?.retryAfter;
    const retryAfterMs =
      typeof seconds === 'number' ? seconds * 1000 : parseRetryAfter(last.retryAfter, now);
    // A team reads Slack's word only when Slack documents it (vendor-codes.ts); the operator's
    // log has the word as answered.
    return new SlackCallError({
      message: `${prefix}: ${slackCode(word)}`,
      ...verdict,
      httpStatus: last.status,
      retryAfterMs: verdict.retryable ? retryAfterMs : null,
      detail: `Slack answered ok:false, error ${detailWord(error.data.error)}`,
      slackError: word,
    });
  }
  if (error instanceof WebAPIRateLimitedError) {
    return new SlackCallError({
      message: `${prefix}: ratelimited (HTTP 429)`,
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: error.retryAfter * 1000,
      // The number is the receiver's (any team's server can be an apiUrl): for the operator only.
      detail: `Slack asked to retry after ${String(error.retryAfter)} s`,
      slackError: 'ratelimited',
    });
  }
  if (error instanceof WebAPIHTTPError) {
    const verdict =
      classifyHttpStatus(error.statusCode, error.headers['retry-after'] ?? last.retryAfter, now) ??
      new DeliveryError({ message: 'unexpected answer', retryable: true, reason: 'server' });
    return new SlackCallError({
      message: `${prefix}: ${verdict.message}`,
      retryable: verdict.retryable,
      reason: verdict.reason,
      httpStatus: error.statusCode,
      retryAfterMs: verdict.retryAfterMs,
      detail: `${error.statusCode} ${detailWord(error.statusMessage)}`,
    });
  }
  if (last.status === 429) {
    // A 429 whose Retry-After the library could not read.
    return new SlackCallError({
      message: `${prefix}: rate limited (HTTP 429)`,
      retryable: true,
      reason: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: parseRetryAfter(last.retryAfter, now),
    });
  }
  const inner = error instanceof WebAPIRequestError ? error.original : error;
  const verdict = classifyError(inner);
  return new SlackCallError({
    message: `${prefix}: ${verdict.message}`,
    retryable: verdict.retryable,
    reason: verdict.reason,
    httpStatus: verdict.httpStatus,
    retryAfterMs: verdict.retryAfterMs,
    detail: verdict.detail,
    cause: inner,
  });
}

export function createSlackAppNotifier(
  config: SlackAppChannelConfig,
  deps: NotifierDeps = {},
): Notifier {
  const ownsDispatcher = deps.dispatcher === undefined;
  const dispatcher: Dispatcher = deps.dispatcher ?? egressAgent(deps.egress);
  let closed = false;
  const timeout = config.timeoutMs ?? DEFAULT_SLACK_APP_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  const secrets = slackAppSecrets(config);
  const slackApiUrl = `${config.apiUrl.replace(/\/+$/, '')}/`;
  // A claim outlives its holder's longest send: at most three calls, each bounded by `timeout`.
  const store: SlackMessageStore | null =
    deps.state === undefined
      ? null
      : createSlackMessageStore(deps.state, {
          claimTtlMs: 4 * timeout + 10_000,
          waitMs: Math.min(2 * timeout + 5_000, 30_000),
        });
  const identity = {
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.iconEmoji === undefined ? {} : { icon_emoji: config.iconEmoji }),
  };

  /** One Slack call on a client of its own, so its HTTP answer is at hand when it fails. */
  async function call(
    method: SlackMethod,
    args: Record<string, unknown>,
  ): Promise<SlackMessageAddress> {
    const last: LastResponse = { status: null, retryAfter: null };
    const fetchFn: FetchFunction = async (url, init) => {
      const response = await undiciFetch(url, {
        method: init?.method ?? 'POST',
        headers: init?.headers ?? {},
        body: typeof init?.body === 'string' ? init.body : null,
        redirect: 'error',
        signal: init?.signal ?? null,
        dispatcher,
      });
      last.status = response.status;
      last.retryAfter = response.headers.get('retry-after');
      return response;
    };
    const client = new WebClient(config.botToken, {
      slackApiUrl,
      fetch: fetchFn,
      timeout,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      allowAbsoluteUrls: false,
      logger: silentLogger,
    });
    let result: Record<string, unknown>;
    try {
      result = (await client.apiCall(method, args)) as unknown as Record<string, unknown>;
    } catch (caught) {
      throw toCallError(method, caught, last, now());
    }
    const { channel, ts } = result;
    if (typeof channel !== 'string' || typeof ts !== 'string' || channel === '' || ts === '') {
      throw new SlackCallError({
        message: `Slack ${method}: answer without channel or ts`,
        retryable: true,
        reason: 'server',
        httpStatus: last.status,
      });
    }
    return { channelId: channel, ts };
  }

  const post = (payload: SlackPayload, extra: Record<string, unknown> = {}) =>
    call('chat.postMessage', {
      channel: config.channel,
      text: payload.text,
      blocks: payload.blocks,
      unfurl_links: false,
      unfurl_media: false,
      ...identity,
      ...extra,
    });

  /** Edits a parent; what was done from its buttons (the reference's notes) stays on it. */
  const edit = (address: SlackMessageAddress & Partial<SlackMessageRef>, payload: SlackPayload) =>
    call('chat.update', {
      channel: address.channelId,
      ts: address.ts,
      text: payload.text,
      blocks: withActionNotes(payload.blocks, address.notes ?? [], address.acked === true),
    });

  // With a signing secret the parents carry the buttons (src/notify/slack/interactions.ts).
  const renderOptions = (broadcast = false): SlackAppRenderOptions => ({
    mention: config.mention,
    broadcast,
    buttons: config.signingSecret !== undefined,
  });

  function broadcastFor(transition: Transition): boolean {
    switch (config.replyBroadcast) {
      case 'all':
        return true;
      case 'none':
        return false;
      case 'closing':
        return isClosing(transition);
    }
  }

  const scopeOf = (notification: Notification, episode: string): SlackMessageScope => ({
    subscription: notification.subscription,
    channel: notification.channel,
    episode,
  });

  /** A message that is not a living one; recorded so a retry does not post it twice. */
  /** The message templates laid over a post or a thread reply about one event. */
  function templated(notification: Notification, payload: SlackPayload): SlackPayload {
    const rendered = renderTemplates(
      notification,
      'slack',
      templatesFor(config.templates, deps.templates, notification.subscription),
    );
    return applySlackTemplate(payload, rendered, {
      mention: config.mention,
      keepNote: notification.type === 'test',
    });
  }

  /** The `parent` template laid over an episode's living message (its buttons stay). */
  function templatedParent(
    notification: Notification,
    transition: Transition,
    openedAt: number | null,
    payload: SlackPayload,
  ): SlackPayload {
    const templates = templatesFor(config.templates, deps.templates, notification.subscription);
    return applySlackParentTemplate(
      payload,
      notification,
      transition,
      openedAt,
      templates,
      config.mention,
    );
  }

  async function plainPost(notification: Notification, payload: SlackPayload): Promise<void> {
    const progress = store === null ? null : await store.getProgress(notification.id);
    if (progress !== null && progress.posted !== null) return;
    const posted = await post(payload);
    if (store !== null && progress !== null) {
      await store.commit(notification.id, { ...progress, posted: posted.ts });
    }
  }

  /** Posts a new parent for the episode and stores it as the episode's reference. */
  async function postParent(
    s: SlackMessageStore,
    notification: Notification,
    transition: Transition,
    scope: SlackMessageScope,
    progress: SlackDeliveryProgress,
    openedAt: number | null,
  ): Promise<void> {
    const parent = templatedParent(
      notification,
      transition,
      openedAt,
      renderEpisodeParent(notification, transition, { openedAt }, renderOptions()),
    );
    const posted = await post(parent);
    await s.commit(
      notification.id,
      { ...progress, posted: posted.ts },
      {
        scope,
        ref: {
          channelId: posted.channelId,
          ts: posted.ts,
          openedBy: transition.id,
          openedAt,
          closed: isClosing(transition),
        },
      },
    );
  }

  async function sendEvent(
    s: SlackMessageStore,
    notification: Notification,
    transition: Transition,
  ): Promise<void> {
    const scope = scopeOf(notification, episodeKey(transition));
    await s.withClaim(scope, async () => {
      let progress = await s.getProgress(notification.id);
      if (progress.posted !== null || progress.replied !== null) return;
      const ref = await s.getRef(scope);
      const open = ref !== null && !ref.closed ? ref : null;
      // A retry after the edit keeps to the parent it edited.
      const target: SlackMessageAddress | null = progress.updated ?? open;
      if (target === null) {
        const openedAt = isClosing(transition) ? null : transition.observedAt;
        await postParent(s, notification, transition, scope, progress, openedAt);
        return;
      }
      const sameRef = ref !== null && ref.ts === target.ts && ref.channelId === target.channelId;
      const openedAt = sameRef ? ref.openedAt : null;
      if (progress.updated === null) {
        try {
          await edit(
            target,
            templatedParent(
              notification,
              transition,
              openedAt,
              renderEpisodeParent(notification, transition, { openedAt }, renderOptions()),
            ),
          );
        } catch (caught) {
          if (caught instanceof SlackCallError && PARENT_GONE_ERRORS.has(caught.slackError ?? '')) {
            await postParent(s, notification, transition, scope, progress, openedAt);
            return;
          }
          throw caught;
        }
        progress = { ...progress, updated: target };
        await s.commit(notification.id, progress);
      }
      const broadcast = broadcastFor(transition);
      const reply = await post(
        templated(
          notification,
          renderEpisodeReply(notification, transition, renderOptions(broadcast)),
        ),
        {
          channel: target.channelId,
          thread_ts: target.ts,
          reply_broadcast: broadcast,
        },
      );
      const done: SlackDeliveryProgress = { ...progress, replied: reply.ts };
      const closed = sameRef && isClosing(transition) ? { ...ref, closed: true } : null;
      await s.commit(notification.id, done, closed === null ? undefined : { scope, ref: closed });
    });
  }

  /** Brings the open parents of a batch's or catch-up's episodes to their latest state. */
  async function syncEpisodes(s: SlackMessageStore, notification: Notification): Promise<void> {
    for (const group of groupEpisodes(notification.transitions)) {
      const scope = scopeOf(notification, group.key);
      await s.withClaim(scope, async () => {
        const ref = await s.getRef(scope);
        if (ref === null || ref.closed) return;
        const closing = isClosing(group.latest);
        try {
          const single: Notification = {
            ...notification,
            type: 'event',
            transitions: [group.latest],
          };
          await edit(
            ref,
            templatedParent(
              single,
              group.latest,
              ref.openedAt,
              renderEpisodeParent(
                single,
                group.latest,
                { openedAt: ref.openedAt },
                renderOptions(),
              ),
            ),
          );
        } catch (caught) {
          if (!(
            caught instanceof SlackCallError && PARENT_GONE_ERRORS.has(caught.slackError ?? '')
          )) {
            throw caught;
          }
          // The parent is gone: the episode's next event starts a new one.
          await s.setRef(scope, { ...ref, closed: true });
          return;
        }
        if (closing) await s.setRef(scope, { ...ref, closed: true });
      });
    }
  }

  async function deliver(notification: Notification): Promise<void> {
    const rendered = renderSlackApp(notification, { openedAt: null }, renderOptions());
    switch (rendered.kind) {
      case 'episode':
        if (store === null) {
          // Without Redis there is no living message: each event is a message of its own.
          await plainPost(notification, templated(notification, rendered.parent));
          return;
        }
        await sendEvent(store, notification, rendered.transition);
        return;
      case 'list':
        // A grouped batch's listing message takes the `batch` template.
        await plainPost(notification, templated(notification, rendered.parent));
        if (store !== null) await syncEpisodes(store, notification);
        return;
      case 'post':
        await plainPost(notification, templated(notification, rendered.post));
        if (store !== null && notification.type === 'catchup') {
          await syncEpisodes(store, notification);
        }
        return;
    }
  }

  return {
    async send(notification: Notification): Promise<void> {
      try {
        await deliver(notification);
      } catch (caught) {
        const error =
          caught instanceof DeliveryError
            ? caught
            : new DeliveryError({
                message: `Slack app: ${classifyError(caught).message}`,
                retryable: true,
                reason: 'internal',
                detail: classifyError(caught).detail,
                cause: caught,
              });
        throw scrubDeliveryError(error, secrets);
      }
    },
    async close(): Promise<void> {
      if (!ownsDispatcher || closed) return;
      closed = true;
      await dispatcher.close();
    },
  };
}
