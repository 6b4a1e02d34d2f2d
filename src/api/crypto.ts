/**
 * Secrets at rest: the secret fields of channels stored through the API are encrypted with
 * AES-256-GCM under `STATUSWATCH_SECRET_KEY` (32 random bytes, base64). Each ciphertext names
 * the key it was made with (a key id: a hash of the key, never the key), so after a rotation the
 * previous keys (`STATUSWATCH_SECRET_KEY_PREVIOUS`, comma-separated) still open old values and
 * `statuswatch secrets rotate` re-encrypts them under the current key.
 *
 *     swenc1.<keyId>.<iv>.<ciphertext>.<tag>      (base64url parts; iv 12 bytes, tag 16)
 *
 * The associated data binds a ciphertext to its slot (`channel:<name>:<field>`): a value copied
 * into another channel or field does not open.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { StatuswatchError } from '../errors.js';

export const SECRET_KEY_ENV = 'STATUSWATCH_SECRET_KEY';
export const PREVIOUS_KEYS_ENV = 'STATUSWATCH_SECRET_KEY_PREVIOUS';

const PREFIX = 'swenc1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends StatuswatchError {}

/** The id of a key: 12 hex digits of a hash of it (safe to store and print). */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256')
    .update('statuswatch-secret-key-id\0')
    .update(key)
    .digest('hex')
    .slice(0, 12);
}

/** A key from its base64 text; the error names the variable, never the value. */
export function parseKey(text: string, variable = SECRET_KEY_ENV): Buffer {
  const trimmed = text.trim();
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : null;
  if (key?.length !== KEY_BYTES) {
    throw new SecretKeyError(
      'secret_key_invalid',
      `${variable} must be ${KEY_BYTES} bytes in base64 (44 characters; make one with: openssl rand -base64 32)`,
    );
  }
  return key;
}

/** A new random key in base64, for `statuswatch secrets keygen` and tests. */
export function newKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** True when `text` is one of our ciphertexts (whatever its key). */
export function isCiphertext(text: unknown): text is string {
  return typeof text === 'string' && text.startsWith(`${PREFIX}.`);
}

/** The key id a ciphertext names, or undefined when it is not one. */
export function keyIdOfCiphertext(text: string): string | undefined {
  if (!isCiphertext(text)) return undefined;
  return text.split('.')[1];
}

/** Encrypts and decrypts under the current key; opens values made with any known key. */
export class SecretBox {
  readonly keyId: string;
  private readonly keys = new Map<string, Buffer>();

  constructor(
    private readonly current: Buffer,
    previous: readonly Buffer[] = [],
  ) {
    this.keyId = keyIdOf(current);
    this.keys.set(this.keyId, current);
    for (const key of previous) if (!this.keys.has(keyIdOf(key))) this.keys.set(keyIdOf(key), key);
  }

  /**
   * The box of the environment: null when `STATUSWATCH_SECRET_KEY` is unset or empty (secrets
   * cannot be stored then); a `SecretKeyError` when a key is malformed.
   */
  static fromEnv(env: Readonly<Record<string, string | undefined>>): SecretBox | null {
    const current = env[SECRET_KEY_ENV]?.trim() ?? '';
    if (current === '') return null;
    const previous = (env[PREVIOUS_KEYS_ENV] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map((s) => parseKey(s, PREVIOUS_KEYS_ENV));
    return new SecretBox(parseKey(current), previous);
  }

  /** Key ids this box can open. */
  knownKeyIds(): string[] {
    return [...this.keys.keys()];
  }

  encrypt(plaintext: string, slot: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(slot, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [
      PREFIX,
      this.keyId,
      iv.toString('base64url'),
      ct.toString('base64url'),
      tag.toString('base64url'),
    ].join('.');
  }

  /** The plaintext; a `SecretKeyError` when the key is unknown or the value was tampered with. */
  decrypt(text: string, slot: string): string {
    const parts = text.split('.');
    const [prefix, kid, iv, ct, tag] = parts;
    if (
      parts.length !== 5 ||
      prefix !== PREFIX ||
      kid === undefined ||
      iv === undefined ||
      ct === undefined ||
      tag === undefined
    ) {
      throw new SecretKeyError('secret_malformed', 'a stored secret is not in the expected format');
    }
    const key = this.keys.get(kid);
    if (key === undefined) {
      throw new SecretKeyError(
        'secret_key_unknown',
        `a stored secret was encrypted with key ${kid}, which is neither ${SECRET_KEY_ENV} (${this.keyId}) nor in ${PREVIOUS_KEYS_ENV}`,
      );
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(slot, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([
        decipher.update(Buffer.from(ct, 'base64url')),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        'secret_unreadable',
        `a stored secret does not open with key ${kid} (tampered, or moved)`,
      );
    }
  }

  /** Whether a ciphertext is under another key than the current one. */
  isStale(text: string): boolean {
    return keyIdOfCiphertext(text) !== this.keyId;
  }
}
