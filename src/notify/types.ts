import { StatuswatchError } from '../errors.js';
import type { Transition } from '../diff/transition.js';
import type { NotificationLinks } from './links.js';

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
  /**
   * "Open in console" and "silence…" (`links.ts`), set at send time when `server.publicUrl` is;
   * absent: the renderers print no console links (the output is as without a public URL).
   */
  links?: NotificationLinks | undefined;
}

export type FailureReason =
  | 'client'
  | 'server'
  | 'rate_limited'
  | 'auth'
  | 'timeout'
  | 'network'
  | 'config'
  /** The egress policy (`server.egress`) refused the destination: nothing was sent. */
  | 'policy'
  /** statuswatch's own trouble (its Redis), not the receiver's. */
  | 'internal';

/**
 * The one error a notifier throws. `retryable` decides retry vs dead letter; `reason` becomes a
 * log field and a metric label; `retryAfterMs` carries a receiver's Retry-After.
 *
 * Two texts, for two readers:
 * - `message` is what a team may see (API test results, dead letters, delivery lists, the
 *   console): it is built from statuswatch's own words, numbers (HTTP status, SMTP reply code)
 *   and at most one vendor error code from the fixed lists of `vendor-codes.ts` — never text the
 *   receiver chose, and every network failure reads alike whatever its cause (`NETWORK_FAILURE`).
 * - `detail` is for the operator only (the daemon's log, the local `notify-test`): the receiver's
 *   own words, the network error code, the SMTP reply. Null when there is nothing more to say.
 *
 * Neither contains the channel's secrets (webhook URLs, SMTP passwords): notifiers scrub both.
 */
export class DeliveryError extends StatuswatchError {
  readonly retryable: boolean;
  readonly reason: FailureReason;
  readonly httpStatus: number | null;
  readonly retryAfterMs: number | null;
  /** Operator-only: what the receiver or the network said (see the class comment). */
  readonly detail: string | null;

  constructor(init: {
    message: string;
    retryable: boolean;
    reason: FailureReason;
    httpStatus?: number | null;
    retryAfterMs?: number | null;
    detail?: string | null;
    cause?: unknown;
  }) {
    super(init.retryable ? 'delivery_retryable' : 'delivery_permanent', init.message, {
      cause: init.cause,
    });
    this.retryable = init.retryable;
    this.reason = init.reason;
    this.httpStatus = init.httpStatus ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.detail = init.detail === undefined || init.detail === '' ? null : init.detail;
  }

  /** The same verdict with another operator-only detail. */
  withDetail(detail: string | null): DeliveryError {
    return new DeliveryError({
      message: this.message,
      retryable: this.retryable,
      reason: this.reason,
      httpStatus: this.httpStatus,
      retryAfterMs: this.retryAfterMs,
      detail,
      cause: this.cause,
    });
  }

  /** The same verdict (detail and cause too) under another team-safe message. */
  withMessage(message: string): DeliveryError {
    return new DeliveryError({
      message,
      retryable: this.retryable,
      reason: this.reason,
      httpStatus: this.httpStatus,
      retryAfterMs: this.retryAfterMs,
      detail: this.detail,
      cause: this.cause,
    });
  }
}

export interface Notifier {
  send(notification: Notification): Promise<void>;
  /** Releases pooled connections (SMTP pool, HTTP agent). */
  close(): Promise<void>;
}
