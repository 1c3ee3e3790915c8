/**
 * Encryption at rest for secrets in the database (git credentials, configuration values, service contexts):
 * AES-256-GCM from node:crypto with a 32-byte key the server is given (a file or an environment variable, never
 * the database).
 *
 * A sealed value is `v2.<iv>.<tag>.<ciphertext>` in base64url: a 12-byte IV (NIST SP 800-38D's recommended length),
 * the full 16-byte tag, and as additional authenticated data the place it is kept (SealContext: table, column and
 * row), so a value copied into another row or column fails to open instead of handing one row's secret to another
 * (an attacker who can write the database but has no key). Opening demands a 16-byte tag: Node's `setAuthTag`
 * takes any length from 4 bytes unless the decipher is made with `authTagLength` (Node's crypto docs), and a short
 * tag is forged with far fewer tries (SP 800-38D, appendix C).
 *
 * `v1.` values (before v2: no additional data) still open; they are sealed as v2 when their row is next written.
 * A migration cannot do it: migrations run when the database opens, without the key.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v2';
/** Sealed without additional data, before v2: opened, never written. */
const LEGACY_VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Where a sealed value is kept: the table, the column (or a field of a JSON column, e.g. `template.configuration`)
 * and the row's key (its id, or the unique name an upsert finds it by).
 */
export interface SealContext {
  table: string;
  column: string;
  row: string;
}

/**
 * Seals and opens values with one 32-byte key (a copy is kept; the caller's buffer may be cleared). Synchronous and
 * stateless beyond the key, so one instance is shared by the whole process; nothing to close. Sealed values are
 * ASCII text (base64url parts joined by `.`), about 4/3 of the plaintext's UTF-8 bytes plus ~43 characters.
 */
export class SecretBox {
  readonly #key: Buffer;

  /** @throws Error unless `key` is 32 bytes. */
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`encryption key: need 32 bytes (base64 of 32 random bytes), got ${key.length}`);
    this.#key = Buffer.from(key);
  }

  /**
   * Reads a key given as base64 (the form `gantry server` writes and `openssl rand -base64 32` prints).
   * @param source says where the text came from, for the error message (a file path or an environment variable).
   * @throws Error naming `source` when the text is not base64 of 32 bytes.
   */
  static fromBase64(text: string, source: string): SecretBox {
    const key = Buffer.from(text.trim(), 'base64');
    if (key.length !== 32) throw new Error(`${source}: the encryption key must be base64 of 32 bytes, got ${key.length} bytes`);
    return new SecretBox(key);
  }

  /** A new random key, base64. */
  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  /** `plaintext` sealed (v2) for the place `context` names; a new random IV each time. */
  seal(plaintext: string, context: SealContext): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /**
   * The plaintext of a value sealed for `context` (or a v1 value, sealed before places were bound).
   * @throws Error naming the place when the value is not sealed by this server, its tag is not 16 bytes, or it
   *   does not open: another key, altered, or moved from another row or column. It never returns wrong plaintext.
   */
  open(sealed: string, context: SealContext): string {
    const where = `${context.table}.${context.column} of ${context.row}`;
    const [version, iv, tag, ciphertext, ...rest] = sealed.split('.');
    if (
      (version !== VERSION && version !== LEGACY_VERSION) ||
      iv === undefined ||
      tag === undefined ||
      ciphertext === undefined ||
      rest.length > 0
    ) {
      throw new Error(`secret ${where}: not a value sealed by this server`);
    }
    const ivBytes = Buffer.from(iv, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    if (ivBytes.length !== IV_BYTES) throw new Error(`secret ${where}: the IV is ${ivBytes.length} bytes, not ${IV_BYTES}`);
    if (tagBytes.length !== TAG_BYTES)
      throw new Error(`secret ${where}: the authentication tag is ${tagBytes.length} bytes, not ${TAG_BYTES} (cut short?)`);
    const decipher = createDecipheriv(ALGORITHM, this.#key, ivBytes, { authTagLength: TAG_BYTES });
    if (version === VERSION) decipher.setAAD(additionalData(context));
    decipher.setAuthTag(tagBytes);
    try {
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error(
        `secret ${where}: cannot decrypt (another encryption key, the value was altered, or it was sealed for another row or column)`,
      );
    }
  }

  sealJson(value: unknown, context: SealContext): string {
    return this.seal(JSON.stringify(value), context);
  }

  openJson<T>(sealed: string, context: SealContext): T {
    return JSON.parse(this.open(sealed, context)) as T;
  }
}

/** The place as GCM's additional data: a JSON array, so no name's characters can make two places read alike. */
function additionalData(context: SealContext): Buffer {
  return Buffer.from(JSON.stringify(['gantry-sealed', context.table, context.column, context.row]), 'utf8');
}
