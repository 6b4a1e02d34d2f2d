/**
 * Logging in to the web console through its form, as a browser does: the tests that act through
 * a session (test/console-http.test.ts, test/console-acks.test.ts).
 */
import { expect } from 'vitest';

export interface ConsoleSession {
  /** `sw_session=…`: what a request sends as its `cookie` header. */
  cookie: string;
  /** The CSRF token of the session's pages (never empty). */
  csrf: string;
  /** The whole Set-Cookie header of the session cookie, attributes included. */
  setCookie: string;
}

/**
 * GET /login (the login form's cookie and CSRF token), POST it with `token` (a 303), then the
 * home page as the session: its cookie and the CSRF token its pages carry.
 */
export async function consoleLogin(base: string, token: string): Promise<ConsoleSession> {
  const page = await fetch(`${base}/login`);
  const loginCookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, token, next: '/' }),
  });
  expect(res.status).toBe(303);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('sw_session=')) ?? '';
  const cookie = setCookie.split(';')[0] ?? '';
  const home = await fetch(`${base}/`, { headers: { cookie } });
  const pageCsrf = /name="csrf" value="([^"]+)"/.exec(await home.text())?.[1] ?? '';
  expect(pageCsrf).not.toBe('');
  return { cookie, csrf: pageCsrf, setCookie };
}
