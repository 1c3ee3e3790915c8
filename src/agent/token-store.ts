/**
 * Where the agent keeps its deploy token, so that a token it rotated (token-rotation.ts) is the one it starts with
 * after a restart. Two places:
 * - a file (`--token-file`): replaced whole through a temporary file and a rename;
 * - a Secret (`--token-secret namespace/name`, key `token`): read and written through the Kubernetes API. The in-cluster
 *   agent uses this rather than the Secret's mounted file, because the kubelet refreshes a mount a minute or more late,
 *   and an agent restarted in that time would start on a token that may have expired.
 * A token from `$GANTRY_DEPLOY_TOKEN` has no place: such an agent does not rotate.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { Cluster } from '../kube/cluster.ts';

export interface TokenStore {
  /** The place, for messages: a file's path or `Secret <namespace>/<name>`. */
  readonly where: string;
  /** @throws Error naming the place when it is missing, unreadable or empty. */
  read(): Promise<string>;
  /** Replaces the stored token. @throws Error naming the place when it cannot be written. */
  write(token: string): Promise<void>;
}

/** The token in `file`, trimmed; written back with the file's mode (0600 for a new one). */
export function fileTokenStore(file: string): TokenStore {
  return {
    where: file,
    async read() {
      const token = (await readFile(file, 'utf8')).trim();
      if (!token) throw new Error(`${file} holds no deploy token`);
      return token;
    },
    async write(token) {
      const mode = await stat(file).then(
        (found) => found.mode & 0o777,
        () => 0o600,
      );
      const temp = `${file}.${randomBytes(4).toString('hex')}.partial`;
      try {
        await writeFile(temp, `${token}\n`, { mode });
        await rename(temp, file);
      } catch (error) {
        await rm(temp, { force: true });
        throw new Error(`cannot store the new deploy token in ${file}: ${(error as Error).message}`);
      }
    },
  };
}

/**
 * The key `token` of a Secret, as `namespace/name`.
 * @throws Error when `reference` is not of that form.
 */
export function secretTokenStore(cluster: Cluster, reference: string, fieldManager: string): TokenStore {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(reference);
  if (!match) throw new Error(`--token-secret must be namespace/name, not "${reference}"`);
  const ref = { group: '', version: 'v1', kind: 'Secret', namespace: match[1]!, name: match[3]! };
  const where = `Secret ${reference}`;
  return {
    where,
    async read() {
      const secret = await cluster.get(ref);
      const encoded = (secret?.['data'] as Record<string, string> | undefined)?.['token'];
      if (!secret) throw new Error(`${where} does not exist`);
      const token = Buffer.from(encoded ?? '', 'base64')
        .toString('utf8')
        .trim();
      if (!token) throw new Error(`${where} holds no deploy token (key "token")`);
      return token;
    },
    async write(token) {
      // A merge patch changes the one key, whoever applied the Secret (gantry agent install, the operator).
      await cluster
        .patchMerge(ref, { data: { token: Buffer.from(token).toString('base64') } }, { fieldManager })
        .catch((error: Error) => Promise.reject(new Error(`cannot store the new deploy token in ${where}: ${error.message}`)));
    },
  };
}
