/**
 * The one list of channel kinds. The config union, `CHANNEL_TYPES`, redaction of config output and
 * logs, `render`, `check-config`, `notify-test` and the Helm values schema all derive from it:
 * adding a kind is a folder under `src/notify/` with a `defineChannelKind(...)` and one line here.
 */
import type { z } from 'zod';
import { emailKind } from './email/index.js';
import { opsgenieKind } from './opsgenie/index.js';
import { pagerdutyKind } from './pagerduty/index.js';
import type { ChannelKind } from './kind.js';
import { slackKind } from './slack/index.js';
import { teamsKind } from './teams/index.js';
import { webhookKind } from './webhook/index.js';

export const channelKinds = {
  slack: slackKind,
  email: emailKind,
  webhook: webhookKind,
  teams: teamsKind,
  pagerduty: pagerdutyKind,
  opsgenie: opsgenieKind,
} as const;

type Kinds = typeof channelKinds;
export type ChannelType = keyof Kinds;
/** A parsed channel config of any kind (the `channels:` map's values). */
export type ChannelConfig = { [K in ChannelType]: z.output<Kinds[K]['schema']> }[ChannelType];
/** A channel config as written (before defaults and transforms). */
export type ChannelConfigInput = { [K in ChannelType]: z.input<Kinds[K]['schema']> }[ChannelType];
export type ChannelConfigOf<K extends ChannelType> = Extract<ChannelConfig, { type: K }>;

export const CHANNEL_TYPES = Object.keys(channelKinds) as ChannelType[];

/** Every kind, as the general interface (for code that treats all kinds alike). */
export const channelKindList: readonly ChannelKind[] = Object.values(channelKinds);

/** The kind definition of a parsed channel config. */
export function kindOf<K extends ChannelType>(config: ChannelConfigOf<K>): ChannelKind {
  return channelKinds[config.type];
}

/** The channel's secrets in every form they may take in a text. */
export function channelSecrets(config: ChannelConfig): string[] {
  return kindOf(config).secrets(config);
}

/** A copy of the channel config safe to print. */
export function redactChannel(config: ChannelConfig): ChannelConfig {
  return kindOf(config).redact(config) as ChannelConfig;
}
