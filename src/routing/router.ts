import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { toError } from '../errors.js';
import type { Keys } from '../redis.js';
import type { Transition } from '../diff/transition.js';
import { TRANSITIONS_QUEUE } from '../pipeline/handoff.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import type { Notification } from '../notify/types.js';
import type { CategoryStore } from './categories.js';
import { deliveryId, route, type RoutableSubscription } from './match.js';

export interface RouterOptions {
  connection: Redis;
  keys: Keys;
  subscriptions: () => readonly RoutableSubscription[];
  categories: CategoryStore;
  deliveries: DeliveryQueue;
  log: Logger;
  now?: () => number;
  concurrency?: number;
}

/** Routing: turns one transition into one delivery job per (subscription, channel). */
export class Router {
  private worker: Worker<Transition> | null = null;
  private readonly now: () => number;

  constructor(private readonly options: RouterOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The notifications a transition becomes under the current subscriptions (no I/O beyond category sets). */
  async plan(t: Transition): Promise<Notification[]> {
    const subs = this.options.subscriptions();
    const slugs = [...new Set(subs.flatMap((s) => s.categories ?? []))];
    await this.options.categories.load(slugs);
    const createdAt = this.now();
    return route(t, subs, (slug, feedId) => this.options.categories.has(slug, feedId)).map((r) => ({
      id: deliveryId(t.id, r.subscription, r.channel),
      type: 'event' as const,
      subscription: r.subscription,
      channel: r.channel,
      transitions: [t],
      createdAt,
    }));
  }

  start(): void {
    this.worker = new Worker<Transition>(TRANSITIONS_QUEUE, (job) => this.process(job), {
      connection: this.options.connection,
      prefix: this.options.keys.tag,
      concurrency: this.options.concurrency ?? 8,
    });
    this.worker.on('error', (err) => {
      this.options.log.error(
        { event: 'worker:error', queue: TRANSITIONS_QUEUE, err: toError(err).message },
        'router worker error',
      );
    });
  }

  private async process(job: Job<Transition>): Promise<number> {
    const notifications = await this.plan(job.data);
    await this.options.deliveries.enqueue(notifications);
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
