/**
 * The endpoints of the upstream Read API (`client.ts`): for each method of `UpstreamClient`, the
 * path, route template and query it GETs and how its body becomes the model (a `Reader`: one
 * normalizer, or rows streamed into a collector). The transport (`transport.ts`) does the rest.
 */
import { UpstreamError } from './errors.js';
import { ServiceStateMemo } from './memo.js';
import type {
  IncidentList,
  ScoreRecord,
  ScoreReport,
  ServiceInfo,
  ServiceList,
  ServiceState,
  SlaRecord,
  SlaReport,
  StatusSnapshot,
  UpstreamResult,
} from './model.js';
import {
  normalizeIncidentList,
  normalizeOpaque,
  normalizeScoreRecord,
  normalizeScoreReport,
  normalizeService,
  normalizeServiceList,
  normalizeServiceState,
  normalizeSlaRecord,
  normalizeSlaReport,
  normalizeStatusSnapshot,
  incidentListCollector,
  scoreReportCollector,
  serviceListCollector,
  slaReportCollector,
  statusSnapshotCollector,
  type JsonValue,
  type Normalized,
  type RowCollector,
} from './normalize.js';
import { RowMemo } from './row-memo.js';
import { API_PREFIX, type Endpoint, type Reader, type Transport } from './transport.js';

export type StatusInclude = 'incidents' | 'maintenances' | 'details';

/** Bytes of incident rows remembered (row-memo.ts): about 10,000 open incidents. */
export const ROW_MEMO_BYTES = 8 * 1024 * 1024;

/** The endpoint methods of `UpstreamClient`. */
export interface UpstreamEndpoints {
  services(o?: { category?: string | undefined }): Promise<UpstreamResult<ServiceList>>;
  service(feedId: string): Promise<UpstreamResult<ServiceInfo>>;
  status(o?: { include?: StatusInclude | undefined }): Promise<UpstreamResult<StatusSnapshot>>;
  serviceStatus(
    feedId: string,
    o?: { compact?: boolean | undefined; include?: StatusInclude | undefined },
  ): Promise<UpstreamResult<ServiceState>>;
  incidents(): Promise<UpstreamResult<IncidentList>>;
  serviceIncidents(feedId: string): Promise<UpstreamResult<IncidentList>>;
  sla(o?: { month?: string | undefined }): Promise<UpstreamResult<SlaReport>>;
  serviceSla(
    feedId: string,
    o?: { month?: string | undefined },
  ): Promise<UpstreamResult<SlaRecord>>;
  scores(o?: { month?: string | undefined }): Promise<UpstreamResult<ScoreReport>>;
  serviceScores(
    feedId: string,
    o?: { month?: string | undefined },
  ): Promise<UpstreamResult<ScoreRecord>>;
  rankings(o?: { month?: string | undefined }): Promise<UpstreamResult<JsonValue>>;
  analytics(o?: { month?: string | undefined }): Promise<UpstreamResult<JsonValue>>;
}

/** A feedId as one encoded path segment; an empty, `.` or `..` one is refused. */
function seg(feedId: string): string {
  if (feedId === '' || feedId === '.' || feedId === '..') {
    throw new UpstreamError({
      code: 'upstream_invalid_request',
      status: null,
      endpoint: `${API_PREFIX}/…`,
      route: `${API_PREFIX}/…`,
      detail: `invalid feedId ${JSON.stringify(feedId)}`,
    });
  }
  return encodeURIComponent(feedId);
}

/** A list endpoint: its `data` rows streamed into `rows()` (remembered in `memo`, when given). */
function list<T>(
  n: (data: unknown, meta: unknown) => Normalized<T>,
  rows: () => RowCollector<T>,
  memo?: RowMemo,
): Reader<T> {
  return {
    normalize: (env) => n(env.data, env.meta),
    rows,
    ...(memo === undefined ? {} : { memo }),
  };
}

/**
 * A report endpoint (`data` an object with a summary and a list): the rows of its `rowsIn` list
 * streamed into `rows()`, its summary parsed whole. The lists of 20,000 services are 2–3 MB of
 * JSON; parsed whole, the body's text and parse tree were alive together with the model.
 */
function report<T>(
  n: (data: unknown) => Normalized<T>,
  rowsIn: string,
  rows: () => RowCollector<T>,
): Reader<T> {
  return { normalize: (env) => n(env.data), rows, rowsIn };
}

/** A single-object endpoint: its `data` normalized whole. */
function one<T>(n: (data: unknown) => Normalized<T>): Reader<T> {
  return { normalize: (env) => n(env.data) };
}

/** The endpoint methods over `transport`, with the memos they keep between calls. */
export function createEndpoints(transport: Transport): UpstreamEndpoints {
  /** Builds the request inside the promise: a synchronous argument error becomes a rejection. */
  async function get<T>(ep: () => Endpoint, reader: Reader<T>): Promise<UpstreamResult<T>> {
    return transport.get(ep(), reader);
  }

  // The rows of the last plain GET /status, reused by the next one (memo.ts).
  const statusMemo = new ServiceStateMemo();
  // The bytes of the last GET /incidents rows (row-memo.ts). Not status rows: each carries
  // check times that move with every upstream check, so they would seldom repeat.
  const incidentRows = new RowMemo(ROW_MEMO_BYTES);

  return {
    services: (q = {}) =>
      get(
        () => ({ path: '/services', route: '/services', query: { category: q.category } }),
        list(normalizeServiceList, () => serviceListCollector(statusMemo)),
      ),
    service: (feedId) =>
      get(
        () => ({ path: `/services/${seg(feedId)}`, route: '/services/{feedId}' }),
        one(normalizeService),
      ),
    status: (q = {}) =>
      get(
        () => ({ path: '/status', route: '/status', query: { include: q.include } }),
        list(normalizeStatusSnapshot, () =>
          statusSnapshotCollector(q.include === undefined ? statusMemo : undefined),
        ),
      ),
    serviceStatus: (feedId, q = {}) =>
      get(
        () => ({
          path: `/status/${seg(feedId)}`,
          route: '/status/{feedId}',
          query: { compact: q.compact === true ? '1' : undefined, include: q.include },
        }),
        one(normalizeServiceState),
      ),
    incidents: () =>
      get(
        () => ({ path: '/incidents', route: '/incidents' }),
        list(normalizeIncidentList, incidentListCollector, incidentRows),
      ),
    serviceIncidents: (feedId) =>
      get(
        () => ({ path: `/incidents/${seg(feedId)}`, route: '/incidents/{feedId}' }),
        list(normalizeIncidentList, incidentListCollector),
      ),
    sla: (q = {}) =>
      get(
        () => ({ path: '/sla', route: '/sla', query: { month: q.month } }),
        report(normalizeSlaReport, 'services', slaReportCollector),
      ),
    serviceSla: (feedId, q = {}) =>
      get(
        () => ({ path: `/sla/${seg(feedId)}`, route: '/sla/{feedId}', query: { month: q.month } }),
        one(normalizeSlaRecord),
      ),
    scores: (q = {}) =>
      get(
        () => ({ path: '/scores', route: '/scores', query: { month: q.month } }),
        report(normalizeScoreReport, 'scores', scoreReportCollector),
      ),
    serviceScores: (feedId, q = {}) =>
      get(
        () => ({
          path: `/scores/${seg(feedId)}`,
          route: '/scores/{feedId}',
          query: { month: q.month },
        }),
        one(normalizeScoreRecord),
      ),
    rankings: (q = {}) =>
      get(
        () => ({ path: '/rankings', route: '/rankings', query: { month: q.month } }),
        one(normalizeOpaque),
      ),
    analytics: (q = {}) =>
      get(
        () => ({ path: '/analytics', route: '/analytics', query: { month: q.month } }),
        one(normalizeOpaque),
      ),
  };
}
