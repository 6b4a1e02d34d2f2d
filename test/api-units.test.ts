/**
 * The pure parts of the tenancy API: AES-256-GCM secrets with key ids, the audit diff, request
 * splitting and masking, and the OpenAPI document built from the zod schemas.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { keyIdOf, newKey, parseKey, SecretBox, SecretKeyError } from '../src/api/crypto.js';
import { diffOf } from '../src/api/audit.js';
import { ApiError } from '../src/api/errors.js';
import {
  channelRequest,
  maskSecrets,
  subscriptionRequest,
  validateChannel,
} from '../src/api/model.js';
import { openApiDocument, ROUTES } from '../src/api/openapi.js';
import { parseTokenRequest } from '../src/api/tokens.js';

describe('secret box', () => {
  const k1 = newKey();
  const k2 = newKey();

  it('round-trips under the current key, names it, and opens old values with a previous key', () => {
    const old = SecretBox.fromEnv({ STATUSWATCH_SECRET_KEY: k1 })!;
    const text = old.encrypt('"https://hooks.example/T0/SECRET"', 'channel:a:url');
    expect(text).toMatch(new RegExp(`^swenc1\\.${keyIdOf(Buffer.from(k1, 'base64'))}\\.`));
    expect(text).not.toContain('SECRET');
    const next = SecretBox.fromEnv({
      STATUSWATCH_SECRET_KEY: k2,
      STATUSWATCH_SECRET_KEY_PREVIOUS: ` ${k1} `,
    })!;
    expect(next.decrypt(text, 'channel:a:url')).toBe('"https://hooks.example/T0/SECRET"');
    expect(next.isStale(text)).toBe(true);
    expect(next.isStale(next.encrypt('x', 's'))).toBe(false);
    // Two encryptions of one value differ (random IV).
    expect(old.encrypt('x', 's')).not.toBe(old.encrypt('x', 's'));
  });

  it('refuses another slot, a tampered value and an unknown key', () => {
    const box = new SecretBox(parseKey(k1));
    const text = box.encrypt('secret', 'channel:a:url');
    expect(() => box.decrypt(text, 'channel:b:url')).toThrow(SecretKeyError);
    const parts = text.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.decrypt(parts.join('.'), 'channel:a:url')).toThrow(/does not open/);
    expect(() => new SecretBox(parseKey(k2)).decrypt(text, 'channel:a:url')).toThrow(
      /neither STATUSWATCH_SECRET_KEY/,
    );
  });

  it('a malformed key is an error naming the variable, never the value', () => {
    for (const bad of ['short', Buffer.alloc(16).toString('base64'), 'not base64 at all!!']) {
      let message = '';
      try {
        SecretBox.fromEnv({ STATUSWATCH_SECRET_KEY: bad });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain('STATUSWATCH_SECRET_KEY must be 32 bytes in base64');
      expect(message).not.toContain(bad);
    }
    expect(SecretBox.fromEnv({})).toBeNull();
    expect(SecretBox.fromEnv({ STATUSWATCH_SECRET_KEY: '' })).toBeNull();
  });
});

describe('model', () => {
  it('splits name, team and source off a channel; masks its secrets', () => {
    const req = channelRequest({
      name: 'a',
      team: 't',
      source: 'api',
      type: 'webhook',
      url: 'https://x.example/p',
      secret: 's',
    });
    expect(req).toEqual({
      name: 'a',
      team: 't',
      spec: { type: 'webhook', url: 'https://x.example/p', secret: 's' },
    });
    expect(
      maskSecrets({
        type: 'email',
        to: ['a@b.example'],
        smtp: { host: 'h', auth: { user: 'u', pass: 'p' } },
      }),
    ).toEqual({
      type: 'email',
      to: ['a@b.example'],
      smtp: { host: 'h', auth: { user: 'u', pass: '<set>' } },
    });
  });

  it('names the field of every problem', () => {
    const fieldsOf = (fn: () => unknown): (string | null)[] => {
      try {
        fn();
      } catch (err) {
        if (err instanceof ApiError)
          return err.issues.length > 0 ? err.issues.map((i) => i.field) : [err.field];
      }
      return [];
    };
    expect(fieldsOf(() => validateChannel({ type: 'webhook', url: 3, extra: 1 }))).toEqual([
      'url',
      'secret',
      'extra',
    ]);
    expect(fieldsOf(() => subscriptionRequest({ name: 'x y', team: 5 }))).toEqual(['team', 'name']);
    expect(fieldsOf(() => subscriptionRequest({ services: ['*'] }, 'p'))).toEqual([]);
    expect(fieldsOf(() => subscriptionRequest({ name: 'q' }, 'p'))).toEqual(['name']);
    expect(
      fieldsOf(() => parseTokenRequest({ team: 'a', admin: 'yes', expiresAt: 'soon', x: 1 }, 0)),
    ).toEqual(['x', 'admin', 'expiresAt']);
    expect(fieldsOf(() => parseTokenRequest({ team: 'a', expiresAt: 1000 }, 2000))).toEqual([
      'expiresAt',
    ]);
  });

  it('diffs masked objects field by field', () => {
    expect(
      diffOf(
        { services: ['a'], group: '1m', quietHours: { timezone: 'UTC' } },
        { services: ['a', 'b'], quietHours: { timezone: 'UTC' }, repeat: '1h' },
      ),
    ).toEqual([
      { field: 'group', from: '1m' },
      { field: 'repeat', to: '1h' },
      { field: 'services', from: ['a'], to: ['a', 'b'] },
    ]);
  });
});

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1, lists every route, and carries the config schemas', async () => {
    const doc = openApiDocument();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.valid, JSON.stringify(result.errors)).toBe(true);
    const paths = doc.paths as Record<string, Record<string, { operationId: string }>>;
    for (const route of ROUTES) {
      expect(paths[route.path]?.[route.method.toLowerCase()]?.operationId).toBe(route.operationId);
    }
    const schemas = (
      doc.components as {
        schemas: Record<string, { oneOf?: { properties: Record<string, unknown> }[] }>;
      }
    ).schemas;
    const types = (schemas.ChannelInput?.oneOf ?? []).map(
      (m) => (m.properties.type as { const: string }).const,
    );
    expect(types).toEqual(['slack', 'email', 'webhook', 'teams', 'pagerduty', 'opsgenie']);
    expect(JSON.stringify(schemas.SubscriptionInput)).toContain('incident.opened');
  });
});
