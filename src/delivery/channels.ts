import type { ChannelConfig, ChannelType } from '../config/schema.js';
import { ownValue } from '../config/fields.js';
import { kindOf } from '../notify/kinds.js';
import { createNotifier, type NotifierDeps } from '../notify/registry.js';
import type { Notifier } from '../notify/types.js';
import type { Pacing } from './pacer.js';

export interface Channel {
  name: string;
  type: ChannelType;
  notifier: Notifier;
  /** Deliveries to the same destination are spaced this far apart across replicas; null: unpaced. */
  pacing: Pacing | null;
}

/**
 * The configured channels and their notifiers, created lazily and replaced as a whole on a config
 * reload (old notifiers are closed once in-flight sends finish).
 */
export class ChannelRegistry {
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly configs: Readonly<Record<string, ChannelConfig>>,
    /** What a channel's notifier is given (per name: the egress policy depends on where it is defined). */
    private readonly deps: NotifierDeps | ((name: string) => NotifierDeps) = {},
    private readonly factory: (
      config: ChannelConfig,
      deps: NotifierDeps,
    ) => Notifier = createNotifier,
  ) {}

  names(): string[] {
    return Object.keys(this.configs);
  }

  /** Every channel's config, by name (the Slack buttons' handler finds the app channels here). */
  all(): Readonly<Record<string, ChannelConfig>> {
    return this.configs;
  }

  get(name: string): Channel | undefined {
    let channel = this.channels.get(name);
    if (channel === undefined) {
      const config = ownValue(this.configs, name);
      if (config === undefined) return undefined;
      channel = {
        name,
        type: config.type,
        notifier: this.factory(
          config,
          typeof this.deps === 'function' ? this.deps(name) : this.deps,
        ),
        pacing: kindOf(config).pacing?.(config) ?? null,
      };
      this.channels.set(name, channel);
    }
    return channel;
  }

  async close(): Promise<void> {
    const all = [...this.channels.values()];
    this.channels.clear();
    await Promise.allSettled(all.map((c) => c.notifier.close()));
  }
}
