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
  private readonly notifiers = new Map<string, Notifier>();

  constructor(
    private readonly configs: Readonly<Record<string, ChannelConfig>>,
    private readonly factory: (config: ChannelConfig) => Notifier = createNotifier,
  ) {}

  names(): string[] {
    return Object.keys(this.configs);
  }

  get(name: string): Channel | undefined {
    const config = this.configs[name];
    if (config === undefined) return undefined;
    let notifier = this.notifiers.get(name);
    if (notifier === undefined) {
      notifier = this.factory(config);
      this.notifiers.set(name, notifier);
    }
    return { name, type: config.type, notifier };
  }

  async close(): Promise<void> {
    const all = [...this.notifiers.values()];
    this.notifiers.clear();
    await Promise.allSettled(all.map((n) => n.close()));
  }
}
