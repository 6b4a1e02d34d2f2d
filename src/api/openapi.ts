/**
 * The routes of `/api/v1` as data, and the OpenAPI 3.1 document built from them and from the zod
 * schemas (`z.toJSONSchema`): the channel and subscription bodies are the config file's own
 * schemas, so the document cannot drift from what the API validates. `http.ts` dispatches on the
 * same list (every operation has a handler, type-checked), and a test walks the document.
 */
import { z } from 'zod';
import { EVENT_KINDS } from '../config/events.js';
import { silenceRequestSchema, silenceSchema } from '../silences/model.js';
import { channelConfigSchema, subscriptionSchema } from './model.js';
import { ackRequestSchema, ackViewSchema } from './acks.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './pages.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RouteSpec {
  method: Method;
  /** OpenAPI path template. */
  path: string;
  operationId: string;
  summary: string;
  /** Only admin tokens (403 for team tokens). */
  admin?: boolean;
  /** No token needed. */
  public?: boolean;
  /** Component schema of the JSON body. */
  body?: string;
  query?: readonly {
    name: string;
    description: string;
    schema: Record<string, unknown>;
    required?: boolean;
  }[];
  /** Success status → component schema name (or null: no body schema). */
  ok: Readonly<Record<number, string>>;
}

const NAME_PARAM = 'name';

/** `limit` and `cursor` of the paged lists (pages.ts); each answer's `next` is the next cursor. */
const PAGE_QUERY = [
  {
    name: 'limit',
    description: `at most this many (1-${String(MAX_PAGE_SIZE)}, default ${String(DEFAULT_PAGE_SIZE)})`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE },
  },
  {
    name: 'cursor',
    description: 'the `next` of the previous page (absent: the first page)',
    schema: { type: 'string' },
  },
] as const;

export const ROUTES = [
  {
    method: 'GET',
    path: '/api/v1/subscriptions',
    operationId: 'listSubscriptions',
    summary: "Subscriptions: the team's own (admins: all, with the config file's)",
    query: PAGE_QUERY,
    ok: { 200: 'SubscriptionList' },
  },
  {
    method: 'POST',
    path: '/api/v1/subscriptions',
    operationId: 'createSubscription',
    summary: 'Create a subscription (409 when the name is taken)',
    body: 'SubscriptionInput',
    ok: { 201: 'Subscription' },
  },
  {
    method: 'GET',
    path: '/api/v1/subscriptions/{name}',
    operationId: 'getSubscription',
    summary: 'One subscription',
    ok: { 200: 'Subscription' },
  },
  {
    method: 'PUT',
    path: '/api/v1/subscriptions/{name}',
    operationId: 'putSubscription',
    summary: 'Create or replace a subscription',
    body: 'SubscriptionInput',
    ok: { 200: 'Subscription', 201: 'Subscription' },
  },
  {
    method: 'DELETE',
    path: '/api/v1/subscriptions/{name}',
    operationId: 'deleteSubscription',
    summary: 'Delete a subscription (closings of what it was told are still delivered for 7 days)',
    ok: { 200: 'Deleted' },
  },
  {
    method: 'POST',
    path: '/api/v1/subscriptions/{name}/acks',
    operationId: 'acknowledge',
    summary:
      "Acknowledge an open episode of a subscription (a team's own; admins: any): its reminders stop until the closing (docs/acting-on-alerts.md)",
    body: 'AckInput',
    ok: { 201: 'Ack', 200: 'Ack' },
  },
  {
    method: 'GET',
    path: '/api/v1/channels',
    operationId: 'listChannels',
    summary: 'Channels: the config file\'s and the team\'s own (admins: all); secrets read "<set>"',
    query: PAGE_QUERY,
    ok: { 200: 'ChannelList' },
  },
  {
    method: 'POST',
    path: '/api/v1/channels',
    operationId: 'createChannel',
    summary: 'Create a channel (secret fields encrypted at rest, write-only)',
    body: 'ChannelInput',
    ok: { 201: 'Channel' },
  },
  {
    method: 'GET',
    path: '/api/v1/channels/{name}',
    operationId: 'getChannel',
    summary: 'One channel (secrets read "<set>")',
    ok: { 200: 'Channel' },
  },
  {
    method: 'PUT',
    path: '/api/v1/channels/{name}',
    operationId: 'putChannel',
    summary: 'Create or replace a channel; a secret field sent as "<set>" keeps its stored value',
    body: 'ChannelInput',
    ok: { 200: 'Channel', 201: 'Channel' },
  },
  {
    method: 'DELETE',
    path: '/api/v1/channels/{name}',
    operationId: 'deleteChannel',
    summary: 'Delete a channel no subscription uses (409 otherwise)',
    ok: { 200: 'Deleted' },
  },
  {
    method: 'POST',
    path: '/api/v1/channels/{name}/test',
    operationId: 'testChannel',
    summary: 'Send one test notification through the channel (what notify-test does)',
    ok: { 200: 'TestResult' },
  },
  {
    method: 'GET',
    path: '/api/v1/channels/{name}/preview',
    operationId: 'previewChannel',
    summary: 'What the channel would receive for a sample event (what render prints)',
    query: [
      {
        name: 'event',
        description: 'event kind',
        required: true,
        schema: { type: 'string', enum: [...EVENT_KINDS] },
      },
    ],
    ok: { 200: 'Preview' },
  },
  {
    method: 'GET',
    path: '/api/v1/services',
    operationId: 'searchServices',
    summary: 'Search the cached upstream catalog by feedId or name',
    query: [
      {
        name: 'query',
        description: 'substring of the feedId or name (case-insensitive); empty: all',
        schema: { type: 'string' },
      },
      {
        name: 'limit',
        description: 'at most this many (1-500, default 50)',
        schema: { type: 'integer', minimum: 1, maximum: 500 },
      },
    ],
    ok: { 200: 'ServiceList' },
  },
  {
    method: 'GET',
    path: '/api/v1/audit',
    operationId: 'readAudit',
    summary: "Changes made through the API, newest first (teams: their own objects')",
    query: [
      {
        name: 'limit',
        description: 'at most this many (1-1000, default 100)',
        schema: { type: 'integer', minimum: 1, maximum: 1000 },
      },
      {
        name: 'before',
        description: 'entries older than this entry id (paging)',
        schema: { type: 'string' },
      },
    ],
    ok: { 200: 'AuditList' },
  },
  {
    method: 'GET',
    path: '/api/v1/silences',
    operationId: 'listSilences',
    summary:
      "Active and pending silences: those limited to the team's own subscriptions (admins: all)",
    query: [
      {
        name: 'all',
        description: '1 or true: include silences that ended within the last 7 days',
        schema: { type: 'string', enum: ['1', 'true', '0', 'false'] },
      },
      ...PAGE_QUERY,
    ],
    ok: { 200: 'SilenceList' },
  },
  {
    method: 'POST',
    path: '/api/v1/silences',
    operationId: 'createSilence',
    summary:
      "Create a silence (what POST /admin/silences takes); a team's must have a subscriptions matcher naming only its own subscriptions",
    body: 'SilenceInput',
    ok: { 201: 'Silence' },
  },
  {
    method: 'GET',
    path: '/api/v1/silences/{id}',
    operationId: 'getSilence',
    summary: 'One silence',
    ok: { 200: 'Silence' },
  },
  {
    method: 'DELETE',
    path: '/api/v1/silences/{id}',
    operationId: 'deleteSilence',
    summary: 'Expire a silence now (it stays listable with all=1 for 7 days)',
    ok: { 200: 'Silence' },
  },
  {
    method: 'POST',
    path: '/api/v1/silences/{id}/expire',
    operationId: 'expireSilence',
    summary: 'Expire a silence now (the same as DELETE)',
    ok: { 200: 'Silence' },
  },
  {
    method: 'GET',
    path: '/api/v1/tokens',
    operationId: 'listTokens',
    summary: 'Every token (admins)',
    admin: true,
    query: PAGE_QUERY,
    ok: { 200: 'TokenList' },
  },
  {
    method: 'POST',
    path: '/api/v1/tokens',
    operationId: 'createToken',
    summary: 'Create a token; its text is shown once (admins)',
    admin: true,
    body: 'TokenRequest',
    ok: { 201: 'CreatedToken' },
  },
  {
    method: 'DELETE',
    path: '/api/v1/tokens/{id}',
    operationId: 'revokeToken',
    summary: 'Revoke a token at once (admins)',
    admin: true,
    ok: { 200: 'Token' },
  },
  {
    method: 'POST',
    path: '/api/v1/secrets/rotate',
    operationId: 'rotateSecrets',
    summary: 'Re-encrypt stored secrets under the current STATUSWATCH_SECRET_KEY (admins)',
    admin: true,
    ok: { 200: 'RotateResult' },
  },
  {
    method: 'GET',
    path: '/api/v1/openapi.json',
    operationId: 'openapi',
    summary: 'This document',
    public: true,
    ok: { 200: 'OpenApiDocument' },
  },
] as const satisfies readonly RouteSpec[];

export type OperationId = (typeof ROUTES)[number]['operationId'];

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType): Json {
  const out = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as Json;
  delete out.$schema;
  return out;
}

const META_PROPERTIES: Json = {
  team: { type: ['string', 'null'], description: 'the owning team (null: the config file)' },
  source: {
    type: 'string',
    enum: ['api', 'config'],
    description: 'config-file entries are read-only',
  },
};

/** Each member of the channel union with `name`, `team` and `source` added. */
function channelSchemas(): { input: Json; output: Json } {
  const union = jsonSchema(channelConfigSchema);
  const members = (union.oneOf ?? union.anyOf ?? []) as Json[];
  const withName = (member: Json, output: boolean): Json => {
    const properties = (member.properties ?? {}) as Json;
    const required = (member.required ?? []) as string[];
    return {
      ...member,
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' },
        ...properties,
        ...(output
          ? META_PROPERTIES
          : { team: { type: 'string' }, source: { type: 'string', const: 'api' } }),
      },
      required: output ? ['name', ...required, 'team', 'source'] : required,
      // Secrets read "<set>" (a map of headers too): the output is not strict about them.
      ...(output ? { additionalProperties: true } : {}),
    };
  };
  return {
    input: {
      oneOf: members.map((m) => withName(m, false)),
      description:
        'a config-file channel with its name; secret fields may be "<set>" to keep the stored value',
    },
    output: {
      oneOf: members.map((m) => withName(m, true)),
      description: 'secret fields read "<set>"',
    },
  };
}

function subscriptionSchemas(): { input: Json; output: Json } {
  const base = jsonSchema(subscriptionSchema);
  const properties = (base.properties ?? {}) as Json;
  return {
    input: {
      ...base,
      properties: {
        ...properties,
        team: { type: 'string' },
        source: { type: 'string', const: 'api' },
      },
    },
    output: {
      ...base,
      properties: { ...properties, ...META_PROPERTIES },
      required: [...((base.required ?? []) as string[]), 'team', 'source'],
    },
  };
}

/** A stored silence with its state at the server's clock (what /admin/silences returns too). */
function silenceOutput(): Json {
  const base = jsonSchema(silenceSchema);
  return {
    ...base,
    properties: {
      ...((base.properties ?? {}) as Json),
      state: { type: 'string', enum: ['active', 'pending', 'expired'] },
    },
    required: [...((base.required ?? []) as string[]), 'state'],
    description: 'times are Unix milliseconds',
  };
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const list = (key: string, item: string, next = NEXT): Json => ({
  type: 'object',
  properties: { [key]: { type: 'array', items: ref(item) }, next },
  required: [key],
});
const NEXT: Json = {
  type: ['string', 'null'],
  description: 'the cursor of the next page (pass it as `cursor`); null on the last page',
};

function components(): Json {
  const channel = channelSchemas();
  const subscription = subscriptionSchemas();
  const tokenView = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      team: { type: 'string' },
      admin: { type: 'boolean' },
      createdAt: { type: 'string', format: 'date-time' },
      createdBy: { type: 'string' },
      expiresAt: { type: ['string', 'null'], format: 'date-time' },
      revokedAt: { type: ['string', 'null'], format: 'date-time' },
      state: { type: 'string', enum: ['active', 'expired', 'revoked'] },
    },
    required: ['id', 'team', 'admin', 'createdAt', 'expiresAt', 'revokedAt', 'state'],
  };
  return {
    Error: {
      type: 'object',
      properties: {
        error: {
          type: 'object',
          properties: {
            code: { type: 'string' },
            message: { type: 'string' },
            field: { type: ['string', 'null'], description: 'the offending field of the request' },
            issues: {
              type: 'array',
              items: {
                type: 'object',
                properties: { field: { type: 'string' }, message: { type: 'string' } },
              },
            },
          },
          required: ['code', 'message', 'field'],
        },
      },
      required: ['error'],
    },
    Channel: channel.output,
    ChannelInput: channel.input,
    ChannelList: list('channels', 'Channel'),
    Subscription: subscription.output,
    SubscriptionInput: subscription.input,
    SubscriptionList: list('subscriptions', 'Subscription'),
    Deleted: {
      type: 'object',
      properties: {
        deleted: { type: 'string' },
        closingsOwedUntil: { type: 'string', format: 'date-time' },
      },
      required: ['deleted'],
    },
    TestResult: {
      type: 'object',
      properties: { ok: { type: 'boolean' }, message: { type: 'string' } },
      required: ['ok', 'message'],
    },
    Preview: {
      type: 'object',
      properties: {
        channel: { type: 'string' },
        event: { type: 'string' },
        preview: { type: 'string' },
      },
      required: ['channel', 'event', 'preview'],
    },
    Silence: silenceOutput(),
    SilenceInput: jsonSchema(silenceRequestSchema),
    SilenceList: list('silences', 'Silence'),
    Service: {
      type: 'object',
      properties: {
        feedId: { type: 'string' },
        name: { type: 'string' },
        canonicalUrl: { type: ['string', 'null'] },
        officialStatusUrl: { type: ['string', 'null'] },
      },
      required: ['feedId', 'name'],
    },
    ServiceList: {
      type: 'object',
      properties: {
        services: { type: 'array', items: ref('Service') },
        total: { type: 'integer' },
        catalogUpdatedAt: { type: ['string', 'null'], format: 'date-time' },
      },
      required: ['services', 'total'],
    },
    AuditEntry: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        at: { type: 'string', format: 'date-time' },
        tokenId: { type: 'string' },
        actorTeam: { type: ['string', 'null'] },
        team: { type: 'string' },
        action: {
          type: 'string',
          enum: ['create', 'update', 'delete', 'revoke', 'rotate', 'expire', 'acknowledge'],
        },
        kind: {
          type: 'string',
          enum: ['channel', 'subscription', 'token', 'secrets', 'silence', 'ack'],
        },
        name: { type: 'string' },
        address: { type: 'string' },
        diff: {
          type: 'array',
          items: {
            type: 'object',
            properties: { field: { type: 'string' }, from: {}, to: {} },
            required: ['field'],
          },
        },
      },
      required: ['id', 'at', 'tokenId', 'team', 'action', 'kind', 'name', 'diff'],
    },
    AuditList: list('entries', 'AuditEntry', {
      type: ['string', 'null'],
      description: 'the entry id to pass as `before` for the next page; null when no more',
    }),
    Token: tokenView,
    TokenList: list('tokens', 'Token'),
    TokenRequest: {
      type: 'object',
      properties: {
        team: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' },
        admin: { type: 'boolean' },
        expiresAt: {
          oneOf: [{ type: 'string', format: 'date-time' }, { type: 'integer' }, { type: 'null' }],
        },
      },
      required: ['team'],
      additionalProperties: false,
    },
    CreatedToken: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        team: { type: 'string' },
        admin: { type: 'boolean' },
        expiresAt: { type: ['string', 'null'], format: 'date-time' },
        token: { type: 'string', description: 'shown once; only its hash is stored' },
      },
      required: ['id', 'team', 'token'],
    },
    RotateResult: {
      type: 'object',
      properties: {
        keyId: { type: 'string' },
        rotated: { type: 'integer' },
        current: { type: 'integer' },
        unreadable: { type: 'array', items: { type: 'string' } },
      },
      required: ['keyId', 'rotated', 'current', 'unreadable'],
    },
    OpenApiDocument: { type: 'object' },
    AckInput: jsonSchema(ackRequestSchema),
    Ack: jsonSchema(ackViewSchema),
  };
}

const ERROR_STATUSES: Record<number, string> = {
  400: 'invalid request (the error names the field)',
  401: 'missing, wrong, expired or revoked token',
  403: 'not allowed for this token',
  404: "no such object (or another team's)",
  409: "name taken, the object is in use, or a team quota is reached (code quota_exceeded, the message names the limit's config key)",
  413: 'body larger than 1 MB',
  429: 'too many failed attempts from this address',
};

let cached: Json | null = null;

/** The OpenAPI 3.1 document of `/api/v1` (built once). */
export function openApiDocument(version = '0.1.0'): Json {
  if (cached !== null) return cached;
  const paths: Record<string, Json> = {};
  for (const route of ROUTES as readonly RouteSpec[]) {
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema:
        m[1] === NAME_PARAM
          ? { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' }
          : { type: 'string' },
    }));
    const query = (route.query ?? []).map((q) => ({
      name: q.name,
      in: 'query',
      required: q.required === true,
      description: q.description,
      schema: q.schema,
    }));
    const responses: Json = {};
    for (const [status, schema] of Object.entries(route.ok)) {
      responses[status] = {
        description: 'OK',
        content: { 'application/json': { schema: ref(schema) } },
      };
    }
    const errors = route.public === true ? [] : Object.keys(ERROR_STATUSES).map(Number);
    for (const status of errors) {
      if (
        route.body === undefined &&
        (status === 413 || status === 409) &&
        route.method !== 'DELETE'
      )
        continue;
      responses[String(status)] = {
        description: ERROR_STATUSES[status] ?? 'error',
        content: { 'application/json': { schema: ref('Error') } },
      };
    }
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.path.split('/')[3] ?? 'api'],
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(route.body === undefined
        ? {}
        : {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: ref(route.body) } },
            },
          }),
      responses,
      ...(route.public === true ? { security: [] } : {}),
    };
    paths[route.path] ??= {};
    (paths[route.path] as Json)[route.method.toLowerCase()] = operation;
  }
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'statuswatch API',
      version,
      description:
        'Teams manage their own subscriptions, channels and silences. Bearer tokens: the config file\'s server.adminToken, or tokens an admin creates (POST /api/v1/tokens). A team token sees only its team\'s objects. Errors are {"error": {"code", "message", "field"}}.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: components(),
    },
  };
  return cached;
}
