import { describe, expect, it } from 'vitest';
import { StatuswatchError, errorCode } from '../errors.js';
import {
  UpstreamError,
  codeForStatus,
  isRetryableCode,
  redactSecrets,
  sanitizeText,
  type UpstreamErrorCode,
} from './errors.js';

describe('status → code → retryable', () => {
  it.each([
    [400, 'upstream_http_error', false],
    [401, 'upstream_unauthorized', false],
    [403, 'upstream_forbidden', false],
    [404, 'upstream_not_found', false],
    [405, 'upstream_method_not_allowed', false],
    [409, 'upstream_http_error', false],
    [429, 'upstream_rate_limited', true],
    [500, 'upstream_server_error', true],
    [502, 'upstream_server_error', true],
    [503, 'upstream_unavailable', true],
    [504, 'upstream_server_error', true],
    [302, 'upstream_http_error', false],
  ] as const)('%d → %s (retryable %s)', (status, code, retryable) => {
    expect(codeForStatus(status)).toBe(code);
    expect(isRetryableCode(code)).toBe(retryable);
  });

  it.each([
    ['upstream_timeout', true],
    ['upstream_network', true],
    ['upstream_bad_envelope', false],
    ['upstream_body_too_large', false],
    ['upstream_invalid_request', false],
  ] as const)('%s retryable %s', (code: UpstreamErrorCode, retryable) => {
    expect(isRetryableCode(code)).toBe(retryable);
  });
});

describe('sanitizeText', () => {
  it('redacts secrets, strips control characters, truncates to 200', () => {
    const text = `bad key sk_live_123\r\nX-Injected: yes ${'x'.repeat(300)}`;
    const out = sanitizeText(text, ['sk_live_123']);
    expect(out).not.toContain('sk_live_123');
    expect(out).not.toMatch(/[\r\n]/);
    expect(out.startsWith('bad key [REDACTED] X-Injected: yes')).toBe(true);
    expect(out).toHaveLength(201);
    expect(out.endsWith('…')).toBe(true);
  });

  it('ignores empty secrets', () => {
    expect(redactSecrets('abc', [''])).toBe('abc');
    expect(redactSecrets('abcabc', ['b'])).toBe('a[REDACTED]ca[REDACTED]c');
  });
});

describe('UpstreamError', () => {
  it('is a StatuswatchError with code and transport facts', () => {
    const err = new UpstreamError({
      code: 'upstream_rate_limited',
      status: 429,
      endpoint: '/api/v1/status',
      route: '/api/v1/status',
      rateLimit: { limit: 30, remaining: 0, reset: 1700000060 },
      retryAfterSeconds: 12,
      upstreamMessage: 'Too many requests',
    });
    expect(err).toBeInstanceOf(StatuswatchError);
    expect(err.name).toBe('UpstreamError');
    expect(errorCode(err)).toBe('upstream_rate_limited');
    expect(err.retryable).toBe(true);
    expect(err.retryAfterSeconds).toBe(12);
    expect(err.message).toBe(
      'upstream GET /api/v1/status failed (upstream_rate_limited, HTTP 429); upstream said: "Too many requests"; retry after 12s',
    );
    expect(JSON.parse(JSON.stringify(err))).toMatchObject({
      code: 'upstream_rate_limited',
      status: 429,
      endpoint: '/api/v1/status',
      retryable: true,
      rateLimit: { limit: 30, remaining: 0, reset: 1700000060 },
    });
  });

  it('defaults: no rate limit, no retry-after, no upstream text', () => {
    const err = new UpstreamError({
      code: 'upstream_network',
      status: null,
      endpoint: '/api/v1/sla',
      route: '/api/v1/sla',
      detail: 'ECONNREFUSED',
    });
    expect(err.rateLimit).toEqual({ limit: null, remaining: null, reset: null });
    expect(err.retryAfterSeconds).toBeNull();
    expect(err.upstreamMessage).toBeNull();
    expect(err.message).toBe('upstream GET /api/v1/sla failed (upstream_network): ECONNREFUSED');
  });
});
