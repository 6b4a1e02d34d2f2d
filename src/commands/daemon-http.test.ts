import { describe, expect, it } from 'vitest';
import { localDaemonUrl } from './daemon-http.js';

describe('localDaemonUrl', () => {
  it('is loopback when the ops server listens on every address', () => {
    for (const host of [undefined, '', '0.0.0.0', '::'])
      expect(localDaemonUrl({ host, port: 8080 }), String(host)).toBe('http://127.0.0.1:8080');
  });

  it('is the one address the ops server listens on', () => {
    expect(localDaemonUrl({ host: '127.0.0.5', port: 9000 })).toBe('http://127.0.0.5:9000');
    expect(localDaemonUrl({ host: '::1', port: 9000 })).toBe('http://[::1]:9000');
    expect(localDaemonUrl({ host: 'localhost', port: 9000 })).toBe('http://localhost:9000');
  });
});
