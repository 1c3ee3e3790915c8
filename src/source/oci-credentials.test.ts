import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Command } from 'commander';
import { addRegistryFlags, cliRegistryCredentials, type RegistryFlags } from '../cli/oci-registry-flags.ts';
import { credentialsFromDockerConfig, credentialsFromEnv, credentialsFromSecret, RegistryCredentials } from './oci-credentials.ts';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-oci-credentials-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe('registry credentials', () => {
  it('reads KLUCTL_REGISTRY_* sets: the unnumbered one first, then by number; a host from REPOSITORY', async () => {
    const entries = await credentialsFromEnv({
      KLUCTL_REGISTRY_2_HOST: 'two.example',
      KLUCTL_REGISTRY_2_TOKEN: 't2',
      KLUCTL_REGISTRY_HOST: 'zero.example',
      KLUCTL_REGISTRY_USERNAME: 'u',
      KLUCTL_REGISTRY_PASSWORD: 'p',
      KLUCTL_REGISTRY_PLAIN_HTTP: 'true',
      KLUCTL_REGISTRY_1_REPOSITORY: 'one.example/org/*',
      KLUCTL_REGISTRY_DEFAULT_INSECURE_SKIP_TLS_VERIFY: '1',
      KLUCTL_REGISTRY_3_USERNAME: 'no host: ignored',
    });
    expect(entries.map((entry) => [entry.registry, entry.repository, entry.username, entry.registryToken, entry.plainHttp])).toEqual([
      ['zero.example', undefined, 'u', undefined, true],
      ['one.example', 'org/*', undefined, undefined, false],
      ['two.example', undefined, undefined, 't2', false],
    ]);
    expect(entries.every((entry) => entry.insecureSkipTlsVerify)).toBe(true);
  });

  it('names the variable whose file cannot be read', async () => {
    await expect(credentialsFromEnv({ KLUCTL_REGISTRY_1_HOST: 'h', KLUCTL_REGISTRY_1_CA_FILE: '/nonexistent/ca.pem' })).rejects.toThrow(
      /^KLUCTL_REGISTRY_1_CA_FILE: ENOENT/,
    );
  });

  it("reads docker login's config.json auths", async () => {
    const dir = path.join(scratch, 'docker');
    await mkdir(dir);
    const auth = Buffer.from('alice:pa:ss').toString('base64');
    await writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ auths: { 'https://reg.example:5000': { auth }, other: { identitytoken: 'i' } } }),
    );
    expect(await credentialsFromDockerConfig({ DOCKER_CONFIG: dir })).toEqual([
      { registry: 'reg.example:5000', username: 'alice', password: 'pa:ss', identityToken: undefined, registryToken: undefined },
      { registry: 'other', username: undefined, password: undefined, identityToken: 'i', registryToken: undefined },
    ]);
    expect(await credentialsFromDockerConfig({ DOCKER_CONFIG: path.join(scratch, 'missing') })).toEqual([]);
  });

  it('uses the first entry whose registry and repository glob match', () => {
    const credentials = new RegistryCredentials([
      { registry: 'r.example', repository: 'org/*', username: 'org' },
      { registry: 'r.example', username: 'any' },
    ]);
    expect(credentials.find('r.example', 'org/app')?.username).toBe('org');
    expect(credentials.find('r.example', 'org/team/app')?.username).toBe('any');
    expect(credentials.find('other.example', 'org/app')).toBeUndefined();
  });

  it("takes a Secret's keys as kluctl's controller docs define them", () => {
    expect(
      credentialsFromSecret(
        { registry: 'r', repository: 'a/*' },
        { token: 't', caFile: 'CA', plainHttp: 'true', insecureSkipTlsVerify: 'false' },
      ),
    ).toMatchObject({ registry: 'r', repository: 'a/*', registryToken: 't', ca: 'CA', plainHttp: true, insecureSkipTlsVerify: false });
    expect(() => credentialsFromSecret({}, {})).toThrow("a spec.credentials.oci entry needs 'registry'");
  });

  it('merges --registry-* flags per <registry>/<repo>, before the environment', async () => {
    const command = addRegistryFlags(new Command().exitOverride());
    command.parse(
      [
        '--registry-creds=r.example/org/*=bob:pw',
        '--registry-plain-http=r.example/org/*',
        '--registry-creds=t.example=a-token',
        '--registry-username=u.example=carol',
      ],
      { from: 'user' },
    );
    const credentials = await cliRegistryCredentials(command.opts<RegistryFlags>(), { KLUCTL_REGISTRY_HOST: 'r.example', HOME: scratch });
    // kluctl's order: entries as first named, flag kind by flag kind (usernames, …, plain HTTP, …, creds).
    expect(credentials.entries).toMatchObject([
      { registry: 'u.example', username: 'carol' },
      { registry: 'r.example', repository: 'org/*', username: 'bob', password: 'pw', plainHttp: true },
      { registry: 't.example', registryToken: 'a-token' },
      { registry: 'r.example', repository: undefined },
    ]);
    const bad = addRegistryFlags(new Command().exitOverride()).parse(['--registry-password=r.example'], { from: 'user' });
    await expect(cliRegistryCredentials(bad.opts<RegistryFlags>(), {})).rejects.toThrow(
      "--registry-password 'r.example': expected <registry>/<repo>=<value>",
    );
  });
});
