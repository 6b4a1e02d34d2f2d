/**
 * A local stand-in for the Opsgenie Alert API (https://docs.opsgenie.com/docs/alert-api), written
 * from Opsgenie's documentation, for the demo and the tests: node:http on 127.0.0.1.
 *
 * - Every request needs `Authorization: GenieKey <apiKey>`; anything else is 401.
 * - `POST /v2/alerts` creates an alert. `message` is mandatory (≤ 130 characters), `alias`
 *   ≤ 512, `description` ≤ 15000, `priority` P1..P5, `tags` ≤ 20 of ≤ 50 characters, `details` a
 *   map of strings, `responders` typed team/user/escalation/schedule with id, name or username.
 *   A create whose alias has an open alert is deduplicated: that alert's `count` goes up.
 * - `POST /v2/alerts/{identifier}/close`, `POST /v2/alerts/{identifier}/notes` (note mandatory)
 *   and `PUT /v2/alerts/{identifier}/priority` act on an alert by `identifierType` id (default),
 *   alias or tiny.
 * - Valid requests are answered 202 `{"result":"Request will be processed","took":…,"requestId":…}`
 *   and processed at once; what became of each is in `requestStatuses` (and
 *   `GET /v2/alerts/requests/{requestId}`), as Opsgenie reports it — closing an unknown alias is
 *   accepted and then fails there with "Alert does not exist".
 * - Invalid JSON is 400; semantic errors 422 `{"message":"Request body is not processable…",
 *   "errors":{field: reason},…}`; unknown paths 404; wrong methods 405.
 * - `failNext(status, count, headers)` scripts the next answers (429, 500, 400, 422, 404…).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseJson, startReceiverServer } from './http.js';

export const OPSGENIE_RECEIVER_API_KEY = 'eb243592-faa2-4ba2-a551-1afdf565c889';

export interface OpsgenieReceiverOptions {
  /** The API key the receiver accepts (default `OPSGENIE_RECEIVER_API_KEY`). */
  apiKey?: string;
  /** Called with each request once it is answered (the demo prints it). */
  onRequest?: (request: RecordedOpsgenieRequest) => void;
}

export interface RecordedOpsgenieRequest {
  method: string;
  /** Decoded path without the query: `/v2/alerts/statuswatch:stripe:status/close`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw text when it is not JSON, null when empty). */
  body: unknown;
  raw: string;
  /** The status the receiver answered. */
  status: number;
}

export interface OpsgenieResponder {
  type: string;
  id?: string;
  name?: string;
  username?: string;
}

export interface OpsgenieAlert {
  id: string;
  tinyId: string;
  alias: string;
  status: 'open' | 'closed';
  /** How many creates it absorbed (Opsgenie's deduplication count). */
  count: number;
  message: string;
  description: string;
  priority: string;
  tags: string[];
  details: Record<string, string>;
  entity: string;
  source: string;
  responders: OpsgenieResponder[];
  notes: string[];
}

export interface OpsgenieRequestStatus {
  success: boolean;
  action: 'Create' | 'Close' | 'AddNote' | 'UpdatePriority';
  status: string;
  alertId: string;
  alias: string;
}

interface Scripted {
  status: number;
  headers: Record<string, string>;
  body: string | undefined;
  match: ((request: RecordedOpsgenieRequest) => boolean) | undefined;
}

export interface OpsgenieReceiver {
  /** The API base to configure as the channel's `url`: `http://127.0.0.1:<port>`. */
  url: string;
  apiKey: string;
  requests: RecordedOpsgenieRequest[];
  /** Alias → the latest alert with that alias (an alias is free again once its alert is closed). */
  alerts: Map<string, OpsgenieAlert>;
  /** Every alert ever created, oldest first. */
  history: OpsgenieAlert[];
  requestStatuses: Map<string, OpsgenieRequestStatus>;
  /** The next `count` requests (any endpoint) are answered `status`, with `headers` and an Opsgenie-style body. */
  failNext(status: number, count?: number, headers?: Record<string, string>, body?: string): void;
  /** Like `failNext`, for the next `count` requests that `match` (others are served normally). */
  failOn(
    match: (request: RecordedOpsgenieRequest) => boolean,
    status: number,
    count?: number,
    headers?: Record<string, string>,
  ): void;
  close(): Promise<void>;
}

const LIMITS = {
  message: 130,
  alias: 512,
  description: 15_000,
  entity: 512,
  source: 100,
  user: 100,
  note: 25_000,
  tags: 20,
  tag: 50,
  responders: 50,
  details: 8_000,
} as const;

const PRIORITIES = new Set(['P1', 'P2', 'P3', 'P4', 'P5']);
const RESPONDER_TYPES = new Set(['team', 'user', 'escalation', 'schedule']);

const VENDOR_MESSAGES: Record<number, string> = {
  400: 'Invalid JSON body',
  401: 'Key format is not valid!',
  403: 'You are not authorized to perform this action',
  404: 'Could not find resource',
  405: 'Method not allowed',
  415: 'Unsupported media type',
  422: 'Request body is not processable. Please check the errors.',
  429: 'You are making too many requests! To avoid errors, we recommend you limit requests.',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

function took(): number {
  return Math.round(Math.random() * 300) / 1000;
}

function errorBody(status: number, errors?: Record<string, string>): string {
  return JSON.stringify({
    message: VENDOR_MESSAGES[status] ?? 'Request could not be processed',
    ...(errors === undefined ? {} : { errors }),
    took: took(),
    requestId: randomUUID(),
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function optionalString(
  body: Record<string, unknown>,
  key: string,
  max: number,
  errors: Record<string, string>,
): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    errors[key] = `${key} should be a string`;
    return undefined;
  }
  if (value.length > max) errors[key] = `${key} can not be longer than ${max} characters`;
  return value;
}

function validateResponders(value: unknown, errors: Record<string, string>): OpsgenieResponder[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    errors.responders = 'responders should be a list';
    return [];
  }
  if (value.length > LIMITS.responders) errors.responders = `at most ${LIMITS.responders}`;
  const responders: OpsgenieResponder[] = [];
  value.forEach((item: unknown, index) => {
    if (!isRecord(item) || typeof item.type !== 'string' || !RESPONDER_TYPES.has(item.type)) {
      errors[`responders[${index}]#type`] = 'Invalid responder type';
      return;
    }
    const { id, name, username } = item;
    const named = item.type === 'user' ? username : name;
    if (typeof id !== 'string' && typeof named !== 'string') {
      errors[`responders[${index}]`] =
        item.type === 'user'
          ? 'User responder should have id or username'
          : `${item.type} responder should have id or name`;
      return;
    }
    responders.push({
      type: item.type,
      ...(typeof id === 'string' ? { id } : {}),
      ...(typeof name === 'string' ? { name } : {}),
      ...(typeof username === 'string' ? { username } : {}),
    });
  });
  return responders;
}

/** The documented field checks of create-alert; errors keyed by field. */
function validateCreate(body: Record<string, unknown>): {
  errors: Record<string, string>;
  alert: Omit<OpsgenieAlert, 'id' | 'tinyId' | 'status' | 'count' | 'notes'>;
} {
  const errors: Record<string, string> = {};
  const message = body.message;
  if (typeof message !== 'string' || message.trim() === '') {
    errors.message = 'Message can not be empty.';
  } else if (message.length > LIMITS.message) {
    errors.message = `Message can not be longer than ${LIMITS.message} characters`;
  }
  const alias = optionalString(body, 'alias', LIMITS.alias, errors);
  const description = optionalString(body, 'description', LIMITS.description, errors);
  const entity = optionalString(body, 'entity', LIMITS.entity, errors);
  const source = optionalString(body, 'source', LIMITS.source, errors);
  optionalString(body, 'user', LIMITS.user, errors);
  optionalString(body, 'note', LIMITS.note, errors);
  const priority = body.priority ?? 'P3';
  if (typeof priority !== 'string' || !PRIORITIES.has(priority)) {
    errors.priority = 'Priority should be one of [P1, P2, P3, P4, P5]';
  }
  const tags: string[] = [];
  if (body.tags !== undefined && body.tags !== null) {
    if (!Array.isArray(body.tags) || !body.tags.every((t): t is string => typeof t === 'string')) {
      errors.tags = 'tags should be a list of strings';
    } else {
      if (body.tags.length > LIMITS.tags) errors.tags = `at most ${LIMITS.tags} tags`;
      if (body.tags.some((t) => t.length > LIMITS.tag)) {
        errors.tags = `a tag can not be longer than ${LIMITS.tag} characters`;
      }
      tags.push(...body.tags);
    }
  }
  const details: Record<string, string> = {};
  if (body.details !== undefined && body.details !== null) {
    if (!isRecord(body.details)) {
      errors.details = 'details should be a map';
    } else {
      let size = 0;
      for (const [key, value] of Object.entries(body.details)) {
        if (typeof value !== 'string') {
          errors[`details#${key}`] = 'detail values should be strings';
          continue;
        }
        details[key] = value;
        size += key.length + value.length;
      }
      if (size > LIMITS.details)
        errors.details = `details can not exceed ${LIMITS.details} characters`;
    }
  }
  const responders = validateResponders(body.responders, errors);
  return {
    errors,
    alert: {
      alias: alias ?? '',
      message: typeof message === 'string' ? message : '',
      description: description ?? '',
      priority: typeof priority === 'string' ? priority : 'P3',
      tags,
      details,
      entity: entity ?? '',
      source: source ?? '',
      responders,
    },
  };
}

function parseQuery(search: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of search) query[key] = value;
  return query;
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** A local Opsgenie Alert API on 127.0.0.1, port chosen by the system. */
export async function startOpsgenieReceiver(
  options: OpsgenieReceiverOptions = {},
): Promise<OpsgenieReceiver> {
  const apiKey = options.apiKey ?? OPSGENIE_RECEIVER_API_KEY;
  const requests: RecordedOpsgenieRequest[] = [];
  const alerts = new Map<string, OpsgenieAlert>();
  const history: OpsgenieAlert[] = [];
  const byId = new Map<string, OpsgenieAlert>();
  const requestStatuses = new Map<string, OpsgenieRequestStatus>();
  const scripted: Scripted[] = [];
  let tiny = 0;

  function find(identifier: string, type: string): OpsgenieAlert | undefined {
    if (type === 'alias') return alerts.get(identifier);
    if (type === 'tiny') return history.find((a) => a.tinyId === identifier);
    return byId.get(identifier);
  }

  function accepted(
    action: OpsgenieRequestStatus['action'],
    outcome: { alert: OpsgenieAlert | undefined; status: string; identifier?: string },
  ): { status: number; body: string } {
    const requestId = randomUUID();
    requestStatuses.set(requestId, {
      success: outcome.alert !== undefined,
      action,
      status: outcome.status,
      alertId: outcome.alert?.id ?? '',
      alias: outcome.alert?.alias ?? '',
    });
    return {
      status: 202,
      body: JSON.stringify({ result: 'Request will be processed', took: took(), requestId }),
    };
  }

  function create(body: Record<string, unknown>): { status: number; body: string } {
    const { errors, alert: fields } = validateCreate(body);
    if (Object.keys(errors).length > 0) return { status: 422, body: errorBody(422, errors) };
    const open = fields.alias === '' ? undefined : alerts.get(fields.alias);
    if (open?.status === 'open') {
      // Deduplication: one open alert per alias; a repeat only raises its count.
      open.count += 1;
      return accepted('Create', { alert: open, status: 'Alert deduplicated' });
    }
    const id = randomUUID();
    tiny += 1;
    const alert: OpsgenieAlert = {
      ...fields,
      alias: fields.alias === '' ? id : fields.alias,
      id,
      tinyId: String(tiny),
      status: 'open',
      count: 1,
      notes: typeof body.note === 'string' && body.note !== '' ? [body.note] : [],
    };
    alerts.set(alert.alias, alert);
    byId.set(id, alert);
    history.push(alert);
    return accepted('Create', { alert, status: 'Created alert' });
  }

  function act(
    action: 'close' | 'notes' | 'priority',
    alert: OpsgenieAlert | undefined,
    body: Record<string, unknown>,
  ): { status: number; body: string } {
    const errors: Record<string, string> = {};
    optionalString(body, 'user', LIMITS.user, errors);
    optionalString(body, 'source', LIMITS.source, errors);
    const note = optionalString(body, 'note', LIMITS.note, errors);
    if (action === 'notes' && (note === undefined || note.trim() === '')) {
      errors.note = 'Note can not be empty.';
    }
    const priority = body.priority;
    if (action === 'priority' && (typeof priority !== 'string' || !PRIORITIES.has(priority))) {
      errors.priority = 'Priority should be one of [P1, P2, P3, P4, P5]';
    }
    if (Object.keys(errors).length > 0) return { status: 422, body: errorBody(422, errors) };
    const kind = action === 'close' ? 'Close' : action === 'notes' ? 'AddNote' : 'UpdatePriority';
    if (alert === undefined) return accepted(kind, { alert, status: 'Alert does not exist' });
    if (note !== undefined && note !== '') alert.notes.push(note);
    if (action === 'close') {
      const wasOpen = alert.status === 'open';
      alert.status = 'closed';
      return accepted(kind, {
        alert,
        status: wasOpen ? 'Closed alert' : 'Alert is already closed',
      });
    }
    if (action === 'priority' && typeof priority === 'string') alert.priority = priority;
    return accepted(kind, {
      alert,
      status: action === 'notes' ? 'Added note' : 'Updated priority',
    });
  }

  function route(
    entry: RecordedOpsgenieRequest,
    path: string,
  ): { status: number; body: string; headers?: Record<string, string> } {
    const { method, query, headers, raw } = entry;
    const at = scripted.findIndex((s) => s.match === undefined || s.match(entry));
    const next = at === -1 ? undefined : scripted.splice(at, 1)[0];
    if (next !== undefined) {
      return {
        status: next.status,
        headers: next.headers,
        body: next.body ?? errorBody(next.status),
      };
    }
    if (headers.authorization !== `GenieKey ${apiKey}`)
      return { status: 401, body: errorBody(401) };

    const segments = path.split('/').filter((s) => s !== '');
    if (segments[0] !== 'v2' || segments[1] !== 'alerts')
      return { status: 404, body: errorBody(404) };

    if (method === 'GET' && segments.length === 4 && segments[2] === 'requests') {
      const status = requestStatuses.get(segments[3] ?? '');
      if (status === undefined) return { status: 404, body: errorBody(404) };
      return {
        status: 200,
        body: JSON.stringify({
          data: { ...status, isSuccess: status.success },
          took: took(),
          requestId: randomUUID(),
        }),
      };
    }

    const expectsBody = segments.length === 2 || segments.length === 4;
    if (!expectsBody) return { status: 404, body: errorBody(404) };
    if (raw !== '' && !(headers['content-type'] ?? '').toLowerCase().includes('application/json')) {
      return { status: 415, body: errorBody(415) };
    }
    const body = raw === '' ? {} : parseJson(raw);
    if (body === undefined) return { status: 400, body: errorBody(400) };
    if (!isRecord(body)) return { status: 400, body: errorBody(400) };

    if (segments.length === 2) {
      return method === 'POST' ? create(body) : { status: 405, body: errorBody(405) };
    }
    const identifier = decodeSegment(segments[2] ?? '');
    const action = segments[3];
    const type = query.identifierType ?? 'id';
    if (identifier === null || !['id', 'alias', 'tiny'].includes(type)) {
      return {
        status: 422,
        body: errorBody(422, {
          identifierType: 'identifierType should be one of [id, alias, tiny]',
        }),
      };
    }
    const wanted = action === 'priority' ? 'PUT' : 'POST';
    if (action !== 'close' && action !== 'notes' && action !== 'priority') {
      return { status: 404, body: errorBody(404) };
    }
    if (method !== wanted) return { status: 405, body: errorBody(405) };
    return act(action, find(identifier, type), body);
  }

  const server = await startReceiverServer(({ method, url, headers, body }) => {
    const raw = body.toString('utf8');
    const segments = url.pathname.split('/').map((s) => decodeSegment(s) ?? s);
    const parsed = raw === '' ? null : (parseJson(raw) ?? raw);
    const entry: RecordedOpsgenieRequest = {
      method,
      path: segments.join('/'),
      query: parseQuery(url.searchParams),
      headers,
      body: parsed,
      raw,
      status: 0,
    };
    requests.push(entry);
    const answer = route(entry, url.pathname);
    entry.status = answer.status;
    options.onRequest?.(entry);
    return {
      status: answer.status,
      headers: {
        'content-type': 'application/json',
        'x-request-id': randomUUID(),
        'x-response-time': String(took()),
        ...answer.headers,
      },
      body: answer.body,
    };
  });

  return {
    url: server.origin,
    apiKey,
    requests,
    alerts,
    history,
    requestStatuses,
    failNext(status, count = 1, headers = {}, body) {
      for (let i = 0; i < count; i++) scripted.push({ status, headers, body, match: undefined });
    },
    failOn(match, status, count = 1, headers = {}) {
      for (let i = 0; i < count; i++) scripted.push({ status, headers, body: undefined, match });
    },
    close: () => server.close(),
  };
}
