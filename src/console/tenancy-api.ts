/**
 * The console's seams implemented with the tenancy API of #13 (src/api): tokens (the config file's
 * admin token and team tokens) authenticate viewers, the API's stores list and change
 * subscriptions and channels with the API's own validation, ownership rules and audit entries.
 * A viewer is the token's actor: admins (`team: null`) see everything, a team its own objects.
 */
import { createHash } from 'node:crypto';
import type { SubscriptionConfig } from '../config/schema.js';
import { redactText } from '../config/secret-text.js';
import { CHANNEL_TYPES, channelSecrets } from '../notify/kinds.js';
import { renderForChannel } from '../commands/render.js';
import { notifyTest } from '../commands/notify-test.js';
import type { TenancyApi } from '../api/index.js';
import type { WriteMode } from '../api/store.js';
import { SecretKeyError } from '../api/crypto.js';
import { subscriptionSchema } from '../api/model.js';
import { ServiceSearch } from '../api/services.js';
import { CONFIG_ADMIN_TOKEN_ID, type Actor } from '../api/tokens.js';
import type { Keys, RedisClient } from '../redis.js';
import type { ConsoleAuth, Viewer } from './auth.js';
import type { ObjectView, SelfService } from './selfservice.js';
import { HttpError } from '../server/http-error.js';
import { sameDigest } from '../server/secret-compare.js';

/** A digest of the config file's admin token, kept in its sessions (never the token itself). */
function adminProof(token: string): string {
  return createHash('sha256').update(`statuswatch console admin session\0${token}`).digest('hex');
}

export function viewerOf(actor: Actor, token?: string): Viewer {
  if (actor.tokenId === CONFIG_ADMIN_TOKEN_ID)
    return {
      id: actor.tokenId,
      team: null,
      label: 'admin',
      ...(token === undefined ? {} : { proof: adminProof(token) }),
    };
  return {
    id: actor.tokenId,
    team: actor.admin ? null : actor.team,
    label: `${actor.team ?? 'admin'} (token ${actor.tokenId.slice(0, 6)})`,
  };
}

export function actorOf(viewer: Viewer, address = 'console'): Actor {
  return { tokenId: viewer.id, team: viewer.team, admin: viewer.team === null, address };
}

/** Authentication by the API's tokens (with its per-address failure limit). */
export function tenancyAuth(api: TenancyApi, adminToken: () => string | undefined): ConsoleAuth {
  return {
    async authenticate(token, address) {
      const actor = await api.tokens.authenticate(token, adminToken(), address);
      return actor === null ? null : viewerOf(actor, token);
    },
    async stillValid(viewer) {
      if (viewer.id === CONFIG_ADMIN_TOKEN_ID) {
        // Opened with the admin token in force now: a rotated token (a restart with another
        // one) ends the sessions of the old one, as a revoked team token ends its own.
        const t = adminToken();
        if (t === undefined || t === '' || viewer.proof === undefined) return false;
        const want = Buffer.from(adminProof(t), 'hex');
        const have = Buffer.from(viewer.proof, 'hex');
        return sameDigest(have, want);
      }
      const token = (await api.tokens.list()).find((t) => t.id === viewer.id);
      return token?.state === 'active';
    },
    limit: (address, presented, check) => api.tokens.attempt(address, presented, check),
  };
}

/** The live subscriptions a viewer may see: admins all, a team its own stored ones. */
export function tenancySubscriptions(
  api: TenancyApi,
): (viewer: Viewer) => Promise<readonly SubscriptionConfig[]> {
  return async (viewer) => {
    const live = api.runtime.subscriptions();
    if (viewer.team === null) return live;
    const views = await api.store.listSubscriptions(actorOf(viewer));
    const byName = new Map(live.map((s) => [s.name, s]));
    const out: SubscriptionConfig[] = [];
    for (const v of views) {
      const known = byName.get(v.name);
      if (known !== undefined) {
        out.push(known);
        continue;
      }
      // Stored a moment ago, not merged into the runtime yet: parse it the same way.
      const { team: _team, source: _source, ...spec } = v;
      const parsed = subscriptionSchema.safeParse(spec);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  };
}

/** The API's refusals are already the one HTTP error; a closed secret box becomes a 503. */
function consoleError(err: unknown): unknown {
  if (err instanceof SecretKeyError)
    return new HttpError(503, err.code, `stored secrets cannot be opened: ${err.message}`);
  return err;
}

async function mapped<T>(task: () => Promise<T>): Promise<T> {
  try {
    return await task();
  } catch (err) {
    throw consoleError(err);
  }
}

/** One kind of stored object as the API's store lists, writes and deletes it. */
interface StoreObjects {
  list(actor: Actor): Promise<readonly object[]>;
  put(actor: Actor, body: unknown, mode: WriteMode, pathName?: string): Promise<unknown>;
  remove(actor: Actor, name: string): Promise<unknown>;
}

/** An admin names the owning team in the body (the API requires it); a team's is implied. */
function withTeam(viewer: Viewer, body: Record<string, unknown>): Record<string, unknown> {
  if (viewer.team === null) return body;
  return { ...body, team: viewer.team };
}

/** The console's list, write and delete of one kind of stored object, as the viewer's actor. */
function viewerCalls(store: StoreObjects): {
  list: (viewer: Viewer) => Promise<ObjectView[]>;
  put: (viewer: Viewer, body: Record<string, unknown>, mode: WriteMode) => Promise<void>;
  remove: (viewer: Viewer, name: string) => Promise<void>;
} {
  return {
    list: (viewer) => mapped(async () => (await store.list(actorOf(viewer))) as ObjectView[]),
    put: (viewer, body, mode) =>
      mapped(async () => {
        const pathName = mode === 'put' ? String(body.name) : undefined;
        await store.put(actorOf(viewer), withTeam(viewer, body), mode, pathName);
      }),
    remove: (viewer, name) =>
      mapped(async () => {
        await store.remove(actorOf(viewer), name);
      }),
  };
}

export function tenancySelfService(api: TenancyApi, redis: RedisClient, keys: Keys): SelfService {
  const search = new ServiceSearch(redis, keys);
  const { store } = api;
  const subscriptions = viewerCalls({
    list: (actor) => store.listSubscriptions(actor),
    put: (actor, body, mode, pathName) => store.putSubscription(actor, body, mode, pathName),
    remove: (actor, name) => store.deleteSubscription(actor, name),
  });
  const channels = viewerCalls({
    list: (actor) => store.listChannels(actor),
    put: (actor, body, mode, pathName) => store.putChannel(actor, body, mode, pathName),
    remove: (actor, name) => store.deleteChannel(actor, name),
  });
  return {
    listSubscriptions: subscriptions.list,
    putSubscription: subscriptions.put,
    deleteSubscription: subscriptions.remove,
    listChannels: channels.list,
    putChannel: channels.put,
    deleteChannel: channels.remove,
    previewChannel: (viewer, name, event) =>
      mapped(async () => {
        const { config, source } = await api.store.resolveChannel(actorOf(viewer), name);
        if (source === 'config' && viewer.team !== null)
          throw new HttpError(
            403,
            'forbidden',
            "a team can preview its own team's channels only; config-file channels are previewed by an admin",
          );
        return redactText(
          renderForChannel(event, name, config, Date.now(), api.store.publicUrl()),
          channelSecrets(config),
        );
      }),
    testChannel: (viewer, name) =>
      mapped(async () => {
        const { config, source } = await api.store.resolveChannel(actorOf(viewer), name);
        if (source === 'config' && viewer.team !== null)
          throw new HttpError(
            403,
            'forbidden',
            "a team can test its own team's channels only; config-file channels are tested by an admin",
          );
        const egress = api.egressFor(source);
        const result = await notifyTest(
          name,
          config,
          Date.now(),
          egress === undefined ? {} : { egress },
        );
        // The team-safe text only: the receiver's words (`result.detail`) are the operator's.
        return { ok: result.ok, message: redactText(result.text, channelSecrets(config)).trim() };
      }),
    createSilence: (viewer, draft) => mapped(async () => api.createSilence(actorOf(viewer), draft)),
    acknowledge: (viewer, subscription, body) =>
      mapped(async () => {
        if (api.acks === null)
          throw new HttpError(503, 'unavailable', 'acknowledgements are not available here');
        return api.acks.acknowledgeAs(actorOf(viewer), subscription, body, 'console');
      }),
    searchServices: async (query, limit) => {
      const found = await search.search(query, limit);
      return {
        services: found.services.map((s) => ({ feedId: s.feedId, name: s.name })),
        total: found.total,
      };
    },
    audit: (viewer, o) =>
      mapped(async () =>
        api.store.audit.read({
          limit: o.limit,
          ...(o.before === undefined || !/^\d+-\d+$/.test(o.before) ? {} : { before: o.before }),
          visible: (e) => viewer.team === null || e.team === viewer.team,
        }),
      ),
    channelTypes: () => CHANNEL_TYPES,
  };
}
