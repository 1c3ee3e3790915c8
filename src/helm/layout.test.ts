import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chartDir, nearestHelmChartsDir, versionDir } from './layout.ts';
import type { RemoteChartSource } from './chart-config.ts';

const base = '/p/.helm-charts';
const rel = (source: RemoteChartSource) => path.relative(base, versionDir(source, base));

describe("pulled chart layout (kluctl's BuildVersionedPulledChartDir)", () => {
  it('puts Helm repository charts under scheme, host, repo path and chart name; default ports left out', () => {
    expect(rel({ kind: 'helm-repo', repo: 'https://Charts.Example.com/Stable', chartName: 'redis', version: '12.1.1' })).toBe(
      'https_charts.example.com/stable/redis/12.1.1',
    );
    expect(rel({ kind: 'helm-repo', repo: 'https://charts.example.com:443', chartName: 'redis', version: '1.0.0' })).toBe(
      'https_charts.example.com/redis/1.0.0',
    );
    expect(rel({ kind: 'helm-repo', repo: 'http://127.0.0.1:8080/charts', chartName: 'app', version: '1.0.0' })).toBe(
      'http_8080_127.0.0.1/charts/app/1.0.0',
    );
  });

  it('puts OCI charts under oci, any port, host and the full path (which ends in the chart name)', () => {
    expect(rel({ kind: 'oci', repo: 'oci://r.myreg.io/mycharts/pepper', chartName: 'pepper', version: '1.2.3' })).toBe(
      'oci_r.myreg.io/mycharts/pepper/1.2.3',
    );
    expect(rel({ kind: 'oci', repo: 'oci://127.0.0.1:5000/charts/app', chartName: 'app', version: '0.1.0' })).toBe(
      'oci_5000_127.0.0.1/charts/app/0.1.0',
    );
  });

  it('puts git charts under git, scheme, host, repo path without .git, subDir and the ref name', () => {
    const git = (url: string, ref: object, subDir = '') => rel({ kind: 'git', url, ref, subDir, chartName: 'x' });
    expect(git('https://github.com/MyCharts/Salt.git', { tag: 'v1.0.0' }, 'charts/Salt')).toBe(
      'git_https_github.com/mycharts/salt/charts/salt/refs/tags/v1.0.0',
    );
    expect(git('ssh://git@example.com:2222/org/repo', { branch: 'main' })).toBe('git_ssh_2222_example.com/org/repo/refs/heads/main');
    expect(git('git@github.com:org/repo.git', {})).toBe('git_ssh_github.com/org/repo/HEAD');
    expect(git('file:///tmp/remote.git', { commit: 'abc' })).toBe('git_file_/tmp/remote/HEAD');
  });

  it('refuses versions that would leave the charts folder', () => {
    expect(() => versionDir({ kind: 'helm-repo', repo: 'https://x.io', chartName: 'a', version: '../../../etc' }, base)).toThrow(/leaves/);
    expect(chartDir({ kind: 'oci', repo: 'oci://x.io/a/b', chartName: 'b', version: '1' }, base)).toBe('/p/.helm-charts/oci_x.io/a/b');
  });
});

describe('nearestHelmChartsDir', () => {
  const roots: string[] = [];
  afterAll(async () => {
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  it("finds the nearest .helm-charts from the item's folder up to the project root, not above it", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'gantry-layout-'));
    roots.push(root);
    const project = path.join(root, 'project');
    await mkdir(path.join(root, '.helm-charts'), { recursive: true });
    await mkdir(path.join(project, 'apps/redis/.helm-charts'), { recursive: true });
    await mkdir(path.join(project, 'apps/other'), { recursive: true });
    expect(await nearestHelmChartsDir(path.join(project, 'apps/redis'), project)).toBe(path.join(project, 'apps/redis/.helm-charts'));
    expect(await nearestHelmChartsDir(path.join(project, 'apps/other'), project)).toBeUndefined();
    await mkdir(path.join(project, '.helm-charts'));
    expect(await nearestHelmChartsDir(path.join(project, 'apps/other'), project)).toBe(path.join(project, '.helm-charts'));
  });
});
