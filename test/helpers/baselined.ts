import { metricsOf, okPolls, type Daemon } from './process.js';
import { waitFor } from './wait.js';

/**
 * Waits until the daemon (`node dist/cli.js run`) has baselined status and incidents: one
 * successful poll of each (first sight is silent, so only what changes after it is announced).
 */
export async function baselined(d: Daemon): Promise<void> {
  await waitFor(
    async () => {
      const text = await metricsOf(d);
      return okPolls(text, 'status') >= 1 && okPolls(text, 'incidents') >= 1;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: 'baseline polls' },
  );
}
