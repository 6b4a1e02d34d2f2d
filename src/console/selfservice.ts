/**
 * The seam to the subscriptions and channels API (#13, src/api): what the console's
 * Subscriptions, Channels and Audit pages need, per viewer. `tenancy-api.ts` implements it with
 * the API's stores; the console works without it (those pages then say so).
 */
import type { EventKind } from '../config/events.js';
import type { Viewer } from './auth.js';
import type { Silence, SilenceDraft } from '../silences/model.js';
import type { AckView } from '../api/acks.js';

/*
 * A refused change is thrown as the ops server's one HTTP error (src/server/http-error.ts): its
 * status is the one to answer, its field issues name the fields.
 */

export type ObjectView = Record<string, unknown> & {
  name: string;
  team: string | null;
  source: 'config' | 'api';
};

export interface AuditRow {
  id?: string | undefined;
  at: number;
  tokenId: string;
  actorTeam: string | null;
  team: string;
  action: string;
  kind: string;
  name: string;
  address: string;
  diff: { field: string; from?: unknown; to?: unknown }[];
}

export interface SelfService {
  listSubscriptions(viewer: Viewer): Promise<ObjectView[]>;
  /** Creates (`create`) or replaces (`put`, keeping the name) a subscription. */
  putSubscription(
    viewer: Viewer,
    body: Record<string, unknown>,
    mode: 'create' | 'put',
  ): Promise<void>;
  deleteSubscription(viewer: Viewer, name: string): Promise<void>;
  listChannels(viewer: Viewer): Promise<ObjectView[]>;
  putChannel(viewer: Viewer, body: Record<string, unknown>, mode: 'create' | 'put'): Promise<void>;
  deleteChannel(viewer: Viewer, name: string): Promise<void>;
  /** What the channel would receive for a sample transition of `event`. */
  previewChannel(viewer: Viewer, name: string, event: EventKind): Promise<string>;
  /** Sends a test notification through the channel. */
  testChannel(viewer: Viewer, name: string): Promise<{ ok: boolean; message: string }>;
  searchServices(
    query: string,
    limit: number,
  ): Promise<{ services: { feedId: string; name: string }[]; total: number }>;
  /** The audit log the viewer may read, newest first. */
  audit(viewer: Viewer, o: { limit: number; before?: string | undefined }): Promise<AuditRow[]>;
  /** The channel types one may create (for the form). */
  channelTypes(): readonly string[];
  /**
   * Stores a validated silence as the API does (the team's quota checked, audited); absent, the
   * console writes to the silence store itself.
   */
  createSilence?(viewer: Viewer, draft: SilenceDraft): Promise<Silence>;
  /**
   * Acknowledges an open, told episode (`{service, subject}`) of a subscription the viewer may
   * see, through the API's own path (`AckService.acknowledgeAs`, via `console`: tenancy, bounds,
   * audit); absent, the console offers no Acknowledge.
   */
  acknowledge?(
    viewer: Viewer,
    subscription: string,
    body: Record<string, unknown>,
  ): Promise<AckView>;
}
