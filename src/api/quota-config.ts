/**
 * `server.quotas`: how much one team may keep in the Redis every team shares (docs/tenancy-api.md,
 * Quotas). Enforced on writes made with a team token (src/api/quotas.ts); absent: the
 * defaults below.
 *
 * ```yaml
 * server:
 *   quotas:
 *     channels: 50          # live channels per team
 *     subscriptions: 200    # live subscriptions per team
 *     silences: 200         # active and pending silences per team
 *     tokens: 20            # active tokens per team (also bounds an admin's token creation)
 *     bytes: 1048576        # every stored object of the team, as stored JSON (1 MiB)
 *     objectBytes: 65536    # one stored object (64 KiB)
 * ```
 */
import { z } from 'zod';
import { intField } from '../config/fields.js';

const MAX = 1_000_000_000;

export const quotasConfigSchema = z.strictObject({
  /** Live channels a team may have. */
  channels: intField(1, MAX).default(50),
  /** Live subscriptions a team may have. */
  subscriptions: intField(1, MAX).default(200),
  /** Active and pending silences a team may have (expired ones do not count). */
  silences: intField(1, MAX).default(200),
  /** Active (not revoked, not expired) tokens of a team. */
  tokens: intField(1, MAX).default(20),
  /**
   * Bytes of stored JSON of everything the team keeps: channels, subscriptions, silences and
   * tokens, including the deleted, expired and revoked ones still kept for 7 days.
   */
  bytes: intField(1024, MAX).default(1024 * 1024),
  /** Bytes of stored JSON of one channel, subscription or silence. */
  objectBytes: intField(1024, MAX).default(64 * 1024),
});

export type QuotasConfig = z.output<typeof quotasConfigSchema>;

export const DEFAULT_QUOTAS: QuotasConfig = quotasConfigSchema.parse({});
