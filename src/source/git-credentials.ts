/**
 * Credentials for git, as Kluctl's controller takes them from Secrets (docs/gitops/spec/v1beta1/kluctldeployment.md,
 * "Git authentication"): `username`/`password` for HTTPS (basic auth), `caFile` for a private CA, and `identity` plus
 * `known_hosts` for SSH. They reach git only through its environment: a fixed askpass script reads the username and
 * password from variables (never from argv or the URL, where they would show in process lists and error messages);
 * SSH gets its key and known hosts through GIT_SSH_COMMAND with strict host key checking. Files live in a private
 * temporary folder that `cleanup` removes.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { GitAccess } from './git-cache.ts';

/** Values of a credentials Secret (already base64-decoded). */
export type CredentialValues = Record<string, string>;

/** A credentials entry of a KluctlDeployment: which repositories it is for. */
export interface CredentialMatch {
  /** Host name, or `*` for every SSH host (never for HTTPS, to avoid sending credentials anywhere). */
  host?: string;
  /** Glob over the repository path on the host, e.g. `my-org/*`. */
  path?: string;
}

export interface PreparedAccess extends GitAccess {
  cleanup(): Promise<void>;
}

const ASKPASS = `#!/bin/sh
case "$1" in
  Username*) printf '%s' "$GANTRY_GIT_USERNAME" ;;
  *) printf '%s' "$GANTRY_GIT_PASSWORD" ;;
esac
`;

/**
 * The environment git needs for `values`.
 * @throws Error when SSH credentials come without known_hosts (host keys must be pinned).
 */
export async function prepareGitAccess(values: CredentialValues): Promise<PreparedAccess> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-git-credentials-'));
  await chmod(dir, 0o700);
  const env: Record<string, string> = {};
  try {
    if (values['username'] !== undefined || values['password'] !== undefined) {
      const askpass = path.join(dir, 'askpass.sh');
      await writeFile(askpass, ASKPASS, { mode: 0o700 });
      Object.assign(env, {
        GIT_ASKPASS: askpass,
        GANTRY_GIT_USERNAME: values['username'] ?? '',
        GANTRY_GIT_PASSWORD: values['password'] ?? '',
      });
    }
    if (values['caFile'] !== undefined) {
      const caFile = path.join(dir, 'ca.crt');
      await writeFile(caFile, values['caFile'], { mode: 0o600 });
      env['GIT_SSL_CAINFO'] = caFile;
    }
    if (values['identity'] !== undefined) {
      if (values['known_hosts'] === undefined) throw new Error("SSH credentials need 'known_hosts' next to 'identity'");
      const identity = path.join(dir, 'identity');
      const knownHosts = path.join(dir, 'known_hosts');
      await writeFile(identity, values['identity'].endsWith('\n') ? values['identity'] : `${values['identity']}\n`, { mode: 0o600 });
      await writeFile(knownHosts, values['known_hosts'], { mode: 0o600 });
      // git runs GIT_SSH_COMMAND through the shell, and ssh splits UserKnownHostsFile at spaces unless the value is
      // in double quotes: both quotings keep a TMPDIR with spaces working.
      const knownHostsOption = `UserKnownHostsFile="${knownHosts}"`;
      env['GIT_SSH_COMMAND'] =
        `ssh -F /dev/null -i ${shellQuote(identity)} -o IdentitiesOnly=yes -o ${shellQuote(knownHostsOption)} -o StrictHostKeyChecking=yes -o BatchMode=yes`;
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return { env, key: credentialsKey(values), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** `value` as one word for sh. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** A one-way fingerprint of `values`, equal for equal credentials whatever their order. */
function credentialsKey(values: CredentialValues): string {
  const hash = createHash('sha256');
  for (const name of Object.keys(values).sort()) hash.update(`${name}\0${values[name]}\0`);
  return hash.digest('hex');
}

/** The first entry matching `url` (Kluctl's order: the first that matches wins), or undefined. */
export function matchCredentials<T extends CredentialMatch>(url: string, entries: readonly T[]): T | undefined {
  const location = repoLocation(url);
  if (!location) return undefined;
  return entries.find((entry) => {
    const hostMatches = entry.host === location.host || (entry.host === '*' && location.scheme === 'ssh');
    return hostMatches && (entry.path === undefined || path.matchesGlob(location.path, entry.path));
  });
}

/** Host and path of a git URL (https://host/org/repo.git, ssh://git@host/org/repo, git@host:org/repo). */
function repoLocation(url: string): { scheme: string; host: string; path: string } | undefined {
  const scpLike = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/.exec(url);
  if (scpLike && !url.includes('://')) return { scheme: 'ssh', host: scpLike[1] as string, path: trimRepoPath(scpLike[2] as string) };
  try {
    const parsed = new URL(url);
    return { scheme: parsed.protocol.replace(/:$/, ''), host: parsed.hostname, path: trimRepoPath(parsed.pathname) };
  } catch {
    return undefined;
  }
}

function trimRepoPath(value: string): string {
  return value
    .replace(/^\/+/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
}
