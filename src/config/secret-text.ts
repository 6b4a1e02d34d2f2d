/**
 * The text side of keeping secrets out of output: the `[REDACTED]` marker, which header names
 * hold credentials, and the forms a URL secret takes. A leaf module: channel kinds and the config
 * redaction both use it.
 */

export const REDACTED = '[REDACTED]';

const SENSITIVE_HEADER = /authorization|cookie|token|secret|signature|password|api-?key|auth/i;

/** True for header names whose values are treated as secrets. */
export function isSensitiveHeader(name: string): boolean {
  return SENSITIVE_HEADER.test(name);
}

/** Replaces every occurrence of each secret in `text` with `[REDACTED]` (longest first). */
export function redactText(text: string, secrets: readonly string[]): string {
  const ordered = [...secrets].filter((s) => s !== '').sort((a, b) => b.length - a.length);
  let out = text;
  for (const secret of ordered) out = out.split(secret).join(REDACTED);
  return out;
}

/** The password of a URL, encoded and decoded (none when the URL has none). */
export function urlPassword(url: string): string[] {
  if (!URL.canParse(url)) return [];
  const { password } = new URL(url);
  if (password === '') return [];
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // keep the encoded form only
  }
  return [password, decoded];
}

/** A URL as written and as normalized. */
export function urlForms(url: string): string[] {
  if (!URL.canParse(url)) return [url];
  const parsed = new URL(url);
  return [url, parsed.href];
}

/** `redis://user:[REDACTED]@host:6379/0`: keeps everything but the password. */
export function redactUrlPassword(url: string): string {
  if (!URL.canParse(url)) return REDACTED;
  if (new URL(url).password === '') return url;
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/]*:)[^@]*@/, `$1${REDACTED}@`);
}

/** `https://hooks.slack.com/[REDACTED]`: the origin stays readable, path and query do not. */
export function redactUrlPath(url: string): string {
  if (!URL.canParse(url)) return REDACTED;
  const parsed = new URL(url);
  const hidden = parsed.pathname.length > 1 || parsed.search !== '' || parsed.username !== '';
  return hidden ? `${parsed.origin}/${REDACTED}` : parsed.origin;
}
