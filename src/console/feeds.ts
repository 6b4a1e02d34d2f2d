/**
 * Atom feeds: one per subscription, of the transitions routed to it (the routed log, 40 days),
 * at a secret URL `/feeds/<secret>.atom` that feed readers can poll without a login. Only the
 * SHA-256 of a secret is stored; a rotation makes the old URL fail at once.
 *
 * | key | type | contents |
 * |---|---|---|
 * | `console:feeds` | hash | subscription → `{hash, createdAt}` of its current secret |
 * | `console:feed-index` | hash | secret hash → subscription |
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Keys, RedisClient } from '../redis.js';
import { decode, encode, zodShape } from '../redis/stored.js';
import type { Transition } from '../diff/transition.js';
import { describe, escapeHtml, eventLabel } from '../notify/text.js';
import { safeHref } from './html.js';

interface FeedRecord {
  hash: string;
  createdAt: number;
}

const FEED = zodShape<FeedRecord>(
  'console:feed',
  z.object({ hash: z.string(), createdAt: z.number() }),
);

const SECRET = /^[A-Za-z0-9_-]{32}$/;

function hashOf(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export class FeedStore {
  private readonly feedsKey: string;
  private readonly indexKey: string;

  constructor(
    private readonly redis: RedisClient,
    keys: Keys,
    private readonly now: () => number = Date.now,
  ) {
    this.feedsKey = keys.key('console', 'feeds');
    this.indexKey = keys.key('console', 'feed-index');
  }

  /** A new secret for the subscription's feed (the old URL stops working); shown once. */
  async rotate(subscription: string): Promise<string> {
    const secret = randomBytes(24).toString('base64url');
    const old = await this.redis.hget(this.feedsKey, subscription);
    const previous = old === null ? undefined : decode(FEED, old);
    const m = this.redis.multi();
    if (previous !== undefined) m.hdel(this.indexKey, previous.hash);
    m.hset(
      this.feedsKey,
      subscription,
      encode(FEED, { hash: hashOf(secret), createdAt: this.now() }),
    );
    m.hset(this.indexKey, hashOf(secret), subscription);
    const replies = await m.exec();
    for (const [err] of replies ?? []) if (err !== null) throw err;
    return secret;
  }

  /** Which subscriptions have a feed, and since when. */
  async list(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.feedsKey);
    const out = new Map<string, number>();
    for (const [sub, text] of Object.entries(all)) {
      const f = decode(FEED, text);
      if (f !== undefined) out.set(sub, f.createdAt);
    }
    return out;
  }

  async revoke(subscription: string): Promise<void> {
    const old = await this.redis.hget(this.feedsKey, subscription);
    const previous = old === null ? undefined : decode(FEED, old);
    const m = this.redis.multi().hdel(this.feedsKey, subscription);
    if (previous !== undefined) m.hdel(this.indexKey, previous.hash);
    await m.exec();
  }

  /** The subscription a secret opens, or null. */
  async lookup(secret: string): Promise<string | null> {
    if (!SECRET.test(secret)) return null;
    return this.redis.hget(this.indexKey, hashOf(secret));
  }
}

function x(text: string): string {
  return escapeHtml(text);
}

/** An Atom 1.0 document of the transitions (newest first). Every value is XML-escaped. */
export function atomFeed(o: {
  subscription: string;
  selfUrl: string;
  consoleUrl: string;
  transitions: readonly Transition[];
  now: number;
}): string {
  const updated = new Date(o.transitions[0]?.observedAt ?? o.now).toISOString();
  const entries = o.transitions.map((t) => {
    const link = safeHref(`${o.consoleUrl}services/${encodeURIComponent(t.feedId)}`);
    const official = safeHref(t.service.officialStatusUrl);
    const lines = [describe(t)];
    if (t.incident?.latestUpdate !== null && t.incident?.latestUpdate !== undefined)
      lines.push(t.incident.latestUpdate);
    if (official !== null) lines.push(`Status page: ${official}`);
    return [
      '  <entry>',
      `    <id>urn:statuswatch:transition:${x(t.id)}</id>`,
      `    <title type="text">${x(`${eventLabel(t.kind)}: ${describe(t)}`)}</title>`,
      `    <updated>${new Date(t.observedAt).toISOString()}</updated>`,
      `    <category term="${x(t.kind)}"/>`,
      ...(link === null ? [] : [`    <link rel="alternate" type="text/html" href="${x(link)}"/>`]),
      `    <content type="text">${x(lines.join('\n'))}</content>`,
      '  </entry>',
    ].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <id>urn:statuswatch:feed:${x(o.subscription)}</id>`,
    `  <title type="text">${x(`statuswatch: ${o.subscription}`)}</title>`,
    `  <updated>${updated}</updated>`,
    `  <link rel="self" type="application/atom+xml" href="${x(o.selfUrl)}"/>`,
    '  <author><name>statuswatch</name></author>',
    ...entries,
    '</feed>',
    '',
  ].join('\n');
}
