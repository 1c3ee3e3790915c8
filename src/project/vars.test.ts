import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../kube/cluster.ts';
import { GitCache } from '../source/git-cache.ts';
import { OciCache } from '../source/oci-cache.ts';
import { RegistryCredentials } from '../source/oci-credentials.ts';
import { createAgeKey, createGpgKey, sopsEncrypt, type AgeKey, type GpgKey } from '../sops/test-support.ts';
import { KUBECONFIG, kubectl } from '../../test/support/cli.ts';
import { removeCopy, writeProject } from '../../test/support/fixtures.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { startHttpServer, type TestHttpServer } from '../../test/support/http-server.ts';
import type { ProjectEnvironment } from './environment.ts';
import { DeploymentProjectSchema, type VarsSource } from './schema.ts';
import { validate } from '../validate.ts';
import { SensitiveValues } from './sensitive.ts';
import { loadVars } from './vars.ts';
import { testConfig, testRenderer, testTools } from '../../test/support/engine.ts';
import type { Values } from '../values.ts';

const NAMESPACE = 'gantry-e2e-vars-unit';
const pool = testRenderer({ workers: 2 });
const tools = testTools();
let gitRoot: string;
let environment: ProjectEnvironment;
/** What the last load collected as sensitive. */
let sensitive: SensitiveValues;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  gitRoot = await mkdtemp(path.join(os.tmpdir(), 'gantry-vars-git-'));
  environment = {
    renderer: pool,
    tools,
    cluster: Cluster.connect({ kubeconfig: KUBECONFIG }),
    git: new GitCache({ root: gitRoot, tools }),
    oci: new OciCache(path.join(gitRoot, 'oci')),
    registries: new RegistryCredentials(),
    systemEnv: testConfig().systemEnv,
    sensitive: new SensitiveValues(),
  };
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await rm(gitRoot, { recursive: true, force: true });
  await pool.close();
});

/** Loads `sources` over `context` in a throwaway project holding `files`. */
async function load(
  sources: VarsSource[],
  options: { files?: Record<string, string>; context?: Values; environment?: Partial<ProjectEnvironment> } = {},
): Promise<Values> {
  const dir = await writeProject(options.files ?? {});
  cleanups.push(() => removeCopy(dir));
  sensitive = new SensitiveValues();
  // The environment as it is now: tests set variables for systemEnvVars before loading.
  const systemEnv = testConfig().systemEnv;
  return loadVars(sources, options.context ?? {}, {
    rootDir: dir,
    searchDirs: [dir],
    declaredIn: 'deployment.yaml',
    environment: { ...environment, systemEnv, sensitive, ...options.environment },
  });
}

describe('modifiers', () => {
  it('merges values, lets each source see the vars before it, and honours noOverride and when', async () => {
    const vars = await load([
      { values: { a: { x: 1, y: 1 }, name: 'first' } },
      { values: { a: { y: 2 }, greeting: 'hello {{ name }}' } },
      { values: { a: { x: 9, z: 3 } }, noOverride: true },
      { values: { skipped: true }, when: 'name == "other"' },
      { values: { taken: true }, when: 'a.y == 2' },
    ]);
    expect(vars).toEqual({ a: { x: 1, y: 2, z: 3 }, name: 'first', greeting: 'hello first', taken: true });
  });

  it('places vars at a dotted targetPath or into one element of a list', async () => {
    const vars = await load([
      { values: { list: [{ keep: 1 }, { keep: 2 }] } },
      { values: { v: 1 }, targetPath: 'my.target' },
      { values: { added: true }, targetPath: 'list[1]' },
    ]);
    expect(vars).toEqual({ list: [{ keep: 1 }, { keep: 2, added: true }], my: { target: { v: 1 } } });
  });

  it('names the source of a bad targetPath, a vars file that is no mapping, and multidoc without targetPath', async () => {
    await expect(load([{ values: { v: 1 }, targetPath: 'a[*]' }])).rejects.toThrow(
      "deployment.yaml: vars[0]: targetPath 'a[*]': only keys and list indexes are supported (at '[*]')",
    );
    await expect(
      load([{ values: { v: 1 } }, { http: { url: 'http://127.0.0.1:1' }, when: 'false' }, { file: 'list.yaml' }], {
        files: { 'list.yaml': '- 1\n' },
      }),
    ).rejects.toThrow('list.yaml: a vars file must hold a YAML mapping');
    await expect(load([{ file: 'v.yaml', multidoc: true }], { files: { 'v.yaml': 'a: 1\n' } })).rejects.toThrow(
      "deployment.yaml: vars[0]: 'multidoc' needs 'targetPath'",
    );
  });

  it('refuses no source, two sources and the cloud sources', async () => {
    await expect(load([{ ignoreMissing: true }])).rejects.toThrow('deployment.yaml: vars[0]: a vars source needs one of values, file, git');
    await expect(load([{ values: {}, file: 'x.yaml' }])).rejects.toThrow(
      'deployment.yaml: vars[0]: a vars source can have only one of values, file',
    );
    await expect(load([{ awsSecretsManager: { secretName: 'x' } }])).rejects.toThrow(
      "deployment.yaml: vars[0]: vars source 'awsSecretsManager' is not supported by this version of Gantry: the cloud secret stores",
    );
  });

  it('reports a typo in a source field with its path', () => {
    expect(() =>
      validate(DeploymentProjectSchema, { vars: [{ clusterConfigMap: { nmae: 'x', namespace: 'n', key: 'k' } }] }, 'deployment.yaml'),
    ).toThrow("deployment.yaml: vars[0].clusterConfigMap: unknown field 'nmae'");
    expect(() => validate(DeploymentProjectSchema, { vars: [{ http: { url: 'http://x', header: {} } }] }, 'deployment.yaml')).toThrow(
      "deployment.yaml: vars[0].http: unknown field 'header'",
    );
  });

  it('collects the values of sensitive sources, and sensitive: false clears the default', async () => {
    Object.assign(process.env, { GANTRY_VARS_TEST_TOKEN: 's3cret-token', GANTRY_VARS_TEST_PUBLIC: 'public-value' });
    const vars = await load([
      { values: { public: 'plain-value' } },
      { values: { secret: { nested: ['hunter2'] } }, sensitive: true },
      { systemEnvVars: { token: 'GANTRY_VARS_TEST_TOKEN' } },
      { systemEnvVars: { notSecret: 'GANTRY_VARS_TEST_PUBLIC' }, sensitive: false },
    ]);
    expect(vars).toEqual({ public: 'plain-value', secret: { nested: ['hunter2'] }, token: 's3cret-token', notSecret: 'public-value' });
    expect(sensitive.list()).toEqual(['s3cret-token', 'hunter2']);
    expect(sensitive.mask('token=s3cret-token password=hunter2 public=public-value')).toBe(
      'token=***** password=***** public=public-value',
    );
  });

  it('tells the role that hides a variable from templates', async () => {
    process.env['GANTRY_VARS_TEST_HIDDEN'] = 'set';
    const hidden = { variables: {}, missingHint: 'the controller shows templates only the variables named by --allow-system-env-var' };
    await expect(load([{ systemEnvVars: { a: 'GANTRY_VARS_TEST_HIDDEN' } }], { environment: { systemEnv: hidden } })).rejects.toThrow(
      'deployment.yaml: vars[0]: systemEnvVars: environment variable GANTRY_VARS_TEST_HIDDEN not found for a (the controller shows templates only the variables named by --allow-system-env-var)',
    );
  });
});

describe('file', () => {
  it('renders the file with the vars before it, keeps the first document, and ignores a missing file on request', async () => {
    const files = { 'vars.yaml': 'greeting: hello {{ name }}\n---\nsecond: 1\n' };
    const vars = await load([{ values: { name: 'x' } }, { file: 'vars.yaml' }, { file: 'missing.yaml', ignoreMissing: true }], { files });
    expect(vars).toEqual({ name: 'x', greeting: 'hello x' });
    await expect(load([{ file: 'missing.yaml' }])).rejects.toThrow(/deployment.yaml: vars\[0\]: vars file 'missing.yaml' not found/);
  });

  it('loads every document with multidoc', async () => {
    const vars = await load([{ file: 'vars.yaml', multidoc: true, targetPath: 'docs' }], { files: { 'vars.yaml': 'a: 1\n---\na: 2\n' } });
    expect(vars).toEqual({ docs: [{ a: 1 }, { a: 2 }] });
  });
});

describe('sops-encrypted vars files', () => {
  let age: AgeKey;
  let gpg: GpgKey;
  beforeAll(async () => {
    [age, gpg] = await Promise.all([createAgeKey(), createGpgKey()]);
    cleanups.push(
      () => age.remove(),
      () => gpg.remove(),
    );
  }, 120_000);

  it('decrypts with age after templating and marks the vars sensitive', async () => {
    const encrypted = await sopsEncrypt('db:\n  password: hunter2\n', 'yaml', { age: age.recipient });
    const vars = await load([{ values: { plain: 1 } }, { file: 'secrets.yaml' }], {
      files: { 'secrets.yaml': encrypted },
      environment: { sopsEnv: { SOPS_AGE_KEY_FILE: age.keyFile } },
    });
    expect(vars).toEqual({ plain: 1, db: { password: 'hunter2' } });
    expect(sensitive.list()).toEqual(['hunter2']);
  });

  it('decrypts JSON with PGP', async () => {
    const encrypted = await sopsEncrypt('{"token": "abc"}', 'json', { pgp: gpg.fingerprint, gnupgHome: gpg.home });
    const vars = await load([{ file: 'secrets.json' }], {
      files: { 'secrets.json': encrypted },
      environment: { sopsEnv: { GNUPGHOME: gpg.home } },
    });
    expect(vars).toEqual({ token: 'abc' });
  });

  it('names the file and the recipient when the key is missing', async () => {
    const encrypted = await sopsEncrypt('a: 1\n', 'yaml', { age: age.recipient });
    await expect(
      load([{ file: 'secrets.yaml' }], {
        files: { 'secrets.yaml': encrypted },
        environment: { sopsEnv: { HOME: '/nonexistent', SOPS_AGE_KEY_FILE: '' } },
      }),
    ).rejects.toThrow(`secrets.yaml: cannot decrypt with sops: no key to decrypt it is available: age recipient ${age.recipient}`);
  });
});

describe('git', () => {
  let repo: TestRepo;
  beforeAll(async () => {
    repo = await createRepo({ 'vars/common.yaml': 'fromGit: "{{ prefix }}-main"\n' });
    await repo.tag('v1');
    await repo.commit({ 'vars/common.yaml': 'fromGit: "{{ prefix }}-branch"\n' });
    await repo.branch('feature');
    await repo.commit({ 'vars/common.yaml': 'fromGit: "{{ prefix }}-latest"\n' });
    cleanups.push(() => repo.remove());
  });

  it('loads a file of the default branch, a branch or a tag, rendered with the vars before it', async () => {
    const base: VarsSource = { values: { prefix: 'p', file: 'common' } };
    expect(await load([base, { git: { url: repo.url, path: 'vars/{{ file }}.yaml' } }])).toMatchObject({ fromGit: 'p-latest' });
    expect(await load([base, { git: { url: repo.url, ref: { branch: 'feature' }, path: 'vars/common.yaml' } }])).toMatchObject({
      fromGit: 'p-branch',
    });
    expect(await load([base, { git: { url: repo.url, ref: { tag: 'v1' }, path: 'vars/common.yaml' } }])).toMatchObject({
      fromGit: 'p-main',
    });
  });

  it('ignores a missing file on request, but never a bad ref', async () => {
    expect(await load([{ git: { url: repo.url, path: 'nope.yaml' }, ignoreMissing: true }])).toEqual({});
    await expect(load([{ git: { url: repo.url, path: 'nope.yaml' } }])).rejects.toThrow(
      `deployment.yaml: vars[0]: file 'nope.yaml' not found in git repository ${repo.url} at the default branch`,
    );
    await expect(
      load([{ git: { url: repo.url, ref: { branch: 'no-such-branch' }, path: 'vars/common.yaml' }, ignoreMissing: true }]),
    ).rejects.toThrow(`deployment.yaml: vars[0]: git repository ${repo.url} has no branch no-such-branch`);
    await expect(load([{ git: { url: repo.url, ref: { branch: 'a', tag: 'b' }, path: 'x.yaml' } }])).rejects.toThrow(
      "git ref needs exactly one of 'branch', 'tag' or 'commit' (found branch, tag)",
    );
    await expect(load([{ git: { url: repo.url, path: '../../etc/passwd' } }])).rejects.toThrow(
      "git path: '../../etc/passwd' is outside the repository",
    );
  });
});

describe('gitFiles', () => {
  let repo: TestRepo;
  let age: AgeKey;
  let mainCommit: string;
  beforeAll(async () => {
    age = await createAgeKey();
    repo = await createRepo({
      'envs/a/info.yaml': 'name: a\nowner: "{{ team }}"\n',
      'envs/b/info.yaml': 'name: b\n',
      'envs/multi.yaml': 'x: 1\n---\nx: 2\n',
      'notes.txt': 'not matched\n',
    });
    await repo.branch('preview-env-1');
    await repo.commit({
      'envs/c/info.yaml': 'name: c\n',
      'secret.yaml': await sopsEncrypt('token: s3cret\n', 'yaml', { age: age.recipient }),
    });
    await repo.branch('preview-env-2');
    await repo.tag('v1.0.0');
    mainCommit = await repo.commit({ 'envs/a/info.yaml': 'name: a-main\n' });
    cleanups.push(
      () => repo.remove(),
      () => age.remove(),
    );
  }, 120_000);

  it('loads the matching files of every branch a regex matches, as Kluctl lays them out', async () => {
    const vars = await load(
      [
        { values: { team: 'blue' } },
        {
          gitFiles: {
            url: repo.url,
            ref: { branch: 'preview-env-.*' },
            files: [
              { glob: 'envs/*/info.yaml', parseYaml: true, render: true },
              { glob: 'envs/multi.yaml', parseYaml: true, yamlMultiDoc: true },
            ],
          },
          targetPath: 'previewEnvs',
        },
      ],
      { environment: { sopsEnv: { SOPS_AGE_KEY_FILE: age.keyFile } } },
    );
    const envs = vars['previewEnvs'] as Array<Record<string, any>>;
    expect(envs.map((env) => [env['ref'], env['refStr']])).toEqual([
      [{ branch: 'preview-env-1' }, 'refs/heads/preview-env-1'],
      [{ branch: 'preview-env-2' }, 'refs/heads/preview-env-2'],
    ]);
    const [first, second] = envs;
    expect(first?.['files'].map((file: { path: string }) => file.path)).toEqual([
      'envs/a/info.yaml',
      'envs/b/info.yaml',
      'envs/multi.yaml',
    ]);
    expect(second?.['files'].map((file: { path: string }) => file.path)).toEqual([
      'envs/a/info.yaml',
      'envs/b/info.yaml',
      'envs/c/info.yaml',
      'envs/multi.yaml',
    ]);
    expect(first?.['filesByPath']['envs/a/info.yaml']).toEqual({
      file: { glob: 'envs/*/info.yaml', parseYaml: true, render: true },
      path: 'envs/a/info.yaml',
      size: 'name: a\nowner: "{{ team }}"\n'.length,
      // Jinja2 as Kluctl configures it drops one trailing newline.
      content: 'name: a\nowner: "blue"',
      parsed: { name: 'a', owner: 'blue' },
    });
    expect(first?.['filesTree']['envs']['b']['info.yaml'].parsed).toEqual({ name: 'b' });
    expect(first?.['filesByPath']['envs/multi.yaml'].parsed).toEqual([{ x: 1 }, { x: 2 }]);
    expect(sensitive.list()).toEqual([]);
  });

  it('loads the default branch, a tag by regex or the ref a commit is the tip of; decrypts sops files as sensitive', async () => {
    const files = [{ glob: '**/info.yaml', parseYaml: true }];
    const main = await load([{ gitFiles: { url: repo.url, files }, targetPath: 'x' }]);
    expect((main['x'] as any)[0].ref).toEqual({ branch: 'main' });
    expect((main['x'] as any)[0].filesByPath['envs/a/info.yaml'].parsed).toEqual({ name: 'a-main' });

    const byCommit = await load([{ gitFiles: { url: repo.url, ref: { commit: mainCommit }, files }, targetPath: 'x' }]);
    expect((byCommit['x'] as any)[0].refStr).toBe('refs/heads/main');

    const tagged = await load(
      [{ gitFiles: { url: repo.url, ref: { tag: 'v1\\..*' }, files: [{ glob: 'secret.yaml', parseYaml: true }] }, targetPath: 'x' }],
      { environment: { sopsEnv: { SOPS_AGE_KEY_FILE: age.keyFile } } },
    );
    expect((tagged['x'] as any)[0].ref).toEqual({ tag: 'v1.0.0' });
    expect((tagged['x'] as any)[0].files[0].parsed).toEqual({ token: 's3cret' });
    expect(sensitive.list()).toContain('s3cret');
  });

  it('gives an empty list, or nothing with ignoreMissing, when no ref matches; refuses bad refs and a missing targetPath', async () => {
    expect(await load([{ gitFiles: { url: repo.url, ref: { branch: 'nope-.*' } }, targetPath: 'x' }])).toEqual({ x: [] });
    expect(await load([{ gitFiles: { url: repo.url, ref: { branch: 'nope-.*' } }, targetPath: 'x', ignoreMissing: true }])).toEqual({});
    await expect(load([{ gitFiles: { url: repo.url, ref: { commit: '0'.repeat(40) } }, targetPath: 'x' }])).rejects.toThrow(
      `deployment.yaml: vars[0]: commit ${'0'.repeat(40)} is not the tip of a branch or tag of ${repo.url}`,
    );
    await expect(load([{ gitFiles: { url: repo.url, ref: { branch: '(' } }, targetPath: 'x' }])).rejects.toThrow(
      "deployment.yaml: vars[0]: invalid branch regex '('",
    );
    await expect(load([{ gitFiles: { url: repo.url } }])).rejects.toThrow(
      "deployment.yaml: vars[0]: 'targetPath' is required for a vars source that does not load a mapping",
    );
    await expect(load([{ gitFiles: { url: `${repo.url}-missing` }, targetPath: 'x' }])).rejects.toThrow(
      `deployment.yaml: vars[0]: git repository ${repo.url}-missing could not be fetched`,
    );
  });
});

describe('systemEnvVars', () => {
  it('reads a tree of variables, parsed as YAML, with defaults', async () => {
    Object.assign(process.env, { GANTRY_VARS_TEST_NUMBER: '42', GANTRY_VARS_TEST_QUOTED: "'43'", GANTRY_VARS_TEST_TEXT: 'hello' });
    delete process.env['GANTRY_VARS_TEST_UNSET'];
    const vars = await load([
      {
        systemEnvVars: {
          number: 'GANTRY_VARS_TEST_NUMBER',
          quoted: 'GANTRY_VARS_TEST_QUOTED',
          nested: { list: [{ text: 'GANTRY_VARS_TEST_TEXT' }] },
          withDefault: 'GANTRY_VARS_TEST_UNSET:fallback',
          setOverDefault: 'GANTRY_VARS_TEST_NUMBER:0',
          emptyDefault: 'GANTRY_VARS_TEST_UNSET:',
        },
      },
    ]);
    expect(vars).toEqual({
      number: 42,
      quoted: '43',
      nested: { list: [{ text: 'hello' }] },
      withDefault: 'fallback',
      setOverDefault: 42,
      emptyDefault: '',
    });
  });

  it('names a missing variable and its path, unless ignoreMissing', async () => {
    delete process.env['GANTRY_VARS_TEST_UNSET'];
    await expect(load([{ systemEnvVars: { a: { b: 'GANTRY_VARS_TEST_UNSET' } } }])).rejects.toThrow(
      'deployment.yaml: vars[0]: systemEnvVars: environment variable GANTRY_VARS_TEST_UNSET not found for a.b',
    );
    expect(await load([{ systemEnvVars: { a: 'GANTRY_VARS_TEST_UNSET' }, ignoreMissing: true }])).toEqual({});
  });
});

describe('http', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startHttpServer({
      '/vars.yaml': { body: 'fromHttp:\n  value: 1\n' },
      '/api': { body: '[{"data": {"nested": 2}, "text": "fromText: 3"}]', contentType: 'application/json' },
      '/multi': { body: 'a: 1\n---\na: 2\n' },
      '/broken': { status: 500, body: 'boom' },
    });
    cleanups.push(() => server.close());
  });

  it('loads a YAML response', async () => {
    expect(await load([{ http: { url: `${server.url}/vars.yaml` } }])).toEqual({ fromHttp: { value: 1 } });
  });

  it('sends method, body and headers, all rendered with the vars before it', async () => {
    await load([
      { values: { token: 't0k' } },
      { http: { url: `${server.url}/vars.yaml`, method: 'post', body: 'q={{ token }}', headers: { Authorization: 'Bearer {{ token }}' } } },
    ]);
    expect(server.received.at(-1)).toMatchObject({
      method: 'POST',
      path: '/vars.yaml',
      body: 'q=t0k',
      headers: expect.objectContaining({ authorization: 'Bearer t0k' }),
    });
  });

  it('selects with jsonPath, parsing a selected string as YAML', async () => {
    expect(await load([{ http: { url: `${server.url}/api`, jsonPath: '$[0].data' } }])).toEqual({ nested: 2 });
    expect(await load([{ http: { url: `${server.url}/api`, jsonPath: '$[0].text' } }])).toEqual({ fromText: 3 });
    await expect(load([{ http: { url: `${server.url}/api`, jsonPath: '$[1]' } }])).rejects.toThrow(
      `jsonPath '$[1]' selects nothing in the response of ${server.url}/api`,
    );
  });

  it('loads every document with multidoc', async () => {
    expect(await load([{ http: { url: `${server.url}/multi` }, multidoc: true, targetPath: 'docs' }])).toEqual({
      docs: [{ a: 1 }, { a: 2 }],
    });
  });

  it('ignores a 404 on request, but not other failures', async () => {
    expect(await load([{ http: { url: `${server.url}/missing` }, ignoreMissing: true }])).toEqual({});
    await expect(load([{ http: { url: `${server.url}/missing` } }])).rejects.toThrow(
      `deployment.yaml: vars[0]: http: GET ${server.url}/missing failed with status code 404`,
    );
    await expect(load([{ http: { url: `${server.url}/broken` }, ignoreMissing: true }])).rejects.toThrow('failed with status code 500');
    await expect(load([{ http: { url: 'http://127.0.0.1:1/x' } }])).rejects.toThrow(
      'deployment.yaml: vars[0]: http: GET http://127.0.0.1:1/x failed: connect ECONNREFUSED',
    );
  });
});

describe('cluster sources', () => {
  beforeAll(async () => {
    const manifests = `
apiVersion: v1
kind: Namespace
metadata: {name: ${NAMESPACE}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: vars, namespace: ${NAMESPACE}, labels: {gantry-vars-unit: one}, annotations: {yaml: '{"x": 45}', tpl: '{{ prefix }}-rendered'}}
data:
  vars: |
    fromConfigMap: {{ prefix }}-value
  number: "42"
  multi: |
    a: 1
    ---
    a: 2
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: ${NAMESPACE}, labels: {gantry-vars-unit: two}}
data: {vars: "fromOther: 1"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: ${NAMESPACE}}
stringData:
  vars: |
    password: hunter2
`;
    await kubectl(['apply', '-f', '-'], manifests);
    cleanups.push(() => kubectl(['delete', 'namespace', NAMESPACE, '--wait=false']));
  });

  it('loads a ConfigMap key by name or labels, rendered with the vars before it', async () => {
    const byName = await load([{ values: { prefix: 'p' } }, { clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'vars' } }]);
    expect(byName).toEqual({ prefix: 'p', fromConfigMap: 'p-value' });
    expect(sensitive.list()).toEqual([]);
    const byLabels = await load([{ clusterConfigMap: { labels: { 'gantry-vars-unit': 'two' }, namespace: NAMESPACE, key: 'vars' } }]);
    expect(byLabels).toEqual({ fromOther: 1 });
  });

  it('loads a scalar at targetPath (the source-level deprecated targetPath too), and every document with multidoc', async () => {
    expect(await load([{ clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'number' }, targetPath: 'deep.n' }])).toEqual({
      deep: { n: 42 },
    });
    expect(await load([{ clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'number', targetPath: 'old.n' } }])).toEqual({
      old: { n: 42 },
    });
    expect(
      await load([{ clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'multi' }, multidoc: true, targetPath: 'docs' }]),
    ).toEqual({ docs: [{ a: 1 }, { a: 2 }] });
    await expect(load([{ clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'number' } }])).rejects.toThrow(
      "'targetPath' is required",
    );
  });

  it('decodes Secret data and marks it sensitive', async () => {
    const vars = await load([{ clusterSecret: { name: 'creds', namespace: NAMESPACE, key: 'vars' } }]);
    expect(vars).toEqual({ password: 'hunter2' });
    expect(sensitive.list()).toEqual(['hunter2']);
  });

  it('names a missing object or key, keeps earlier defaults under ignoreMissing, and refuses ambiguous labels', async () => {
    await expect(load([{ clusterConfigMap: { name: 'nope', namespace: NAMESPACE, key: 'vars' } }])).rejects.toThrow(
      `deployment.yaml: vars[0]: clusterConfigMap: ConfigMap nope in namespace ${NAMESPACE} not found on the cluster`,
    );
    await expect(load([{ clusterSecret: { name: 'creds', namespace: NAMESPACE, key: 'nope' } }])).rejects.toThrow(
      `deployment.yaml: vars[0]: clusterSecret: key 'nope' not found in ${NAMESPACE}/Secret/creds`,
    );
    const defaults = await load([
      { values: { deep: { n: 7 } } },
      { clusterConfigMap: { name: 'vars', namespace: NAMESPACE, key: 'nope' }, targetPath: 'deep.n', ignoreMissing: true },
    ]);
    expect(defaults).toEqual({ deep: { n: 7 } });
    await expect(
      load([{ clusterConfigMap: { labels: { 'gantry-vars-unit': 'one' }, name: 'vars', namespace: NAMESPACE, key: 'vars' } }]),
    ).rejects.toThrow("only one of 'name' or 'labels'");
  });

  it('loads an object path, rendered and parsed on request, and lists with list: true', async () => {
    const vars = await load([
      { values: { prefix: 'p' } },
      {
        clusterObject: { kind: 'ConfigMap', name: 'vars', namespace: NAMESPACE, path: 'metadata.labels["gantry-vars-unit"]' },
        targetPath: 'obj.label',
      },
      { clusterObject: { kind: 'ConfigMap', name: 'vars', namespace: NAMESPACE, path: 'metadata.annotations.tpl' }, targetPath: 'obj.raw' },
      {
        clusterObject: { kind: 'ConfigMap', name: 'vars', namespace: NAMESPACE, path: 'metadata.annotations.tpl', render: true },
        targetPath: 'obj.rendered',
      },
      {
        clusterObject: {
          kind: 'ConfigMap',
          apiVersion: 'v1',
          name: 'vars',
          namespace: NAMESPACE,
          path: 'metadata.annotations.yaml',
          parseYaml: true,
        },
        targetPath: 'obj.parsed',
      },
      {
        clusterObject: { kind: 'ConfigMap', labels: { 'gantry-vars-unit': 'two' }, namespace: NAMESPACE, path: '$' },
        targetPath: 'obj.whole',
      },
    ]);
    expect(vars['obj']).toMatchObject({
      label: 'one',
      raw: '{{ prefix }}-rendered',
      rendered: 'p-rendered',
      parsed: { x: 45 },
      whole: { kind: 'ConfigMap', metadata: { name: 'other' } },
    });
    expect(sensitive.list()).toEqual(expect.arrayContaining(['p-rendered']));
    const listed = await load([
      {
        clusterObject: { kind: 'ConfigMap', labels: { 'gantry-vars-unit': 'one' }, list: true, path: 'metadata.name' },
        targetPath: 'names',
      },
    ]);
    expect(listed).toEqual({ names: ['vars'] });
  });

  it('names ambiguous kinds, missing paths and several matches', async () => {
    await expect(
      load([
        {
          clusterObject: { kind: 'ConfigMap', labels: { 'gantry-vars-unit': 'one' }, namespace: NAMESPACE, path: 'data.*' },
          targetPath: 'x',
        },
      ]),
    ).rejects.toThrow(`path 'data.*' selects 3 values in ${NAMESPACE}/ConfigMap/vars; it must select one`);
    await expect(
      load([{ clusterObject: { kind: 'Event', namespace: NAMESPACE, labels: { a: 'b' }, path: '$' }, targetPath: 'x' }]),
    ).rejects.toThrow("more than one resource has kind Event (v1, events.k8s.io/v1); set 'apiVersion'");
    await expect(
      load([{ clusterObject: { kind: 'NoSuchKind', name: 'x', namespace: NAMESPACE, path: '$' }, targetPath: 'x' }]),
    ).rejects.toThrow('the cluster serves no resource of kind NoSuchKind');
    await expect(
      load([{ clusterObject: { kind: 'ConfigMap', name: 'vars', namespace: NAMESPACE, path: 'status.nothing' }, targetPath: 'x' }]),
    ).rejects.toThrow(`clusterObject: path 'status.nothing' selects nothing in ${NAMESPACE}/ConfigMap/vars`);
    expect(
      await load([
        { clusterObject: { kind: 'ConfigMap', name: 'nope', namespace: NAMESPACE, path: '$' }, targetPath: 'x', ignoreMissing: true },
      ]),
    ).toEqual({});
  });

  it('says the cluster is needed when rendering offline', async () => {
    await expect(
      load([{ clusterSecret: { name: 'creds', namespace: NAMESPACE, key: 'vars' } }], { environment: { cluster: undefined } }),
    ).rejects.toThrow(
      "deployment.yaml: vars[0]: clusterSecret needs the target's cluster, and rendering is offline (--offline-kubernetes)",
    );
  });
});
