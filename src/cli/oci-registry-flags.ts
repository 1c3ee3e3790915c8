/**
 * Kluctl's registry arguments (docs/kluctl/commands/common-arguments.md, "Registry arguments";
 * cmd/kluctl/args/registry_credentials.go), on every command that may pull or push OCI artifacts: each names an
 * entry as `<registry>[/<repository glob>]` before its `=`, and values given for the same name form one entry. The
 * CLI's credentials are these entries first, then the `KLUCTL_REGISTRY_*` variables, then docker's config.json.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  credentialsFromDockerConfig,
  credentialsFromEnv,
  RegistryCredentials,
  splitOnce,
  type RegistryAuth,
} from '../source/oci-credentials.ts';

export interface RegistryFlags {
  registryUsername: string[];
  registryPassword: string[];
  registryIdentityToken: string[];
  registryToken: string[];
  registryCreds: string[];
  registryKeyFile: string[];
  registryCertFile: string[];
  registryCaFile: string[];
  registryPlainHttp: string[];
  registryInsecureSkipTlsVerify: string[];
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function addRegistryFlags<T extends Command>(command: T): T {
  const flag = (name: string, value: string, help: string) =>
    command.option(`--registry-${name} <${value}>`, `${help} (repeatable)`, collect, []);
  flag('username', 'registry/repo=username', 'username for OCI authentication');
  flag('password', 'registry/repo=password', 'password for OCI authentication');
  flag('identity-token', 'registry/repo=token', 'identity (refresh) token for OCI authentication');
  flag('token', 'registry/repo=token', 'registry (bearer) token for OCI authentication');
  flag('creds', 'registry/repo=user:password|token', 'shortcut for --registry-username and --registry-password, or --registry-token');
  flag('key-file', 'registry/repo=file', 'client key for OCI authentication');
  flag('cert-file', 'registry/repo=file', 'client certificate for OCI authentication');
  flag('ca-file', 'registry/repo=file', 'CA bundle to verify the registry with');
  flag('plain-http', 'registry/repo', 'speak plain HTTP (no TLS) to the registry');
  flag('insecure-skip-tls-verify', 'registry/repo', "don't verify the registry's TLS certificate");
  return command;
}

/**
 * The CLI's registry credentials: the flags' entries, then `KLUCTL_REGISTRY_*` of `env`, then docker's config.json.
 * @throws Error naming the malformed flag or the file that cannot be read.
 */
export async function cliRegistryCredentials(flags: RegistryFlags, env: NodeJS.ProcessEnv = process.env): Promise<RegistryCredentials> {
  return new RegistryCredentials([
    ...(await flagEntries(flags)),
    ...(await credentialsFromEnv(env)),
    ...(await credentialsFromDockerConfig(env)),
  ]);
}

async function flagEntries(flags: RegistryFlags): Promise<RegistryAuth[]> {
  const entries = new Map<string, RegistryAuth>();
  const entry = (flag: string, text: string, needsValue: boolean): [RegistryAuth, string] => {
    const [name, value] = splitOnce(text, '=');
    if (needsValue && value === undefined)
      throw new Error(`--registry-${flag} '${text.replace(/=.*/, '')}': expected <registry>/<repo>=<value>`);
    if (!entries.has(name)) {
      const [registry, repository] = splitOnce(name, '/');
      entries.set(name, { registry, repository });
    }
    return [entries.get(name)!, value ?? ''];
  };
  const set = (flag: string, values: readonly string[], apply: (auth: RegistryAuth, value: string) => void) => {
    for (const text of values) apply(...entry(flag, text, true));
  };
  const readFlagFile = async (flag: string, file: string) =>
    readFile(file, 'utf8').catch((error: Error) => {
      throw new Error(`--registry-${flag}: ${error.message}`);
    });
  set('username', flags.registryUsername, (auth, value) => (auth.username = value));
  set('password', flags.registryPassword, (auth, value) => (auth.password = value));
  set('identity-token', flags.registryIdentityToken, (auth, value) => (auth.identityToken = value));
  set('token', flags.registryToken, (auth, value) => (auth.registryToken = value));
  for (const [flag, values, field] of [
    ['key-file', flags.registryKeyFile, 'key'],
    ['cert-file', flags.registryCertFile, 'cert'],
    ['ca-file', flags.registryCaFile, 'ca'],
  ] as const) {
    for (const text of values) {
      const [auth, file] = entry(flag, text, true);
      auth[field] = await readFlagFile(flag, file);
    }
  }
  for (const text of flags.registryPlainHttp) entry('plain-http', text, false)[0].plainHttp = true;
  for (const text of flags.registryInsecureSkipTlsVerify) entry('insecure-skip-tls-verify', text, false)[0].insecureSkipTlsVerify = true;
  set('creds', flags.registryCreds, (auth, value) => {
    const [username, password] = splitOnce(value, ':');
    if (password === undefined) auth.registryToken = username;
    else Object.assign(auth, { username, password });
  });
  return [...entries.values()];
}
