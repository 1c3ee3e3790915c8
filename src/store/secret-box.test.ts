import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { SecretBox } from './secret-box.ts';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  test('round-trips text and JSON, never showing the plaintext', () => {
    const sealed = box.seal('hunter2-password');
    expect(sealed).not.toContain('hunter2');
    expect(sealed).toMatch(/^v1\./);
    expect(box.open(sealed)).toBe('hunter2-password');
    expect(box.openJson(box.sealJson({ password: 'p', n: 1 }))).toEqual({ password: 'p', n: 1 });
  });

  test('seals the same value differently each time', () => {
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  test('refuses another key and altered ciphertext', () => {
    const sealed = box.seal('secret');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(/another encryption key/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow(/cannot decrypt/);
    expect(() => box.open('plain text')).toThrow(/not a value sealed/);
  });

  test('reads base64 keys and names the source of a bad one', () => {
    expect(SecretBox.fromBase64(SecretBox.generateKey(), 'key.txt')).toBeInstanceOf(SecretBox);
    expect(() => SecretBox.fromBase64('c2hvcnQ=', '/etc/gantry/key')).toThrow(
      '/etc/gantry/key: the encryption key must be base64 of 32 bytes, got 5 bytes',
    );
  });
});
