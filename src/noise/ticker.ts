import type { Queue, Worker } from 'bullmq';
import type { PollKind } from '../pipeline/cycle.js';
import type { EventKind } from '../config/events.js';
import type { Logger } from 'pino';
import { DateTime } from 'luxon';
import { errorCode } from '../errors.js';
import type { Keys, RedisClient } from '../redis.js';
import type { SubscriptionConfig } from '../config/schema.js';
import { transitionId, type Transition } from '../diff/transition.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import type { Notification } from '../notify/types.js';
import { deliveryId, eventNotification } from '../routing/match.js';
import { parseRouteKey } from '../routing/route.js';
import type { NoiseStore, ToldEntry } from './store.js';
import { isExcepted, quietState } from './quiet.js';
import { lifecycleKey, roleOf } from './policy.js';
import { lastFireAt } from './schedule.js';
import { buildDigest } from './digest.js';
import { mergeHeldAndGrouped } from './catchup.js';
import { QUEUES, openQueue, startKeeper, startWorker } from '../queues.js';
import { refusalsOf } from '../redis/refusals.js';
import { silencedBy } from '../silences/match.js';
import type { Silence } from '../silences/model.js';

export const NOISE_QUEUE = QUEUES.noise;

/** A digest period at least this long is a month-end digest. */
const MONTHLY_PERIOD_MS = 27 * 24 * 3600 * 1000;

/** `YYYY-MM` of an instant in a time zone. */
export function monthOf(at: number, timezone: string): string {
  return DateTime.fromMillis(at, { zone: timezone }).toFormat('yyyy-MM');
}

export interface TickReport {
  batches: number;
  catchups: number;
  reminders: number;
  digests: number;
}

export interface NoiseTickerOptions {
  connection: RedisClient;
  keys: Keys;
  store: NoiseStore;
  deliveries: DeliveryQueue;
  subscriptions: () => readonly SubscriptionConfig[];
  /** The silences in force (the silence store's `active()`), read once per tick when needed. */
  silences: () => Promise<Silence[]>;
  premium: () => boolean;
  log: Logger;
  now?: () => number;
  /**
   * Month figures for month-end digests (premium): lines from GET /sla?month= and /scores?month=
   * for the given `YYYY-MM`, about the given services.
   */
  monthly?: (month: string, feedIds: readonly string[]) => Promise<string[]>;
  /** How often the shared tick runs (one tick per interval across replicas). Default 2 s. */
  everyMs?: number;
  /**
   * What the last committed polls saw (any replica). With it, a reminder waits until the poll
   * that would have seen its opening close has run since the reminder fell due, and an incident's
   * reminder waits while that poll did not see the incident (it vanished from the list and waits
   * for its confirming read): after a downtime, nothing is called "still open" before the daemon
   * has looked again and seen it.
   */
  lastLook?: () => Promise<LastLook>;
}

export interface LastLook {
  /** When each poll kind last committed a cycle (Unix ms). */
  polled: ReadonlyMap<PollKind, number>;
  /** The open incidents the last incidents cycle did not see (lifecycle keys). */
  unseen: ReadonlySet<string>;
}

/** The poll kind whose cycles see an opening of this kind close (none: upstream.*). */
function sourcePoll(kind: EventKind): PollKind | null {
  if (kind.startsWith('incident.')) return 'incidents';
  if (kind.startsWith('status.')) return 'status';
  if (kind.startsWith('sla.')) return 'sla';
  if (kind.startsWith('score.')) return 'scores';
  return null;
}

/** What one tick owes: notifications, and the state writes to apply once they are enqueued. */
interface TickPlan {
  out: Notification[];
  drains: (() => Promise<void>)[];
  reminded: [string, ToldEntry, ToldEntry][];
  /** Reminder notification id → the told field it reminds of. */
  reminderOf: Map<string, string>;
  /** Transitions this tick's catch-ups carry, by route (`caughtUpKey`). */
  caughtUp: Set<string>;
  digestMarkers: [string, number][];
  report: TickReport;
}

function caughtUpKey(subscription: string, channel: string, transitionId: string): string {
  return `${subscription}\u0000${channel}\u0000${transitionId}`;
}

function splitRoute(key: string): [string, string] {
  const route = parseRouteKey(key);
  return route === null ? [key, ''] : [route.subscription, route.channel];
}

function uniqueById(items: readonly Transition[]): Transition[] {
  const seen = new Set<string>();
  return items.filter((t) => (seen.has(t.id) ? false : (seen.add(t.id), true)));
}

/**
 * The delivery id of a grouped, reminder or digest notification: derived from its content, so a
 * re-run of a tick adds nothing.
 */
function groupedDeliveryId(
  tag: string,
  parts: readonly (string | number)[],
  subscription: string,
  channel: string,
): string {
  return deliveryId(transitionId([tag, ...parts]), subscription, channel);
}

/**
 * The periodic half of noise control, one tick at a time across replicas (a BullMQ job
 * scheduler with a single shared job): flushes groups whose window has passed, sends the
 * catch-up of quiet hours that ended, reminders for what is still open, and due digests.
 */
export class NoiseTicker {
  readonly queue: Queue;
  private worker: Worker | null = null;
  private stopKeeper: (() => void) | null = null;
  private readonly now: () => number;

  constructor(private readonly o: NoiseTickerOptions) {
    this.now = o.now ?? Date.now;
    this.queue = openQueue('noise', o, {
      defaultJobOptions: {
        removeOnComplete: { count: 50 },
        removeOnFail: { count: 50 },
        attempts: 1,
      },
    });
  }

  private sub(name: string): SubscriptionConfig | undefined {
    return this.o.subscriptions().find((s) => s.name === name);
  }

  /**
   * One tick: each step adds the notifications it owes and the state writes that say they were
   * made; the notifications are enqueued first (idempotent by id), then the writes are applied.
   */
  async tick(): Promise<TickReport> {
    const now = this.now();
    const plan: TickPlan = {
      out: [],
      drains: [],
      reminded: [],
      reminderOf: new Map(),
      caughtUp: new Set(),
      digestMarkers: [],
      report: { batches: 0, catchups: 0, reminders: 0, digests: 0 },
    };
    const groups = await this.o.store.groupsSince();
    const due = await this.catchupsDue(now);
    await this.flushGroups(now, plan, groups, due);
    await this.sendCatchups(now, plan, groups, due);
    // Reminders and digests read the whole ledger of told openings; without a subscription
    // that asks for either, a tick does not read it (thousands of open incidents stay cheap).
    if (this.o.subscriptions().some((s) => s.repeat !== undefined || s.digest !== undefined)) {
      const told = await this.o.store.allTold();
      await this.remind(now, told, plan);
      await this.sendDigests(now, told, plan);
    }
    await this.apply(now, plan);
    return plan.report;
  }

  /** Routes whose quiet hours are over and whose catch-up is still to go out. */
  private async catchupsDue(now: number): Promise<Set<string>> {
    const due = new Set<string>();
    for (const [route] of await this.o.store.heldUntil()) {
      const [subscription] = splitRoute(route);
      const quiet = this.sub(subscription)?.quietHours;
      if (quiet !== undefined && quietState(quiet, now).quiet) continue;
      due.add(route);
    }
    return due;
  }

  /**
   * Groups whose window has passed become one batch (or the single event) per route; a route
   * whose catch-up goes out in this tick sends its group with it (`sendCatchups`).
   */
  private async flushGroups(
    now: number,
    plan: TickPlan,
    groups: ReadonlyMap<string, number>,
    due: ReadonlySet<string>,
  ): Promise<void> {
    for (const [route, since] of groups) {
      if (due.has(route)) continue;
      const [subscription, channel] = splitRoute(route);
      const window = this.sub(subscription)?.group ?? 0;
      if (now < since + window) continue;
      const items = uniqueById(await this.o.store.claim('group', route));
      plan.drains.push(() => this.o.store.finish('group', route, now));
      if (items.length === 0) continue;
      const first = items[0];
      if (items.length === 1 && first !== undefined) {
        plan.out.push(eventNotification(first, { subscription, channel }, now));
      } else {
        plan.out.push({
          id: groupedDeliveryId(
            'batch',
            items.map((t) => t.id),
            subscription,
            channel,
          ),
          type: 'batch',
          subscription,
          channel,
          transitions: items,
          title: `${items.length} changes for ${subscription}`,
          createdAt: now,
        });
      }
      plan.report.batches += 1;
    }
  }

  /**
   * Routes whose quiet hours ended get one catch-up with what was held, and with what their
   * group buffer holds, in the order observed (`mergeHeldAndGrouped`): an excepted opening
   * grouped in the night goes before its held closing.
   */
  private async sendCatchups(
    now: number,
    plan: TickPlan,
    groups: ReadonlyMap<string, number>,
    due: ReadonlySet<string>,
  ): Promise<void> {
    for (const route of due) {
      const [subscription, channel] = splitRoute(route);
      const positioned = await this.o.store.claimPositions('held', route);
      const claimed = uniqueById(positioned.map((c) => c.t));
      const grouped = groups.has(route) ? uniqueById(await this.o.store.claim('group', route)) : [];
      const items = mergeHeldAndGrouped(await this.fresh(route, positioned, claimed), grouped);
      for (const t of items) plan.caughtUp.add(caughtUpKey(subscription, channel, t.id));
      if (items.length > 0) {
        plan.out.push({
          // Of what was claimed: a re-run after a crash gets the same id (no second catch-up).
          id: groupedDeliveryId(
            'catchup',
            [...claimed, ...grouped].map((t) => t.id),
            subscription,
            channel,
          ),
          type: 'catchup',
          subscription,
          channel,
          transitions: items,
          title: `Quiet hours ended: ${items.length} notification${items.length === 1 ? '' : 's'} held`,
          createdAt: now,
        });
        plan.report.catchups += 1;
      }
      // Both claims end together: a re-run finds both or neither (the same catch-up id).
      plan.drains.push(() =>
        groups.has(route)
          ? this.o.store.finishHeldAndGroup(route, now)
          : this.o.store.finish('held', route, now),
      );
    }
  }

  /**
   * What a catch-up still carries of the held transitions (`claimed`, each id once): not the
   * openings and updates of a lifecycle whose closing went out through the quiet hours after
   * they were held (an excepted kind): by position in the held list and, as well, by observedAt
   * (so neither a late-routed closing nor a lagging clock alone leaves a live alert out). The
   * team heard its end; an update after it would read as news, and for PagerDuty a trigger after
   * the resolve opens a new incident that nothing resolves.
   */
  private async fresh(
    route: string,
    positioned: readonly { t: Transition; position: number }[],
    claimed: readonly Transition[],
  ): Promise<Transition[]> {
    if (claimed.length === 0) return [];
    const marks = await this.o.store.claimedHeldMarks(route);
    if (marks.size === 0) return [...claimed];
    const stale = new Set<string>();
    for (const { t, position } of positioned) {
      const mark = marks.get(lifecycleKey(t));
      // Held before the closing *and* observed no later than it: a reopening held meanwhile (its
      // closing's routing retried late) or seen later by a replica whose clock lags is kept.
      if (
        mark !== undefined &&
        position < mark.held &&
        t.observedAt <= mark.at &&
        roleOf(t) !== 'closing'
      )
        stale.add(t.id);
    }
    const kept = claimed.filter((t) => !stale.has(t.id));
    if (stale.size > 0) {
      const [subscription, channel] = splitRoute(route);
      this.o.log.info(
        {
          event: 'quiet:stale_left_out',
          subscription,
          channel,
          count: claimed.length - kept.length,
          transitionIds: [...stale],
        },
        `${String(claimed.length - kept.length)} held notification(s) for ${subscription}/${channel} left out of the catch-up: their resolution went out during quiet hours`,
      );
    }
    return kept;
  }

  /** Openings still open past their subscription's `repeat` get a reminder (not when silenced or quiet). */
  private async remind(
    now: number,
    told: ReadonlyMap<string, ToldEntry>,
    plan: TickPlan,
  ): Promise<void> {
    let silences: Silence[] | undefined;
    let look: LastLook | undefined;
    let acked: Map<string, unknown> | undefined;
    for (const [field, entry] of told) {
      const sub = this.sub(entry.subscription);
      if (sub?.repeat === undefined) continue;
      const t = entry.opening;
      // Held in quiet hours and sent in this tick's catch-up: that was its news; the next
      // reminder counts from now.
      if (plan.caughtUp.has(caughtUpKey(entry.subscription, entry.channel, t.id))) {
        plan.reminded.push([field, entry, { ...entry, lastSentAt: now }]);
        continue;
      }
      const due = entry.lastSentAt + sub.repeat;
      if (now < due) continue;
      const source = sourcePoll(t.kind);
      if (this.o.lastLook !== undefined && source !== null) {
        look ??= await this.o.lastLook();
        // Not looked at since it fell due (a downtime, a restart): the next tick after that poll.
        if ((look.polled.get(source) ?? 0) < due) continue;
        // Looked at, but not seen: it closes once confirmed gone, or is reminded of once seen.
        if (look.unseen.has(lifecycleKey(t))) continue;
      }
      // Acknowledged for its subscription: someone is on it, no more reminders (the closing and
      // updates still go out: they are news).
      acked ??= await this.o.store.acknowledged([...told], now);
      if (acked.has(field)) continue;
      silences ??= await this.o.silences();
      if (
        silencedBy(
          silences,
          {
            feedId: t.feedId,
            kind: t.kind,
            subject: t.subject,
            subscription: sub.name,
            channel: entry.channel,
          },
          now,
        ) !== undefined
      )
        continue;
      if (
        sub.quietHours !== undefined &&
        !isExcepted(sub.quietHours, t.kind) &&
        quietState(sub.quietHours, now).quiet
      )
        continue;
      const n = entry.reminders + 1;
      const id = groupedDeliveryId('reminder', [t.id, n], sub.name, entry.channel);
      plan.reminderOf.set(id, field);
      plan.out.push({
        id,
        type: 'reminder',
        subscription: sub.name,
        channel: entry.channel,
        transitions: [t],
        title: 'Reminder: still open',
        createdAt: now,
      });
      plan.reminded.push([field, entry, { ...entry, lastSentAt: now, reminders: n }]);
      plan.report.reminders += 1;
    }
  }

  /** Subscriptions whose digest schedule fired since the last digest get one per channel. */
  private async sendDigests(
    now: number,
    told: ReadonlyMap<string, ToldEntry>,
    plan: TickPlan,
  ): Promise<void> {
    for (const sub of this.o.subscriptions()) {
      if (sub.digest === undefined) continue;
      const last = lastFireAt(sub.digest, now);
      if (last === null) continue;
      const marker = await this.o.store.digestMarker(sub.name);
      if (marker === null) {
        plan.digestMarkers.push([sub.name, last]); // first sight: the next period is the first digest
        continue;
      }
      if (last <= marker) continue;
      const routed = (await this.o.store.routedLog(marker, last))
        .filter((h) => h.subscriptions.includes(sub.name))
        .map((h) => h.t);
      const mine = [...told].filter(([, e]) => e.subscription === sub.name);
      const acks = await this.o.store.acknowledged(mine, now);
      const acknowledged = new Map<string, string>();
      for (const [field, e] of mine) {
        const ack = acks.get(field);
        if (ack !== undefined) acknowledged.set(e.opening.id, ack.name ?? ack.by);
      }
      const stillOpen = uniqueById(
        [...told.values()]
          // An incident's opening: `incident.opened`, or a reopening (`incident.updated`).
          .filter(
            (e) =>
              e.subscription === sub.name &&
              e.opening.kind.startsWith('incident.') &&
              roleOf(e.opening) === 'opening',
          )
          .map((e) => e.opening),
      );
      const digest = buildDigest({
        subscription: sub.name,
        from: marker,
        to: last,
        transitions: routed,
        stillOpen,
        acknowledged,
        timezone: sub.digest.timezone,
        premium: this.o.premium(),
      });
      const summary = [...digest.summary];
      if (this.o.premium() && this.o.monthly !== undefined && last - marker >= MONTHLY_PERIOD_MS) {
        summary.push(...(await this.monthFigures(sub, sub.digest.timezone, last, routed)));
      }
      for (const channel of sub.channels) {
        plan.out.push({
          id: groupedDeliveryId('digest', [sub.name, last], sub.name, channel),
          type: 'digest',
          subscription: sub.name,
          channel,
          transitions: digest.transitions,
          title: digest.title,
          summary,
          createdAt: now,
        });
      }
      plan.digestMarkers.push([sub.name, last]);
      plan.report.digests += 1;
    }
  }

  /** A month-end digest also carries the upstream's own figures for that month. */
  private async monthFigures(
    sub: SubscriptionConfig,
    timezone: string,
    last: number,
    routed: readonly Transition[],
  ): Promise<string[]> {
    const month = monthOf(last - 24 * 3600 * 1000, timezone);
    const feedIds = [
      ...new Set([...sub.services.filter((f) => f !== '*'), ...routed.map((t) => t.feedId)]),
    ];
    try {
      return (await this.o.monthly?.(month, feedIds)) ?? [];
    } catch (err) {
      return [`Figures for ${month} unavailable (${errorCode(err)})`];
    }
  }

  /**
   * Reminders whose lifecycle closed while the tick was deciding (its told entry is gone or
   * changed since `allTold` read it: the tick also read silences, the last polls and, for a
   * month-end digest, the upstream) are left out, with their ledger updates: "still open"
   * after the closing went out would be wrong. Looked up just before the enqueue.
   */
  private async dropClosedReminders(plan: TickPlan): Promise<void> {
    if (plan.reminderOf.size === 0) return;
    const reminded = new Set(plan.reminderOf.values());
    const looked = plan.reminded.filter(([field]) => reminded.has(field));
    const unchanged = await this.o.store.toldUnchanged(
      looked.map(([field, before]) => [field, before] as [string, ToldEntry]),
    );
    const closed = new Set(looked.filter((_, i) => unchanged[i] !== true).map(([f]) => f));
    if (closed.size === 0) return;
    plan.out = plan.out.filter((n) => !closed.has(plan.reminderOf.get(n.id) ?? ''));
    plan.reminded = plan.reminded.filter(([field]) => !closed.has(field));
    plan.report.reminders -= closed.size;
  }

  /** Deliveries first (idempotent by id), then the state that says they were made. */
  private async apply(now: number, plan: TickPlan): Promise<void> {
    await this.dropClosedReminders(plan);
    // A batch or catch-up ranks in the order of the lifecycles it carries by its `createdAt`:
    // taken on the routing clock, it ranks after what was routed before it and before what is
    // routed after it (say, a closing once the catch-up holding its opening has gone), also
    // across replicas whose clocks differ.
    const ordered = plan.out.filter((n) => n.type === 'batch' || n.type === 'catchup');
    if (ordered.length > 0) {
      const at = await this.o.store.orderTime(now);
      for (const n of ordered) n.createdAt = at;
    }
    await this.o.deliveries.enqueue(plan.out);
    for (const drain of plan.drains) await drain();
    for (const [field, before, after] of plan.reminded)
      await this.o.store.updateTold(field, before, after);
    for (const [name, at] of plan.digestMarkers) await this.o.store.setDigestMarker(name, at);
    if (plan.out.length > 0) {
      this.o.log.info(
        { event: 'noise:tick', ...plan.report, at: now },
        `noise tick: ${plan.out.length} notifications`,
      );
    }
  }

  /** Upserts the shared tick schedule when it is missing (first start, or lost with a flush). */
  private async ensureSchedule(): Promise<void> {
    const every = this.o.everyMs ?? 2000;
    const existing = await this.queue.getJobScheduler('noise-tick');
    if (existing?.every === every) return;
    await this.queue.upsertJobScheduler('noise-tick', { every }, { name: 'tick', data: {} });
  }

  /**
   * One tick at a time across every replica (a flush never races another flush) and the shared
   * schedule: at start, and again when Redis comes back (it may have come back empty).
   */
  async resync(): Promise<void> {
    await this.queue.setGlobalConcurrency(1);
    await this.ensureSchedule();
  }

  async start(): Promise<void> {
    await this.resync();
    this.stopKeeper = startKeeper(30_000, () => this.ensureSchedule(), this.o.log, {
      event: 'schedule:failed',
      message: 'could not sync the noise tick',
      refusals: refusalsOf(this.o.connection),
    });
    this.worker = startWorker(
      'noise',
      async () => {
        await this.tick();
      },
      this.o,
      { concurrency: 1 },
    );
  }

  async stop(): Promise<void> {
    this.stopKeeper?.();
    this.stopKeeper = null;
    if (this.worker !== null) await this.worker.close();
    this.worker = null;
    await this.queue.close();
  }
}
