/**
 * A channel kind is one definition: its config schema, which of its fields are secrets, how it is
 * described and redacted for `check-config`, what `render` prints, and its notifier. The list of
 * kinds (`kinds.ts`) drives the config union, redaction, the CLI and the Helm values schema, so a
 * new kind is one folder and one line there.
 */
import type { Dispatcher } from 'undici';
import type { EgressPolicy } from '../egress/policy.js';
import type { RedisClient } from '../redis.js';
import type { z } from 'zod';
import type { Notification, Notifier } from './types.js';
import type { NotifierTemplates } from './template.js';

/** Shared, optional dependencies; each kind takes what it uses. */
export interface NotifierDeps {
  /** HTTP dispatcher for HTTP-based kinds (tests, proxies); default: an Agent the notifier owns. */
  dispatcher?: Dispatcher;
  /**
   * The egress policy the notifier's own connections follow (an API-created channel's always);
   * absent: unrestricted (a config-file channel the operator exempts). An injected `dispatcher`
   * is the injector's to guard.
   */
  egress?: EgressPolicy;
  /** Message templates beyond the channel's own: the subscriptions' and the failure log. */
  templates?: NotifierTemplates;
  /** Clock (Retry-After dates, timestamps). */
  now?: () => number;
  /**
   * Redis for kinds that keep state across replicas (Slack app mode's message references).
   * `key(...parts)` builds a key inside the installation's `{prefix}` hash tag.
   */
  state?: { redis: RedisClient; key: (...parts: string[]) => string };
  /**
   * `server.publicUrl`: every notification sent gets its console links (`links.ts`) before it is
   * rendered. Absent: none.
   */
  publicUrl?: string | undefined;
}

/** Where a channel connects: the config field that names it, the host and the port. */
export interface Destination {
  field: string;
  host: string;
  port: number;
}

/** The destination of an http(s) URL field. */
export function urlDestination(field: string, url: string): Destination {
  const parsed = new URL(url);
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return { field, host: parsed.hostname, port };
}

/** A zod object schema whose `type` is a string literal: one member of the channel union. */
export type ChannelSchema = z.ZodObject<{ type: z.ZodLiteral<string> } & z.ZodRawShape>;

export interface ChannelKind<S extends ChannelSchema = ChannelSchema> {
  /** The `type:` value in the config. */
  readonly type: z.output<S>['type'];
  /** The channel's config schema (strict: unknown keys are errors). */
  readonly schema: S;
  /** One line of docs for `check-config` and the Helm schema: what the kind is. */
  readonly title: string;
  /**
   * Paths of secret fields relative to the channel (`webhookUrl`, `smtp.auth.pass`, `headers`),
   * for pino's `redact`.
   */
  readonly secretPaths: readonly string[];
  /** Every secret of this channel, in each form it may take in a text (scrubbed from logs and errors). */
  secrets(config: z.output<S>): string[];
  /** A copy safe to print: secret fields replaced by `[REDACTED]` (or their harmless part). */
  redact(config: z.output<S>): z.output<S>;
  /** What `check-config` prints after `name: ` (no secrets). */
  describe(config: z.output<S>): string;
  /** Exactly what the channel would be sent for `notification`, secrets not printed (`render`). */
  preview(notification: Notification, name: string, config: z.output<S>, now: number): string;
  /**
   * Per-destination pacing: deliveries whose `destination` is equal are spaced at least
   * `intervalMs` apart across all replicas (a Slack channel ~1/s, a Teams workflow ≤ 4/s). The
   * destination string may hold a secret (a routing key): the pacer only stores a hash of it.
   * Absent: no pacing.
   */
  pacing?(config: z.output<S>): { destination: string; intervalMs: number };
  /** Every place the channel connects to, for the egress policy's check when it is stored. */
  destinations(config: z.output<S>): readonly Destination[];
  /** The channel's notifier. Classification and secret scrubbing are applied around it once. */
  create(config: z.output<S>, deps: NotifierDeps): Notifier;
}

/** Keeps the literal types of a kind definition (and checks it against the interface). */
export function defineChannelKind<S extends ChannelSchema>(kind: ChannelKind<S>): ChannelKind<S> {
  return kind;
}
