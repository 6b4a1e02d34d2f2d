/**
 * The episode a transition belongs to, as vendors with their own incident model need it: one key
 * per service and subject (`incident:<id>`, `status`, `sla`, `upstream:<endpoint>`), derived from
 * content only, so every replica and every restart derives the same key. PagerDuty's `dedup_key`
 * and Opsgenie's `alias` are this key; Slack app mode keeps one living message under it.
 */
import { createHash } from 'node:crypto';
import type { Transition } from '../diff/transition.js';
import { roleOf, type Role } from '../noise/policy.js';

export { roleOf, type Role };

/**
 * `statuswatch:<feedId>:<subject>`, at most `maxLength` characters: a longer key keeps a readable
 * head and ends in a hash of the whole key, so two long keys never collide.
 */
export function episodeKey(t: Pick<Transition, 'feedId' | 'subject'>, maxLength = 255): string {
  const key = `statuswatch:${t.feedId}:${t.subject}`;
  if (key.length <= maxLength) return key;
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 32);
  return `${key.slice(0, Math.max(0, maxLength - hash.length - 1))}~${hash}`;
}

/** Cuts `text` to at most `max` characters, ending in `…` when cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1))}…`;
}
