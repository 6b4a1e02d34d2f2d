import { StatuswatchError } from '../errors.js';
import type { Transition } from '../diff/transition.js';

/**
 * What a notifier is handed: one delivery. `id` is the delivery id
 * (`<transitionId>:<subscription>:<channel>` for a single transition) and stays identical across
 * retries — the webhook-id, the e-mail Message-ID seed, the dedupe key.
 */
export interface Notification {
  id: string;
  /**
   * `event`: one transition. `batch`: a burst grouped by `group:` (most severe first).
   * `reminder`: still broken after `repeat:` (the transitions that opened what is still open).
   * `catchup`: what was held during quiet hours, sent when the window ends (openings and
   * resolutions alike). `digest`: a scheduled summary (`summary` lines plus the period's
   * transitions). `test`: notify-test.
   */
  type: 'event' | 'batch' | 'reminder' | 'catchup' | 'digest' | 'test';
  /** Heading of a batch-like notification (reminder, catch-up, digest, batch); absent for events. */
  title?: string;
  /** Extra summary lines (digests: durations, still open, SLA margins, score changes). */
  summary?: string[];
  subscription: string;
  channel: string;
  /** One for `event`; one or more for `batch`; a sample for `test`. Most severe first for batches. */
  transitions: Transition[];
  /** Unix ms when the delivery was created (not when this attempt runs). */
  createdAt: number;
}

export type FailureReason =
  | 'client'
  | 'server'
  | 'rate_limited'
  | 'auth'
  | 'timeout'
  | 'network'
  | 'config'
  /** statuswatch's own trouble (its Redis), not the receiver's. */
  | 'internal';

/**
 * The one error a notifier throws. `retryable` decides retry vs dead letter; `reason` becomes a
 * log field and a metric label; `retryAfterMs` carries a receiver's Retry-After.
 * The message never contains the channel's secrets (webhook URLs, SMTP passwords).
 */
export class DeliveryError extends StatuswatchError {
  readonly retryable: boolean;
  readonly reason: FailureReason;
  readonly httpStatus: number | null;
  readonly retryAfterMs: number | null;

  constructor(init: {
    message: string;
    retryable: boolean;
    reason: FailureReason;
    httpStatus?: number | null;
    retryAfterMs?: number | null;
    cause?: unknown;
  }) {
    super(init.retryable ? 'delivery_retryable' : 'delivery_permanent', init.message, {
      cause: init.cause,
    });
    this.retryable = init.retryable;
    this.reason = init.reason;
    this.httpStatus = init.httpStatus ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export interface Notifier {
  send(notification: Notification): Promise<void>;
  /** Releases pooled connections (SMTP pool, HTTP agent). */
  close(): Promise<void>;
}
