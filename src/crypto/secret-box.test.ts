import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { type SealContext, SecretBox } from './secret-box.ts';

const PLACE: SealContext = { table: 'git_repositories', column: 'credentials', row: 'repo-1' };

/** A value as Gantry sealed it before v2: AES-256-GCM without additional data, `v1.<iv>.<tag>.<ciphertext>`. */
function sealV1(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

describe('SecretBox', () => {
  const key = randomBytes(32);
  const box = new SecretBox(key);

  test('round-trips text and JSON, never showing the plaintext', () => {
    const sealed = box.seal('hunter2-password', PLACE);
    expect(sealed).not.toContain('hunter2');
    expect(sealed).toMatch(/^v2\./);
    expect(box.open(sealed, PLACE)).toBe('hunter2-password');
    expect(box.openJson(box.sealJson({ password: 'p', n: 1 }, PLACE), PLACE)).toEqual({ password: 'p', n: 1 });
  });

  test('seals the same value differently each time', () => {
    expect(box.seal('same', PLACE)).not.toBe(box.seal('same', PLACE));
  });

  test('refuses another key and altered ciphertext', () => {
    const sealed = box.seal('secret', PLACE);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, PLACE)).toThrow(/another encryption key/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), PLACE)).toThrow(/cannot decrypt/);
    expect(() => box.open('plain text', PLACE)).toThrow('secret git_repositories.credentials of repo-1: not a value sealed by this server');
  });

  test('a value moved to another row, column or table does not open, and the error names the place', () => {
    const sealed = box.seal('the credentials of repo-1', PLACE);
    for (const elsewhere of [
      { ...PLACE, row: 'repo-2' },
      { ...PLACE, column: 'configuration' },
      { ...PLACE, table: 'helm_repositories' },
    ]) {
      expect(() => box.open(sealed, elsewhere)).toThrow(
        `secret ${elsewhere.table}.${elsewhere.column} of ${elsewhere.row}: cannot decrypt (another encryption key, the value was altered, or it was sealed for another row or column)`,
      );
    }
    // Names cannot be run together into another place: the place is encoded as a JSON array.
    const dotted = box.seal('x', { table: 'a', column: 'b.c', row: 'd' });
    expect(() => box.open(dotted, { table: 'a.b', column: 'c', row: 'd' })).toThrow(/cannot decrypt/);
  });

  test('a tag cut short does not open, as GCM with a 4-byte tag would let a forger through after ~2^32 tries', () => {
    for (const sealed of [box.seal('secret', PLACE), sealV1(key, 'secret')]) {
      const parts = sealed.split('.');
      for (const bytes of [4, 8, 12, 15]) {
        parts[2] = Buffer.from(sealed.split('.')[2]!, 'base64url').subarray(0, bytes).toString('base64url');
        expect(() => box.open(parts.join('.'), PLACE)).toThrow(
          `secret git_repositories.credentials of repo-1: the authentication tag is ${bytes} bytes, not 16 (cut short?)`,
        );
      }
    }
  });

  test('a value sealed before v2 (no additional data) still opens, wherever it is read', () => {
    const old = sealV1(key, 'sealed by an older Gantry');
    expect(box.open(old, PLACE)).toBe('sealed by an older Gantry');
    expect(box.open(old, { ...PLACE, row: 'repo-2' })).toBe('sealed by an older Gantry');
    expect(() => new SecretBox(randomBytes(32)).open(old, PLACE)).toThrow(/cannot decrypt/);
  });

  test('reads base64 keys and names the source of a bad one', () => {
    expect(SecretBox.fromBase64(SecretBox.generateKey(), 'key.txt')).toBeInstanceOf(SecretBox);
    expect(() => SecretBox.fromBase64('c2hvcnQ=', '/etc/gantry/key')).toThrow(
      '/etc/gantry/key: the encryption key must be base64 of 32 bytes, got 5 bytes',
    );
  });
});
