/**
 * The egress policy's check of a channel stored through the API (or the console): every
 * destination of the channel (its URLs, its SMTP host) is judged when the channel is written, so
 * a refused one is a 400 naming the field. The check at connect time (`src/egress/connect.ts`)
 * still guards every send and test: a name may resolve elsewhere later.
 */
import type { ChannelConfig } from '../config/schema.js';
import { destinationRefusal, writtenRefusal } from '../egress/connect.js';
import type { EgressPolicy } from '../egress/policy.js';
import { kindOf } from '../notify/kinds.js';
import type { FieldIssue } from './errors.js';
import { channelConfigSchema } from './model.js';

/** Refused destinations as written (IP literals in any spelling, `localhost`): no DNS. */
export function literalEgressIssues(policy: EgressPolicy, config: ChannelConfig): FieldIssue[] {
  return kindOf(config)
    .destinations(config)
    .flatMap((d) => {
      const refusal = writtenRefusal(policy, d.host, d.port);
      return refusal === null ? [] : [{ field: d.field, message: refusal.message }];
    });
}

/**
 * Refused destinations of a request's channel, names resolved now. A request that does not parse
 * as it is (a `"<set>"` secret URL keeps a destination already checked) is judged by
 * `literalEgressIssues` once its stored values are filled in.
 */
export async function resolvedEgressIssues(
  policy: EgressPolicy,
  spec: unknown,
): Promise<FieldIssue[]> {
  const parsed = channelConfigSchema.safeParse(spec);
  if (!parsed.success) return [];
  const config = parsed.data;
  const issues = await Promise.all(
    kindOf(config)
      .destinations(config)
      .map(async (d) => {
        const refusal = await destinationRefusal(policy, d.host, d.port);
        return refusal === null ? [] : [{ field: d.field, message: refusal.message }];
      }),
  );
  return issues.flat();
}
