/**
 * Every Redis key family of an installation, by role, in one table: what it is, and the one
 * module that builds it and reads and writes it (its owner). Other modules go through the
 * owner's methods, never through the key. As `QUEUES` (src/queues.ts) is for queue names, this is
 * the index of the keyspace; the owners build their keys with `Keys.key(...parts)`
 * (src/redis.ts), and `test/keyspace.test.ts` fails when a `key(...)` call or a `':snap:'`-style
 * literal builds a family outside its owner, when a family is built nowhere, and when the table of
 * docs/architecture.md ("Key table") differs from `keyTableMarkdown()`.
 *
 * Parts are the segments after `{prefix}:` (joined with `:`): a literal, `<name>` for one segment
 * that varies, or `*` for whatever BullMQ puts after a queue's name.
 */
import { createKeys } from '../redis.js';
import { QUEUES } from '../queues.js';

export type KeyType =
  'string' | 'hash' | 'set' | 'sorted set' | 'list' | 'stream' | 'pub/sub' | 'BullMQ';

export interface KeyFamily {
  readonly parts: readonly string[];
  readonly type: KeyType;
  /** The owning module (path from the repository root): it builds, reads and writes the key. */
  readonly owner: string;
  /**
   * Modules besides the owner that build the key, each with the reason (an atomic step the owner
   * does not offer yet). Every entry is a known exception to "one owner per key".
   */
  readonly sharedWith?: readonly { readonly file: string; readonly why: string }[];
  readonly contents: string;
}

const SNAPSHOT = 'src/snapshot/store.ts';
const CATALOG = 'src/pipeline/catalog.ts';
const CATEGORIES = 'src/routing/categories.ts';
const NOISE = 'src/noise/store.ts';
const HISTORY = 'src/history/store.ts';
const LEDGER = 'src/delivery/ledger.ts';
const API_STORE = 'src/api/store.ts';
const TOKENS = 'src/api/tokens.ts';
const SLACK_APP = 'src/notify/slack/message-store.ts';
const REFUSALS = 'src/redis/refusals.ts';

function family(
  parts: string,
  type: KeyType,
  owner: string,
  contents: string,
  sharedWith?: KeyFamily['sharedWith'],
): KeyFamily {
  return { parts: parts.split(':'), type, owner, contents, ...(sharedWith ? { sharedWith } : {}) };
}

function queueFamily(name: string, contents: string): KeyFamily {
  return family(
    `${name}:*`,
    'BullMQ',
    'src/queues.ts',
    `BullMQ's keys of queue \`${name}\`: ${contents}`,
  );
}

export const KEYSPACE = {
  // Snapshot store and cycle (stage 3).
  snapshot: family(
    'snap:<kind>',
    'hash',
    SNAPSHOT,
    'feedId → the entry of one poll kind (`status`, `incidents`, `sla`, `scores`)',
  ),
  snapshotMeta: family(
    'snap:<kind>:meta',
    'hash',
    SNAPSHOT,
    '`v` version token, `b` baselined, `u` upstream health, `t` response variant',
  ),
  catalogServices: family('catalog:services', 'hash', CATALOG, 'feedId → name and links'),
  catalogNames: family('catalog:names', 'hash', CATALOG, 'service name → feedId(s)'),
  catalogMeta: family('catalog:meta', 'hash', CATALOG, '`updatedAt` (Unix ms), `size`'),
  catalogServicesStaging: family(
    'catalog:services:tmp:<hex>',
    'hash',
    CATALOG,
    'a replace being written (renamed over `catalog:services`; expires after 10 minutes)',
  ),
  catalogNamesStaging: family(
    'catalog:names:tmp:<hex>',
    'hash',
    CATALOG,
    'a replace being written (renamed over `catalog:names`; expires after 10 minutes)',
  ),
  category: family('catalog:category:<slug>', 'set', CATEGORIES, 'feedIds of the category'),
  categoryMeta: family(
    'catalog:category-meta',
    'hash',
    CATEGORIES,
    'slug → Unix ms of its last refresh',
  ),
  categoryFailed: family(
    'catalog:category-failed',
    'hash',
    CATEGORIES,
    'slug → Unix ms of its last failed fetch',
  ),
  vocabulary: family(
    'vocabulary',
    'hash',
    'src/pipeline/vocabulary.ts',
    'upstream words first seen',
  ),
  // Scheduler and poller (stage 1).
  pollLease: family(
    'poll:lease:<kind>',
    'string',
    'src/scheduler/poller.ts',
    'one cycle per poll kind (and `categories`) across replicas',
  ),
  pollDisabled: family(
    'poll:disabled',
    'hash',
    'src/scheduler/poller.ts',
    'premium poll kind → fingerprint of the refused API key',
  ),
  // Routing (stage 6).
  routingDecidedAt: family(
    'routing:decided-at:<job id>',
    'string',
    'src/routing/router.ts',
    "the routing time of a cycle job's first run (an hour)",
  ),
  routingLastDecidedAt: family(
    'routing:last-decided-at',
    'string',
    'src/routing/router.ts',
    'the routing clock: the last time a cycle was routed on',
    [
      {
        file: NOISE,
        why: '`NoiseStore.orderTime` reads and moves the routing clock for the noise tick',
      },
    ],
  ),
  // Noise control (stage 7).
  noiseTold: family('noise:told', 'hash', NOISE, 'ledger field → the opening a route was told of'),
  noiseSuppressed: family(
    'noise:suppressed',
    'hash',
    NOISE,
    'ledger field → id of the opening a silence dropped',
  ),
  noiseGroup: family(
    'noise:group:<route>',
    'list',
    NOISE,
    'transitions waiting for the group flush',
  ),
  noiseGroupClaimed: family(
    'noise:group:<route>:claimed',
    'list',
    NOISE,
    'a group buffer taken for flushing',
  ),
  noiseGroupSince: family(
    'noise:group-since',
    'hash',
    NOISE,
    "route → Unix ms the group's window started",
  ),
  noiseHeld: family('noise:held:<route>', 'list', NOISE, 'transitions held during quiet hours'),
  noiseHeldClaimed: family(
    'noise:held:<route>:claimed',
    'list',
    NOISE,
    'a held buffer taken for the catch-up',
  ),
  noiseHeldClosed: family(
    'noise:held:<route>:closed',
    'hash',
    NOISE,
    'lifecycle key → closings sent through the quiet hours',
  ),
  noiseHeldClosedClaimed: family(
    'noise:held:<route>:closed:claimed',
    'hash',
    NOISE,
    'the same, taken with its held buffer',
  ),
  noiseHeldUntil: family(
    'noise:held-until',
    'hash',
    NOISE,
    'route → Unix ms the quiet period ends (a catch-up still to go out)',
  ),
  noiseSeen: family(
    'noise:seen:<route>',
    'set',
    NOISE,
    'transition ids already buffered for the route (48 h)',
  ),
  noiseAck: family(
    'noise:ack:<hash>',
    'string',
    'src/noise/acks.ts',
    "one (subscription, lifecycle)'s acknowledgement: who, when, via; ended by the closing (7 days at most)",
  ),
  noiseUntilResolved: family(
    'noise:until-resolved:<hash>',
    'set',
    'src/noise/acks.ts',
    'ids of the "silence until resolved" silences of one lifecycle, ended by its closing',
  ),
  noiseDigest: family(
    'noise:digest',
    'hash',
    NOISE,
    'subscription → Unix ms of the last digest boundary',
  ),
  routedLog: family(
    'history',
    'sorted set',
    NOISE,
    'the routed log: every routed transition with its subscriptions, by `observedAt` (40 days)',
  ),
  routed: family('routed', 'sorted set', NOISE, 'transition id → Unix ms it was routed (7 days)'),
  silences: family('silences', 'hash', 'src/silences/store.ts', 'silence id → silence', [
    {
      file: API_STORE,
      why: "a silence created through the API is written in the API's quota transaction (WATCH/MULTI)",
    },
  ]),
  // Delivery (stage 8).
  delivery: family('delivery:<delivery id>', 'string', LEDGER, 'the ledger entry of one delivery'),
  deliverySending: family(
    'delivery-sending:<delivery id>',
    'string',
    LEDGER,
    'a stalled send handed to its retry job still runs',
  ),
  deliveryOpen: family(
    'delivery-open:<route>|<lifecycle>',
    'sorted set',
    LEDGER,
    "a lifecycle's deliveries handed to jobs of their own, by rank",
  ),
  pace: family(
    'pace:<destination hash>',
    'hash',
    'src/delivery/pacer.ts',
    "a paced destination's next slot and hold",
  ),
  // Notifiers (stage 9).
  slackAppRef: family(
    'slack-app:ref:<hash>',
    'string',
    SLACK_APP,
    "an episode's parent message (30 days)",
  ),
  slackAppClaim: family(
    'slack-app:claim:<hash>',
    'string',
    SLACK_APP,
    'the one sender working on an episode',
  ),
  slackAppDelivery: family(
    'slack-app:delivery:<hash>',
    'string',
    SLACK_APP,
    "one delivery's progress (30 days)",
  ),
  slackSeen: family(
    'slack:seen:<hash>',
    'string',
    'src/notify/slack/interactions.ts',
    "a Slack interaction's signature seen (10 minutes): a replay is refused",
  ),
  emailDeferred: family(
    'email:deferred:<delivery id>',
    'set',
    'src/notify/email/index.ts',
    'recipients an SMTP server deferred (24 hours)',
  ),
  // Tenancy API (stage 10).
  apiChannels: family('api:channels', 'hash', API_STORE, 'name → stored channel'),
  apiSubscriptions: family('api:subscriptions', 'hash', API_STORE, 'name → stored subscription'),
  apiSubscriptionTombstones: family(
    'api:tombstones:subscriptions',
    'hash',
    API_STORE,
    'name → a deleted subscription still owed closings',
  ),
  apiChannelTombstones: family(
    'api:tombstones:channels',
    'hash',
    API_STORE,
    'name → a deleted channel kept for closings and retries',
  ),
  apiVersion: family('api:version', 'string', API_STORE, 'counter bumped by every change'),
  apiChanged: family('api:changed', 'pub/sub', API_STORE, 'says a change was made'),
  apiAudit: family(
    'api:audit',
    'stream',
    API_STORE,
    'the audit log (appended and read by `AuditLog`, src/api/audit.ts)',
  ),
  apiSilenceTeams: family(
    'api:silence-teams',
    'hash',
    API_STORE,
    'silence id → the team it counts toward',
  ),
  apiTokens: family('api:tokens', 'hash', TOKENS, 'token id → hash, team, admin, expiry', [
    {
      file: API_STORE,
      why: "the API's quota transaction watches and counts the tokens (WATCH/MULTI)",
    },
  ]),
  apiAuthAttempts: family(
    'api:auth-attempts:<address>',
    'string',
    TOKENS,
    'failed attempts of a client address (with a TTL)',
  ),
  // Console and history (stage 11).
  consoleSession: family(
    'console:session:<sha256>',
    'string',
    'src/console/auth.ts',
    'a console session',
  ),
  consoleSecret: family(
    'console:secret',
    'string',
    'src/console/auth.ts',
    'the installation secret of CSRF tokens',
  ),
  consoleFeeds: family(
    'console:feeds',
    'hash',
    'src/console/feeds.ts',
    'subscription → its feed secret',
  ),
  consoleFeedIndex: family(
    'console:feed-index',
    'hash',
    'src/console/feeds.ts',
    'feed secret → subscription',
  ),
  histStatus: family(
    'hist:status:<feedId>',
    'sorted set',
    HISTORY,
    'confirmed status changes (90 days, 500)',
  ),
  histStatusLast: family('hist:status-last', 'hash', HISTORY, 'feedId → the last status recorded'),
  histSla: family('hist:sla:<h|d>:<feedId>', 'sorted set', HISTORY, 'SLA margin, hourly and daily'),
  histScore: family('hist:score:<h|d>:<feedId>', 'sorted set', HISTORY, 'score, hourly and daily'),
  histLatestSla: family('hist:latest:sla', 'hash', HISTORY, 'feedId → the latest SLA record'),
  histLatestScore: family('hist:latest:score', 'hash', HISTORY, 'feedId → the latest score'),
  histEvents: family(
    'hist:events:<feedId>',
    'sorted set',
    HISTORY,
    'every transition of the service (90 days, 500)',
  ),
  histUpstream: family('hist:upstream', 'hash', HISTORY, 'poll kind → the last successful cycle'),
  // Redis itself.
  probeWritable: family('probe:writable', 'string', REFUSALS, "readiness's write probe (10 s)"),
  redisCheck: family(
    'redis-check:<type>',
    'string',
    REFUSALS,
    "the start's permission check (deleted at its end)",
  ),
  // BullMQ (`QUEUES`, src/queues.ts): the queues' own keys.
  queuePoll: queueFamily(QUEUES.poll, 'poll jobs and schedulers'),
  queueTransitions: queueFamily(QUEUES.transitions, 'one job per poll cycle'),
  queueDeliveries: queueFamily(QUEUES.deliveries, 'batch jobs'),
  queueDeliveryRetries: queueFamily(QUEUES.deliveryRetries, 'retries and dead letters'),
  queueNoise: queueFamily(QUEUES.noise, 'the noise tick'),
} as const satisfies Record<string, KeyFamily>;

export type KeyRole = keyof typeof KEYSPACE;

/** The family's key as `Keys.key` builds it for `prefix` (the varying parts as placeholders). */
export function keyPattern(f: KeyFamily, prefix = 'prefix'): string {
  return createKeys(prefix).key(...f.parts);
}

/** The family without its `{prefix}:` (as docs/architecture.md names keys). */
export function familyName(f: KeyFamily): string {
  return f.parts.join(':');
}

/** The rows of docs/architecture.md's "Key table", in the table's order. */
export function keyTableMarkdown(): string {
  const cell = (text: string): string => text.replaceAll('|', '\\|');
  const rows = Object.values(KEYSPACE).map((f: KeyFamily) => {
    const also = (f.sharedWith ?? []).map((s) => `; also \`${s.file}\`: ${s.why}`).join('');
    return `| \`${cell(familyName(f))}\` | ${f.type} | \`${f.owner}\`${cell(also)} | ${cell(f.contents)} |`;
  });
  return ['| key | type | owner | contents |', '|---|---|---|---|', ...rows].join('\n');
}
