/**
 * Channels and subscriptions stored through the API, in Redis, next to the config file's:
 *
 * - `{prefix}:api:channels` (hash) name → `StoredChannel` (secret fields encrypted, crypto.ts);
 * - `{prefix}:api:subscriptions` (hash) name → `StoredSubscription`;
 * - `{prefix}:api:tombstones:subscriptions` (hash) name → a deleted subscription, still owed the
 *   closings of the openings it was told until `until` (7 days by default);
 * - `{prefix}:api:tombstones:channels` (hash) name → a deleted channel, kept as long for the
 *   closings and retries still going through it (never listed, never referenceable);
 * - `{prefix}:api:version` (counter) bumped by every change: replicas compare it once per routing
 *   step and reload when it moved (`runtime.ts`); `{prefix}:api:changed` (pub/sub) says so at once.
 *
 * Every write is one optimistic transaction on a connection of its own: WATCH the four hashes
 * (and the silences, their teams and the tokens, which the quotas count: quotas.ts), read them,
 * check (names unique across the config file and the API, references, ownership, the team's
 * quotas), then MULTI: the change, the version bump, the audit entry (audit.ts). A concurrent
 * change by another replica aborts the EXEC and the write is re-checked from the start. Silences
 * and tokens created through the API are written the same way (`createSilence`, `countedWrite`).
 *
 * - `{prefix}:api:silence-teams` (hash) silence id → the team it counts toward (a silence has no
 *   team of its own); one without an entry counts toward the team whose subscriptions it names.
 */
import { Cluster, type ChainableCommander } from 'ioredis';
import type { Logger } from 'pino';
import type { ChannelConfig, SubscriptionConfig } from '../config/schema.js';
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode, encode, type StoredShape } from '../redis/stored.js';
import { AuditLog, diffOf, type AuditEntry, type DiffEntry } from './audit.js';
import { SECRET_KEY_ENV, type SecretBox } from './crypto.js';
import { ownValue } from '../config/fields.js';
import { ApiError, invalid, notFound, type FieldIssue } from './errors.js';
import { literalEgressIssues, resolvedEgressIssues } from './egress-check.js';
import type { EgressPolicy } from '../egress/policy.js';
import { PARENT_NEEDS_SLACK_APP } from '../notify/template.js';
import { formatPath } from '../config/path.js';
import {
  CHANNEL_TOMBSTONE,
  channelRequest,
  configChannelView,
  configSubscriptionView,
  deleteAt,
  destinationOf,
  getAt,
  isDestinationPath,
  nameTaken,
  secretPathsOf,
  SET,
  setAt,
  STORED_CHANNEL,
  STORED_SUBSCRIPTION,
  STORED_TOKEN,
  storedChannelView,
  storedSubscriptionView,
  subscriptionRequest,
  SUBSCRIPTION_TOMBSTONE,
  validateChannel,
  validateSubscription,
  type ChannelTombstone,
  type ChannelView,
  type StoredChannel,
  type StoredSubscription,
  type SubscriptionTombstone,
  type SubscriptionView,
} from './model.js';
import { TOKEN_RETENTION_MS, type Actor } from './tokens.js';
import { DEFAULT_QUOTAS, type QuotasConfig } from './quota-config.js';
import { checkQuota, storedBytes, type Counted, type QuotaCheck } from './quotas.js';
import {
  parseStoredSilence,
  STORED_SILENCE,
  type Silence,
  type SilenceDraft,
} from '../silences/model.js';
import { newSilenceId } from '../silences/store.js';

/** How long a deleted subscription still gets the closings of what it was told. */
export const TOMBSTONE_MS = 7 * 24 * 3_600_000;

/**
 * The `team` of the tombstone of a config-file subscription a reload removed: config-file objects
 * belong to no team (never a valid team name), so such a tombstone reserves its name for nobody.
 */
export const CONFIG_FILE_TEAM = '';

/** The config file's part: read-only through the API. */
export interface ConfigView {
  channels: Readonly<Record<string, ChannelConfig>>;
  subscriptions: readonly SubscriptionConfig[];
  /** `server.quotas` (default: `DEFAULT_QUOTAS`). */
  quotas?: QuotasConfig | undefined;
  /** `server.publicUrl`: a channel's preview shows the console links a delivery would carry. */
  publicUrl?: string | undefined;
}

export interface ApiStoreOptions {
  redis: RedisClient;
  keys: Keys;
  config: () => ConfigView;
  box: SecretBox | null;
  log?: Pick<Logger, 'warn' | 'info'>;
  now?: () => number;
  tombstoneMs?: number;
  /** An error message when subscribing these categories would exceed the request budget. */
  budget?: (categories: readonly string[]) => string | null;
  /** The egress policy stored channels follow (`server.egress`); absent: unrestricted. */
  egress?: () => EgressPolicy | undefined;
}

/** Everything stored, as read in one go. */
export interface Snapshot {
  channels: Map<string, StoredChannel>;
  subscriptions: Map<string, StoredSubscription>;
  subscriptionTombstones: Map<string, SubscriptionTombstone>;
  channelTombstones: Map<string, ChannelTombstone>;
  /** Bytes of each stored value (UTF-8), by hash, for the quotas. */
  bytes: {
    channels: Map<string, number>;
    subscriptions: Map<string, number>;
    subscriptionTombstones: Map<string, number>;
    channelTombstones: Map<string, number>;
  };
}

/** What the quotas read besides the snapshot: silences (with their teams) and tokens. */
export interface QuotaState {
  silences: Map<string, { silence: Silence; bytes: number }>;
  silenceTeams: Map<string, string>;
  tokens: Map<string, { team: string; live: boolean; bytes: number }>;
}

interface Plan<T> {
  apply: (m: ChainableCommander) => void;
  result: T;
  audit: AuditEntry | null;
  /** The team quota this write is checked against (none: not counted, or not growing). */
  quota?: QuotaCheck | undefined;
  /** Whether routing must reload (channels, subscriptions); default true. */
  bump?: boolean;
}

export type WriteMode = 'create' | 'put';

/** Keys of the API's state. */
export function apiKeys(keys: Keys) {
  return {
    channels: keys.key('api', 'channels'),
    subscriptions: keys.key('api', 'subscriptions'),
    subscriptionTombstones: keys.key('api', 'tombstones', 'subscriptions'),
    channelTombstones: keys.key('api', 'tombstones', 'channels'),
    version: keys.key('api', 'version'),
    changed: keys.key('api', 'changed'),
    audit: keys.key('api', 'audit'),
    /** The silence store's hash (src/silences/store.ts) and the tokens' (tokens.ts). */
    silences: keys.key('silences'),
    silenceTeams: keys.key('api', 'silence-teams'),
    tokens: keys.key('api', 'tokens'),
  };
}

function sizesOf(raw: Record<string, string>): Map<string, number> {
  return new Map(Object.entries(raw).map(([name, text]) => [name, storedBytes(text)]));
}

function decodeMap<T>(shape: StoredShape<T>, raw: Record<string, string>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [name, text] of Object.entries(raw)) {
    const value = decode(shape, text);
    if (value === undefined) countCorrupt(shape.kind);
    else out.set(name, value);
  }
  return out;
}

/** Reads the four hashes in one round trip (on `redis`, which may be WATCHing them). */
export async function readSnapshot(
  redis: RedisClient,
  k: ReturnType<typeof apiKeys>,
): Promise<Snapshot> {
  const replies =
    (await redis
      .pipeline()
      .hgetall(k.channels)
      .hgetall(k.subscriptions)
      .hgetall(k.subscriptionTombstones)
      .hgetall(k.channelTombstones)
      .exec()) ?? [];
  const value = (i: number): Record<string, string> => {
    const r = replies[i];
    if (r === undefined) return {};
    if (r[0] !== null) throw r[0];
    return r[1] as Record<string, string>;
  };
  return {
    channels: decodeMap(STORED_CHANNEL, value(0)),
    subscriptions: decodeMap(STORED_SUBSCRIPTION, value(1)),
    subscriptionTombstones: decodeMap(SUBSCRIPTION_TOMBSTONE, value(2)),
    channelTombstones: decodeMap(CHANNEL_TOMBSTONE, value(3)),
    bytes: {
      channels: sizesOf(value(0)),
      subscriptions: sizesOf(value(1)),
      subscriptionTombstones: sizesOf(value(2)),
      channelTombstones: sizesOf(value(3)),
    },
  };
}

/** Reads the silences, their teams and the tokens in one round trip (on `redis`, maybe WATCHing). */
export async function readQuotaState(
  redis: RedisClient,
  k: ReturnType<typeof apiKeys>,
  now: number,
): Promise<QuotaState> {
  const replies =
    (await redis.pipeline().hgetall(k.silences).hgetall(k.silenceTeams).hgetall(k.tokens).exec()) ??
    [];
  const value = (i: number): Record<string, string> => {
    const r = replies[i];
    if (r === undefined) return {};
    if (r[0] !== null) throw r[0];
    return r[1] as Record<string, string>;
  };
  const silences = new Map<string, { silence: Silence; bytes: number }>();
  for (const [id, text] of Object.entries(value(0))) {
    const silence = parseStoredSilence(text);
    if (silence !== undefined) silences.set(id, { silence, bytes: storedBytes(text) });
  }
  const tokens = new Map<string, { team: string; live: boolean; bytes: number }>();
  for (const [id, text] of Object.entries(value(2))) {
    const t = decode(STORED_TOKEN, text);
    if (t === undefined) continue;
    const ended = t.revokedAt ?? (t.expiresAt !== null && t.expiresAt <= now ? t.expiresAt : null);
    // Past its listing retention a token is dropped by the next list: it counts no more.
    if (ended !== null && ended + TOKEN_RETENTION_MS <= now) continue;
    tokens.set(id, { team: t.team, live: ended === null, bytes: storedBytes(text) });
  }
  return { silences, silenceTeams: new Map(Object.entries(value(1))), tokens };
}

/**
 * The team a silence counts toward: the one recorded when it was created through the API, else
 * the one team whose stored subscriptions its `subscriptions` matcher names (none: no team).
 */
export function silenceTeamOf(
  silence: Silence,
  recorded: string | undefined,
  subscriptions: ReadonlyMap<string, { team: string }>,
): string | null {
  if (recorded !== undefined) return recorded;
  const names = silence.matchers.subscriptions ?? [];
  if (names.length === 0) return null;
  const teams = new Set(names.map((n) => subscriptions.get(n)?.team));
  const [only] = teams;
  return teams.size === 1 && only !== undefined ? only : null;
}

/** Every stored object that counts toward a team, as the quotas see it. */
export function countedObjects(snap: Snapshot, q: QuotaState, now: number): Counted[] {
  const out: Counted[] = [];
  for (const c of snap.channels.values())
    out.push({
      team: c.team,
      kind: 'channel',
      key: c.name,
      bytes: snap.bytes.channels.get(c.name) ?? 0,
      live: true,
    });
  for (const t of snap.channelTombstones.values())
    if (t.until > now)
      out.push({
        team: t.team,
        kind: 'channel',
        key: `tombstone:${t.name}`,
        bytes: snap.bytes.channelTombstones.get(t.name) ?? 0,
        live: false,
      });
  for (const s of snap.subscriptions.values())
    out.push({
      team: s.team,
      kind: 'subscription',
      key: s.name,
      bytes: snap.bytes.subscriptions.get(s.name) ?? 0,
      live: true,
    });
  for (const t of snap.subscriptionTombstones.values())
    if (t.until > now && t.team !== CONFIG_FILE_TEAM)
      out.push({
        team: t.team,
        kind: 'subscription',
        key: `tombstone:${t.name}`,
        bytes: snap.bytes.subscriptionTombstones.get(t.name) ?? 0,
        live: false,
      });
  for (const [id, { silence, bytes }] of q.silences) {
    const team = silenceTeamOf(silence, q.silenceTeams.get(id), snap.subscriptions);
    if (team !== null)
      out.push({ team, kind: 'silence', key: id, bytes, live: silence.endsAt > now });
  }
  for (const [id, t] of q.tokens)
    out.push({ team: t.team, kind: 'token', key: id, bytes: t.bytes, live: t.live });
  return out;
}

/** A connection of its own, to the same Redis or cluster (WATCH, SUBSCRIBE). */
export function duplicateOf(redis: RedisClient): RedisClient {
  return redis instanceof Cluster ? redis.duplicate() : redis.duplicate();
}

/** One at a time, in call order (writes share one WATCHing connection). */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

function secretKeyMissing(field: string): ApiError {
  return new ApiError(
    503,
    'secret_key_missing',
    `this daemon has no ${SECRET_KEY_ENV}, so it refuses to store channel secrets (${field}) in Redis; set ${SECRET_KEY_ENV} to 32 random bytes in base64 (openssl rand -base64 32) on every replica and restart`,
    field,
  );
}

/** The slot a ciphertext is bound to. */
export function secretSlot(channel: string, path: string): string {
  return `channel:${channel}:${path}`;
}

/**
 * A stored channel's config with its secrets decrypted. Throws `SecretKeyError` when a secret
 * does not open, an `ApiError` 503 when there is no key at all.
 */
export function openChannel(c: StoredChannel, box: SecretBox | null): Record<string, unknown> {
  const spec = structuredClone(c.spec);
  for (const [path, ciphertext] of Object.entries(c.secrets)) {
    if (box === null) throw secretKeyMissing(path);
    setAt(spec, path, JSON.parse(box.decrypt(ciphertext, secretSlot(c.name, path))) as unknown);
  }
  return spec;
}

export class ApiStore {
  readonly k: ReturnType<typeof apiKeys>;
  readonly audit: AuditLog;
  private readonly now: () => number;
  readonly tombstoneMs: number;
  private readonly mutex = new Mutex();
  private tx: RedisClient | null = null;

  constructor(private readonly o: ApiStoreOptions) {
    this.k = apiKeys(o.keys);
    this.audit = new AuditLog(o.redis, this.k.audit);
    this.now = o.now ?? Date.now;
    this.tombstoneMs = o.tombstoneMs ?? TOMBSTONE_MS;
  }

  get box(): SecretBox | null {
    return this.o.box;
  }

  async snapshot(): Promise<Snapshot> {
    return readSnapshot(this.o.redis, this.k);
  }

  /** The version counter (`api:version`): moves on every change; '0' before the first. */
  async version(): Promise<string> {
    return (await this.o.redis.get(this.k.version)) ?? '0';
  }

  /**
   * Follows the change notifications (`api:changed`, published after every change) on a
   * connection of its own: `onChange` runs on each. `subscribed` settles once the subscription
   * is in place (rejects when it could not be made); `close` ends the connection.
   */
  subscribeChanges(onChange: () => void): {
    subscribed: Promise<void>;
    close: () => Promise<void>;
  } {
    const sub = duplicateOf(this.o.redis);
    sub.on('error', () => undefined);
    sub.on('message', () => {
      onChange();
    });
    return {
      subscribed: sub.subscribe(this.k.changed).then(() => undefined),
      close: () =>
        sub.quit().then(
          () => undefined,
          () => undefined,
        ),
    };
  }

  async close(): Promise<void> {
    const tx = this.tx;
    this.tx = null;
    if (tx !== null) await tx.quit().catch(() => undefined);
  }

  // -------------------------------------------------------------------------------------------
  // Reads

  private visible(actor: Actor, owner: { team: string }): boolean {
    return actor.admin || owner.team === actor.team;
  }

  /** Config-file channels (everyone may see and reference them; secrets masked) and the actor's own. */
  async listChannels(actor: Actor): Promise<ChannelView[]> {
    const snap = await this.snapshot();
    const config = this.o.config();
    const fromConfig = Object.entries(config.channels).map(([name, c]) =>
      configChannelView(name, c),
    );
    const stored = [...snap.channels.values()]
      .filter((c) => this.visible(actor, c) && !Object.hasOwn(config.channels, c.name))
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(storedChannelView);
    return [...fromConfig, ...stored];
  }

  async getChannel(actor: Actor, name: string): Promise<ChannelView> {
    const config = this.o.config();
    const fromConfig = ownValue(config.channels, name);
    if (fromConfig !== undefined) return configChannelView(name, fromConfig);
    const stored = await this.storedChannel(actor, name);
    return storedChannelView(stored);
  }

  /** `server.publicUrl` of the config (previews print the console links deliveries carry). */
  publicUrl(): string | undefined {
    return this.o.config().publicUrl;
  }

  /** A channel the actor may use, decrypted and parsed (test, preview). */
  async resolveChannel(
    actor: Actor,
    name: string,
  ): Promise<{ config: ChannelConfig; source: 'config' | 'api' }> {
    const fromConfig = ownValue(this.o.config().channels, name);
    if (fromConfig !== undefined) return { config: fromConfig, source: 'config' };
    const stored = await this.storedChannel(actor, name);
    return { config: validateChannel(openChannel(stored, this.o.box)), source: 'api' };
  }

  private async storedChannel(actor: Actor, name: string): Promise<StoredChannel> {
    const text = await this.o.redis.hget(this.k.channels, name);
    const stored = text === null ? undefined : decode(STORED_CHANNEL, text);
    if (text !== null && stored === undefined) countCorrupt(STORED_CHANNEL.kind);
    if (stored === undefined || !this.visible(actor, stored)) throw notFound('channel', name);
    return stored;
  }

  /** Admins: the config file's and every stored subscription; teams: their own. */
  async listSubscriptions(actor: Actor): Promise<SubscriptionView[]> {
    const snap = await this.snapshot();
    const config = this.o.config();
    const configNames = new Set(config.subscriptions.map((s) => s.name));
    const fromConfig = actor.admin ? config.subscriptions.map(configSubscriptionView) : [];
    const stored = [...snap.subscriptions.values()]
      .filter((s) => this.visible(actor, s) && !configNames.has(s.name))
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(storedSubscriptionView);
    return [...fromConfig, ...stored];
  }

  async getSubscription(actor: Actor, name: string): Promise<SubscriptionView> {
    const fromConfig = this.o.config().subscriptions.find((s) => s.name === name);
    if (fromConfig !== undefined && actor.admin) return configSubscriptionView(fromConfig);
    if (fromConfig !== undefined) throw notFound('subscription', name);
    const text = await this.o.redis.hget(this.k.subscriptions, name);
    const stored = text === null ? undefined : decode(STORED_SUBSCRIPTION, text);
    if (stored === undefined || !this.visible(actor, stored)) throw notFound('subscription', name);
    return storedSubscriptionView(stored);
  }

  // -------------------------------------------------------------------------------------------
  // Writes

  private connection(): RedisClient {
    const tx = this.tx ?? duplicateOf(this.o.redis);
    this.tx = tx;
    return tx;
  }

  /** `server.quotas` in force. */
  quotas(): QuotasConfig {
    return this.o.config().quotas ?? DEFAULT_QUOTAS;
  }

  private async transact<T>(
    plan: (snap: Snapshot, now: number, q: QuotaState) => Plan<T>,
  ): Promise<T> {
    return this.mutex.run(async () => {
      const conn = this.connection();
      const watched = [
        this.k.channels,
        this.k.subscriptions,
        this.k.subscriptionTombstones,
        this.k.channelTombstones,
        this.k.silences,
        this.k.silenceTeams,
        this.k.tokens,
      ];
      for (let attempt = 0; attempt < 10; attempt += 1) {
        await conn.watch(...watched);
        let planned: Plan<T>;
        let orphans: string[];
        try {
          const now = this.now();
          const snap = await readSnapshot(conn, this.k);
          const q = await readQuotaState(conn, this.k, now);
          planned = plan(snap, now, q);
          if (planned.quota !== undefined)
            checkQuota(countedObjects(snap, q, now), planned.quota, this.quotas());
          // Teams of silences the silence store has since dropped (ended past its retention).
          orphans = [...q.silenceTeams.keys()].filter((id) => !q.silences.has(id));
        } catch (caught) {
          await conn.unwatch();
          throw caught;
        }
        const m = conn.multi();
        planned.apply(m);
        if (orphans.length > 0) m.hdel(this.k.silenceTeams, ...orphans);
        if (planned.bump !== false) m.incr(this.k.version);
        if (planned.audit !== null) this.audit.append(m, planned.audit);
        const replies = await m.exec();
        if (replies === null) continue; // another writer got there first: check again
        for (const [err] of replies) if (err !== null) throw err;
        if (planned.bump !== false) await this.o.redis.publish(this.k.changed, '1').catch(() => 0);
        return planned.result;
      }
      throw new ApiError(
        409,
        'conflict',
        'the stored objects kept changing during this write; try again',
      );
    });
  }

  /** Expired tombstones go with any write. */
  private purge(m: ChainableCommander, snap: Snapshot, now: number): void {
    const subs = [...snap.subscriptionTombstones.values()]
      .filter((t) => t.until <= now)
      .map((t) => t.name);
    const chans = [...snap.channelTombstones.values()]
      .filter((t) => t.until <= now)
      .map((t) => t.name);
    if (subs.length > 0) m.hdel(this.k.subscriptionTombstones, ...subs);
    if (chans.length > 0) m.hdel(this.k.channelTombstones, ...chans);
  }

  private ownerOf(
    actor: Actor,
    requested: string | undefined,
    existing: string | undefined,
  ): string {
    if (!actor.admin) {
      if (requested !== undefined && requested !== actor.team) {
        throw new ApiError(
          403,
          'forbidden',
          "a team token can only write its own team's objects",
          'team',
        );
      }
      return actor.team ?? '';
    }
    const team = requested ?? existing ?? actor.team ?? undefined;
    if (team === undefined) {
      throw invalid([
        {
          field: 'team',
          message: 'required: a token without a team must name the team that owns the object',
        },
      ]);
    }
    if (existing !== undefined && team !== existing) {
      throw invalid([
        { field: 'team', message: 'an object cannot change teams; delete it and create it again' },
      ]);
    }
    return team;
  }

  private entry(
    actor: Actor,
    now: number,
    e: Pick<AuditEntry, 'action' | 'kind' | 'name' | 'team' | 'diff'>,
  ): AuditEntry {
    return { at: now, tokenId: actor.tokenId, actorTeam: actor.team, address: actor.address, ...e };
  }

  /**
   * Appends the audit entry of a change stored elsewhere (a silence: src/silences/store.ts),
   * just after that change.
   */
  async recordChange(
    actor: Actor,
    e: Pick<AuditEntry, 'action' | 'kind' | 'name' | 'team' | 'diff'>,
  ): Promise<void> {
    const m = this.o.redis.multi();
    this.audit.append(m, this.entry(actor, this.now(), e));
    const replies = await m.exec();
    for (const [err] of replies ?? []) if (err !== null) throw err;
  }

  /**
   * Creates (`create`: 409 when the name exists) or creates-or-replaces (`put`) a channel.
   * Secret fields sent as `"<set>"` keep their stored values.
   */
  async putChannel(
    actor: Actor,
    body: unknown,
    mode: WriteMode,
    pathName?: string,
  ): Promise<{ view: ChannelView; created: boolean }> {
    const req = channelRequest(body, pathName);
    const box = this.o.box;
    const egress = this.o.egress?.();
    if (egress !== undefined) {
      const refused = await resolvedEgressIssues(egress, req.spec);
      if (refused.length > 0) throw invalid(refused);
    }
    return this.transact((snap, now) => {
      const config = this.o.config();
      if (Object.hasOwn(config.channels, req.name)) {
        if (mode === 'create') throw nameTaken('channel', req.name);
        throw new ApiError(
          403,
          'read_only',
          `channel ${JSON.stringify(req.name)} is defined in the config file and is read-only through the API`,
          'name',
        );
      }
      const existing = snap.channels.get(req.name);
      if (existing !== undefined && !this.visible(actor, existing)) {
        if (mode === 'create') throw nameTaken('channel', req.name);
        throw notFound('channel', req.name);
      }
      if (existing !== undefined && mode === 'create') throw nameTaken('channel', req.name);
      const team = this.ownerOf(actor, req.team, existing?.team);
      // A deleted channel still carries its team's owed closings: its name stays theirs meanwhile.
      const buried = snap.channelTombstones.get(req.name);
      if (buried !== undefined && buried.until > now && buried.team !== team) {
        throw nameTaken('channel', req.name);
      }
      const spec = structuredClone(req.spec);
      // "<set>": keep the stored value of that field.
      const issues: FieldIssue[] = [];
      const secretPaths = secretPathsOf(spec.type);
      // Whether the request sends the channel somewhere else than `existing` does: another
      // type, endpoint or server, also through a secret that is itself an address (a webhook's
      // `url`) given anew.
      const movedFrom = (stored: StoredChannel): boolean => {
        if (
          destinationOf(spec, secretPaths) !==
          destinationOf(stored.spec, secretPathsOf(stored.spec['type']))
        )
          return true;
        return secretPaths.some((p) => {
          const value = getAt(spec, p);
          if (!isDestinationPath(p) || value === SET || value === undefined) return false;
          const before = stored.secrets[p];
          return (
            before === undefined ||
            box === null ||
            box.decrypt(before, secretSlot(req.name, p)) !== JSON.stringify(value)
          );
        });
      };
      let moved: boolean | undefined;
      for (const path of secretPaths) {
        if (getAt(spec, path) !== SET) continue;
        const kept = existing?.secrets[path];
        if (kept === undefined) {
          issues.push({
            field: path,
            message: `"${SET}" keeps the stored value, but none is stored`,
          });
          continue;
        }
        if (existing !== undefined && (moved ??= movedFrom(existing))) {
          issues.push({
            field: path,
            message: `"${SET}" keeps the stored value only while the channel sends to the same place (its type, URLs, host and port): send the value again to change where it goes`,
          });
          continue;
        }
        if (box === null) throw secretKeyMissing(path);
        setAt(spec, path, JSON.parse(box.decrypt(kept, secretSlot(req.name, path))) as unknown);
      }
      if (issues.length > 0) throw invalid(issues);
      const parsed = validateChannel(spec);
      const refused = egress === undefined ? [] : literalEgressIssues(egress, parsed);
      if (refused.length > 0) throw invalid(refused);
      const plain: Record<string, string> = {};
      const rest = structuredClone(spec);
      for (const path of secretPathsOf(parsed.type)) {
        const value = getAt(spec, path);
        if (value === undefined) continue;
        plain[path] = JSON.stringify(value);
        deleteAt(rest, path);
      }
      const paths = Object.keys(plain);
      const first = paths[0];
      const secrets: Record<string, string> = {};
      for (const path of paths) {
        if (box === null) throw secretKeyMissing(first ?? path);
        secrets[path] = box.encrypt(plain[path] ?? '', secretSlot(req.name, path));
      }
      const record: StoredChannel = {
        name: req.name,
        team,
        spec: rest,
        secrets,
        createdAt: existing?.createdAt ?? now,
        createdBy: existing?.createdBy ?? actor.tokenId,
        updatedAt: now,
        updatedBy: actor.tokenId,
      };
      const diff = this.channelDiff(existing, record, plain);
      const text = encode(STORED_CHANNEL, record);
      return {
        apply: (m) => {
          this.purge(m, snap, now);
          m.hset(this.k.channels, req.name, text);
          m.hdel(this.k.channelTombstones, req.name);
        },
        quota: {
          team,
          kind: 'channel',
          key: req.name,
          bytes: storedBytes(text),
          enforce: !actor.admin,
          label: `channel ${JSON.stringify(req.name)}`,
        },
        result: { view: storedChannelView(record), created: existing === undefined },
        audit: this.entry(actor, now, {
          action: existing === undefined ? 'create' : 'update',
          kind: 'channel',
          name: req.name,
          team,
          diff,
        }),
      };
    });
  }

  /** The diff of a channel write, secrets as `<set>` / `<changed>` / absent. */
  private channelDiff(
    before: StoredChannel | undefined,
    after: StoredChannel,
    plainAfter: Record<string, string>,
  ): DiffEntry[] {
    const diff = diffOf(before === undefined ? undefined : before.spec, after.spec);
    const paths = new Set([...Object.keys(before?.secrets ?? {}), ...Object.keys(after.secrets)]);
    for (const path of [...paths].sort()) {
      const had = before?.secrets[path];
      const has = after.secrets[path];
      if (had === undefined && has !== undefined) diff.push({ field: path, to: SET });
      else if (had !== undefined && has === undefined) diff.push({ field: path, from: SET });
      else if (had !== undefined && has !== undefined) {
        let same: boolean;
        try {
          same = this.o.box?.decrypt(had, secretSlot(after.name, path)) === plainAfter[path];
        } catch {
          same = false;
        }
        if (!same) diff.push({ field: path, from: SET, to: '<changed>' });
      }
    }
    return diff;
  }

  /**
   * Deletes a channel no live subscription uses (409 naming them otherwise). It stays in the
   * delivery registry as a tombstone for the closings and retries still owed through it.
   */
  async deleteChannel(actor: Actor, name: string): Promise<{ deleted: string }> {
    return this.transact((snap, now) => {
      const config = this.o.config();
      if (Object.hasOwn(config.channels, name)) {
        throw new ApiError(
          403,
          'read_only',
          `channel ${JSON.stringify(name)} is defined in the config file and is read-only through the API`,
          'name',
        );
      }
      const existing = snap.channels.get(name);
      if (existing === undefined || !this.visible(actor, existing)) throw notFound('channel', name);
      const users = [...snap.subscriptions.values()]
        .filter((s) => Array.isArray(s.spec.channels) && s.spec.channels.includes(name))
        .map((s) => s.name);
      if (users.length > 0) {
        throw new ApiError(
          409,
          'in_use',
          `channel ${JSON.stringify(name)} is used by subscription(s) ${users.sort().join(', ')}; change or delete them first`,
          'name',
        );
      }
      const tombstone: ChannelTombstone = {
        ...existing,
        deletedAt: now,
        until: now + this.tombstoneMs,
      };
      return {
        apply: (m) => {
          this.purge(m, snap, now);
          m.hdel(this.k.channels, name);
          m.hset(this.k.channelTombstones, name, encode(CHANNEL_TOMBSTONE, tombstone));
        },
        result: { deleted: name },
        audit: this.entry(actor, now, {
          action: 'delete',
          kind: 'channel',
          name,
          team: existing.team,
          diff: this.channelDiff(existing, { ...existing, spec: {}, secrets: {} }, {}),
        }),
      };
    });
  }

  async putSubscription(
    actor: Actor,
    body: unknown,
    mode: WriteMode,
    pathName?: string,
  ): Promise<{ view: SubscriptionView; created: boolean }> {
    const req = subscriptionRequest(body, pathName);
    const parsed = validateSubscription(req.spec);
    return this.transact((snap, now) => {
      const config = this.o.config();
      if (config.subscriptions.some((s) => s.name === req.name)) {
        if (mode === 'create' || !actor.admin) throw nameTaken('subscription', req.name);
        throw new ApiError(
          403,
          'read_only',
          `subscription ${JSON.stringify(req.name)} is defined in the config file and is read-only through the API`,
          'name',
        );
      }
      const existing = snap.subscriptions.get(req.name);
      if (existing !== undefined && !this.visible(actor, existing)) {
        if (mode === 'create') throw nameTaken('subscription', req.name);
        throw notFound('subscription', req.name);
      }
      if (existing !== undefined && mode === 'create') throw nameTaken('subscription', req.name);
      const team = this.ownerOf(actor, req.team, existing?.team);
      const buried = snap.subscriptionTombstones.get(req.name);
      if (
        buried !== undefined &&
        buried.until > now &&
        buried.team !== CONFIG_FILE_TEAM &&
        buried.team !== team
      ) {
        throw nameTaken('subscription', req.name);
      }
      // References: the config file's channels, or channels of the subscription's own team.
      const issues: FieldIssue[] = [];
      const raw = Array.isArray(req.spec.channels) ? (req.spec.channels as unknown[]) : [];
      raw.forEach((channel, i) => {
        if (typeof channel !== 'string' || Object.hasOwn(config.channels, channel)) return;
        if (snap.channels.get(channel)?.team === team) return;
        issues.push({
          field: `channels[${i}]`,
          message: `unknown channel; a subscription may use the config file's channels and channels of its own team (${team})`,
        });
      });
      if (issues.length > 0) throw invalid(issues, 'unknown_channel');
      // `parent` shapes the Slack app's living message: only a channel with a bot token has one.
      for (const [channel, map] of Object.entries(parsed.templates ?? {})) {
        if (!Object.hasOwn(map, 'parent')) continue;
        const fromConfig = ownValue(config.channels, channel);
        const stored = snap.channels.get(channel);
        const app =
          fromConfig !== undefined
            ? fromConfig.type === 'slack' && fromConfig.botToken !== undefined
            : stored?.spec.type === 'slack' && Object.hasOwn(stored.secrets, 'botToken');
        if (!app) {
          issues.push({
            field: formatPath(['templates', channel, 'parent']),
            message: PARENT_NEEDS_SLACK_APP,
          });
        }
      }
      if (issues.length > 0) throw invalid(issues);
      if (this.o.budget !== undefined && parsed.categories.length > 0) {
        const categories = new Set(config.subscriptions.flatMap((s) => s.categories));
        for (const s of snap.subscriptions.values()) {
          if (s.name === req.name || !Array.isArray(s.spec.categories)) continue;
          for (const c of s.spec.categories as unknown[])
            if (typeof c === 'string') categories.add(c);
        }
        for (const c of parsed.categories) categories.add(c);
        const over = this.o.budget([...categories]);
        if (over !== null)
          throw new ApiError(400, 'budget_exceeded', `categories: ${over}`, 'categories');
      }
      const record: StoredSubscription = {
        name: req.name,
        team,
        spec: req.spec,
        createdAt: existing?.createdAt ?? now,
        createdBy: existing?.createdBy ?? actor.tokenId,
        updatedAt: now,
        updatedBy: actor.tokenId,
      };
      const text = encode(STORED_SUBSCRIPTION, record);
      return {
        apply: (m) => {
          this.purge(m, snap, now);
          // A tombstone of the same name stays: it still owes what the deleted one was told.
          m.hset(this.k.subscriptions, req.name, text);
        },
        quota: {
          team,
          kind: 'subscription',
          key: req.name,
          bytes: storedBytes(text),
          enforce: !actor.admin,
          label: `subscription ${JSON.stringify(req.name)}`,
        },
        result: { view: storedSubscriptionView(record), created: existing === undefined },
        audit: this.entry(actor, now, {
          action: existing === undefined ? 'create' : 'update',
          kind: 'subscription',
          name: req.name,
          team,
          diff: diffOf(existing?.spec, record.spec),
        }),
      };
    });
  }

  /**
   * Deletes a subscription. It stops matching at once; as a tombstone it still receives the
   * closings of openings it was told (see runtime.ts and the router), for `tombstoneMs`.
   */
  async deleteSubscription(
    actor: Actor,
    name: string,
  ): Promise<{ deleted: string; closingsOwedUntil: string }> {
    return this.transact((snap, now) => {
      const config = this.o.config();
      if (config.subscriptions.some((s) => s.name === name)) {
        if (!actor.admin) throw notFound('subscription', name);
        throw new ApiError(
          403,
          'read_only',
          `subscription ${JSON.stringify(name)} is defined in the config file and is read-only through the API`,
          'name',
        );
      }
      const existing = snap.subscriptions.get(name);
      if (existing === undefined || !this.visible(actor, existing))
        throw notFound('subscription', name);
      const tombstone: SubscriptionTombstone = {
        name,
        team: existing.team,
        deletedAt: now,
        until: now + this.tombstoneMs,
      };
      return {
        apply: (m) => {
          this.purge(m, snap, now);
          m.hdel(this.k.subscriptions, name);
          m.hset(this.k.subscriptionTombstones, name, encode(SUBSCRIPTION_TOMBSTONE, tombstone));
        },
        result: { deleted: name, closingsOwedUntil: new Date(tombstone.until).toISOString() },
        audit: this.entry(actor, now, {
          action: 'delete',
          kind: 'subscription',
          name,
          team: existing.team,
          diff: diffOf(existing.spec, undefined),
        }),
      };
    });
  }

  /**
   * Subscriptions a reload removed from the config file become tombstones until `until`, as
   * `deleteSubscription` makes them: every replica (and this one after a restart) still sends
   * them the closings of the openings they were told. Skipped: a name the config file has again
   * and one stored through the API (live again). A tombstone already there keeps its team and
   * the later `until`. Not audited (no API actor). Returns the names written.
   */
  async buryConfigSubscriptions(names: readonly string[], until: number): Promise<string[]> {
    return this.transact((snap, now) => {
      const config = new Set(this.o.config().subscriptions.map((s) => s.name));
      const tombstones = names
        .filter((name) => !config.has(name) && !snap.subscriptions.has(name))
        .map((name): SubscriptionTombstone => {
          const buried = snap.subscriptionTombstones.get(name);
          const kept = buried !== undefined && buried.until > now ? buried : undefined;
          return {
            name,
            team: kept?.team ?? CONFIG_FILE_TEAM,
            deletedAt: now,
            until: Math.max(until, kept?.until ?? 0),
          };
        });
      return {
        apply: (m) => {
          this.purge(m, snap, now);
          for (const t of tombstones)
            m.hset(this.k.subscriptionTombstones, t.name, encode(SUBSCRIPTION_TOMBSTONE, t));
        },
        result: tombstones.map((t) => t.name),
        audit: null,
      };
    });
  }

  /**
   * Stores a new silence (a validated draft) in the silence store's hash, checked against the
   * quota of the team it counts toward: a team token's own team; for an admin, the one team
   * whose subscriptions it names (none: it counts toward no team). The team is recorded in
   * `silence-teams`, the audit entry goes in the same MULTI. The caller tells the silence store
   * (its cache) that it changed.
   */
  async createSilence(actor: Actor, draft: SilenceDraft): Promise<Silence> {
    return this.transact((snap, now, q) => {
      let id = newSilenceId();
      while (q.silences.has(id)) id = newSilenceId();
      const silence: Silence = { id, ...draft, createdAt: now };
      const text = encode(STORED_SILENCE, silence);
      const team =
        !actor.admin && actor.team !== null
          ? actor.team
          : silenceTeamOf(silence, undefined, snap.subscriptions);
      const { id: _id, ...fields } = silence;
      return {
        apply: (m) => {
          m.hset(this.k.silences, id, text);
          if (team !== null) m.hset(this.k.silenceTeams, id, team);
        },
        result: silence,
        bump: false,
        quota:
          team === null
            ? undefined
            : {
                team,
                kind: 'silence',
                key: id,
                bytes: storedBytes(text),
                enforce: !actor.admin,
                label: 'this silence',
              },
        audit: this.entry(actor, now, {
          action: 'create',
          kind: 'silence',
          name: id,
          team: team ?? '*',
          diff: diffOf(undefined, fields),
        }),
      };
    });
  }

  /**
   * A write of another store (a token: tokens.ts) checked against `check` in this store's
   * transaction; `apply` queues the write and its audit entry.
   */
  async countedWrite(check: QuotaCheck, apply: (m: ChainableCommander) => void): Promise<void> {
    return this.transact(() => ({
      apply,
      result: undefined,
      audit: null,
      quota: check,
      bump: false,
    }));
  }

  /**
   * Re-encrypts every stored secret (channels and channel tombstones) that is not under the
   * current key. Values that do not open with any known key are reported, not touched.
   */
  async rotateSecrets(
    actor: Actor,
  ): Promise<{ keyId: string; rotated: number; current: number; unreadable: string[] }> {
    const box = this.o.box;
    if (box === null) throw secretKeyMissing('(all)');
    return this.transact((snap, now) => {
      let rotated = 0;
      let current = 0;
      const unreadable: string[] = [];
      const writes: [string, string, string][] = [];
      const redo = <C extends StoredChannel>(c: C): C | null => {
        let changed = false;
        const secrets: Record<string, string> = {};
        for (const [path, text] of Object.entries(c.secrets)) {
          if (!box.isStale(text)) {
            secrets[path] = text;
            continue;
          }
          const slot = secretSlot(c.name, path);
          secrets[path] = box.encrypt(box.decrypt(text, slot), slot);
          changed = true;
        }
        return changed ? { ...c, secrets } : null;
      };
      for (const [hash, shape, map] of [
        [this.k.channels, STORED_CHANNEL, snap.channels],
        [this.k.channelTombstones, CHANNEL_TOMBSTONE, snap.channelTombstones],
      ] as const) {
        for (const c of map.values()) {
          let next: StoredChannel | null;
          try {
            next = redo(c);
          } catch {
            unreadable.push(c.name);
            continue;
          }
          if (next === null) current += 1;
          else {
            rotated += 1;
            writes.push([hash, c.name, encode(shape as StoredShape<StoredChannel>, next)]);
          }
        }
      }
      return {
        apply: (m) => {
          for (const [hash, name, text] of writes) m.hset(hash, name, text);
        },
        result: { keyId: box.keyId, rotated, current, unreadable: unreadable.sort() },
        audit:
          rotated === 0
            ? null
            : this.entry(actor, now, {
                action: 'rotate',
                kind: 'secrets',
                name: 'channels',
                team: '*',
                diff: [
                  { field: 'keyId', to: box.keyId },
                  { field: 'rotated', to: rotated },
                ],
              }),
      };
    });
  }
}
