/**
 * Decrypting SOPS files with the real sops binary, as kluctl's sops docs describe the integration: keys are found the
 * way sops finds them in the engine's child environment (age: SOPS_AGE_KEY_FILE, SOPS_AGE_KEY,
 * $HOME/.config/sops/age/keys.txt; PGP: the gpg keyring in GNUPGHOME), and callers may add environment of their own
 * (the GitOps controller passes keys from a Secret).
 * The encrypted text goes to sops on stdin and the plaintext comes back on stdout, so no plaintext is written to
 * disk here. The MAC is not checked (`--ignore-mac`), as Kluctl does not check it: files are decrypted after
 * templating, which may legitimately change unencrypted values the MAC covers.
 */
import { CommandError } from '../exec.ts';
import type { Tools } from '../tools.ts';
import { sopsFormatOf, sopsKeysOf, type SopsFormat, type SopsKey } from './metadata.ts';
import { messageOf } from '../problems.ts';

/** Extra environment for sops, added to the engine's child environment (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE, GNUPGHOME, ...). */
export type SopsEnv = Readonly<Record<string, string>>;

export interface DecryptOptions {
  /** Names the file in errors (a project-relative path, say). */
  file: string;
  format: SopsFormat;
  /** Runs sops with the engine's environment. */
  tools: Tools;
  env?: SopsEnv;
  signal?: AbortSignal;
}

/** sops' exit code when no key could decrypt the data key (sops' codes.CouldNotRetrieveKey). */
const COULD_NOT_RETRIEVE_KEY = 128;
const TIMEOUT_MS = 120_000;

/** A sops file could not be decrypted. The message is one line naming the file and the reason. */
export class SopsError extends Error {
  readonly file: string;

  constructor(file: string, reason: string) {
    super(`${file}: cannot decrypt with sops: ${reason}`);
    this.name = 'SopsError';
    this.file = file;
  }
}

/**
 * Decrypts `text` when it is sops-encrypted (see sopsKeysOf) and returns it unchanged otherwise.
 * @returns the plaintext, in the same format, and whether it was encrypted.
 * @throws SopsError when it is encrypted and cannot be decrypted (missing key, missing sops, corrupt data).
 */
export async function decryptIfEncrypted(text: string, options: DecryptOptions): Promise<{ text: string; decrypted: boolean }> {
  const keys = sopsKeysOf(text, options.format);
  if (!keys) return { text, decrypted: false };
  return { text: await decrypt(text, keys, options), decrypted: true };
}

/** decryptIfEncrypted for a file name whose extension picks the format; other files are returned unchanged. */
export async function decryptFileTextIfEncrypted(
  text: string,
  options: Omit<DecryptOptions, 'format'>,
): Promise<{ text: string; decrypted: boolean }> {
  const format = sopsFormatOf(options.file);
  return format ? decryptIfEncrypted(text, { ...options, format }) : { text, decrypted: false };
}

async function decrypt(text: string, keys: readonly SopsKey[], options: DecryptOptions): Promise<string> {
  const args = ['decrypt', '--ignore-mac', '--input-type', options.format, '--output-type', options.format];
  try {
    return (await options.tools.run('sops', args, { input: text, env: options.env, timeoutMs: TIMEOUT_MS, signal: options.signal })).stdout;
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new SopsError(options.file, failureReason(error, keys, { ...options.tools.env, ...options.env }));
  }
}

function failureReason(error: unknown, keys: readonly SopsKey[], env: Record<string, string | undefined>): string {
  if (!(error instanceof CommandError)) return messageOf(error);
  if (error.missingProgram) return error.reason;
  if (error.exitCode === undefined) return error.message.split('\n')[0] ?? error.message;
  if (error.exitCode === COULD_NOT_RETRIEVE_KEY)
    return `no key to decrypt it is available: ${keys.map((key) => missingKey(key, env)).join('; ')}`;
  return firstMeaningfulLine(error.stderr) ?? error.message;
}

/** Says which key was missing and where sops looked for it, from the environment sops ran with. */
function missingKey(key: SopsKey, env: Record<string, string | undefined>): string {
  if (key.type === 'age') {
    const sources = [
      env['SOPS_AGE_KEY_FILE'] && `SOPS_AGE_KEY_FILE (${env['SOPS_AGE_KEY_FILE']})`,
      env['SOPS_AGE_KEY'] && 'SOPS_AGE_KEY',
      env['SOPS_AGE_KEY_CMD'] && 'SOPS_AGE_KEY_CMD',
    ].filter(Boolean);
    const defaultFile = `${env['XDG_CONFIG_HOME'] ?? `${env['HOME'] ?? '~'}/.config`}/sops/age/keys.txt`;
    const where =
      sources.length > 0
        ? `not among the identities in ${sources.join(', ')}`
        : `neither SOPS_AGE_KEY_FILE nor SOPS_AGE_KEY is set, and ${defaultFile} has no identity for it`;
    return `age recipient ${key.id} (${where})`;
  }
  if (key.type === 'PGP') {
    const home = env['GNUPGHOME'] ?? `${env['HOME'] ?? '~'}/.gnupg`;
    return `PGP key ${key.id} (no secret key for it in the gpg keyring at ${home}; set GNUPGHOME or import the key)`;
  }
  return `${key.type} key ${key.id} (not accessible with the credentials in the environment)`;
}

function firstMeaningfulLine(stderr: string): string | undefined {
  return stderr
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line && !line.startsWith('[warning]'));
}
