/**
 * The one constant-time comparison of secrets (tokens, CSRF values, session proofs): both sides
 * are SHA-256 digests of equal length before `timingSafeEqual` sees them, so neither a secret's
 * content nor its length shows in the time an answer takes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The SHA-256 digest of a text (UTF-8). */
export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Constant-time equality of two digests. Digests of one kind have one length, so a length
 * mismatch (a malformed stored value) tells nothing secret and is simply false.
 */
export function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Constant-time equality of two secrets, hashed to equal length first; an empty one never matches. */
export function sameSecret(presented: string, expected: string): boolean {
  return sameDigest(sha256(presented), sha256(expected)) && presented.length > 0;
}
