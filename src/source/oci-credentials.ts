/**
 * Credentials for OCI registries, found as Kluctl finds them (kluctl's pkg/oci/auth_provider and
 * docs/kluctl/deployments/oci.md): a list of entries, each for one registry host (`host[:port]`) and optionally a
 * glob over repository names (`my-org/*`; `*` stays within one path segment, `**` crosses them); the first entry
 * matching a repository wins. The CLI builds the list from its `--registry-*` flags, then the `KLUCTL_REGISTRY_*`
 * environment variables, then docker's config.json (`docker login`); the controller from a KluctlDeployment's
 * `spec.credentials.oci` Secrets. An entry also says how to connect: plain HTTP, TLS verification, CA and client
 * certificate.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** One registry's credentials and connection settings (kluctl's AuthEntry). PEM strings for the TLS parts. */
export interface RegistryAuth {
  /** `host[:port]` the entry applies to, exactly as in the oci:// URL. */
  registry: string;
  /** Glob over the repository path (e.g. `kluctl/**`); every repository of the registry when undefined. */
  repository?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  /** An OAuth2 refresh token, exchanged at the registry's token service (docker's identitytoken). */
  identityToken?: string | undefined;
  /** A bearer token sent as it is (docker's registrytoken). */
  registryToken?: string | undefined;
  /** Speak HTTP instead of HTTPS. */
  plainHttp?: boolean | undefined;
  insecureSkipTlsVerify?: boolean | undefined;
  ca?: string | undefined;
  cert?: string | undefined;
  key?: string | undefined;
}

/** An ordered list of RegistryAuth entries; the first that matches a repository is used. */
export class RegistryCredentials {
  readonly entries: readonly RegistryAuth[];

  constructor(entries: readonly RegistryAuth[] = []) {
    this.entries = entries;
  }

  /** The first entry for `registry` whose repository glob (if any) matches `repository`. */
  find(registry: string, repository: string): RegistryAuth | undefined {
    return this.entries.find(
      (entry) => entry.registry === registry && (entry.repository === undefined || path.posix.matchesGlob(repository, entry.repository)),
    );
  }
}

/**
 * The entries the `KLUCTL_REGISTRY_*` variables of `env` describe, as kluctl's OciEnvAuthProvider reads them:
 * `<prefix>_HOST`, `_REPOSITORY`, `_USERNAME`, `_PASSWORD`, `_IDENTITY_TOKEN`, `_TOKEN`, `_PLAIN_HTTP`,
 * `_INSECURE_SKIP_TLS_VERIFY`, `_CA_FILE`, `_CERT_FILE`, `_KEY_FILE`, each also as `<prefix>_<n>_<key>` for more
 * sets (the unnumbered set first, then by number); `<prefix>_DEFAULT_INSECURE_SKIP_TLS_VERIFY` is every set's default.
 * A set without HOST takes the host from a REPOSITORY of the form `host/repo`.
 * @throws Error naming the variable whose file cannot be read.
 */
export async function credentialsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  prefix = 'KLUCTL_REGISTRY',
): Promise<RegistryAuth[]> {
  const defaultInsecure = isTrue(env[`${prefix}_DEFAULT_INSECURE_SKIP_TLS_VERIFY`]);
  const entries: RegistryAuth[] = [];
  for (const [index, set] of envSets(env, prefix)) {
    let host = set.get('HOST');
    let repository = set.get('REPOSITORY');
    if (!host && repository?.includes('/')) [host, repository] = splitOnce(repository, '/');
    if (!host) continue;
    const name = (key: string) => `${prefix}${index === undefined ? '' : `_${index}`}_${key}`;
    const file = (key: string) => optionalFile(set.get(key), name(key));
    entries.push({
      registry: host,
      repository: repository || undefined,
      username: set.get('USERNAME'),
      password: set.get('PASSWORD'),
      identityToken: set.get('IDENTITY_TOKEN'),
      registryToken: set.get('TOKEN'),
      plainHttp: isTrue(set.get('PLAIN_HTTP')),
      insecureSkipTlsVerify: set.has('INSECURE_SKIP_TLS_VERIFY') ? isTrue(set.get('INSECURE_SKIP_TLS_VERIFY')) : defaultInsecure,
      ca: await file('CA_FILE'),
      cert: await file('CERT_FILE'),
      key: await file('KEY_FILE'),
    });
  }
  return entries;
}

/** Variables `<prefix>_<KEY>` and `<prefix>_<n>_<KEY>` grouped by n (undefined first, then ascending). */
function envSets(env: Readonly<Record<string, string | undefined>>, prefix: string): Array<[number | undefined, Map<string, string>]> {
  const pattern = new RegExp(`^${prefix}(?:_(\\d+))?_(.+)$`);
  const sets = new Map<number | undefined, Map<string, string>>();
  for (const [name, value] of Object.entries(env)) {
    const match = pattern.exec(name);
    if (!match || value === undefined) continue;
    const index = match[1] === undefined ? undefined : Number(match[1]);
    if (!sets.has(index)) sets.set(index, new Map());
    sets.get(index)!.set(match[2]!, value);
  }
  return [...sets].sort(([a], [b]) => (a ?? -1) - (b ?? -1));
}

/**
 * The entries of docker's config.json (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), as `docker login`
 * writes them: `auths.<host>` with `auth` (base64 `user:password`) or `username`/`password`, `identitytoken` and
 * `registrytoken`. Credential helpers (`credsStore`, `credHelpers`) are not run. A missing file has no entries.
 * @throws Error naming the file when it is not valid JSON.
 */
export async function credentialsFromDockerConfig(env: Readonly<Record<string, string | undefined>>): Promise<RegistryAuth[]> {
  const dir = env['DOCKER_CONFIG'] || path.join(env['HOME'] || os.homedir(), '.docker');
  const file = path.join(dir, 'config.json');
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return [];
  let config: { auths?: Record<string, DockerAuth> };
  try {
    config = JSON.parse(text) as typeof config;
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}`);
  }
  return Object.entries(config.auths ?? {}).map(([host, auth]) => {
    const [username, password] = auth.auth
      ? splitOnce(Buffer.from(auth.auth, 'base64').toString('utf8'), ':')
      : [auth.username, auth.password];
    return {
      registry: host.replace(/^https?:\/\//, '').replace(/\/.*$/, ''),
      username: username || undefined,
      password: password || undefined,
      identityToken: auth.identitytoken,
      registryToken: auth.registrytoken,
    };
  });
}

interface DockerAuth {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** Which `spec.credentials.oci` entry a Secret belongs to (kluctl's ProjectCredentialsOci). */
export interface OciCredentialsEntry {
  registry?: string | undefined;
  repository?: string | undefined;
}

/**
 * The entry a KluctlDeployment's `spec.credentials.oci` item and its Secret's (decoded) values give, as kluctl's
 * controller docs define them: `username`/`password`, or `token`; `certFile`, `keyFile`, `caFile`;
 * `insecureSkipTlsVerify: "true"`, `plainHttp: "true"`.
 * @throws Error when the item has no registry.
 */
export function credentialsFromSecret(entry: OciCredentialsEntry, values: Readonly<Record<string, string>>): RegistryAuth {
  if (!entry.registry) throw new Error("a spec.credentials.oci entry needs 'registry'");
  return {
    registry: entry.registry,
    repository: entry.repository || undefined,
    username: values['username'],
    password: values['password'],
    registryToken: values['token'],
    cert: values['certFile'],
    key: values['keyFile'],
    ca: values['caFile'],
    insecureSkipTlsVerify: isTrue(values['insecureSkipTlsVerify']),
    plainHttp: isTrue(values['plainHttp']),
  };
}

/** Go's strconv.ParseBool truths. */
function isTrue(value: string | undefined): boolean {
  return value !== undefined && ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value);
}

/** `[before, after]` the first `separator`; `[text, undefined]` without one. */
export function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + separator.length)];
}

async function optionalFile(file: string | undefined, variable: string): Promise<string | undefined> {
  if (file === undefined) return undefined;
  return readFile(file, 'utf8').catch((error: Error) => {
    throw new Error(`${variable}: ${error.message}`);
  });
}
