/**
 * Acknowledging an episode through the API, the console and the Slack buttons (one service):
 * the tenancy rules (a team acts on its own stored subscriptions only, the admin on all), the
 * ack itself (`NoiseStore.acknowledge`: only an open, told episode; bounded by the told ledger)
 * the audit entry (kind `ack`, action `acknowledge`) and, for the API and the console, the
 * `ack:created` log line. Docs: docs/acting-on-alerts.md.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import type { SubscriptionConfig } from '../config/schema.js';
import { lifecycleKey } from '../noise/policy.js';
import type { NoiseStore } from '../noise/store.js';
import { ACK_VIA, type Ack, type AckVia } from '../noise/acks.js';
import { ApiError, invalid, issuesOf, notFound } from './errors.js';
import type { ApiStore } from './store.js';
import type { Actor } from './tokens.js';

/** The body of `POST /api/v1/subscriptions/{name}/acks`: which episode. */
export const ackRequestSchema = z.strictObject({
  /** The service's feedId. */
  service: z.string().min(1).max(256),
  /** What in the service: `incident:<id>`, `status`, `sla`, `upstream:<endpoint>`. */
  subject: z.string().min(1).max(300),
});

/** An ack as the API answers it (the stored record, times as ISO 8601). */
export const ackViewSchema = z.object({
  subscription: z.string(),
  service: z.string(),
  subject: z.string(),
  by: z.string(),
  name: z.string().nullable(),
  via: z.enum(ACK_VIA),
  at: z.string(),
  expiresAt: z.string(),
  /** False when the episode was acknowledged already (the first acknowledger is kept). */
  created: z.boolean(),
});

export type AckView = z.output<typeof ackViewSchema>;

export function ackView(ack: Ack, created: boolean): AckView {
  const split = ack.lifecycle.indexOf('|');
  return {
    subscription: ack.subscription,
    service: ack.lifecycle.slice(0, split),
    subject: ack.lifecycle.slice(split + 1),
    by: ack.by,
    name: ack.name,
    via: ack.via,
    at: new Date(ack.at).toISOString(),
    expiresAt: new Date(ack.expiresAt).toISOString(),
    created,
  };
}

export interface AckServiceOptions {
  noise: NoiseStore;
  store: ApiStore;
  /** Every live subscription (config file and API). */
  subscriptions: () => readonly SubscriptionConfig[];
  now: () => number;
  /** Where `acknowledgeAs` writes its `ack:created` line. */
  log: Pick<Logger, 'info'>;
}

export class AckService {
  constructor(private readonly o: AckServiceOptions) {}

  /** The team owning a stored subscription; null for the config file's. */
  async teamOf(subscription: string): Promise<string | null> {
    return (await this.o.store.snapshot()).subscriptions.get(subscription)?.team ?? null;
  }

  /**
   * Acknowledges for an API or console actor: the subscription must be one the actor may see
   * (a team's own; the admin's any), else 404 as for any other team's object. Logs
   * `ack:created` (with `tokenId` through the API, `viewer` from the console).
   */
  async acknowledgeAs(
    actor: Actor,
    subscription: string,
    body: unknown,
    via: Exclude<AckVia, 'slack'>,
  ): Promise<AckView> {
    const parsed = ackRequestSchema.safeParse(body);
    if (!parsed.success) throw invalid(issuesOf(parsed.error));
    // Tenancy: the API store's own rule (a team sees its stored subscriptions only).
    await this.o.store.getSubscription(actor, subscription);
    const sub = this.o.subscriptions().find((s) => s.name === subscription);
    if (sub === undefined) throw notFound('subscription', subscription);
    const by = via === 'api' ? `token:${actor.tokenId}` : `console:${actor.team ?? 'admin'}`;
    const result = await this.record(actor, sub, parsed.data.service, parsed.data.subject, {
      by,
      name: actor.team,
      via,
    });
    if (result === null) {
      throw new ApiError(
        409,
        'not_open',
        `nothing open to acknowledge: ${parsed.data.service} ${parsed.data.subject} is not an open, notified episode of subscription ${subscription}`,
        'subject',
      );
    }
    this.o.log.info(
      {
        event: 'ack:created',
        subscription: result.subscription,
        service: result.service,
        subject: result.subject,
        created: result.created,
        ...(via === 'api' ? { tokenId: actor.tokenId } : { viewer: actor.tokenId }),
      },
      via === 'api'
        ? 'episode acknowledged through the API'
        : 'episode acknowledged from the console',
    );
    return result;
  }

  /**
   * Acknowledges the episode for `sub` (all its channels) and audits it. The caller checked who
   * may act. Null when the episode is not open and told for the subscription.
   */
  async record(
    actor: Actor,
    sub: Pick<SubscriptionConfig, 'name' | 'channels'>,
    feedId: string,
    subject: string,
    who: { by: string; name: string | null; via: AckVia },
  ): Promise<AckView | null> {
    const lifecycle = lifecycleKey({ feedId, subject });
    const result = await this.o.noise.acknowledge(
      { subscription: sub.name, channels: sub.channels, lifecycle, ...who },
      this.o.now(),
    );
    if (result === null) return null;
    if (result.created) {
      await this.o.store.recordChange(actor, {
        action: 'acknowledge',
        kind: 'ack',
        name: `${sub.name}/${lifecycle}`,
        team: (await this.teamOf(sub.name)) ?? '*',
        diff: [
          { field: 'by', to: who.by },
          ...(who.name === null ? [] : [{ field: 'name', to: who.name }]),
          { field: 'via', to: who.via },
          { field: 'openings', to: result.ack.openings },
        ],
      });
    }
    return ackView(result.ack, result.created);
  }
}
