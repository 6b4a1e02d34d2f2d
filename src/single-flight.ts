/**
 * One run at a time: the returned function starts `run` when none is in progress and otherwise
 * answers with the run in progress (a burst of callers shares one run; the next call after it
 * ends starts another).
 */
export function singleFlight<T>(run: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | null = null;
  return () => {
    current ??= run().finally(() => {
      current = null;
    });
    return current;
  };
}
