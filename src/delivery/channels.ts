import type { ChannelConfig, ChannelType } from '../config/schema.js';
import { createNotifier } from '../notify/registry.js';
import type { Notifier } from '../notify/types.js';

export interface Channel {
  name: string;
  type: ChannelType;
  notifier: Notifier;
}

/**
 * The configured channels and their notifiers, created lazily and replaced as a whole on a config
 * reload (old notifiers are closed once in-flight sends finish).
 */
export class ChannelRegistry {
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly configs: Readonly<Record<string, ChannelConfig>>,
    private readonly factory: (config: ChannelConfig) => Notifier = createNotifier,
  ) {}

  names(): string[] {
    return Object.keys(this.configs);
  }

  get(name: string): Channel | undefined {
    let channel = this.channels.get(name);
    if (channel === undefined) {
      const config = this.configs[name];
      if (config === undefined) return undefined;
      channel = { name, type: config.type, notifier: this.factory(config) };
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
