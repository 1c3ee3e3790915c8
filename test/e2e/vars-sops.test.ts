/**
 * SOPS decryption (vars files, manifests, helm values; age and PGP) and every vars source, through the gantry
 * binary against the local cluster, a real git repository and a real HTTP server. Keys reach gantry the way they
 * reach sops: SOPS_AGE_KEY_FILE and GNUPGHOME in its environment (this file sets them on process.env, which the
 * gantry child inherits).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgeKey, createGpgKey, sopsEncrypt, type AgeKey, type GpgKey } from '../../src/sops/test-support.ts';
import { gantry, gantryJson, kubectl, kubectlJson, localContext } from '../support/cli.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';

const kluctl = (name: string) => `discriminator: gantry-e2e-vars-${name}\ntargets:\n  - name: t\n`;
const namespace = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;

let context = '';
let age: AgeKey;
let gpg: GpgKey;
const projects: string[] = [];
const extraNamespaces: string[] = [];

beforeAll(async () => {
  context = await localContext();
  [age, gpg] = await Promise.all([createAgeKey(), createGpgKey()]);
  useKeys();
}, 120_000);
afterAll(async () => {
  useKeys();
  for (const dir of projects) {
    await gantry(['delete', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
    await removeCopy(dir);
  }
  for (const name of extraNamespaces) await kubectl(['delete', 'namespace', name, '--ignore-not-found', '--wait=false']);
  await Promise.all([age?.remove(), gpg?.remove()]);
});

/** The gantry child finds the test keys as sops would. */
function useKeys(): void {
  process.env['SOPS_AGE_KEY_FILE'] = age.keyFile;
  process.env['GNUPGHOME'] = gpg.home;
}

function withoutKeys(): void {
  delete process.env['SOPS_AGE_KEY_FILE'];
  delete process.env['GNUPGHOME'];
}

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject(files);
  projects.push(dir);
  return dir;
}

async function deploy(dir: string) {
  return gantryJson(['deploy', '-y', '-t', 't', '--project-dir', dir, '--context', context, '--timeout', '2m']);
}

async function configMapData(ns: string, name: string): Promise<Record<string, string>> {
  return (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', name, '-n', ns])).data;
}

async function namespaceExists(name: string): Promise<boolean> {
  return (await kubectl(['get', 'namespaces', '-o', 'name'])).split('\n').includes(`namespace/${name}`);
}

const chart = {
  'charts/demo/Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 0.1.0\n',
  'charts/demo/templates/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-values\ndata:\n  secretValue: {{ .Values.secretValue | quote }}\n',
};

describe('sops', { timeout: 300_000 }, () => {
  it('decrypts an age-encrypted vars file, manifest and helm values, and deploys the plaintext', async () => {
    const ns = 'gantry-e2e-vars-age';
    const encrypt = (text: string, encryptedRegex?: string) => sopsEncrypt(text, 'yaml', { age: age.recipient, encryptedRegex });
    const dir = await project({
      '.kluctl.yaml': kluctl('age'),
      'deployment.yaml': `vars:\n  - file: secrets.sops.yaml\n  - values:\n      ns: ${ns}\ndeployments:\n  - path: namespace\n  - barrier: true\n  - path: app\n  - path: chart\n`,
      'secrets.sops.yaml': await encrypt('fromVarsFile:\n  password: vars-secret-1\n'),
      'namespace/namespace.yaml': namespace(ns),
      // Only stringData is encrypted; the namespace is a template, rendered before decryption.
      'app/secret.yaml': await encrypt(
        'apiVersion: v1\nkind: Secret\nmetadata:\n  name: manifest-secret\n  namespace: "{{ ns }}"\nstringData:\n  password: manifest-secret-2\n',
        '^(data|stringData)$',
      ),
      'app/configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-vars\n  namespace: ${ns}\ndata:\n  password: "{{ fromVarsFile.password }}"\n`,
      'chart/helm-chart.yaml': `helmChart:\n  path: ../charts/demo\n  releaseName: demo\n  namespace: ${ns}\n`,
      'chart/helm-values.yaml': await encrypt('secretValue: helm-secret-3\n'),
      ...chart,
    });
    const { code, result, stderr } = await deploy(dir);
    expect(result.errors, stderr).toEqual([]);
    expect(code).toBe(0);
    const secret = await kubectlJson<{ data: Record<string, string> }>(['get', 'secret', 'manifest-secret', '-n', ns]);
    expect(Buffer.from(secret.data['password'] ?? '', 'base64').toString()).toBe('manifest-secret-2');
    expect(await configMapData(ns, 'from-vars')).toEqual({ password: 'vars-secret-1' });
    expect(await configMapData(ns, 'demo-values')).toEqual({ secretValue: 'helm-secret-3' });
  });

  it('decrypts with a PGP key from the gpg keyring (a JSON vars file and a YAML manifest)', async () => {
    const ns = 'gantry-e2e-vars-pgp';
    const encrypt = (text: string, format: 'yaml' | 'json') => sopsEncrypt(text, format, { pgp: gpg.fingerprint, gnupgHome: gpg.home });
    const dir = await project({
      '.kluctl.yaml': kluctl('pgp'),
      'deployment.yaml': 'vars:\n  - file: secrets.json\ndeployments:\n  - path: app\n',
      'secrets.json': await encrypt('{"fromJson": "pgp-vars-1"}', 'json'),
      'app/namespace.yaml': namespace(ns),
      'app/encrypted.yaml': await encrypt(
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pgp\n  namespace: ${ns}\ndata:\n  fromManifest: pgp-manifest-2\n  notRendered: "{{ fromJson }}"\n`,
        'yaml',
      ),
      'app/plain.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pgp-vars\n  namespace: ${ns}\ndata:\n  fromVars: "{{ fromJson }}"\n`,
    });
    const { code, result, stderr } = await deploy(dir);
    expect(result.errors, stderr).toEqual([]);
    expect(code).toBe(0);
    // Templating runs before decryption (as in Kluctl), so a template inside an encrypted value stays as it is.
    expect(await configMapData(ns, 'pgp')).toEqual({ fromManifest: 'pgp-manifest-2', notRendered: '{{ fromJson }}' });
    expect(await configMapData(ns, 'pgp-vars')).toEqual({ fromVars: 'pgp-vars-1' });
  });

  it('without the key: exit 1, one error naming each file and its recipient, nothing applied', async () => {
    const ns = 'gantry-e2e-vars-nokey';
    const manifestsOnly = await project({
      '.kluctl.yaml': kluctl('nokey'),
      'deployment.yaml': 'deployments:\n  - path: ns\n  - path: app\n',
      'ns/namespace.yaml': namespace(ns),
      'app/secret.yaml': await sopsEncrypt(
        `apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ${ns}\nstringData:\n  a: b\n`,
        'yaml',
        { age: age.recipient },
      ),
      'app/values.yaml': await sopsEncrypt(
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ${ns}\ndata:\n  a: b\n`,
        'yaml',
        { pgp: gpg.fingerprint, gnupgHome: gpg.home },
      ),
    });
    const varsFile = await project({
      '.kluctl.yaml': kluctl('nokey-vars'),
      'deployment.yaml': 'vars:\n  - file: secrets.yaml\ndeployments:\n  - path: ns\n',
      'secrets.yaml': await sopsEncrypt('a: 1\n', 'yaml', { age: age.recipient }),
      'ns/namespace.yaml': namespace(ns),
    });
    withoutKeys();
    try {
      const manifests = await deploy(manifestsOnly);
      expect(manifests.code).toBe(1);
      expect(manifests.result.errors.map((error) => error.message).sort()).toEqual([
        expect.stringMatching(
          new RegExp(
            `^app/secret\\.yaml: cannot decrypt with sops: no key to decrypt it is available: age recipient ${age.recipient} \\(neither SOPS_AGE_KEY_FILE nor SOPS_AGE_KEY is set`,
          ),
        ),
        expect.stringMatching(
          new RegExp(
            `^app/values\\.yaml: cannot decrypt with sops: no key to decrypt it is available: PGP key ${gpg.fingerprint} \\(no secret key for it in the gpg keyring`,
          ),
        ),
      ]);
      const vars = await deploy(varsFile);
      expect(vars.code).toBe(1);
      expect(vars.result.errors.map((error) => error.message)).toEqual([
        expect.stringMatching(new RegExp(`^secrets\\.yaml: cannot decrypt with sops: .*age recipient ${age.recipient}`)),
      ]);
      expect(await namespaceExists(ns)).toBe(false);
    } finally {
      useKeys();
    }
  });
});

describe('vars sources', { timeout: 300_000 }, () => {
  const ns = 'gantry-e2e-vars-sources';
  let repo: TestRepo;
  let server: TestHttpServer;

  beforeAll(async () => {
    extraNamespaces.push(ns);
    await kubectl(
      ['apply', '-f', '-'],
      [
        namespace(ns),
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: ${ns}\n  labels:\n    gantry-e2e-vars: source\n  annotations:\n    owner: team-a\ndata:\n  vars: |\n    fromConfigMap: cm-1\n`,
        `apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secret\n  namespace: ${ns}\nstringData:\n  vars: |\n    fromSecret: secret-2\n`,
      ].join('---\n'),
    );
    repo = await createRepo({ 'vars/git.yaml': 'fromGit: "git-{{ fromConfigMap }}"\n' });
    await repo.branch('release');
    server = await startHttpServer({ '/vars': { body: '{"payload": {"fromHttp": "http-4"}}', contentType: 'application/json' } });
  });
  afterAll(async () => {
    await repo?.remove();
    await server?.close();
    delete process.env['GANTRY_E2E_VARS_ENV'];
  });

  function sourcesProject(vars: string, name = 'sources'): Promise<string> {
    return project({
      '.kluctl.yaml': kluctl(name),
      'deployment.yaml': `vars:\n${vars}deployments:\n  - path: app\n`,
      'app/configmap.yaml': [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: collected',
        `  namespace: ${ns}`,
        'data:',
        '  configMap: "{{ fromConfigMap }}"',
        '  secret: "{{ fromSecret }}"',
        '  object: "{{ objects.owner }}"',
        '  git: "{{ fromGit }}"',
        '  http: "{{ fromHttp }}"',
        '  env: "{{ env.value }}"',
        '  envDefault: "{{ env.fallback }}"',
        '',
      ].join('\n'),
    });
  }

  const allSources = () => `  - clusterConfigMap:
      labels:
        gantry-e2e-vars: source
      namespace: ${ns}
      key: vars
  - clusterSecret:
      name: cluster-secret
      namespace: ${ns}
      key: vars
  - clusterObject:
      kind: ConfigMap
      name: cluster-vars
      namespace: ${ns}
      path: metadata.annotations
    targetPath: objects
  - git:
      url: ${repo.url}
      ref:
        branch: release
      path: vars/git.yaml
  - http:
      url: ${server.url}/vars
      jsonPath: $.payload
  - systemEnvVars:
      value: GANTRY_E2E_VARS_ENV
      fallback: GANTRY_E2E_VARS_UNSET:env-default-6
    targetPath: env
`;

  it('loads each source from the cluster, a git repository, an HTTP server and the environment, in order', async () => {
    process.env['GANTRY_E2E_VARS_ENV'] = 'env-5';
    delete process.env['GANTRY_E2E_VARS_UNSET'];
    const dir = await sourcesProject(allSources());
    const { code, result, stderr } = await deploy(dir);
    expect(result.errors, stderr).toEqual([]);
    expect(code).toBe(0);
    expect(await configMapData(ns, 'collected')).toEqual({
      configMap: 'cm-1',
      secret: 'secret-2',
      object: 'team-a',
      git: 'git-cm-1',
      http: 'http-4',
      env: 'env-5',
      envDefault: 'env-default-6',
    });
  });

  it('refuses cluster sources when rendering offline', async () => {
    const dir = await sourcesProject(allSources(), 'sources-offline');
    const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "deployment.yaml: vars[0]: clusterConfigMap needs the target's cluster, and rendering is offline (--offline-kubernetes)",
    );
  });

  it('a bad git ref: exit 1, a clear error, nothing applied', async () => {
    const badNs = 'gantry-e2e-vars-badref';
    const dir = await project({
      '.kluctl.yaml': kluctl('badref'),
      'deployment.yaml': `vars:\n  - git:\n      url: ${repo.url}\n      ref:\n        branch: no-such-branch\n      path: vars/git.yaml\ndeployments:\n  - path: app\n`,
      'app/namespace.yaml': namespace(badNs),
    });
    const { code, result } = await deploy(dir);
    expect(code).toBe(1);
    expect(result.errors.map((error) => error.message)).toEqual([
      expect.stringMatching(/deployment\.yaml: vars\[0\]: git repository file:\/\/\S+ has no branch no-such-branch$/),
    ]);
    expect(result.newObjects).toEqual([]);
    expect(await namespaceExists(badNs)).toBe(false);
  });

  it('a bad vars source: exit 1, a clear error naming the field, nothing applied', async () => {
    const badNs = 'gantry-e2e-vars-badsource';
    const cases: Array<[string, string | RegExp]> = [
      [
        `  - clusterConfigMap:\n      nmae: x\n      namespace: ${ns}\n      key: vars\n`,
        "deployment.yaml: vars[0].clusterConfigMap: unknown field 'nmae'",
      ],
      [
        '  - gcpSecretManager:\n      secretName: projects/p/secrets/s/versions/latest\n',
        "deployment.yaml: vars[0]: vars source 'gcpSecretManager' is not supported by this version of Gantry: the cloud secret stores",
      ],
      [
        `  - http:\n      url: ${server.url}/missing\n`,
        `deployment.yaml: vars[0]: http: GET ${server.url}/missing failed with status code 404`,
      ],
      [
        '  - systemEnvVars:\n      x: GANTRY_E2E_VARS_UNSET\n',
        'deployment.yaml: vars[0]: systemEnvVars: environment variable GANTRY_E2E_VARS_UNSET not found for x',
      ],
    ];
    for (const [vars, message] of cases) {
      const dir = await project({
        '.kluctl.yaml': kluctl('badsource'),
        'deployment.yaml': `vars:\n${vars}deployments:\n  - path: app\n`,
        'app/namespace.yaml': namespace(badNs),
      });
      const { code, result } = await deploy(dir);
      expect(code, vars).toBe(1);
      expect(result.errors.map((error) => error.message)).toEqual([expect.stringContaining(message as string)]);
      expect(result.newObjects).toEqual([]);
    }
    expect(await namespaceExists(badNs)).toBe(false);
  });
});
