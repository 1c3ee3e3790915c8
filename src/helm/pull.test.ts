/**
 * Pulling and version listing against real sources on 127.0.0.1: a Helm repository, an OCI registry and a git
 * repository, with the real helm and git binaries.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChartRepository, startOciRegistry, type ChartRepository, type OciRegistry } from '../../test/support/chart-server.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { GitCache } from '../source/git-cache.ts';
import type { ChartTools } from './helm-cli.ts';
import { testTools } from '../../test/support/engine.ts';
import type { GitChartSource, RegistryChartSource } from './chart-config.ts';
import { chartYamlVersion, pullCached, pullChart, pulledGitCommit } from './pull.ts';
import { availableVersions } from './versions.ts';

let scratch = '';
let repository: ChartRepository;
let registry: OciRegistry;
let gitRepo: TestRepo;
let charts: ChartTools;
const chart = (version: string) => ({
  name: 'pulled',
  version,
  files: { 'templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pulled\n' },
});

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-helm-pull-test-'));
  const tools = testTools();
  charts = {
    tools,
    git: new GitCache({ root: path.join(scratch, 'git'), tools }),
    chartsCacheDir: path.join(scratch, 'cache', 'helm-charts'),
  };
  [repository, registry] = await Promise.all([startChartRepository(), startOciRegistry()]);
  await repository.publish(chart('1.0.0'), chart('1.1.0'), chart('2.0.0-rc.1'));
  await registry.push(chart('0.1.0'));
  await registry.push(chart('0.2.0+build.7'));
  gitRepo = await createRepo({
    'charts/pulled/Chart.yaml': 'apiVersion: v2\nname: pulled\nversion: 0.0.1\n',
    'charts/pulled/templates/cm.yaml': 'kind: ConfigMap\n',
  });
  await gitRepo.tag('v0.0.1');
});
afterAll(async () => {
  await Promise.all([repository?.close(), registry?.close(), gitRepo?.remove()]);
  await rm(scratch, { recursive: true, force: true });
});

describe('pulling charts', () => {
  it('pulls a Helm repository chart at the exact version', async () => {
    const source: RegistryChartSource = { kind: 'helm-repo', repo: repository.url, chartName: 'pulled', version: '1.0.0' };
    await pullChart(source, path.join(scratch, 'repo-chart'), charts);
    expect(await chartYamlVersion(path.join(scratch, 'repo-chart'))).toBe('1.0.0');
    expect(await readFile(path.join(scratch, 'repo-chart/templates/cm.yaml'), 'utf8')).toContain('name: pulled');
  });

  it('pulls an OCI chart over plain HTTP from the loopback registry', async () => {
    const source: RegistryChartSource = { kind: 'oci', repo: `${registry.url}/charts/pulled`, chartName: 'pulled', version: '0.1.0' };
    await pullChart(source, path.join(scratch, 'oci-chart'), charts);
    expect(await chartYamlVersion(path.join(scratch, 'oci-chart'))).toBe('0.1.0');
  });

  it("pulls a git chart's subDir and records the commit", async () => {
    const source: GitChartSource = { kind: 'git', url: gitRepo.url, ref: { tag: 'v0.0.1' }, subDir: 'charts/pulled', chartName: 'pulled' };
    await pullChart(source, path.join(scratch, 'git-chart'), charts);
    expect(await chartYamlVersion(path.join(scratch, 'git-chart'))).toBe('0.0.1');
    expect(await pulledGitCommit(path.join(scratch, 'git-chart'))).toBe(await charts.git.resolve(gitRepo.url, { tag: 'v0.0.1' }));
  });

  it('names chart, version and the reason when a version does not exist', async () => {
    const source: RegistryChartSource = { kind: 'helm-repo', repo: repository.url, chartName: 'pulled', version: '9.9.9' };
    await expect(pullChart(source, path.join(scratch, 'missing'), charts)).rejects.toThrow(
      /pulling chart pulled from http:\/\/127\.0\.0\.1:\d+\/charts \(9\.9\.9\) failed: .*9\.9\.9/,
    );
  });

  it('pulls skipPrePull charts into the cache once, and again when the version differs', async () => {
    {
      const source: RegistryChartSource = { kind: 'helm-repo', repo: repository.url, chartName: 'pulled', version: '1.1.0' };
      const dir = await pullCached(source, charts);
      expect(dir.startsWith(path.join(scratch, 'cache', 'helm-charts'))).toBe(true);
      expect(await chartYamlVersion(dir)).toBe('1.1.0');
      await pullChart({ ...source, version: '1.0.0' }, dir, charts);
      expect(await chartYamlVersion(await pullCached(source, charts))).toBe('1.1.0');
    }
  });
});

describe('listing versions', () => {
  it('reads the Helm repository index', async () => {
    expect(
      (await availableVersions({ kind: 'helm-repo', repo: repository.url, chartName: 'pulled', version: '' }, charts.git)).sort(),
    ).toEqual(['1.0.0', '1.1.0', '2.0.0-rc.1']);
    await expect(
      availableVersions({ kind: 'helm-repo', repo: repository.url, chartName: 'nope', version: '' }, charts.git),
    ).rejects.toThrow(/has no chart 'nope'/);
  });

  it("lists the OCI repository's tags, turning helm's _ back into +", async () => {
    expect(
      (
        await availableVersions({ kind: 'oci', repo: `${registry.url}/charts/pulled`, chartName: 'pulled', version: '' }, charts.git)
      ).sort(),
    ).toEqual(['0.1.0', '0.2.0+build.7']);
  });

  it("lists the git repository's tags", async () => {
    expect(await availableVersions({ kind: 'git', url: gitRepo.url, ref: {}, subDir: '', chartName: 'pulled' }, charts.git)).toEqual([
      'v0.0.1',
    ]);
  });
});
