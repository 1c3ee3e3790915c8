/**
 * Kluctl's project features through the gantry binary: tag and folder selection (render, deploy, prune),
 * -T, --args-from-file and -a name=@file, projects without .kluctl.yaml, git includes and library projects,
 * recursive items and .templateignore.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYamlDocuments } from '../../src/yaml.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { gantry, gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';

const NS = 'gantry-e2e-features';
const cm = (name: string, extra = '') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

let context = '';
const cleanup: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  context = await localContext();
});
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject(files);
  cleanup.push(() => removeCopy(dir));
  return dir;
}

async function rendered(args: string[]): Promise<Array<Record<string, any>>> {
  const run = await gantry(['render', '--offline-kubernetes', ...args]);
  if (run.code !== 0) throw new Error(`render failed: ${run.stderr}`);
  return parseYamlDocuments(run.stdout, 'render') as Array<Record<string, any>>;
}

const namesOf = (objects: Array<Record<string, any>>) => objects.map((object) => object.metadata.name).sort();

describe('selection', { timeout: 300_000 }, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await project({
      '.kluctl.yaml': 'discriminator: gantry-e2e-features-selection\ntargets:\n  - name: t\n',
      'deployment.yaml': [
        'deployments:',
        '  - path: base',
        '    alwaysDeploy: true',
        '    skipDeleteIfTags: true',
        '  - path: frontend',
        '    tags: [web]',
        '  - path: backend',
        '    tags: [api]',
        '  - include: jobs',
        `overrideNamespace: ${NS}`,
        '',
      ].join('\n'),
      'base/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS}\n`,
      'frontend/cm.yaml': cm('frontend'),
      'backend/cm.yaml': cm('backend'),
      'jobs/deployment.yaml': 'deployments:\n  - path: nightly\n',
      'jobs/nightly/cm.yaml': cm('nightly'),
    });
    cleanup.push(() => gantryJson(['delete', '-y', '-t', 't', '--project-dir', dir, '--context', context]));
  });

  it('renders only included tags (plus alwaysDeploy items) and never excluded ones', async () => {
    expect(namesOf(await rendered(['-t', 't', '--project-dir', dir, '-I', 'web']))).toEqual(['frontend', NS].sort());
    expect(namesOf(await rendered(['-t', 't', '--project-dir', dir, '-E', 'api', '-E', 'jobs']))).toEqual(['frontend', NS].sort());
    expect(namesOf(await rendered(['-t', 't', '--project-dir', dir, '-I', 'nightly']))).toEqual(['nightly', NS].sort());
    expect(namesOf(await rendered(['-t', 't', '--project-dir', dir, '--include-deployment-dir', 'jobs/nightly']))).toEqual(
      ['nightly', NS].sort(),
    );
    expect(namesOf(await rendered(['-t', 't', '--project-dir', dir, '--exclude-deployment-dir', 'backend']))).toEqual(
      ['frontend', 'nightly', NS].sort(),
    );
  });

  it('labels included items with inherited and default tags', async () => {
    const nightly = (await rendered(['-t', 't', '--project-dir', dir])).find((object) => object.metadata.name === 'nightly');
    expect(nightly?.metadata.labels).toMatchObject({ 'kluctl.io/tag-0': 'jobs', 'kluctl.io/tag-1': 'nightly' });
  });

  it('prunes only inside the selection, and never skipDeleteIfTags objects while selecting by tags', async () => {
    const args = ['-t', 't', '--project-dir', dir, '--context', context];
    expect((await gantryJson(['deploy', ...args])).result.errors).toEqual([]);
    await writeFile(
      path.join(dir, 'deployment.yaml'),
      `deployments:\n  - path: base\n    alwaysDeploy: true\n    skipDeleteIfTags: true\noverrideNamespace: ${NS}\n`,
    );
    const webOnly = await gantryJson(['prune', '-y', ...args, '-I', 'web']);
    expect(names(webOnly.result.deletedObjects)).toEqual([`${NS}/ConfigMap/frontend`]);
    const everythingElse = await gantryJson(['delete', '-y', ...args, '-E', 'web']);
    expect(names(everythingElse.result.deletedObjects)).toEqual([`${NS}/ConfigMap/backend`, `${NS}/ConfigMap/nightly`]);
    const left = (await kubectlJson(['get', 'namespaces', NS])) as unknown as Record<string, any>;
    expect(left.metadata.name).toBe(NS);
  });
});

describe('target and args', { timeout: 120_000 }, () => {
  it('renders with -T, --args-from-file and -a name=@file', async () => {
    const dir = await project({
      '.kluctl.yaml':
        'discriminator: d-{{ target.name }}\ntargets:\n  - name: base\n    args:\n      size: small\nargs:\n  - name: size\n  - name: motd\n    default: none\n  - name: settings\n    default: {}\n',
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/cm.yaml': cm(
        '{{ target.name }}',
        'data:\n  size: "{{ args.size }}"\n  motd: "{{ args.motd | trim }}"\n  replicas: "{{ args.settings.replicas }}"\n',
      ),
      'args.yaml': 'size: large\nsettings:\n  replicas: 3\n',
      'motd.txt': 'hello from a file\n',
    });
    const [object] = await rendered([
      '-t',
      'base',
      '-T',
      'renamed',
      '--project-dir',
      dir,
      '--args-from-file',
      path.join(dir, 'args.yaml'),
      '-a',
      `motd=@${path.join(dir, 'motd.txt')}`,
    ]);
    expect(object?.metadata.name).toBe('renamed');
    expect(object?.metadata.labels['kluctl.io/discriminator']).toBe('d-renamed');
    expect(object?.data).toEqual({ size: 'large', motd: 'hello from a file', replicas: '3' });
  });

  it('deploys a project without .kluctl.yaml, and refuses to prune it', async () => {
    const dir = await project({ 'cm.yaml': cm('no-name-target', `  namespace: default\n`) });
    const args = ['--project-dir', dir, '--context', context];
    const removeObject = () => kubectl(['delete', 'configmap', 'no-name-target', '-n', 'default', '--ignore-not-found']);
    await removeObject();
    cleanup.push(removeObject);
    const deployed = await gantryJson(['deploy', ...args]);
    expect(deployed.result.errors).toEqual([]);
    expect(names(deployed.result.newObjects)).toEqual(['default/ConfigMap/no-name-target']);
    const pruned = await gantryJson(['prune', '-y', ...args]);
    expect(pruned.code).toBe(1);
    expect(pruned.result.errors[0]?.message).toMatch(/prune needs a named target.*no \.kluctl\.yaml/);
  });
});

describe('git includes and libraries', { timeout: 120_000 }, () => {
  let library: TestRepo;
  beforeAll(async () => {
    library = await createRepo({
      'libs/greeter/.kluctl-library.yaml': 'args:\n  - name: greeting\n  - name: punctuation\n    default: "!"\n',
      'libs/greeter/deployment.yaml': 'deployments:\n  - path: cm\n',
      'libs/greeter/cm/cm.yaml': cm(
        'greeter',
        'data:\n  text: "{{ args.greeting }}{{ args.punctuation }}"\n  sees_parent: "{{ parent_var is defined }}"\n',
      ),
      'plain/deployment.yaml': 'deployments:\n  - path: cm\n',
      'plain/cm/cm.yaml': cm('plain-{{ parent_var }}'),
    });
    await library.tag('v1');
    await library.commit({ 'libs/greeter/cm/cm.yaml': cm('greeter', 'data:\n  text: "v2 {{ args.greeting }}"\n') });
    cleanup.push(() => library.remove());
  });

  async function includer(deployments: string): Promise<string> {
    return project({
      '.kluctl.yaml': 'targets:\n  - name: t\n',
      'deployment.yaml': `vars:\n  - values:\n      parent_var: p\ndeployments:\n${deployments}`,
    });
  }

  it('includes a library from a git tag with args and its defaults, without the parent vars', async () => {
    const dir = await includer(
      `  - git:\n      url: ${library.url}\n      ref:\n        tag: v1\n      subDir: libs/greeter\n    args:\n      greeting: hello\n`,
    );
    const [object] = await rendered(['-t', 't', '--project-dir', dir]);
    expect(object?.data).toEqual({ text: 'hello!', sees_parent: 'False' });
    expect(object?.metadata.annotations['kluctl.io/deployment-item-dir']).toBe('libs/greeter/cm');
  });

  it('follows the branch head, and passes all vars into a plain (non-library) git project', async () => {
    const dir = await includer(
      `  - git:\n      url: ${library.url}\n      subDir: libs/greeter\n    args:\n      greeting: hi\n  - git:\n      url: ${library.url}\n      subDir: plain\n`,
    );
    const objects = await rendered(['-t', 't', '--project-dir', dir]);
    expect(objects.find((object) => object.metadata.name === 'greeter')?.data).toEqual({ text: 'v2 hi' });
    expect(namesOf(objects)).toContain('plain-p');
  });

  it('names the include whose git ref or required arg is missing', async () => {
    const badRef = await includer(`  - git:\n      url: ${library.url}\n      ref:\n        tag: v9\n`);
    const refRun = await gantry(['render', '--offline-kubernetes', '-t', 't', '--project-dir', badRef]);
    expect(refRun.code).toBe(1);
    expect(refRun.stderr).toMatch(/deployment\.yaml: deployments\[0\]: git repository .* has no tag v9/);
    const missingArg = await includer(`  - git:\n      url: ${library.url}\n      ref:\n        tag: v1\n      subDir: libs/greeter\n`);
    const argRun = await gantry(['render', '--offline-kubernetes', '-t', 't', '--project-dir', missingArg]);
    expect(argRun.code).toBe(1);
    expect(argRun.stderr).toMatch(/deployments\[0\]: .*\.kluctl-library\.yaml: required argument 'greeting' is not set/);
  });
});

describe('item folders', { timeout: 120_000 }, () => {
  it('builds recursive items from nested folders and leaves .templateignore files untemplated', async () => {
    const dir = await project({
      '.kluctl.yaml': 'targets:\n  - name: t\n',
      'deployment.yaml': 'deployments:\n  - path: tree\n    recursive: true\n  - path: raw\n',
      'tree/a.yaml': cm('tree-a'),
      'tree/sub/deeper/b.yaml': cm('tree-b'),
      'raw/.templateignore': 'go-*.yaml\n',
      'raw/cm.yaml': cm('raw-{{ target.name }}'),
      'raw/go-template.yaml': cm('raw-go', 'data:\n  template: "{{ .Values.name }}"\n'),
    });
    const objects = await rendered(['-t', 't', '--project-dir', dir]);
    expect(namesOf(objects)).toEqual(['raw-go', 'raw-t', 'tree-a', 'tree-b']);
    expect(objects.find((object) => object.metadata.name === 'raw-go')?.data).toEqual({ template: '{{ .Values.name }}' });
  });

  it("gives the kustomize binary the templated files of its own and another item's folder", async () => {
    const dir = await project({
      '.kluctl.yaml': 'targets:\n  - name: t\n',
      'deployment.yaml': 'deployments:\n  - path: base\n    onlyRender: true\n  - path: overlay\n',
      'base/kustomization.yaml': 'resources:\n  - cm.yaml\n',
      'base/cm.yaml': cm('shared-{{ target.name }}', 'data:\n  size: small\n'),
      'overlay/kustomization.yaml': 'resources:\n  - ../base\npatches:\n  - path: patch.yaml\n',
      'overlay/patch.yaml': cm('shared-{{ target.name }}', 'data:\n  size: "{{ 6 * 7 }}"\n'),
    });
    const objects = await rendered(['-t', 't', '--project-dir', dir]);
    expect(objects.map((object) => [object.metadata.name, object.data])).toEqual([['shared-t', { size: '42' }]]);
  });
});
