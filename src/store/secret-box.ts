/**
 * Encryption at rest for secrets in the database (git credentials, configuration values, service contexts):
 * AES-256-GCM from node:crypto with a 32-byte key the server is given (a file or an environment variable, never
 * the database). A sealed value is `v1.<iv>.<tag>.<ciphertext>` in base64url; the version prefix leaves room to
 * rotate keys later.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v1';

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

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** @throws Error when the value was sealed with another key or altered (it never returns wrong plaintext). */
  open(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined) {
      throw new Error('secret: not a value sealed by this server');
    }
    const decipher = createDecipheriv(ALGORITHM, this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('secret: cannot decrypt (another encryption key, or the value was altered)');
    }
  }

  sealJson(value: unknown): string {
    return this.seal(JSON.stringify(value));
  }

  openJson<T>(sealed: string): T {
    return JSON.parse(this.open(sealed)) as T;
  }
}
