import { okPollTotals, type Daemon } from './process.js';
import { waitFor } from './wait.js';

/**
 * Waits until the installation the daemons (`node dist/cli.js run`) form has baselined status and
 * incidents: one successful poll of each, by any of them (first sight is silent, so only what
 * changes after it is announced). Replicas share one poll per interval, so a replica may well
 * not poll at all for a while: the polls are counted over all of them.
 */
export async function baselined(...daemons: Daemon[]): Promise<void> {
  await waitFor(
    async () => (await okPollTotals(daemons, ['status', 'incidents'])).every((n) => n >= 1),
    { timeoutMs: 10_000, intervalMs: 100, what: 'baseline polls' },
  );
}
