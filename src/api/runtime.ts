/**
 * What routing and delivery use: the config file's channels and subscriptions merged with the
 * stored ones, kept in memory and brought up to date
 * - once per routing step (`refresh()`: one read of the store's version counter,
 *   `{prefix}:api:version`; the stored objects are read again only when it moved), so a change
 *   is in force on every replica for the next routed cycle;
 * - at once on a `{prefix}:api:changed` message (pub/sub), and every `pollMs` as a fallback, so
 *   delivery workers know a new channel before a delivery to it can exist.
 * It reads them through the store's methods (`version`, `snapshot`, `subscribeChanges`), never
 * its keys.
 * The config file wins a name clash (the stored object is skipped, with a warning). Deleted
 * subscriptions are tombstones for 7 days: `owedClosings()` names them, and the router sends
 * them the closings of the openings they were told, nothing else. So are the config file's
 * subscriptions a reload removed (`configChanged`): owed here at once, and everywhere once their
 * tombstones are stored (`ApiStore.buryConfigSubscriptions`).
 */
import type { Logger } from 'pino';
import { toError, errorCode } from '../errors.js';
import type { ChannelConfig, SubscriptionConfig } from '../config/schema.js';
import { channelConfigSchema, subscriptionSchema } from './model.js';
import type { SecretBox } from './crypto.js';
import { startKeeper } from '../queues.js';
import type { RedisRefusals } from '../redis/refusals.js';
import { openChannel, type ApiStore, type ConfigView, type Snapshot } from './store.js';

export interface ApiRuntimeOptions {
  /** The API's store: its version counter, its stored objects and its change notifications. */
  store: Pick<ApiStore, 'version' | 'snapshot' | 'subscribeChanges'>;
  config: () => ConfigView;
  box: SecretBox | null;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Called with every channel (config, stored, tombstones) whenever the set changed. */
  onChannels?: (channels: Record<string, ChannelConfig>) => void;
  now?: () => number;
  /** Fallback poll of the version counter. Default 5 s. */
  pollMs?: number;
  /** The Redis connection's refusal model: a refused refresh is counted there, not logged per try. */
  refusals?: Pick<RedisRefusals, 'note'>;
}

const EMPTY: Snapshot = {
  channels: new Map(),
  subscriptions: new Map(),
  subscriptionTombstones: new Map(),
  channelTombstones: new Map(),
  bytes: {
    channels: new Map(),
    subscriptions: new Map(),
    subscriptionTombstones: new Map(),
    channelTombstones: new Map(),
  },
};

export class ApiRuntime {
  private version: string | null = null;
  private snap: Snapshot = EMPTY;
  private merged: SubscriptionConfig[] = [];
  private owed: ReadonlySet<string> = new Set();
  /**
   * Config-file subscriptions a reload removed → until when they are owed closings, until their
   * stored tombstones are read (or if they could not be stored).
   */
  private readonly removed = new Map<string, number>();
  private channelsText = '';
  private refreshing: Promise<void> | null = null;
  private again = false;
  private changes: { close: () => Promise<void> } | null = null;
  private stopTimer: (() => void) | null = null;
  private readonly now: () => number;
  /** Names already warned about (a warning per problem, not per refresh). */
  private readonly warned = new Set<string>();

  constructor(private readonly o: ApiRuntimeOptions) {
    this.now = o.now ?? Date.now;
    this.rebuild();
  }

  /** Loads the stored objects, then follows changes (pub/sub and a fallback poll). */
  async start(): Promise<void> {
    await this.refresh();
    const changes = this.o.store.subscribeChanges(() => {
      void this.refresh().catch(() => undefined);
    });
    this.changes = changes;
    await changes.subscribed.catch((err: unknown) => {
      this.o.log.warn(
        { event: 'api:subscribe_failed', err: toError(err).message },
        'no change notifications; polling the API version instead',
      );
    });
    this.stopTimer = startKeeper(this.o.pollMs ?? 5_000, () => this.refresh(), this.o.log, {
      event: 'api:refresh_failed',
      message: 'could not read stored subscriptions and channels',
      ...(this.o.refusals === undefined ? {} : { refusals: this.o.refusals }),
    });
  }

  async stop(): Promise<void> {
    this.stopTimer?.();
    this.stopTimer = null;
    const changes = this.changes;
    this.changes = null;
    await changes?.close();
  }

  /**
   * Brings the merged lists up to date: one GET, and the stored objects only when the version
   * moved. Concurrent callers share one read; a call during a read waits for one more.
   */
  async refresh(): Promise<void> {
    if (this.refreshing !== null) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        const version = await this.o.store.version();
        if (version === this.version) continue;
        // Read after the version: a write in between bumps it again, and the next refresh reloads.
        this.snap = await this.o.store.snapshot();
        this.version = version;
        this.rebuild();
      } while (this.rerun());
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private rerun(): boolean {
    return this.again;
  }

  /**
   * The config file changed (a reload): merge again with what is stored. `removed` names the
   * subscriptions the file no longer has: those not live again through the API are owed their
   * closings until `until`, at once (their tombstones are still to be stored), and returned.
   */
  configChanged(removed: readonly string[] = [], until = 0): string[] {
    this.rebuild();
    const live = new Set(this.merged.map((s) => s.name));
    const owed = removed.filter((name) => !live.has(name));
    for (const name of owed) this.removed.set(name, Math.max(until, this.removed.get(name) ?? 0));
    if (owed.length > 0) this.owed = this.owedNow();
    return owed;
  }

  /** Every live subscription: the config file's, then the stored ones by name. */
  subscriptions(): readonly SubscriptionConfig[] {
    return this.merged;
  }

  /**
   * Deleted subscriptions still owed closings (also when one of the same name exists again: the
   * router adds only the routes the live one does not take).
   */
  owedClosings(): ReadonlySet<string> {
    return this.owed;
  }

  /** Categories of every live subscription. */
  categories(): string[] {
    return [...new Set(this.merged.flatMap((s) => s.categories))];
  }

  private warnOnce(key: string, fields: Record<string, unknown>, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.o.log.warn(fields, message);
  }

  /** Stored tombstones in force, and removed config-file subscriptions not yet among them. */
  private owedNow(): Set<string> {
    const now = this.now();
    const owed = new Set<string>();
    for (const t of this.snap.subscriptionTombstones.values()) if (t.until > now) owed.add(t.name);
    for (const [name, until] of this.removed) {
      const stored = this.snap.subscriptionTombstones.get(name);
      if (until <= now || (stored !== undefined && stored.until >= until))
        this.removed.delete(name);
      else owed.add(name);
    }
    return owed;
  }

  private rebuild(): void {
    const config = this.o.config();
    const now = this.now();
    const configSubs = new Set(config.subscriptions.map((s) => s.name));
    const merged: SubscriptionConfig[] = [...config.subscriptions];
    for (const stored of [...this.snap.subscriptions.values()].sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (configSubs.has(stored.name)) {
        this.warnOnce(
          `sub-clash:${stored.name}`,
          { event: 'api:shadowed', subscription: stored.name },
          `stored subscription ${stored.name} is shadowed by the config file's`,
        );
        continue;
      }
      const parsed = subscriptionSchema.safeParse(stored.spec);
      if (!parsed.success) {
        this.warnOnce(
          `sub-bad:${stored.name}:${stored.updatedAt}`,
          { event: 'api:unreadable', subscription: stored.name },
          `stored subscription ${stored.name} no longer validates; skipped`,
        );
        continue;
      }
      merged.push(parsed.data);
    }
    this.merged = merged;
    this.owed = this.owedNow();

    const channels: Record<string, ChannelConfig> = { ...config.channels };
    const open = (c: Parameters<typeof openChannel>[0], kind: string): void => {
      if (Object.hasOwn(channels, c.name)) return;
      try {
        const parsed = channelConfigSchema.safeParse(openChannel(c, this.o.box));
        if (parsed.success) channels[c.name] = parsed.data;
        else
          this.warnOnce(
            `chan-bad:${c.name}:${c.updatedAt}`,
            { event: 'api:unreadable', channel: c.name },
            `stored ${kind} ${c.name} no longer validates; skipped`,
          );
      } catch (caught) {
        // Never the value: only which channel and why (no key, unknown key, tampered).
        this.warnOnce(
          `chan-secret:${c.name}:${c.updatedAt}:${errorCode(caught)}`,
          {
            event: 'api:secret_unreadable',
            channel: c.name,
            code: errorCode(caught),
            err: toError(caught).message,
          },
          `the secrets of stored ${kind} ${c.name} cannot be opened; it is skipped`,
        );
      }
    };
    for (const c of [...this.snap.channels.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      if (Object.hasOwn(config.channels, c.name)) {
        this.warnOnce(
          `chan-clash:${c.name}`,
          { event: 'api:shadowed', channel: c.name },
          `stored channel ${c.name} is shadowed by the config file's`,
        );
        continue;
      }
      open(c, 'channel');
    }
    for (const c of this.snap.channelTombstones.values())
      if (c.until > now) open(c, 'deleted channel');
    // Compared by content: secrets stay in memory only as they are in the registry anyway.
    const text = JSON.stringify(Object.entries(channels).sort(([a], [b]) => a.localeCompare(b)));
    if (text !== this.channelsText) {
      const first = this.channelsText === '';
      this.channelsText = text;
      if (!first || this.snap !== EMPTY) this.o.onChannels?.(channels);
    }
    if (this.snap !== EMPTY) {
      this.o.log.info(
        {
          event: 'api:loaded',
          version: this.version,
          subscriptions: merged.length,
          channels: Object.keys(channels).length,
          owedClosings: this.owed.size,
        },
        'stored subscriptions and channels in force',
      );
    }
  }
}
