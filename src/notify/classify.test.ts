import { describe, expect, it } from 'vitest';
import {
  classifyError,
  classifyHttpStatus,
  NETWORK_FAILURE,
  parseRetryAfter,
  TIMEOUT_FAILURE,
} from './classify.js';
import { DeliveryError, type FailureReason } from './types.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('classifyHttpStatus', () => {
  const table: [status: number, verdict: null | { retryable: boolean; reason: FailureReason }][] = [
    [200, null],
    [201, null],
    [204, null],
    [299, null],
    [408, { retryable: true, reason: 'timeout' }],
    [429, { retryable: true, reason: 'rate_limited' }],
    [500, { retryable: true, reason: 'server' }],
    [502, { retryable: true, reason: 'server' }],
    [503, { retryable: true, reason: 'server' }],
    [504, { retryable: true, reason: 'server' }],
    [599, { retryable: true, reason: 'server' }],
    [401, { retryable: false, reason: 'auth' }],
    [403, { retryable: false, reason: 'auth' }],
    [400, { retryable: false, reason: 'client' }],
    [404, { retryable: false, reason: 'client' }],
    [410, { retryable: false, reason: 'client' }],
    [413, { retryable: false, reason: 'client' }],
    [422, { retryable: false, reason: 'client' }],
    [301, { retryable: false, reason: 'client' }],
    [302, { retryable: false, reason: 'client' }],
    [100, { retryable: false, reason: 'client' }],
  ];

  it.each(table)('HTTP %i → %o', (status, verdict) => {
    const error = classifyHttpStatus(status, undefined, NOW);
    if (verdict === null) {
      expect(error).toBeNull();
      return;
    }
    expect(error).toBeInstanceOf(DeliveryError);
    expect({ retryable: error?.retryable, reason: error?.reason }).toEqual(verdict);
    expect(error?.httpStatus).toBe(status);
    expect(error?.code).toBe(verdict.retryable ? 'delivery_retryable' : 'delivery_permanent');
    expect(error?.message).toContain(String(status));
  });

  it('carries Retry-After seconds on 429 and 503', () => {
    expect(classifyHttpStatus(429, '7', NOW)?.retryAfterMs).toBe(7000);
    expect(classifyHttpStatus(503, '120', NOW)?.retryAfterMs).toBe(120_000);
  });

  it('carries a Retry-After HTTP-date relative to now', () => {
    const date = new Date(NOW + 30_000).toUTCString();
    expect(classifyHttpStatus(429, date, NOW)?.retryAfterMs).toBe(30_000);
  });

  it('ignores Retry-After on permanent failures and when absent', () => {
    expect(classifyHttpStatus(404, '7', NOW)?.retryAfterMs).toBeNull();
    expect(classifyHttpStatus(429, undefined, NOW)?.retryAfterMs).toBeNull();
  });
});

describe('parseRetryAfter', () => {
  const table: [header: string | string[] | null | undefined, expected: number | null][] = [
    ['7', 7000],
    [' 0 ', 0],
    [['3', '9'], 3000],
    ['Thu, 01 Jan 2026 12:01:00 GMT', 60_000],
    ['Thu, 01 Jan 2026 11:00:00 GMT', 0],
    ['-5', null],
    ['1.5', null],
    ['soon', null],
    ['', null],
    [null, null],
    [undefined, null],
  ];
  it.each(table)('%j → %j', (header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
  });
});

function errnoError(code: string, message = `connect ${code} 127.0.0.1:1`): Error {
  return Object.assign(new Error(message), { code });
}

function smtpReply(code: string, responseCode: number, response: string): Error {
  return Object.assign(new Error(`Message failed: ${response}`), { code, responseCode, response });
}

describe('classifyError', () => {
  const table: [name: string, error: unknown, retryable: boolean, reason: FailureReason][] = [
    ['ECONNREFUSED', errnoError('ECONNREFUSED'), true, 'network'],
    ['ECONNRESET', errnoError('ECONNRESET'), true, 'network'],
    ['ENOTFOUND', errnoError('ENOTFOUND'), true, 'network'],
    ['EAI_AGAIN', errnoError('EAI_AGAIN'), true, 'network'],
    ['EHOSTUNREACH', errnoError('EHOSTUNREACH'), true, 'network'],
    ['UND_ERR_SOCKET', errnoError('UND_ERR_SOCKET'), true, 'network'],
    // A connect timeout reads as any network failure (a filtered port as a closed one).
    ['UND_ERR_CONNECT_TIMEOUT', errnoError('UND_ERR_CONNECT_TIMEOUT'), true, 'network'],
    ['UND_ERR_HEADERS_TIMEOUT', errnoError('UND_ERR_HEADERS_TIMEOUT'), true, 'timeout'],
    ['UND_ERR_BODY_TIMEOUT', errnoError('UND_ERR_BODY_TIMEOUT'), true, 'timeout'],
    ['ETIMEDOUT (nodemailer)', errnoError('ETIMEDOUT'), true, 'timeout'],
    // The egress policy's SMTP socket: a connect timeout reads as any network failure too.
    ['ECONNECT_TIMEOUT (egressSocket)', errnoError('ECONNECT_TIMEOUT'), true, 'network'],
    ['EGRESS_DENIED', errnoError('EGRESS_DENIED'), false, 'policy'],
    ['ESOCKET (nodemailer)', errnoError('ESOCKET'), true, 'network'],
    ['ECONNECTION (nodemailer)', errnoError('ECONNECTION'), true, 'network'],
    [
      'ESOCKET with originalCode ECONNREFUSED',
      Object.assign(errnoError('ESOCKET'), { originalCode: 'ECONNREFUSED' }),
      true,
      'network',
    ],
    ['EAUTH with 535', smtpReply('EAUTH', 535, '535 5.7.8 Authentication failed'), false, 'auth'],
    [
      'EAUTH with 454 (temporary)',
      smtpReply('EAUTH', 454, '454 4.7.0 Temporary authentication failure'),
      true,
      'server',
    ],
    ['EAUTH without a reply code', errnoError('EAUTH'), false, 'auth'],
    ['SMTP 550 at RCPT', smtpReply('EENVELOPE', 550, '550 Mailbox unavailable'), false, 'client'],
    ['SMTP 554 at DATA', smtpReply('EMESSAGE', 554, '554 Rejected'), false, 'client'],
    ['SMTP 451 at DATA', smtpReply('EMESSAGE', 451, '451 Try again later'), true, 'server'],
    ['SMTP 421', smtpReply('EPROTOCOL', 421, '421 Service not available'), true, 'server'],
    ['SMTP 452', smtpReply('EENVELOPE', 452, '452 Too many recipients'), true, 'server'],
    ['SMTP 503 (bad sequence)', smtpReply('EPROTOCOL', 503, '503 Bad sequence'), true, 'server'],
    ['SMTP 530', smtpReply('EENVELOPE', 530, '530 Authentication required'), false, 'auth'],
    [
      'fetch failed wrapping ECONNREFUSED',
      new TypeError('fetch failed', { cause: errnoError('ECONNREFUSED') }),
      true,
      'network',
    ],
    [
      'AggregateError of ECONNREFUSED',
      new AggregateError([errnoError('ECONNREFUSED'), errnoError('ECONNREFUSED')], 'all failed'),
      true,
      'network',
    ],
    [
      '@slack/webhook request error (original)',
      Object.assign(new Error('A request error occurred: fetch failed'), {
        code: 'slack_webhook_request_error',
        original: new TypeError('fetch failed', { cause: errnoError('ECONNRESET') }),
      }),
      true,
      'network',
    ],
    [
      'AbortSignal.timeout',
      new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      true,
      'timeout',
    ],
    ['ERR_INVALID_URL', errnoError('ERR_INVALID_URL', 'Invalid URL'), false, 'config'],
    ['unknown error', new Error('boom'), true, 'network'],
    ['a string', 'boom', true, 'network'],
  ];

  it.each(table)('%s', (_name, error, retryable, reason) => {
    const verdict = classifyError(error);
    expect(verdict).toBeInstanceOf(DeliveryError);
    expect({ retryable: verdict.retryable, reason: verdict.reason }).toEqual({ retryable, reason });
    expect(verdict.httpStatus).toBeNull();
    expect(verdict.cause).toBe(error);
  });

  it("prefers nodemailer's originalCode in the detail", () => {
    const error = Object.assign(errnoError('ESOCKET'), { originalCode: 'ECONNREFUSED' });
    expect(classifyError(error).detail).toBe('connection refused (ECONNREFUSED)');
  });

  it('passes a DeliveryError through unchanged', () => {
    const original = new DeliveryError({ message: 'x', retryable: false, reason: 'client' });
    expect(classifyError(original)).toBe(original);
  });

  it('keeps the code and the SMTP reply in the detail, never the library message', () => {
    const refused = classifyError(
      errnoError('ECONNREFUSED', 'connect ECONNREFUSED https://secret.example/path'),
    );
    expect(refused.message).toBe(NETWORK_FAILURE);
    expect(refused.detail).toBe('connection refused (ECONNREFUSED)');
    const smtp = classifyError(
      smtpReply('EENVELOPE', 550, '550 5.1.1 <a@b>: Mailbox\r\nunavailable'),
    );
    expect(smtp.message).toBe('SMTP rejected the message (SMTP 550)');
    expect(smtp.detail).toBe('550: 550 5.1.1 <a@b>: Mailbox unavailable');
  });

  it('says one thing to a team for every network failure, whatever its cause', () => {
    const causes = [
      errnoError('ECONNREFUSED'),
      errnoError('ECONNRESET'),
      errnoError('ENOTFOUND'),
      errnoError('EAI_AGAIN'),
      errnoError('EHOSTUNREACH'),
      errnoError('UND_ERR_SOCKET'),
      errnoError('UND_ERR_CONNECT_TIMEOUT'),
      errnoError('ETLS'),
      errnoError('ESOCKET'),
      errnoError('HPE_INVALID_CONSTANT'),
      new TypeError('fetch failed', { cause: errnoError('ECONNREFUSED') }),
      new Error('boom'),
    ];
    const seen = causes.map((e) => {
      const v = classifyError(e);
      return { message: v.message, reason: v.reason, retryable: v.retryable, http: v.httpStatus };
    });
    expect(new Set(seen.map((s) => JSON.stringify(s))).size).toBe(1);
    expect(seen[0]).toEqual({
      message: NETWORK_FAILURE,
      reason: 'network',
      retryable: true,
      http: null,
    });
    // The operator still tells them apart.
    expect(classifyError(errnoError('ECONNREFUSED')).detail).toContain('ECONNREFUSED');
    expect(classifyError(errnoError('UND_ERR_SOCKET')).detail).toContain('UND_ERR_SOCKET');
  });

  it("never puts an SMTP server's words in the message", () => {
    const canary = 'CANARY-7f3a greeting text';
    for (const [code, reply] of [
      ['EPROTOCOL', 421],
      ['EENVELOPE', 550],
      ['EAUTH', 535],
      ['EAUTH', 454],
      ['EMESSAGE', 451],
    ] as const) {
      const verdict = classifyError(smtpReply(code, reply, `${reply} ${canary}`));
      expect(verdict.message).not.toContain('CANARY');
      expect(verdict.detail).toContain(canary);
    }
  });

  it('reads a greeting that is not SMTP as an unreachable receiver', () => {
    const verdict = classifyError(
      smtpReply('EPROTOCOL', Number('HTT'), 'HTTP/1.1 400 Bad Request CANARY'),
    );
    expect(verdict).toMatchObject({ message: NETWORK_FAILURE, reason: 'network' });
  });

  it('tells a timeout of a receiver that took the request by its own words', () => {
    expect(classifyError(errnoError('UND_ERR_HEADERS_TIMEOUT'))).toMatchObject({
      message: TIMEOUT_FAILURE,
      reason: 'timeout',
      detail: 'response headers timeout (UND_ERR_HEADERS_TIMEOUT)',
    });
  });
});
