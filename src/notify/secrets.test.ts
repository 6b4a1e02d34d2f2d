import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { headerSecrets, scrubDeliveryError, urlSecrets } from './secrets.js';
import { DeliveryError } from './types.js';

const URL_SECRET = 'https://hooks.slack.com/services/T0/B0/tok3n?x=1';

describe('scrubDeliveryError', () => {
  it('removes secrets from message, stack and the whole cause chain, keeping the verdict', () => {
    const root = Object.assign(new Error(`connect failed for ${URL_SECRET}`), {
      code: 'ECONNRESET',
      responseCode: 421,
    });
    const middle = new TypeError('fetch failed /services/T0/B0/tok3n?x=1', { cause: root });
    const wrapper = Object.assign(new Error('A request error occurred'), {
      original: middle,
      config: { url: URL_SECRET },
    });
    const error = new DeliveryError({
      message: `failed posting to ${URL_SECRET}`,
      retryable: true,
      reason: 'network',
      httpStatus: 503,
      retryAfterMs: 1000,
      cause: wrapper,
    });
    expect(inspect(error, { depth: 10 })).toContain('tok3n');

    const scrubbed = scrubDeliveryError(error, urlSecrets(URL_SECRET));
    const exposed = [
      inspect(scrubbed, { depth: 10, showHidden: true }),
      scrubbed.message,
      scrubbed.stack,
      JSON.stringify(scrubbed),
    ].join('\n');
    expect(exposed).not.toContain('tok3n');
    expect(exposed).toContain('[REDACTED]');
    expect(scrubbed).toMatchObject({
      retryable: true,
      reason: 'network',
      httpStatus: 503,
      retryAfterMs: 1000,
      code: 'delivery_retryable',
    });
    // The chain survives as plain errors with their codes.
    const cause = scrubbed.cause as Error & {
      cause: Error & { cause: Error & { code: string; responseCode: number } };
    };
    expect(cause.cause.cause.code).toBe('ECONNRESET');
    expect(cause.cause.cause.responseCode).toBe(421);
    // Library objects hanging off the original (a request config with the URL) are not carried.
    expect(Object.keys(cause)).not.toContain('config');
  });

  it('collects URL forms and sensitive header values', () => {
    expect(urlSecrets('https://user:p%40ss@x.example/a/b?token=1')).toEqual(
      expect.arrayContaining([
        'https://user:p%40ss@x.example/a/b?token=1',
        '/a/b?token=1',
        'token=1',
        'p%40ss',
        'p@ss',
      ]),
    );
    expect(headerSecrets({ Authorization: 'Bearer z', 'X-Team': 'sre', 'X-Api-Key': 'k' })).toEqual(
      ['Bearer z', 'k'],
    );
  });
});

describe('scrubDeliveryError and the operator-only detail', () => {
  it('removes secrets from the detail and keeps the rest of it', () => {
    const error = new DeliveryError({
      message: 'webhook: receiver answered HTTP 400 (rejected)',
      retryable: false,
      reason: 'client',
      httpStatus: 400,
      detail: `receiver said: bad token in ${URL_SECRET}`,
    });
    const scrubbed = scrubDeliveryError(error, urlSecrets(URL_SECRET));
    expect(scrubbed.detail).toBe('receiver said: bad token in [REDACTED]');
    expect(scrubbed.message).toBe(error.message);
    expect(scrubbed.httpStatus).toBe(400);
  });

  it('keeps a null detail null', () => {
    const error = new DeliveryError({ message: 'x', retryable: true, reason: 'network' });
    expect(scrubDeliveryError(error, ['s3cret']).detail).toBeNull();
  });
});
