/**
 * Real keys and real encryption for the sops tests: age keys from age-keygen, PGP keys from gpg in a throwaway
 * GNUPGHOME, and files encrypted by the sops binary (all found on PATH; the test setup puts .cluster/bin first).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run } from '../exec.ts';
import type { SopsFormat } from './metadata.ts';

export interface AgeKey {
  /** File holding the identity (SOPS_AGE_KEY_FILE). */
  keyFile: string;
  /** The identity itself (SOPS_AGE_KEY). */
  identity: string;
  recipient: string;
  remove(): Promise<void>;
}

export async function createAgeKey(): Promise<AgeKey> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-age-'));
  const keyFile = path.join(dir, 'keys.txt');
  await run('age-keygen', ['-o', keyFile]);
  const recipient = (await run('age-keygen', ['-y', keyFile])).stdout.trim();
  const identity = (await readFile(keyFile, 'utf8')).split('\n').find((line) => line.startsWith('AGE-SECRET-KEY-')) ?? '';
  return { keyFile, identity, recipient, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface GpgKey {
  /** The GNUPGHOME holding the key pair. */
  home: string;
  fingerprint: string;
  /** Stops the gpg-agent gpg started for this home and deletes the home. */
  remove(): Promise<void>;
}

/** A passphrase-less PGP key pair in a new GNUPGHOME (short path: gpg-agent's socket path is length-limited). */
export async function createGpgKey(): Promise<GpgKey> {
  const home = await mkdtemp('/tmp/gantry-gpg-');
  const env = { GNUPGHOME: home };
  await run('gpg', ['--batch', '--passphrase', '', '--quick-gen-key', 'Gantry Test <test@gantry.dev>', 'default', 'default', 'never'], {
    env,
  });
  const listing = (await run('gpg', ['--batch', '--list-secret-keys', '--with-colons'], { env })).stdout;
  const fingerprint =
    listing
      .split('\n')
      .find((line) => line.startsWith('fpr:'))
      ?.split(':')[9] ?? '';
  return {
    home,
    fingerprint,
    async remove() {
      await run('gpgconf', ['--kill', 'all'], { env }).catch(() => undefined);
      await rm(home, { recursive: true, force: true });
    },
  };
}

export interface EncryptOptions {
  age?: string;
  pgp?: string;
  /** GNUPGHOME holding the PGP key. */
  gnupgHome?: string;
  /** Only keys matching it are encrypted (sops --encrypted-regex), e.g. `^(data|stringData)$`. */
  encryptedRegex?: string;
}

/** Encrypts `text` with the sops binary to the given age recipient and/or PGP fingerprint. */
export async function sopsEncrypt(text: string, format: SopsFormat, to: EncryptOptions): Promise<string> {
  const args = ['encrypt', '--filename-override', `file.${format}`];
  if (to.age) args.push('--age', to.age);
  if (to.pgp) args.push('--pgp', to.pgp);
  if (to.encryptedRegex) args.push('--encrypted-regex', to.encryptedRegex);
  // A scratch cwd, so no .sops.yaml of the machine takes part.
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'gantry-sops-'));
  try {
    return (await run('sops', args, { input: text, cwd, env: to.gnupgHome ? { GNUPGHOME: to.gnupgHome } : undefined })).stdout;
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}
