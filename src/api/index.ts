/**
 * The tenancy API in one object for the App: the stores (channels, subscriptions, tokens, audit),
 * the merged view routing and delivery use (`runtime`), and the `/api/v1` HTTP handler.
 */
import { refusalsOf } from '../redis/refusals.js';
import type { Logger } from 'pino';
import type { ChannelConfig } from '../config/schema.js';
import type { Keys, RedisClient } from '../redis.js';
import type { SilenceStore } from '../silences/store.js';
import { SecretBox } from './crypto.js';
import { ApiHttp } from './http.js';
import { ApiRuntime } from './runtime.js';
import { ServiceSearch } from './services.js';
import { ApiStore, type ConfigView } from './store.js';
import { TokenStore, type Actor } from './tokens.js';
import type { Silence, SilenceDraft } from '../silences/model.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { NoiseStore } from '../noise/store.js';
import { AckService } from './acks.js';

export interface TenancyApiOptions {
  redis: RedisClient;
  keys: Keys;
  log: Logger;
  /** The daemon's silences (`/api/v1/silences`; routing reads the same store). */
  silences: SilenceStore;
  config: () => ConfigView & {
    adminToken?: string | undefined;
    /** The ops server's trusted proxies (`server.console.trustedProxies`). */
    trustedProxies?: readonly string[];
  };
  /** Environment holding STATUSWATCH_SECRET_KEY (and _PREVIOUS); default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  onChannels: (channels: Record<string, ChannelConfig>) => void;
  /**
   * The egress policy of a channel defined in the config file or stored through the API
   * (undefined: unrestricted). Stored channels are checked against it when written and tested.
   */
  egressFor?: (source: 'config' | 'api') => EgressPolicy | undefined;
  budget?: (categories: readonly string[]) => string | null;
  /** Noise state (acknowledgements: `POST /api/v1/subscriptions/{name}/acks`, console, Slack). */
  noise?: NoiseStore;
  now?: () => number;
  pollMs?: number;
}

export class TenancyApi {
  readonly store: ApiStore;
  readonly tokens: TokenStore;
  readonly runtime: ApiRuntime;
  readonly http: ApiHttp;
  /** Acknowledgements (null without the noise state: tests of the API alone). */
  readonly acks: AckService | null;
  private readonly silences: SilenceStore;
  /** `TenancyApiOptions.egressFor` (unrestricted when not given). */
  readonly egressFor: (source: 'config' | 'api') => EgressPolicy | undefined;

  constructor(o: TenancyApiOptions) {
    // A malformed key is a startup error (SecretKeyError), not a silent "no key".
    const box = SecretBox.fromEnv(o.env ?? process.env);
    const now = o.now ?? Date.now;
    this.silences = o.silences;
    this.egressFor = o.egressFor ?? (() => undefined);
    this.store = new ApiStore({
      egress: () => this.egressFor('api'),
      redis: o.redis,
      keys: o.keys,
      config: o.config,
      box,
      log: o.log,
      now,
      ...(o.budget === undefined ? {} : { budget: o.budget }),
    });
    this.tokens = new TokenStore(o.redis, o.keys, this.store.audit, now);
    this.tokens.counted = (check, apply) => this.store.countedWrite(check, apply);
    this.runtime = new ApiRuntime({
      store: this.store,
      config: o.config,
      box,
      log: o.log,
      onChannels: o.onChannels,
      now,
      ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
      refusals: refusalsOf(o.redis),
    });
    this.acks =
      o.noise === undefined
        ? null
        : new AckService({
            noise: o.noise,
            store: this.store,
            subscriptions: () => this.runtime.subscriptions(),
            now,
            log: o.log,
          });
    this.http = new ApiHttp({
      acks: this.acks,
      store: this.store,
      tokens: this.tokens,
      services: new ServiceSearch(o.redis, o.keys),
      silences: o.silences,
      adminToken: () => o.config().adminToken,
      trustedProxies: () => o.config().trustedProxies ?? [],
      egressFor: this.egressFor,
      log: o.log,
      now,
    });
    if (box === null) {
      o.log.info(
        { event: 'api:no_secret_key' },
        'STATUSWATCH_SECRET_KEY is not set: channels with secrets cannot be stored through the API',
      );
    }
  }

  /** Stores a silence through the API's store (quota-checked, audited); routing sees it at once. */
  async createSilence(actor: Actor, draft: SilenceDraft): Promise<Silence> {
    const silence = await this.store.createSilence(actor, draft);
    this.silences.changed();
    return silence;
  }

  start(): Promise<void> {
    return this.runtime.start();
  }

  async stop(): Promise<void> {
    await this.runtime.stop();
    await this.store.close();
  }
}
