import type { Transition } from './transition.js';

/** What one diff produces: the transitions and the entries to write back (only the changed ones). */
export interface DiffResult<E> {
  transitions: Transition[];
  changed: Map<string, E>;
}
