import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYamlDocuments } from '../yaml.ts';
import type { Tools } from '../tools.ts';
import { testConfig, testTools } from '../../test/support/engine.ts';
import { decryptFileTextIfEncrypted, decryptIfEncrypted, SopsError } from './decrypt.ts';
import { isSopsEncrypted, sopsFormatOf, sopsKeysOf } from './metadata.ts';
import { createAgeKey, createGpgKey, sopsEncrypt, type AgeKey, type GpgKey } from './test-support.ts';

let age: AgeKey;
let otherAge: AgeKey;
let gpg: GpgKey;
let emptyGpgHome: GpgKey;
let tools: Tools;

beforeAll(async () => {
  // Only the keys a test passes may take part.
  for (const name of ['SOPS_AGE_KEY', 'SOPS_AGE_KEY_FILE', 'SOPS_AGE_KEY_CMD', 'GNUPGHOME', 'XDG_CONFIG_HOME']) delete process.env[name];
  tools = testTools();
  [age, otherAge, gpg, emptyGpgHome] = await Promise.all([createAgeKey(), createAgeKey(), createGpgKey(), createGpgKey()]);
}, 120_000);
afterAll(async () => {
  await Promise.all([age, otherAge, gpg, emptyGpgHome].map((key) => key?.remove()));
});

const plain = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s # keep\nstringData:\n  password: hunter2\n';

describe('sopsKeysOf', () => {
  it('lists the age and PGP keys of an encrypted file', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient, pgp: gpg.fingerprint, gnupgHome: gpg.home });
    expect(sopsKeysOf(encrypted, 'yaml')).toEqual([
      { type: 'age', id: age.recipient },
      { type: 'PGP', id: gpg.fingerprint },
    ]);
    expect(isSopsEncrypted(encrypted, 'yaml')).toBe(true);
  });

  it('finds JSON metadata', async () => {
    const encrypted = await sopsEncrypt('{"a": {"b": "secret"}}', 'json', { age: age.recipient });
    expect(sopsKeysOf(encrypted, 'json')).toEqual([{ type: 'age', id: age.recipient }]);
  });

  it('does not take plain files, a `sops` key without metadata, later documents or invalid YAML for encrypted ones', async () => {
    const encrypted = await sopsEncrypt('x: 1\n', 'yaml', { age: age.recipient });
    expect(isSopsEncrypted(plain, 'yaml')).toBe(false);
    expect(isSopsEncrypted('sops:\n  mac: none of mine\n', 'yaml')).toBe(false);
    expect(isSopsEncrypted(`plain: 1\n---\n${encrypted}`, 'yaml')).toBe(false);
    expect(isSopsEncrypted('sops: mac: [\n', 'yaml')).toBe(false);
  });

  it('picks the store from the extension as sops does', () => {
    expect([sopsFormatOf('a.yaml'), sopsFormatOf('a.YML'), sopsFormatOf('a.json'), sopsFormatOf('a.txt')]).toEqual([
      'yaml',
      'yaml',
      'json',
      undefined,
    ]);
  });
});

describe('decryptIfEncrypted', () => {
  it('decrypts with SOPS_AGE_KEY_FILE and keeps comments', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient });
    expect(encrypted).not.toContain('hunter2');
    const result = await decryptIfEncrypted(encrypted, {
      file: 'secret.yaml',
      format: 'yaml',
      tools,
      env: { SOPS_AGE_KEY_FILE: age.keyFile },
    });
    expect(result.decrypted).toBe(true);
    expect(parseYamlDocuments(result.text, 'x')).toEqual(parseYamlDocuments(plain, 'x'));
    expect(result.text).toContain('# keep');
  });

  it('decrypts with SOPS_AGE_KEY, every document of a multi-document file', async () => {
    const encrypted = await sopsEncrypt('a: 1\n---\nb: two\n', 'yaml', { age: age.recipient });
    const result = await decryptIfEncrypted(encrypted, { file: 'multi.yaml', format: 'yaml', tools, env: { SOPS_AGE_KEY: age.identity } });
    expect(parseYamlDocuments(result.text, 'x')).toEqual([{ a: 1 }, { b: 'two' }]);
  });

  it('decrypts JSON as JSON', async () => {
    const encrypted = await sopsEncrypt('{"a": {"b": "secret"}}', 'json', { age: age.recipient });
    const result = await decryptFileTextIfEncrypted(encrypted, { file: 'values.json', tools, env: { SOPS_AGE_KEY: age.identity } });
    expect(JSON.parse(result.text)).toEqual({ a: { b: 'secret' } });
  });

  it('decrypts with a PGP key from the keyring in GNUPGHOME', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { pgp: gpg.fingerprint, gnupgHome: gpg.home });
    const result = await decryptIfEncrypted(encrypted, { file: 'secret.yaml', format: 'yaml', tools, env: { GNUPGHOME: gpg.home } });
    expect(result.text).toContain('password: hunter2');
  });

  it('decrypts after templating changed an unencrypted value (the MAC is not checked, as in Kluctl)', async () => {
    const encrypted = await sopsEncrypt('name_unencrypted: a\npassword: hunter2\n', 'yaml', { age: age.recipient });
    const templated = encrypted.replace('name_unencrypted: a', 'name_unencrypted: rendered');
    const result = await decryptIfEncrypted(templated, { file: 'x.yaml', format: 'yaml', tools, env: { SOPS_AGE_KEY: age.identity } });
    expect(parseYamlDocuments(result.text, 'x')).toEqual([{ name_unencrypted: 'rendered', password: 'hunter2' }]);
  });

  it('returns plain text unchanged without running sops', async () => {
    expect(await decryptFileTextIfEncrypted(plain, { file: 'plain.yaml', tools })).toEqual({ text: plain, decrypted: false });
    expect(await decryptFileTextIfEncrypted('sops: {mac: x, version: 1}', { file: 'notes.txt', tools })).toEqual({
      text: 'sops: {mac: x, version: 1}',
      decrypted: false,
    });
  });
});

describe('missing keys', () => {
  it('names the file and the age recipient when no age identity is configured', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient });
    const error = await decryptIfEncrypted(encrypted, {
      file: 'app/secret.yaml',
      format: 'yaml',
      tools,
      env: { HOME: '/nonexistent' },
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SopsError);
    expect((error as Error).message).toBe(
      `app/secret.yaml: cannot decrypt with sops: no key to decrypt it is available: age recipient ${age.recipient} (neither SOPS_AGE_KEY_FILE nor SOPS_AGE_KEY is set, and /nonexistent/.config/sops/age/keys.txt has no identity for it)`,
    );
  });

  it('says which key file lacks the identity', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient });
    await expect(
      decryptIfEncrypted(encrypted, { file: 'secret.yaml', format: 'yaml', tools, env: { SOPS_AGE_KEY_FILE: otherAge.keyFile } }),
    ).rejects.toThrow(
      `secret.yaml: cannot decrypt with sops: no key to decrypt it is available: age recipient ${age.recipient} (not among the identities in SOPS_AGE_KEY_FILE (${otherAge.keyFile}))`,
    );
  });

  it('names the PGP fingerprint and the keyring it is missing from', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { pgp: gpg.fingerprint, gnupgHome: gpg.home });
    await expect(
      decryptIfEncrypted(encrypted, { file: 'secret.yaml', format: 'yaml', tools, env: { GNUPGHOME: emptyGpgHome.home } }),
    ).rejects.toThrow(
      `secret.yaml: cannot decrypt with sops: no key to decrypt it is available: PGP key ${gpg.fingerprint} (no secret key for it in the gpg keyring at ${emptyGpgHome.home}; set GNUPGHOME or import the key)`,
    );
  });

  it('says so when the sops binary is missing', async () => {
    const encrypted = await sopsEncrypt(plain, 'yaml', { age: age.recipient });
    const missing = testTools(testConfig({ tools: { ...testConfig().tools, sops: '/nonexistent/sops' } }));
    await expect(decryptIfEncrypted(encrypted, { file: 'secret.yaml', format: 'yaml', tools: missing })).rejects.toThrow(
      'secret.yaml: cannot decrypt with sops: /nonexistent/sops was not found on PATH: install sops (https://github.com/getsops/sops/releases) or set GANTRY_SOPS to its path',
    );
  });
});
