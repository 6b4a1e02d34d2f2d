/**
 * The service history (store.ts) fed from the pipeline: `historyHook` is what `App` passes as
 * `PipelineDeps.committed`, recording each committed cycle for the services some subscription
 * watches (by feedId, `"*"`, or category membership).
 */
import type { SubscriptionConfig } from '../config/schema.js';
import type { CommittedCycle } from '../pipeline/cycle.js';
import type { CategoryStore } from '../routing/categories.js';
import { HistoryStore } from './store.js';

export { HistoryStore };
export type { LatestScore, LatestSla, Series, UpstreamPoll } from './store.js';

/** A predicate for "some subscription watches this service" (categories loaded first). */
export async function watchedBy(
  subscriptions: readonly Pick<SubscriptionConfig, 'services' | 'categories'>[],
  categories: Pick<CategoryStore, 'load' | 'has'>,
): Promise<(feedId: string) => boolean> {
  if (subscriptions.some((s) => s.services.includes('*'))) return () => true;
  const services = new Set(subscriptions.flatMap((s) => s.services));
  const slugs = [...new Set(subscriptions.flatMap((s) => s.categories))];
  if (slugs.length > 0) await categories.load(slugs);
  return (feedId) => services.has(feedId) || slugs.some((slug) => categories.has(slug, feedId));
}

export function historyHook(o: {
  store: HistoryStore;
  subscriptions: () => readonly Pick<SubscriptionConfig, 'services' | 'categories'>[];
  categories: Pick<CategoryStore, 'load' | 'has'>;
}): (cycle: CommittedCycle) => Promise<void> {
  return async (cycle) => {
    await o.store.record(cycle, await watchedBy(o.subscriptions(), o.categories));
  };
}
