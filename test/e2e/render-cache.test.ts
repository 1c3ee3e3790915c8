/**
 * Render reuse (src/target/render-cache.ts) through the CLI's bundle (which global-setup brings up to date; run from
 * the sources, the CLI never reuses a render), with a cache folder of its own.
 * A render is reused only while the project's files, the command's args, everything the render read of the cluster
 * (here a chart's `lookup`, a ConfigMap vars source), the commits of its git refs and the manifests of its OCI refs
 * are unchanged, and never when it holds a Secret or read what cannot be checked.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupColorTemplate, startOciRegistry, type OciRegistry } from '../support/chart-server.ts';
import { gantry, kubectl, localContext } from '../support/cli.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { parseYamlDocuments } from '../../src/yaml.ts';

const NAMESPACE = 'gantry-e2e-render-cache';
const REUSED = /reusing the render of/;

let cacheDir = '';
let context = '';
const projects: string[] = [];
const repos: TestRepo[] = [];
const registries: OciRegistry[] = [];

beforeAll(async () => {
  context = await localContext();
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-render-cache-'));
  // A run stopped before its cleanup leaves the namespace behind, with the lookup source changed.
  await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found']);
  await kubectl(['create', 'namespace', NAMESPACE]);
  await kubectl(['create', 'configmap', 'lookup-source', '-n', NAMESPACE, '--from-literal=color=blue']);
  await kubectl(['label', 'configmap', 'lookup-source', '-n', NAMESPACE, 'gantry-e2e=lookup-source']);
}, 120_000);

afterAll(async () => {
  for (const dir of projects) await removeCopy(dir);
  for (const repo of repos) await repo.remove();
  for (const registry of registries) await registry.close();
  await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
  await rm(cacheDir, { recursive: true, force: true });
});

/** `gantry render` of target t; its objects, and whether it said it reused an earlier render. */
async function render(dir: string, ...args: string[]): Promise<{ objects: Array<Record<string, any>>; reused: boolean }> {
  const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--context', context, ...args], {
    env: { GANTRY_CACHE_DIR: cacheDir },
  });
  if (run.code !== 0) throw new Error(`gantry render failed:\n${run.stderr}`);
  return { objects: parseYamlDocuments(run.stdout, 'render output') as Array<Record<string, any>>, reused: REUSED.test(run.stderr) };
}

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject({ '.kluctl.yaml': 'targets:\n  - name: t\n    args:\n      size: small\n', ...files });
  projects.push(dir);
  return dir;
}

const lookupChart = {
  'deployment.yaml': 'deployments:\n  - path: app\n  - path: plain\n',
  'plain/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: ${NAMESPACE}\ndata:\n  size: "{{ args.size }}"\n`,
  'app/helm-chart.yaml': `helmChart:\n  path: chart\n  releaseName: r\n  namespace: ${NAMESPACE}\n`,
  'app/chart/Chart.yaml': 'apiVersion: v2\nname: e2e-lookup\nversion: 0.1.0\n',
  'app/chart/templates/cm.yaml': lookupColorTemplate(),
};

function data(objects: Array<Record<string, any>>): Record<string, unknown> {
  return Object.fromEntries(objects.map((object) => [object.metadata.name, object.data]));
}

describe('render reuse', () => {
  it("reuses a render while the project, the args and the chart's lookup answer the same, and renders again when one changes", async () => {
    const dir = await project(lookupChart);
    const first = await render(dir);
    expect(first.reused).toBe(false);
    expect(data(first.objects)).toEqual({ 'lookup-result': { color: 'blue' }, plain: { size: 'small' } });

    const again = await render(dir);
    expect(again.reused).toBe(true);
    expect(again.objects).toEqual(first.objects);

    await kubectl(['patch', 'configmap', 'lookup-source', '-n', NAMESPACE, '--type=merge', '-p', '{"data":{"color":"red"}}']);
    const looked = await render(dir);
    expect(looked.reused).toBe(false);
    expect(data(looked.objects)['lookup-result']).toEqual({ color: 'red' });
    expect((await render(dir)).reused).toBe(true);

    const withArg = await render(dir, '-a', 'size=large');
    expect(withArg.reused).toBe(false);
    expect(data(withArg.objects)['plain']).toEqual({ size: 'large' });

    await writeFile(path.join(dir, 'plain/cm.yaml'), (await readFile(path.join(dir, 'plain/cm.yaml'), 'utf8')).replace('size:', 'sized:'));
    const edited = await render(dir);
    expect(edited.reused).toBe(false);
    expect(data(edited.objects)['plain']).toEqual({ sized: 'small' });

    expect((await render(dir, '--no-render-cache')).reused).toBe(false);
  });

  it("reuses a render after the deploy that created the chart's objects, unless the chart looks one of them up", async () => {
    const chart = (name: string, template: string) => ({
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/helm-chart.yaml': `helmChart:\n  path: chart\n  releaseName: ${name}\n  namespace: ${NAMESPACE}\n`,
      'app/chart/Chart.yaml': `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`,
      'app/chart/templates/cm.yaml': template,
    });
    const plain = await project(chart('plain-chart', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain-chart\ndata:\n  a: b\n'));
    const selfLookup = await project(
      chart(
        'self-lookup',
        [
          '{{- $self := lookup "v1" "ConfigMap" .Release.Namespace "self-lookup" }}',
          'apiVersion: v1',
          'kind: ConfigMap',
          'metadata:',
          '  name: self-lookup',
          'data:',
          '  state: {{ if $self }}existing{{ else }}new{{ end }}',
          '',
        ].join('\n'),
      ),
    );
    for (const dir of [plain, selfLookup]) {
      const deploy = await gantry(['deploy', '-y', '-t', 't', '--project-dir', dir, '--context', context], {
        env: { GANTRY_CACHE_DIR: cacheDir },
      });
      expect(deploy.code, deploy.stderr).toBe(0);
    }
    expect((await render(plain)).reused).toBe(true);

    const afterDeploy = await render(selfLookup);
    expect(afterDeploy.reused).toBe(false);
    expect(data(afterDeploy.objects)['self-lookup']).toEqual({ state: 'existing' });
    expect((await render(selfLookup)).reused).toBe(true);
  });

  it("reuses a render with a git include while the include's branch stays on its commit, and renders again once it moves", async () => {
    const library = await createRepo({
      'deployment.yaml': 'deployments:\n  - path: cm\n',
      'cm/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: included\n  namespace: ${NAMESPACE}\ndata:\n  version: one\n`,
    });
    repos.push(library);
    const dir = await project({ 'deployment.yaml': `deployments:\n  - git:\n      url: ${library.url}\n      ref: main\n` });
    expect((await render(dir)).reused).toBe(false);
    const again = await render(dir);
    expect(again.reused).toBe(true);
    expect(data(again.objects)).toEqual({ included: { version: 'one' } });

    await library.commit({
      'cm/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: included\n  namespace: ${NAMESPACE}\ndata:\n  version: two\n`,
    });
    const moved = await render(dir);
    expect(moved.reused).toBe(false);
    expect(data(moved.objects)).toEqual({ included: { version: 'two' } });
    expect((await render(dir)).reused).toBe(true);
  });

  it('reuses a render with an OCI include while its tag names the same manifest, and renders again once it moves', async () => {
    const registry = await startOciRegistry();
    registries.push(registry);
    const push = async (version: string) => {
      const dir = await writeProject({
        'deployment.yaml': 'deployments:\n  - path: app\n',
        'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci\n  namespace: ${NAMESPACE}\ndata:\n  version: ${version}\n`,
      });
      projects.push(dir);
      const run = await gantry(['oci', 'push', '--url', `${registry.url}/projects/included:v1`, '--project-dir', dir]);
      if (run.code !== 0) throw new Error(`gantry oci push failed:\n${run.stderr}`);
    };
    await push('one');
    const dir = await project({
      'deployment.yaml': `deployments:\n  - oci:\n      url: ${registry.url}/projects/included\n      ref:\n        tag: v1\n`,
    });
    expect((await render(dir)).reused).toBe(false);
    expect((await render(dir)).reused).toBe(true);
    await push('two');
    const moved = await render(dir);
    expect(moved.reused).toBe(false);
    expect(data(moved.objects)).toEqual({ 'from-oci': { version: 'two' } });
    expect((await render(dir)).reused).toBe(true);
  });

  it('reuses a render with a git vars source while its ref stays on its commit, and renders again once it moves', async () => {
    const varsRepo = await createRepo({ 'vars.yaml': 'color: green\n' });
    repos.push(varsRepo);
    const dir = await project({
      'deployment.yaml': `vars:\n  - git:\n      url: ${varsRepo.url}\n      ref:\n        branch: main\n      path: vars.yaml\ndeployments:\n  - path: app\n`,
      'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git-vars\n  namespace: ${NAMESPACE}\ndata:\n  color: "{{ color }}"\n`,
    });
    expect((await render(dir)).reused).toBe(false);
    expect((await render(dir)).reused).toBe(true);
    await varsRepo.commit({ 'vars.yaml': 'color: purple\n' });
    const moved = await render(dir);
    expect(moved.reused).toBe(false);
    expect(data(moved.objects)).toEqual({ 'from-git-vars': { color: 'purple' } });
  });

  it('reuses a render with a clusterConfigMap vars source found by name while the ConfigMap stays the same', async () => {
    await kubectl(['create', 'configmap', 'vars-source', '-n', NAMESPACE, '--from-literal=color=teal']);
    const dir = await project({
      'deployment.yaml': `vars:\n  - clusterConfigMap:\n      name: vars-source\n      namespace: ${NAMESPACE}\n      key: color\n      targetPath: color\ndeployments:\n  - path: app\n`,
      'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-cluster-vars\n  namespace: ${NAMESPACE}\ndata:\n  color: "{{ color }}"\n`,
    });
    expect((await render(dir)).reused).toBe(false);
    expect((await render(dir)).reused).toBe(true);
    await kubectl(['patch', 'configmap', 'vars-source', '-n', NAMESPACE, '--type=merge', '-p', '{"data":{"color":"navy"}}']);
    const changed = await render(dir);
    expect(changed.reused).toBe(false);
    expect(data(changed.objects)).toEqual({ 'from-cluster-vars': { color: 'navy' } });
    expect((await render(dir)).reused).toBe(true);
  });

  it('never reuses a render that holds a Secret, reads a cluster vars source it cannot read again alike, or the clock, and keeps no record of it', async () => {
    const secret = await project({
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/secret.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ${NAMESPACE}\nstringData:\n  password: hunter2-e2e\n`,
    });
    const clusterVars = await project({
      'deployment.yaml': `vars:\n  - clusterConfigMap:\n      labels:\n        gantry-e2e: lookup-source\n      namespace: ${NAMESPACE}\n      key: color\n      targetPath: color\ndeployments:\n  - path: app\n`,
      'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-vars\n  namespace: ${NAMESPACE}\ndata:\n  color: "{{ color }}"\n`,
    });
    const clock = await project({
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: clock\n  namespace: ${NAMESPACE}\ndata:\n  at: "{{ time.now() }}"\n`,
    });
    const before = new Set(await readdir(path.join(cacheDir, 'renders')).catch(() => []));
    for (const dir of [secret, clusterVars, clock]) {
      expect((await render(dir)).reused).toBe(false);
      expect((await render(dir)).reused).toBe(false);
    }
    const added = (await readdir(path.join(cacheDir, 'renders')).catch(() => [])).filter((name) => !before.has(name));
    expect(added).toEqual([]);
  });
});
