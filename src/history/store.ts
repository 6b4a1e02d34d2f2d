/**
 * The history of each watched service, kept compactly in Redis so the console's charts and
 * timelines come from stored data, never from re-polling the upstream. Written once per committed
 * poll cycle (the replica that ran the cycle; `Pipeline`'s `committed` hook), only for services a
 * subscription watches; every key is bounded in time and size:
 *
 * | key | type | contents |
 * |---|---|---|
 * | `hist:status:<feedId>` | sorted set | `<ms>:<status>` per confirmed status change, 90 days, at most 500 |
 * | `hist:status-last` | hash | feedId → the last status recorded (a change is a different one) |
 * | `hist:sla:h:<feedId>`, `hist:sla:d:<feedId>` | sorted set | SLA margin (pp), the last sample of each hour (30 days) and day (90 days) |
 * | `hist:score:h:<feedId>`, `hist:score:d:<feedId>` | sorted set | score, the same resolutions |
 * | `hist:latest:sla`, `hist:latest:score` | hash | feedId → the latest record (margin, target, uptime; score, grade; `at`: the cycle that wrote it) |
 * | `hist:events:<feedId>` | sorted set | every transition of the service (by `observedAt`), 90 days, at most 500 |
 * | `hist:upstream` | hash | poll kind → the last successful cycle (time, rate-limit headers; for incidents, the open incidents it did not see) |
 *
 * Sample members are `<bucket start ms>:<value>` scored by the bucket start, so a later sample in
 * the same bucket replaces the earlier one (ZREMRANGEBYSCORE of the bucket, then ZADD). Every
 * per-service key also expires a day after its retention, so the keys of a service that is no
 * longer watched (and so no longer written) go by themselves.
 *
 * An SLA or scores cycle writes only the services whose sample or latest record differ from what
 * the previous cycle of its kind wrote, when this process wrote that cycle and the cycles share
 * their buckets (`recordSamples`); otherwise every watched service. Rewriting an unchanged sample
 * changes nothing, and so each service is still written at least once an hour (its TTLs renewed,
 * its old samples trimmed), but a latest record's `at` says when it was written, not when it was
 * last seen.
 */
import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { countCorrupt, decode, encode, zodShape } from '../redis/stored.js';
import { scripts, type Scripts } from '../redis/scripts.js';
import { transitionSchema, type Transition } from '../diff/transition.js';
import type { StatusEntry } from '../diff/state.js';
import type { CommittedCycle, PollKind } from '../pipeline/cycle.js';
import type { LastLook } from '../noise/ticker.js';
import { lifecycleKey } from '../noise/policy.js';
import type { ScoreReport, SlaReport } from '../upstream/model.js';
import {
  DAY_MS,
  EVENT_RETENTION_MS,
  MAX_EVENTS_PER_SERVICE,
  MAX_STATUS_CHANGES_PER_SERVICE,
  RESOLUTIONS,
  bucketStart,
  mergeResolutions,
  parseSample,
  parseStatus,
  sampleMember,
  statusMember,
} from './series.js';

export type Series = 'sla' | 'score';

export interface LatestSla {
  margin: number;
  target: number;
  uptime30d: number;
  status: string;
  at: number;
}

export interface LatestScore {
  score: number;
  grade: string | null;
  at: number;
}

export interface UpstreamPoll {
  /** Unix ms of the last successful (committed) cycle. */
  lastOk: number;
  limit: number | null;
  remaining: number | null;
  /** Unix seconds of the rate-limit window's reset. */
  reset: number | null;
  /**
   * Incidents: the open incidents of watched services that cycle did not see
   * (`CommittedCycle.unseen`), as lifecycle keys (`<feedId>|incident:<id>`), written with
   * `lastOk` in one command, so a reader never pairs a poll's time with another poll's sightings.
   * Absent in records written before it, and by an incidents cycle that does not tell.
   */
  unseen?: string[] | undefined;
}

const LATEST_SLA = zodShape<LatestSla>(
  'hist:latest:sla',
  z.object({
    margin: z.number(),
    target: z.number(),
    uptime30d: z.number(),
    status: z.string(),
    at: z.number(),
  }),
);
const LATEST_SCORE = zodShape<LatestScore>(
  'hist:latest:score',
  z.object({ score: z.number(), grade: z.string().nullable(), at: z.number() }),
);
const UPSTREAM_POLL = zodShape<UpstreamPoll>(
  'hist:upstream',
  z.object({
    lastOk: z.number(),
    limit: z.number().nullable(),
    remaining: z.number().nullable(),
    reset: z.number().nullable(),
    unseen: z.array(z.string()).optional(),
  }),
);
const EVENT = zodShape<Transition>('hist:event', transitionSchema);

function replies(results: [Error | null, unknown][] | null): unknown[] {
  return (results ?? []).map(([err, value]) => {
    if (err !== null) throw err;
    return value;
  });
}

/** Services whose commands share one pipeline: the first cycle of 100,000 services is 50 round trips, not one 300,000-command pipeline held in memory. */
const SERVICES_PER_PIPELINE = 2_000;

/** Services per `history-samples.lua` or `history-status.lua` call (a few milliseconds of Redis each). */
const SAMPLE_SERVICES_PER_CALL = 500;

/** A pipeline, sent a chunk at a time (`flushChunk`). */
class ChunkedPipeline {
  pipe: ReturnType<RedisClient['pipeline']>;

  constructor(private readonly redis: RedisClient) {
    this.pipe = redis.pipeline();
  }

  /** Sends what is queued and starts a new pipeline. */
  async flushChunk(): Promise<void> {
    if (this.pipe.length === 0) return;
    const sent = this.pipe;
    this.pipe = this.redis.pipeline();
    replies(await sent.exec());
  }

  async flush(): Promise<void> {
    await this.flushChunk();
  }
}

/**
 * Script calls of up to SAMPLE_SERVICES_PER_CALL services each (`history-status.lua`,
 * `history-samples.lua`): every call's keys start with `firstKey` and its arguments with `head`;
 * a caller pushes a service's keys and arguments, then calls `added`, which sends the call once
 * it is full.
 */
class ServiceCalls {
  keys: string[] = [];
  argv: string[] = [];
  private services = 0;

  constructor(
    private readonly c: ChunkedPipeline,
    private readonly firstKey: string,
    private readonly head: readonly string[],
    private readonly queue: (keys: string[], argv: string[]) => void,
  ) {
    this.reset();
  }

  async added(): Promise<void> {
    this.services += 1;
    if (this.services === SAMPLE_SERVICES_PER_CALL) await this.send();
  }

  /** Sends the last, partly filled call. */
  async finish(): Promise<void> {
    if (this.services > 0) await this.send();
  }

  private async send(): Promise<void> {
    this.queue(this.keys, this.argv);
    await this.c.flushChunk();
    this.reset();
  }

  private reset(): void {
    this.keys = [this.firstKey];
    this.argv = [...this.head];
    this.services = 0;
  }
}

/** The unseen incidents of watched services, as lifecycle keys (what a reminder's opening has). */
function unseenKeys(
  unseen: ReadonlyMap<string, ReadonlySet<string>>,
  watched: (feedId: string) => boolean,
): string[] {
  const out: string[] = [];
  for (const [feedId, ids] of unseen)
    if (watched(feedId))
      for (const id of ids) out.push(lifecycleKey({ feedId, subject: `incident:${id}` }));
  return out;
}

/**
 * What the last `recordSamples` of a series in this process wrote: the cycle (its `now`, which
 * that cycle also wrote as its kind's `lastOk`), its buckets, and a fingerprint of each watched
 * service's sample and latest record.
 */
interface WrittenSamples {
  at: number;
  buckets: string;
  rows: Map<string, number>;
}

/**
 * A 53-bit fingerprint of `text` (two 32-bit FNV-1a hashes with different offsets): services
 * whose fingerprint is unchanged are not written again, so a collision would leave one stale
 * sample until the next hour's write; at 53 bits that is about one in 10^11 for 20,000 services.
 */
export function fingerprint(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x2f3a1b77;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0) * 0x200000 + ((b >>> 0) >>> 11);
}

/** How one series' rows are read: the sample, the latest record, and what identifies both. */
interface SampleReader<R> {
  value(row: R): number;
  /** The fields of the latest record but `at`, and the sample's value, as one string. */
  fields(row: R): string;
  latest(row: R, at: number): string;
}

export class HistoryStore {
  private readonly scripts: Scripts;
  /** By series: what this process last wrote (`recordSamples`). */
  private readonly written = new Map<Series, WrittenSamples>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    this.scripts = scripts(redis);
  }

  private k(...parts: string[]): string {
    return this.keys.key('hist', ...parts);
  }

  /**
   * Records one committed cycle: status changes, SLA and score samples and transitions of the
   * services `watched` accepts (upstream transitions always), and the kind's last success:
   * status changes, SLA and score samples in one script call per SAMPLE_SERVICES_PER_CALL
   * services, transitions in one per SERVICES_PER_PIPELINE services.
   */
  async record(cycle: CommittedCycle, watched: (feedId: string) => boolean): Promise<void> {
    const { now } = cycle;
    const c = new ChunkedPipeline(this.redis);
    switch (cycle.kind) {
      case 'status':
        await this.recordStatus(c, cycle.changed as ReadonlyMap<string, StatusEntry>, watched, now);
        break;
      case 'sla':
        await this.recordSamples(c, 'sla', (cycle.data as SlaReport).services, watched, now, {
          value: (r) => r.margin,
          fields: (r) =>
            `${String(r.margin)}|${String(r.slaTarget)}|${String(r.uptime30d)}|${r.status}`,
          latest: (r, at) =>
            encode(LATEST_SLA, {
              margin: r.margin,
              target: r.slaTarget,
              uptime30d: r.uptime30d,
              status: r.status,
              at,
            }),
        });
        break;
      case 'scores':
        await this.recordSamples(c, 'score', (cycle.data as ScoreReport).scores, watched, now, {
          value: (r) => r.score,
          fields: (r) => `${String(r.score)}|${JSON.stringify(r.grade)}`,
          latest: (r, at) => encode(LATEST_SCORE, { score: r.score, grade: r.grade, at }),
        });
        break;
      case 'incidents':
        break;
    }
    // After the samples: a kind's lastOk says its samples were all written (`recordSamples`).
    c.pipe.hset(
      this.k('upstream'),
      cycle.kind,
      encode(UPSTREAM_POLL, {
        lastOk: now,
        limit: cycle.rateLimit.limit,
        remaining: cycle.rateLimit.remaining,
        reset: cycle.rateLimit.reset,
        ...(cycle.unseen === undefined ? {} : { unseen: unseenKeys(cycle.unseen, watched) }),
      }),
    );
    const byFeed = new Map<string, Transition[]>();
    for (const t of cycle.transitions) {
      if (t.feedId !== 'upstream' && !watched(t.feedId)) continue;
      const list = byFeed.get(t.feedId);
      if (list === undefined) byFeed.set(t.feedId, [t]);
      else list.push(t);
    }
    // One script call per SERVICES_PER_PIPELINE services adds and bounds their event lists (four
    // commands per service before: a storm of 5,000 openings was 20,000 commands).
    const feeds = [...byFeed];
    for (let start = 0; start < feeds.length; start += SERVICES_PER_PIPELINE) {
      const keys: string[] = [];
      const argv = [
        String(now - EVENT_RETENTION_MS),
        String(MAX_EVENTS_PER_SERVICE),
        String(EVENT_RETENTION_MS + DAY_MS),
      ];
      for (const [feedId, list] of feeds.slice(start, start + SERVICES_PER_PIPELINE)) {
        keys.push(this.k('events', feedId));
        argv.push(String(list.length));
        for (const t of list) argv.push(String(t.observedAt), encode(EVENT, t));
      }
      this.scripts.queue(c.pipe).historyAppend(keys, argv);
      await c.flushChunk();
    }
    await c.flush();
  }

  /**
   * The watched services of `changed` whose status differs from the last one recorded: one
   * `history-status.lua` call per SAMPLE_SERVICES_PER_CALL services. (A read of the last
   * statuses, then four commands per service in a pipeline of 2,000 services, made a first sync
   * of 20,000 services allocate about 200 MB, the most of any of its steps, at the moment the
   * daemon's memory peaks.)
   */
  private async recordStatus(
    c: ChunkedPipeline,
    changed: ReadonlyMap<string, StatusEntry>,
    watched: (feedId: string) => boolean,
    now: number,
  ): Promise<void> {
    const head = [
      String(now),
      `(${String(now - EVENT_RETENTION_MS)}`,
      String(MAX_STATUS_CHANGES_PER_SERVICE),
      String(EVENT_RETENTION_MS + DAY_MS),
    ];
    const calls = new ServiceCalls(c, this.k('status-last'), head, (keys, argv) => {
      this.scripts.queue(c.pipe).historyStatus(keys, argv);
    });
    for (const [feedId, entry] of changed) {
      if (!watched(feedId)) continue;
      calls.keys.push(this.k('status', feedId));
      calls.argv.push(feedId, entry.status, statusMember(now, entry.status));
      await calls.added();
    }
    await calls.finish();
  }

  /**
   * One sample of `series` per watched service of `rows` at each resolution, and its latest
   * record: one `history-samples.lua` call per SAMPLE_SERVICES_PER_CALL services. (Nine commands
   * per service in a pipeline of 2,000 services were 18,000 ioredis commands alive at once, 16 MB
   * of a 20,000-service SLA cycle's heap.)
   *
   * A service whose sample and latest record are those this process wrote for it in the
   * previous cycle of the kind is left out, when that cycle is the last one recorded (its kind's
   * `lastOk`: no other replica, no failed write since) and the cycles share their buckets. Every
   * SLA and scores cycle wrote every watched service, changed or not: at 20,000 services about
   * 60 MB of allocation (ioredis encoding 80 script arguments a service) every 10 s, and the
   * largest of the daemon's memory peaks after its first sync (docs/performance.md).
   */
  private async recordSamples<R extends { feedId: string }>(
    c: ChunkedPipeline,
    series: Series,
    rows: readonly R[],
    watched: (feedId: string) => boolean,
    now: number,
    read: SampleReader<R>,
  ): Promise<void> {
    const resolutions = RESOLUTIONS.map((r) => ({
      name: r.name,
      at: bucketStart(now, r.bucketMs),
    }));
    const buckets = resolutions.map((r) => String(r.at)).join(',');
    const last = this.written.get(series);
    // Forgotten until this write succeeds: a failed one leaves Redis unknown.
    this.written.delete(series);
    const same =
      last !== undefined &&
      last.buckets === buckets &&
      (await this.lastOkOf(series === 'sla' ? 'sla' : 'scores')) === last.at;
    // Updated in place: a new map of 20,000 services each cycle is about 1 MB of large objects
    // that only a full collection frees.
    let prints = last?.rows ?? new Map<string, number>();
    let seen = 0;
    const head = [String(RESOLUTIONS.length)];
    for (const r of RESOLUTIONS) {
      // A service no longer watched is no longer written: its keys go by themselves (the TTL).
      head.push(
        String(bucketStart(now, r.bucketMs)),
        `(${String(now - r.retentionMs)}`,
        String(r.retentionMs + DAY_MS),
      );
    }
    const calls = new ServiceCalls(c, this.k('latest', series), head, (keys, argv) => {
      this.scripts.queue(c.pipe).historySamples(keys, argv);
    });
    for (const row of rows) {
      if (!watched(row.feedId)) {
        prints.delete(row.feedId);
        continue;
      }
      const print = fingerprint(read.fields(row));
      const before = prints.get(row.feedId);
      prints.set(row.feedId, print);
      seen += 1;
      if (same && before === print) continue;
      const value = read.value(row);
      calls.argv.push(row.feedId, read.latest(row, now));
      for (const r of resolutions) {
        calls.keys.push(this.k(series, r.name, row.feedId));
        calls.argv.push(sampleMember(r.at, value));
      }
      await calls.added();
    }
    await calls.finish();
    if (prints.size > seen) {
      // Services gone from the report (those no longer watched went in the loop).
      const kept = new Map<string, number>();
      for (const row of rows) {
        const print = prints.get(row.feedId);
        if (print !== undefined) kept.set(row.feedId, print);
      }
      prints = kept;
    }
    this.written.set(series, { at: now, buckets, rows: prints });
  }

  /** The `lastOk` of a poll kind's last recorded cycle, or null. */
  private async lastOkOf(kind: PollKind): Promise<number | null> {
    const text = await this.redis.hget(this.k('upstream'), kind);
    return text === null ? null : (decode(UPSTREAM_POLL, text)?.lastOk ?? null);
  }

  /** A series over [from, now]: hourly samples, daily ones before them. */
  async samples(feedId: string, series: Series, from: number): Promise<[number, number][]> {
    return (await this.samplesOf([feedId], series, from)).get(feedId) ?? [];
  }

  /** The same for many services in one round trip. */
  async samplesOf(
    feedIds: readonly string[],
    series: Series,
    from: number,
  ): Promise<Map<string, [number, number][]>> {
    const out = new Map<string, [number, number][]>();
    if (feedIds.length === 0) return out;
    const p = this.redis.pipeline();
    for (const feedId of feedIds) {
      p.zrangebyscore(this.k(series, 'h', feedId), String(from), '+inf');
      p.zrangebyscore(this.k(series, 'd', feedId), String(from - DAY_MS), '+inf');
    }
    const values = replies(await p.exec());
    const parse = (v: unknown): [number, number][] =>
      (Array.isArray(v) ? (v as string[]) : [])
        .map(parseSample)
        .filter((s): s is [number, number] => s !== null && s[0] >= from - DAY_MS);
    feedIds.forEach((feedId, i) => {
      out.set(
        feedId,
        mergeResolutions(parse(values[2 * i]), parse(values[2 * i + 1])).filter(
          ([at]) => at >= from - DAY_MS,
        ),
      );
    });
    return out;
  }

  /** Confirmed status changes since `from`, oldest first. */
  async statusChanges(feedId: string, from: number): Promise<{ at: number; status: string }[]> {
    const members = await this.redis.zrangebyscore(this.k('status', feedId), String(from), '+inf');
    return members.map(parseStatus).filter((s): s is { at: number; status: string } => s !== null);
  }

  /** The last recorded status before `at` (what held at the start of a chart), or null. */
  async statusBefore(feedId: string, at: number): Promise<string | null> {
    const members = await this.redis.zrevrangebyscore(
      this.k('status', feedId),
      `(${String(at)}`,
      '-inf',
      'LIMIT',
      0,
      1,
    );
    const first = members[0];
    return first === undefined ? null : (parseStatus(first)?.status ?? null);
  }

  /** The service's transitions since `from`, newest first, at most `limit`. */
  async events(
    feedId: string,
    from: number,
    limit = MAX_EVENTS_PER_SERVICE,
  ): Promise<Transition[]> {
    const texts = await this.redis.zrevrangebyscore(
      this.k('events', feedId),
      '+inf',
      String(from),
      'LIMIT',
      0,
      limit,
    );
    const out: Transition[] = [];
    for (const text of texts) {
      const t = decode(EVENT, text);
      if (t === undefined) countCorrupt(EVENT.kind);
      else out.push(t);
    }
    return out;
  }

  async latest(
    feedIds: readonly string[],
  ): Promise<{ sla: Map<string, LatestSla>; score: Map<string, LatestScore> }> {
    const sla = new Map<string, LatestSla>();
    const score = new Map<string, LatestScore>();
    if (feedIds.length === 0) return { sla, score };
    const [slaTexts, scoreTexts] = await Promise.all([
      this.redis.hmget(this.k('latest', 'sla'), ...feedIds),
      this.redis.hmget(this.k('latest', 'score'), ...feedIds),
    ]);
    feedIds.forEach((feedId, i) => {
      const s = slaTexts[i];
      const c = scoreTexts[i];
      const sv = s === null || s === undefined ? undefined : decode(LATEST_SLA, s);
      const cv = c === null || c === undefined ? undefined : decode(LATEST_SCORE, c);
      if (sv !== undefined) sla.set(feedId, sv);
      if (cv !== undefined) score.set(feedId, cv);
    });
    return { sla, score };
  }

  /** What the last committed polls saw: when each kind committed, and the incidents unseen. */
  async lastLook(): Promise<LastLook> {
    const polls = await this.upstream();
    return {
      polled: new Map([...polls].map(([kind, p]) => [kind, p.lastOk])),
      unseen: new Set(polls.get('incidents')?.unseen ?? []),
    };
  }

  /** The last successful cycle of each poll kind that had one. */
  async upstream(): Promise<Map<PollKind, UpstreamPoll>> {
    const all = await this.redis.hgetall(this.k('upstream'));
    const out = new Map<PollKind, UpstreamPoll>();
    for (const [kind, text] of Object.entries(all)) {
      const v = decode(UPSTREAM_POLL, text);
      if (v !== undefined) out.set(kind as PollKind, v);
    }
    return out;
  }
}
