/**
 * Where `gantry server` gets the key that seals secrets in its database: `--encryption-key-file`, else
 * `$GANTRY_ENCRYPTION_KEY` (base64 of 32 bytes, e.g. `openssl rand -base64 32`). With the embedded database and
 * neither given, a key is made at first start in the data folder (mode 0600), so a single server needs no setup;
 * with PostgreSQL one must be given, as every replica has to share it.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SecretBox } from '../crypto/secret-box.ts';

export interface KeySources {
  file?: string;
  env: NodeJS.ProcessEnv;
  /** The data folder, when the database is the embedded one. */
  dataDir?: string;
}

/** @throws Error naming the file or variable with a bad key, or saying what to give for PostgreSQL. */
export async function loadEncryptionKey(sources: KeySources): Promise<SecretBox> {
  if (sources.file) return SecretBox.fromBase64(await readFile(sources.file, 'utf8'), sources.file);
  const fromEnv = sources.env['GANTRY_ENCRYPTION_KEY'];
  if (fromEnv) return SecretBox.fromBase64(fromEnv, 'GANTRY_ENCRYPTION_KEY');
  if (!sources.dataDir) {
    throw new Error('a server on PostgreSQL needs --encryption-key-file or GANTRY_ENCRYPTION_KEY (the same key on every replica)');
  }
  const file = join(sources.dataDir, 'encryption.key');
  const existing = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing !== undefined) return SecretBox.fromBase64(existing, file);
  const key = SecretBox.generateKey();
  await mkdir(dirname(file), { recursive: true });
  // wx: two servers starting on one folder cannot both write a key; the loser reads the winner's.
  await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return SecretBox.fromBase64(await readFile(file, 'utf8'), file);
}
