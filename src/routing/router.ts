import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import type { Keys } from '../redis.js';
import type { Transition } from '../diff/transition.js';
import { TRANSITIONS_QUEUE } from '../pipeline/handoff.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import type { Notification } from '../notify/types.js';
import type { CategoryStore } from './categories.js';
import { eventNotification, route, type RoutableSubscription, type Route } from './match.js';
import type { NoiseStore } from '../noise/store.js';
import { routeKey } from '../noise/store.js';
import type { SilenceCheck } from '../noise/ticker.js';
import { decide, lifecycleKey, roleOf } from '../noise/policy.js';
import { isExcepted, quietState } from '../noise/quiet.js';
import type { SubscriptionConfig } from '../config/schema.js';

type NoisySubscription = Partial<Pick<SubscriptionConfig, 'group' | 'quietHours'>>;

/** Noise control applied to every route: silences, quiet hours, grouping, the told-openings ledger. */
export interface NoiseControl {
  store: NoiseStore;
  silenced: SilenceCheck;
}

export interface RouterOptions {
  connection: Redis;
  keys: Keys;
  subscriptions: () => readonly (RoutableSubscription & NoisySubscription)[];
  /** Without it every route is sent at once (tests of plain routing). */
  noise?: NoiseControl;
  categories: CategoryStore;
  deliveries: DeliveryQueue;
  log: Logger;
  now?: () => number;
}

/** Routing: turns one transition into one delivery job per (subscription, channel). */
export class Router {
  private worker: Worker<Transition> | null = null;
  private readonly now: () => number;

  constructor(private readonly options: RouterOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The routes of a transition under the current subscriptions (no I/O beyond category sets). */
  async routes(t: Transition): Promise<Route[]> {
    const subs = this.options.subscriptions();
    const slugs = [...new Set(subs.flatMap((s) => s.categories ?? []))];
    await this.options.categories.load(slugs);
    return route(t, subs, (slug, feedId) => this.options.categories.has(slug, feedId));
  }

  /** The notifications a transition becomes under the current subscriptions (no I/O beyond category sets). */
  async plan(t: Transition): Promise<Notification[]> {
    const createdAt = this.now();
    return (await this.routes(t)).map((r) => eventNotification(t, r, createdAt));
  }

  /**
   * Routing runs one transition at a time across all replicas (BullMQ global concurrency 1), in
   * enqueue order: an opening is always admitted before its closing, so the told-openings ledger
   * the closing consults is never raced.
   */
  async start(): Promise<void> {
    const queue = new Queue(TRANSITIONS_QUEUE, {
      connection: this.options.connection,
      prefix: this.options.keys.tag,
    });
    try {
      await queue.setGlobalConcurrency(1);
    } finally {
      await queue.close();
    }
    this.worker = new Worker<Transition>(TRANSITIONS_QUEUE, (job) => this.process(job), {
      connection: this.options.connection,
      prefix: this.options.keys.tag,
      concurrency: 1,
    });
    this.worker.on('error', (err) => {
      this.options.log.error(
        { event: 'worker:error', queue: TRANSITIONS_QUEUE, err: toError(err).message },
        'router worker error',
      );
    });
  }

  /**
   * Applies noise control to each route of a transition: send now, batch into the route's group,
   * hold for the quiet-hours catch-up, or drop (silenced, or the closing of a silenced opening).
   * Every step is idempotent, so a retried routing job changes nothing twice (buffers are
   * deduplicated by transition id when flushed).
   */
  private async admit(
    t: Transition,
    noise: NoiseControl,
  ): Promise<{ notifications: Notification[]; ledger: (() => Promise<void>)[] }> {
    const now = this.now();
    const subs = new Map(this.options.subscriptions().map((s) => [s.name, s]));
    const out: Notification[] = [];
    const ledger: (() => Promise<void>)[] = [];
    const routes = await this.routes(t);
    const key = lifecycleKey(t);
    for (const r of routes) {
      const sub = subs.get(r.subscription);
      const { told, suppressed } = await noise.store.lookup(
        routeKey(r.subscription, r.channel),
        key,
      );
      const silenced = await noise.silenced(
        { feedId: t.feedId, kind: t.kind, subscription: r.subscription, channel: r.channel },
        now,
      );
      let quietUntil: number | null = null;
      if (sub?.quietHours !== undefined && !isExcepted(sub.quietHours, t.kind)) {
        const q = quietState(sub.quietHours, now);
        if (q.quiet) quietUntil = q.endsAt ?? now + 24 * 3600 * 1000;
      }
      const d = decide({
        transition: t,
        silenced,
        told: told !== null,
        suppressed,
        quietUntil,
        grouped: sub?.group !== undefined,
      });
      const rk = routeKey(r.subscription, r.channel);
      switch (d.route.action) {
        case 'send':
          out.push(eventNotification(t, r, now));
          break;
        case 'group':
          await noise.store.addToGroup(rk, t, now);
          break;
        case 'hold':
          await noise.store.hold(rk, t, d.route.until);
          break;
        case 'drop':
          this.options.log.info(
            {
              event: 'delivery:suppressed',
              transitionId: t.id,
              kind: t.kind,
              feedId: t.feedId,
              subscription: r.subscription,
              channel: r.channel,
              reason: d.route.reason,
            },
            `${t.kind} ${t.feedId} not sent to ${r.subscription}/${r.channel}: ${d.route.reason}`,
          );
          break;
      }
      // Ledger writes wait until the deliveries are enqueued: a routing job retried after a
      // crash must still see "told" and so still send a closing under a silence.
      switch (d.ledger) {
        case 'tell':
          ledger.push(() => noise.store.tell(r.subscription, r.channel, key, t, now));
          break;
        case 'suppress':
          ledger.push(() => noise.store.suppress(rk, key, t.id));
          break;
        case 'close':
          break; // below, for every route
        case 'none':
          break;
      }
    }
    // A closing ends the thing for every route that heard of it, routed here or not (a
    // subscription may watch the opening's kind but not the closing's): no endless reminders.
    if (roleOf(t) === 'closing') ledger.push(() => noise.store.closeEverywhere(key));
    if (routes.length > 0) {
      const names = [...new Set(routes.map((r) => r.subscription))];
      ledger.push(() => noise.store.recordHistory(t, names, now));
    }
    return { notifications: out, ledger };
  }

  private async process(job: Job<Transition>): Promise<number> {
    const noise = this.options.noise;
    let notifications: Notification[];
    if (noise === undefined) {
      notifications = await this.plan(job.data);
      await this.options.deliveries.enqueue(notifications);
    } else {
      const admitted = await this.admit(job.data, noise);
      notifications = admitted.notifications;
      await this.options.deliveries.enqueue(notifications);
      for (const write of admitted.ledger) await write();
    }
    this.options.log.debug(
      {
        event: 'transition:routed',
        transitionId: job.data.id,
        kind: job.data.kind,
        feedId: job.data.feedId,
        deliveries: notifications.length,
      },
      `routed ${job.data.kind} ${job.data.feedId} to ${notifications.length} deliveries`,
    );
    return notifications.length;
  }

  async stop(): Promise<void> {
    if (this.worker !== null) await this.worker.close();
    this.worker = null;
  }
}
