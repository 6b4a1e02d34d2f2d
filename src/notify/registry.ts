/**
 * Channel type → notifier factory. Adding a channel kind = a new `src/notify/<kind>/` folder
 * (config.ts, render.ts, index.ts) and one line here; `satisfies` makes a missing kind a compile
 * error.
 */
import type { Dispatcher } from 'undici';
import type { ChannelConfig, ChannelType } from '../config/schema.js';
import { createEmailNotifier } from './email/index.js';
import { createSlackNotifier } from './slack/index.js';
import type { Notifier } from './types.js';
import { createWebhookNotifier } from './webhook/index.js';

/** Shared, optional dependencies; each kind takes what it uses. */
export interface NotifierDeps {
  /** HTTP dispatcher for HTTP-based kinds (tests, proxies). */
  dispatcher?: Dispatcher;
}

export type ChannelConfigOf<K extends ChannelType> = Extract<ChannelConfig, { type: K }>;

export interface NotifierModule<C extends ChannelConfig = ChannelConfig> {
  create(config: C, deps?: NotifierDeps): Notifier;
}

/** `Record<ChannelType, NotifierModule>`, with each kind's factory taking its own config type. */
type NotifierModules = { [K in ChannelType]: NotifierModule<ChannelConfigOf<K>> };

export const notifierModules = {
  slack: { create: (config, deps) => createSlackNotifier(config, deps) },
  email: { create: (config) => createEmailNotifier(config) },
  webhook: { create: (config, deps) => createWebhookNotifier(config, deps) },
} satisfies NotifierModules;

function moduleFor<K extends ChannelType>(type: K): NotifierModule<ChannelConfigOf<K>> {
  const modules: NotifierModules = notifierModules;
  return modules[type];
}

/** The notifier for one zod-parsed channel config. */
export function createNotifier(config: ChannelConfig, deps: NotifierDeps = {}): Notifier {
  return moduleFor<ChannelType>(config.type).create(config, deps);
}
