/**
 * `server.egress` in the config file: where channels may send.
 *
 * ```yaml
 * server:
 *   egress:
 *     allow: [10.20.0.5/32, "smtp.internal:25"]   # exceptions to the refused ranges
 *     configChannels: exempt                        # or `checked`: the config file's channels too
 * ```
 * Channels stored through the API (teams) always follow the policy; the config file's channels
 * are the operator's own and follow it only with `configChannels: checked`.
 */
import { z } from 'zod';
import { expected } from '../config/fields.js';
import { EgressPolicy, parseAllowEntry, type AllowEntry } from './policy.js';

export const egressConfigSchema = z
  .strictObject({
    /**
     * Exceptions to the refused ranges: a CIDR (`10.20.0.0/16`, `fd00::/8`) or an address (any
     * port), or `host:port` (that host name or address, that port only).
     */
    allow: z
      .array(
        z
          .string({ error: expected('a CIDR, an IP address or host:port') })
          .superRefine((v, ctx) => {
            const entry = parseAllowEntry(v);
            if (typeof entry === 'string') ctx.addIssue({ code: 'custom', message: entry });
          }),
        { error: expected('a list of CIDRs, IP addresses or host:port entries') },
      )
      .default([]),
    /** `exempt` (default): the config file's channels send anywhere; `checked`: they follow the policy too. */
    configChannels: z
      .enum(['exempt', 'checked'], { error: expected('exempt or checked') })
      .default('exempt'),
  })
  .prefault({});

export type EgressConfig = z.output<typeof egressConfigSchema>;

/** The policy of a parsed `server.egress` (its entries are valid: the schema checked them). */
export function egressPolicyOf(config: EgressConfig): EgressPolicy {
  const entries = config.allow
    .map(parseAllowEntry)
    .filter((e): e is AllowEntry => typeof e !== 'string');
  return new EgressPolicy(entries);
}
