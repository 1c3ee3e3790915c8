/**
 * Helm charts end to end, through the gantry binary: charts from a Helm repository and an OCI registry served on
 * 127.0.0.1 by this test, from a git repository and from the project itself; helm-pull and helm-update; skipCRDs,
 * `lookup` against the cluster, Helm hooks as Kluctl hooks; and bad chart input applying nothing.
 */
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configMapTemplate,
  lookupColorTemplate,
  startChartRepository,
  startOciRegistry,
  writeChart,
  type ChartRepository,
  type OciRegistry,
  type TestChart,
} from '../support/chart-server.ts';
import { gantry, gantryJson, kubectl, kubectlJson, localContext, names } from '../support/cli.ts';
import { removeCopy, writeProject } from '../support/fixtures.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { parseYamlDocuments } from '../../src/yaml.ts';

const app = (version: string): TestChart => ({
  name: 'e2e-app',
  version,
  files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-app') },
});
const other = (version: string): TestChart => ({
  name: 'e2e-other',
  version,
  files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-other') },
});
const kluctl = (name: string) => `discriminator: gantry-e2e-helm-${name}\ntargets:\n  - name: t\n`;
const namespaceItem = (name: string) => ({ 'ns/namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n` });

let repository: ChartRepository;
let registry: OciRegistry;
let gitRepo: TestRepo;
let ociChart = '';
let context = '';
let cacheDir = '';
const projects: string[] = [];
const deployed: string[] = [];

beforeAll(async () => {
  context = await localContext();
  // On-demand pulls and git checkouts of this file go to a cache of its own.
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-helm-cache-'));
  process.env['GANTRY_CACHE_DIR'] = cacheDir;
  [repository, registry] = await Promise.all([startChartRepository(), startOciRegistry()]);
  await repository.publish(app('1.0.0'), app('1.0.1'), app('1.1.0'), app('1.0.2-rc.1'), other('1.0.0'), other('2.0.0'));
  ociChart = await registry.push({
    name: 'e2e-oci',
    version: '0.1.0',
    files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-oci') },
  });
  const gitChart = await writeChart(cacheDir, {
    name: 'e2e-git',
    version: '0.1.0',
    files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-git') },
  });
  gitRepo = await createRepo({
    'charts/e2e-git/Chart.yaml': await readFile(path.join(gitChart, 'Chart.yaml'), 'utf8'),
    'charts/e2e-git/templates/cm.yaml': await readFile(path.join(gitChart, 'templates/cm.yaml'), 'utf8'),
  });
  await gitRepo.tag('v0.1.0');
}, 120_000);

afterAll(async () => {
  for (const dir of deployed) await gantry(['delete', '-y', '-t', 't', '--project-dir', dir, '--context', context]);
  for (const dir of projects) await removeCopy(dir);
  await Promise.all([repository?.close(), registry?.close(), gitRepo?.remove()]);
  await kubectl(['delete', 'namespace', 'gantry-e2e-helm-lookup', '--ignore-not-found', '--wait=false']);
  delete process.env['GANTRY_CACHE_DIR'];
  await rm(cacheDir, { recursive: true, force: true });
});

async function project(files: Record<string, string>): Promise<string> {
  const dir = await writeProject(files);
  projects.push(dir);
  return dir;
}

/** The objects `gantry render` prints, failing with its stderr when it fails. */
async function render(dir: string, offline: boolean): Promise<Array<Record<string, any>>> {
  const run = await gantry(['render', '-t', 't', '--project-dir', dir, ...(offline ? ['--offline-kubernetes'] : ['--context', context])]);
  if (run.code !== 0) throw new Error(`gantry render failed:\n${run.stderr}`);
  return parseYamlDocuments(run.stdout, 'render output') as Array<Record<string, any>>;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

function hostDir(url: string): string {
  const { protocol, hostname, port } = new URL(url);
  return `${protocol.replace(':', '')}_${port}_${hostname}`;
}

describe('charts from every source', { timeout: 300_000 }, () => {
  let dir = '';
  const ns = 'gantry-e2e-helm-sources';
  beforeAll(async () => {
    const item = (release: string, helmChart: string) => `helmChart:\n${helmChart}  releaseName: ${release}\n  namespace: ${ns}\n`;
    dir = await project({
      '.kluctl.yaml': kluctl('sources'),
      'deployment.yaml': 'deployments:\n  - path: ns\n  - barrier: true\n  - path: http\n  - path: oci\n  - path: git\n  - path: local\n',
      ...namespaceItem(ns),
      'http/helm-chart.yaml': item('http', `  repo: ${repository.url}\n  chartName: e2e-app\n  chartVersion: 1.0.0\n`),
      'http/helm-values.yaml': 'value: from-http\n',
      'oci/helm-chart.yaml': item('oci', `  repo: ${ociChart}\n  chartVersion: 0.1.0\n`),
      'git/helm-chart.yaml': item('git', `  git:\n    url: ${gitRepo.url}\n    ref:\n      tag: v0.1.0\n    subDir: charts/e2e-git\n`),
      'local/helm-chart.yaml': item('local', '  path: chart\n'),
      'local/helm-values.yaml': 'value: from-local\n',
      'local/chart/Chart.yaml': 'apiVersion: v2\nname: e2e-local\nversion: 0.0.1\n',
      'local/chart/templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-local'),
    });
    deployed.push(dir);
    // A version no release asks for any more: helm-pull removes it.
    await mkdir(path.join(dir, '.helm-charts', hostDir(repository.url), 'charts/e2e-app/0.9.0'), { recursive: true });
  });

  it('refuses to render registry and git charts that are not pre-pulled, naming each helm-chart.yaml', async () => {
    const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);
    expect(run.code).toBe(1);
    for (const item of ['http', 'oci', 'git'])
      expect(run.stderr).toMatch(new RegExp(`error: ${item}/helm-chart.yaml: chart .* has not been pre-pulled .*run 'gantry helm-pull'`));
    expect(run.stderr).not.toContain('local/helm-chart.yaml');
  });

  it("helm-pull pulls http, OCI and git charts into .helm-charts in Kluctl's layout and removes unused versions", async () => {
    const run = await gantry(['helm-pull', '--project-dir', dir, '-o', 'json']);
    expect(run.stderr).toMatch(/e2e-app: pulling 1\.0\.0/);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as {
      pulled: Array<{ dir: string; chart: string }>;
      removed: Array<{ dir: string }>;
      errors: string[];
    };
    expect(result.errors).toEqual([]);
    const gitPath = new URL(gitRepo.url).pathname.toLowerCase().replace(/\.git$/, '');
    expect(result.pulled.map((entry) => entry.dir).sort()).toEqual(
      [
        `.helm-charts/${hostDir(repository.url)}/charts/e2e-app/1.0.0`,
        `.helm-charts/${hostDir(ociChart)}/charts/e2e-oci/0.1.0`,
        `.helm-charts/git_file_${gitPath}/charts/e2e-git/refs/tags/v0.1.0`,
      ].sort(),
    );
    for (const entry of result.pulled) expect(await exists(path.join(dir, entry.dir, 'Chart.yaml'))).toBe(true);
    expect(result.removed.map((entry) => entry.dir)).toEqual([`.helm-charts/${hostDir(repository.url)}/charts/e2e-app/0.9.0`]);
    expect(await exists(path.join(dir, result.removed[0]!.dir))).toBe(false);
  });

  it('deploys all four charts with their values', async () => {
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(result.errors).toEqual([]);
    expect(code).toBe(0);
    const configMaps = await kubectlJson(['get', 'configmaps', '-n', ns, '-l', 'kluctl.io/discriminator=gantry-e2e-helm-sources']);
    const values = Object.fromEntries(configMaps.items.map((item) => [item.metadata.name, `${item.data.chartVersion} ${item.data.value}`]));
    expect(values).toEqual({
      'http-app': '1.0.0 from-http',
      'oci-oci': '0.1.0 none',
      'git-git': '0.1.0 none',
      'local-local': '0.0.1 from-local',
    });
  });

  it('refuses a pre-pulled chart whose Chart.yaml has another version than helm-chart.yaml asks for', async () => {
    const chartFile = path.join(dir, 'http/helm-chart.yaml');
    const original = await readFile(chartFile, 'utf8');
    const pulled = path.join(dir, '.helm-charts', hostDir(repository.url), 'charts/e2e-app');
    await execa('cp', ['-r', path.join(pulled, '1.0.0'), path.join(pulled, '1.0.1')]);
    await writeFile(chartFile, original.replace('chartVersion: 1.0.0', 'chartVersion: 1.0.1'));
    try {
      const run = await gantry(['render', '-t', 't', '--project-dir', dir, '--offline-kubernetes']);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /http\/helm-chart\.yaml: pre-pulled chart e2e-app .* has version 1\.0\.0, but version 1\.0\.1 is wanted: run 'gantry helm-pull'/,
      );
    } finally {
      await writeFile(chartFile, original);
      await rm(path.join(pulled, '1.0.1'), { recursive: true, force: true });
    }
  });
});

describe('skipPrePull', { timeout: 300_000 }, () => {
  it('pulls the chart on demand when rendering, and helm-pull leaves it out', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('skip-pre-pull'),
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/helm-chart.yaml': `helmChart:\n  repo: ${repository.url}\n  chartName: e2e-app\n  chartVersion: 1.1.0\n  releaseName: lazy\n  skipPrePull: true\n`,
    });
    const objects = await render(dir, true);
    expect(objects.map((object) => `${object.metadata.name} ${object.data.chartVersion}`)).toEqual(['lazy-app 1.1.0']);
    const pull = JSON.parse((await gantry(['helm-pull', '--project-dir', dir, '-o', 'json'])).stdout) as { pulled: unknown[] };
    expect(pull.pulled).toEqual([]);
    expect(await exists(path.join(dir, '.helm-charts'))).toBe(false);
  });
});

describe('helm-update', { timeout: 300_000 }, () => {
  let dir = '';
  const git = (args: string[]) => execa('git', args, { cwd: dir });
  const appChartFile = () =>
    `# the app chart\nhelmChart:\n  repo: ${repository.url}\n  chartName: e2e-app\n  chartVersion: "1.0.0" # moved by helm-update\n  updateConstraints: ~1.0.0\n  releaseName: app\n`;
  beforeAll(async () => {
    dir = await project({
      '.kluctl.yaml': kluctl('update'),
      'deployment.yaml': 'deployments:\n  - path: app\n  - path: git\n  - path: other\n',
      'app/helm-chart.yaml': appChartFile(),
      'git/helm-chart.yaml': `helmChart:\n  git:\n    url: ${gitRepo.url}\n    ref: {tag: v0.1.0}\n    subDir: charts/e2e-git\n  releaseName: git\n`,
      'other/helm-chart.yaml': `helmChart:\n  repo: ${repository.url}\n  chartName: e2e-other\n  chartVersion: 1.0.0\n  releaseName: other\n  skipUpdate: true\n`,
    });
    await gitRepo.commit({ 'charts/e2e-git/Chart.yaml': 'apiVersion: v2\nname: e2e-git\nversion: 0.2.0\n' });
    await gitRepo.tag('v0.2.0');
    await git(['init', '--quiet', '--initial-branch=main']);
    await git(['config', 'user.name', 'Gantry Test']);
    await git(['config', 'user.email', 'test@gantry.dev']);
  });

  it('reports the newest version within updateConstraints and changes nothing without --upgrade', async () => {
    const before = await readFile(path.join(dir, 'app/helm-chart.yaml'), 'utf8');
    const run = await gantry(['helm-update', '--project-dir', dir, '-o', 'json']);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/app: chart e2e-app \(old version 1\.0\.0\) has new version 1\.0\.1 available/);
    const result = JSON.parse(run.stdout) as { charts: Array<Record<string, string>> };
    expect(
      result.charts.map(({ file, currentVersion, newestVersion, status }) => ({ file, currentVersion, newestVersion, status })),
    ).toEqual([
      { file: 'app/helm-chart.yaml', currentVersion: '1.0.0', newestVersion: '1.0.1', status: 'update-available' },
      { file: 'git/helm-chart.yaml', currentVersion: 'v0.1.0', newestVersion: 'v0.2.0', status: 'update-available' },
      { file: 'other/helm-chart.yaml', currentVersion: '1.0.0', newestVersion: '2.0.0', status: 'skipped' },
    ]);
    expect(await readFile(path.join(dir, 'app/helm-chart.yaml'), 'utf8')).toBe(before);
  });

  it('refuses --commit while .helm-charts is not up to date, writing nothing', async () => {
    await git(['add', '--all']);
    await git(['commit', '--quiet', '-m', 'project']);
    const run = await gantry(['helm-update', '--project-dir', dir, '--upgrade', '--commit', '-o', 'json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).errors).toEqual([".helm-charts is not up to date: run 'gantry helm-pull' first"]);
    expect((await git(['status', '--porcelain'])).stdout).toBe('');
  });

  it('with --upgrade --commit rewrites only the version, pulls it and commits, leaving skipUpdate charts alone', async () => {
    expect((await gantry(['helm-pull', '--project-dir', dir])).code).toBe(0);
    await git(['add', '--all']);
    await git(['commit', '--quiet', '-m', 'pulled charts']);
    const run = await gantry(['helm-update', '--project-dir', dir, '--upgrade', '--commit', '-o', 'json']);
    const result = JSON.parse(run.stdout) as {
      charts: Array<Record<string, string>>;
      commits: Array<Record<string, string>>;
      errors: string[];
    };
    expect(result.errors).toEqual([]);
    expect(run.code).toBe(0);
    expect(result.charts.map((chart) => chart.status)).toEqual(['updated', 'updated', 'skipped']);
    expect(await readFile(path.join(dir, 'app/helm-chart.yaml'), 'utf8')).toBe(appChartFile().replace('"1.0.0"', '"1.0.1"'));
    expect(await readFile(path.join(dir, 'git/helm-chart.yaml'), 'utf8')).toContain('    ref: {tag: v0.2.0}\n');
    expect(await readFile(path.join(dir, 'other/helm-chart.yaml'), 'utf8')).toContain('chartVersion: 1.0.0\n');
    const charts = path.join(dir, '.helm-charts', hostDir(repository.url), 'charts');
    expect(await exists(path.join(charts, 'e2e-app/1.0.1/Chart.yaml'))).toBe(true);
    expect(await exists(path.join(charts, 'e2e-app/1.0.0'))).toBe(false);
    expect(await exists(path.join(charts, 'e2e-other/1.0.0/Chart.yaml'))).toBe(true);
    const gitCharts = path.join(
      dir,
      '.helm-charts',
      `git_file_${new URL(gitRepo.url).pathname.toLowerCase().replace(/\.git$/, '')}`,
      'charts/e2e-git/refs/tags',
    );
    expect(await exists(path.join(gitCharts, 'v0.2.0/Chart.yaml'))).toBe(true);
    expect(await exists(path.join(gitCharts, 'v0.1.0'))).toBe(false);
    const commit = expect.stringMatching(/^[0-9a-f]{40}$/);
    expect(result.commits).toEqual([
      { chart: 'e2e-app', from: '1.0.0', to: '1.0.1', commit },
      { chart: 'e2e-git', from: 'v0.1.0', to: 'v0.2.0', commit },
    ]);
    expect((await git(['log', '-2', '--format=%s'])).stdout).toBe(
      'Updated helm chart e2e-git from version v0.1.0 to version v0.2.0\nUpdated helm chart e2e-app from version 1.0.0 to version 1.0.1',
    );
    expect((await git(['show', '--name-only', '--format=', 'HEAD'])).stdout.split('\n').every((file) => !file.includes('e2e-app'))).toBe(
      true,
    );
    expect((await git(['status', '--porcelain'])).stdout).toBe('');
    const rerun = JSON.parse((await gantry(['helm-update', '--project-dir', dir, '-o', 'json'])).stdout) as {
      charts: Array<{ status: string }>;
    };
    expect(rerun.charts.map((chart) => chart.status)).toEqual(['up-to-date', 'up-to-date', 'skipped']);
  });

  it('fails without writing when no version satisfies the constraint', async () => {
    const file = path.join(dir, 'app/helm-chart.yaml');
    const before = await readFile(file, 'utf8');
    await writeFile(file, before.replace('~1.0.0', '^7'));
    const run = await gantry(['helm-update', '--project-dir', dir, '--upgrade', '-o', 'json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).errors).toEqual(["app/helm-chart.yaml: no version satisfies updateConstraints '^7'"]);
    expect(await readFile(file, 'utf8')).toBe(before.replace('~1.0.0', '^7'));
    await writeFile(file, before);
  });
});

describe('chart features', { timeout: 300_000 }, () => {
  const crd = `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.helm.e2e.gantry.dev\nspec:\n  group: helm.e2e.gantry.dev\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {type: object}\n`;

  it("skipCRDs leaves the chart's crds/ out; by default they are included", async () => {
    // Release names apart: one object rendered by two items is a render error.
    const chartItem = (skip: boolean) => `helmChart:\n  path: ../chart\n  releaseName: r-${skip}\n  skipCRDs: ${skip}\n`;
    const dir = await project({
      '.kluctl.yaml': kluctl('crds'),
      'deployment.yaml': 'deployments:\n  - path: with\n  - path: without\n',
      'with/helm-chart.yaml': chartItem(false),
      'without/helm-chart.yaml': chartItem(true),
      'chart/Chart.yaml': 'apiVersion: v2\nname: e2e-crds\nversion: 0.1.0\n',
      'chart/crds/gadget.yaml': crd,
      'chart/templates/cm.yaml': configMapTemplate('crds-{{ .Release.Name }}'),
    });
    const objects = await render(dir, true);
    const kinds = (item: string) =>
      objects.filter((object) => object.metadata.annotations['kluctl.io/deployment-item-dir'] === item).map((object) => object.kind);
    expect(kinds('with').sort()).toEqual(['ConfigMap', 'CustomResourceDefinition']);
    expect(kinds('without')).toEqual(['ConfigMap']);
  });

  it("skipHooks (Gantry's, Plural's ignoreHooks) leaves the chart's hooks out; by default they are rendered", async () => {
    const chartItem = (skip: boolean) => `helmChart:\n  path: ../chart\n  releaseName: h-${skip}\n  skipHooks: ${skip}\n`;
    const hook =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook-{{ .Release.Name }}\n  annotations:\n    helm.sh/hook: pre-install\ndata: {}\n';
    const dir = await project({
      '.kluctl.yaml': kluctl('hooks'),
      'deployment.yaml': 'deployments:\n  - path: with\n  - path: without\n',
      'with/helm-chart.yaml': chartItem(false),
      'without/helm-chart.yaml': chartItem(true),
      'chart/Chart.yaml': 'apiVersion: v2\nname: e2e-hooks\nversion: 0.1.0\n',
      'chart/templates/hook.yaml': hook,
      'chart/templates/cm.yaml': configMapTemplate('hooks-{{ .Release.Name }}'),
    });
    const objects = await render(dir, true);
    const named = (item: string) =>
      objects
        .filter((object) => object.metadata.annotations['kluctl.io/deployment-item-dir'] === item)
        .map((object) => object.metadata.name)
        .sort();
    expect(named('with')).toEqual(['hook-h-false', 'hooks-h-false']);
    expect(named('without')).toEqual(['hooks-h-true']);
  });

  it("lookup reads the cluster's ConfigMap when connected; offline rendering still works", async () => {
    const source =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lookup-source\n  namespace: gantry-e2e-helm-lookup\ndata:\n  color: blue\n';
    await kubectl(['apply', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gantry-e2e-helm-lookup\n---\n${source}`);
    const dir = await project({
      '.kluctl.yaml': kluctl('lookup'),
      'deployment.yaml': 'deployments:\n  - path: app\n',
      'app/helm-chart.yaml': 'helmChart:\n  path: chart\n  releaseName: r\n  namespace: gantry-e2e-helm-lookup\n',
      'app/chart/Chart.yaml': 'apiVersion: v2\nname: e2e-lookup\nversion: 0.1.0\n',
      'app/chart/templates/cm.yaml': lookupColorTemplate(),
    });
    expect((await render(dir, false)).map((object) => object.data.color)).toEqual(['blue']);
    expect((await render(dir, true)).map((object) => object.data.color)).toEqual(['unknown']);
  });

  it('runs Helm hooks as Kluctl hooks: install hooks first, upgrade hooks later, never delete/rollback/test hooks', async () => {
    const ns = 'gantry-e2e-helm-hooks';
    const hook = (name: string, annotations: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  annotations:\n${annotations}data: {}\n`;
    const dir = await project({
      '.kluctl.yaml': kluctl('hooks'),
      'deployment.yaml': 'deployments:\n  - path: ns\n  - barrier: true\n  - path: app\n',
      ...namespaceItem(ns),
      'app/helm-chart.yaml': `helmChart:\n  path: chart\n  releaseName: r\n  namespace: ${ns}\n`,
      'app/chart/Chart.yaml': 'apiVersion: v2\nname: e2e-hooks\nversion: 0.1.0\n',
      'app/chart/templates/plain.yaml': configMapTemplate('plain'),
      'app/chart/templates/migrate.yaml': hook('migrate', '    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: "-1"\n'),
      'app/chart/templates/notify.yaml': hook('notify', '    helm.sh/hook: post-install\n'),
      'app/chart/templates/test.yaml': hook('smoke-test', '    helm.sh/hook: test\n'),
      'app/chart/templates/cleanup.yaml': hook('cleanup', '    helm.sh/hook: pre-delete\n'),
      'app/chart/templates/rollback.yaml': hook('rollback', '    helm.sh/hook: pre-rollback\n'),
    });
    deployed.push(dir);
    const rendered = Object.fromEntries(
      (await render(dir, true)).map((object) => [object.metadata.name, object.metadata.annotations ?? {}]),
    );
    expect(Object.keys(rendered).sort()).toEqual(['cleanup', 'gantry-e2e-helm-hooks', 'migrate', 'notify', 'plain', 'rollback']);
    expect(rendered['migrate']?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');

    const args = ['-t', 't', '--project-dir', dir, '--context', context];
    const first = await gantryJson(['deploy', ...args]);
    expect(first.result.errors).toEqual([]);
    expect(names(first.result.appliedHooks)).toEqual([`${ns}/ConfigMap/migrate`, `${ns}/ConfigMap/notify`]);
    expect(names(first.result.newObjects)).toEqual([`Namespace/${ns}`, `${ns}/ConfigMap/plain`]);
    const second = await gantryJson(['deploy', ...args]);
    expect(names(second.result.appliedHooks)).toEqual([`${ns}/ConfigMap/migrate`]);
    const live = (await kubectlJson(['get', 'configmaps', '-n', ns])).items.map((item) => item.metadata.name);
    expect(live).not.toContain('cleanup');
    expect(live).not.toContain('rollback');
  });
});

describe('bad chart input', { timeout: 300_000 }, () => {
  it('names each bad helm-chart.yaml, exits 1 and applies nothing', async () => {
    const ns = 'gantry-e2e-helm-bad';
    const chart = (helmChart: string) => `helmChart:\n${helmChart}  releaseName: r\n  namespace: ${ns}\n`;
    const dir = await project({
      '.kluctl.yaml': kluctl('bad'),
      'deployment.yaml':
        'deployments:\n  - path: ns\n  - barrier: true\n  - path: no-version\n  - path: unknown-repo\n  - path: bad-ref\n  - path: not-pulled\n',
      ...namespaceItem(ns),
      'no-version/helm-chart.yaml': chart(`  repo: ${repository.url}\n  chartName: e2e-app\n`),
      'unknown-repo/helm-chart.yaml': chart(
        `  repo: ${repository.url.replace('/charts', '/nope')}\n  chartName: e2e-app\n  chartVersion: 1.0.0\n  skipPrePull: true\n`,
      ),
      'bad-ref/helm-chart.yaml': chart(
        `  git:\n    url: ${gitRepo.url}\n    ref:\n      tag: v9.9.9\n    subDir: charts/e2e-git\n  skipPrePull: true\n`,
      ),
      'not-pulled/helm-chart.yaml': chart(`  repo: ${repository.url}\n  chartName: e2e-app\n  chartVersion: 1.1.0\n`),
    });
    deployed.push(dir);
    const { code, result } = await gantryJson(['deploy', '-t', 't', '--project-dir', dir, '--context', context]);
    expect(code).toBe(1);
    expect(result.newObjects).toEqual([]);
    const messages = result.errors.map((error) => error.message);
    expect(messages).toEqual([
      "no-version/helm-chart.yaml: 'chartVersion' is required with 'repo'",
      expect.stringMatching(
        /^unknown-repo\/helm-chart\.yaml: pulling chart e2e-app from http:\/\/127\.0\.0\.1:\d+\/nope \(1\.0\.0\) failed: .*404/,
      ),
      expect.stringMatching(/^bad-ref\/helm-chart\.yaml: pulling chart e2e-git from git .* failed: git repository .* has no tag v9\.9\.9$/),
      expect.stringMatching(/^not-pulled\/helm-chart\.yaml: chart e2e-app from .* \(1\.1\.0\) has not been pre-pulled/),
    ]);
    expect((await kubectl(['get', 'namespaces', '-o', 'name'])).split('\n')).not.toContain(`namespace/${ns}`);
  });

  it('helm-pull names an invalid helm-chart.yaml and pulls nothing', async () => {
    const dir = await project({
      '.kluctl.yaml': kluctl('bad-pull'),
      'deployment.yaml': 'deployments:\n  - path: a\n  - path: b\n',
      'a/helm-chart.yaml': `helmChart:\n  repo: ${repository.url}\n  chartName: e2e-app\n  chartVersion: 1.0.0\n  releaseName: a\n`,
      'b/helm-chart.yaml': `helmChart:\n  repo: ${ociChart}\n  chartName: e2e-oci\n  chartVersion: 0.1.0\n  releaseName: b\n`,
    });
    const run = await gantry(['helm-pull', '--project-dir', dir, '-o', 'json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).errors).toEqual([
      "b/helm-chart.yaml: 'chartName' can not be used with an oci:// repo (the chart's name is the last part of the URL)",
    ]);
    expect(await exists(path.join(dir, '.helm-charts'))).toBe(false);
  });
});
