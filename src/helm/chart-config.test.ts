import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chartSourceOf, readHelmChartConfig } from './chart-config.ts';
import { problemsOf } from '../problems.ts';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-chart-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function problems(helmChart: string): Promise<string[]> {
  const file = path.join(dir, 'helm-chart.yaml');
  await writeFile(file, `helmChart:\n  releaseName: r\n${helmChart}`);
  return readHelmChartConfig(file).then(
    () => [],
    (error: unknown) => problemsOf(error).map((problem) => problem.replace(`${file}: `, '')),
  );
}

describe("helm-chart.yaml rules (kluctl's ValidateHelmChartConfig2)", () => {
  it('needs exactly one source', async () => {
    expect(await problems('')).toEqual(["helmChart needs one of 'repo', 'path' or 'git'"]);
    expect(await problems('  repo: https://x.io\n  path: chart\n')).toEqual(["helmChart takes only one of 'repo', 'path' and 'git'"]);
  });

  it('needs chartVersion and (for Helm repositories only) chartName with repo', async () => {
    expect(await problems('  repo: https://x.io\n')).toEqual([
      "'chartVersion' is required with 'repo'",
      "'chartName' is required with a Helm repository 'repo'",
    ]);
    expect(await problems('  repo: oci://x.io/a/b\n  chartName: b\n  chartVersion: 1.0.0\n')).toEqual([
      "'chartName' can not be used with an oci:// repo (the chart's name is the last part of the URL)",
    ]);
    expect(await problems('  repo: ftp://x.io\n  chartName: b\n  chartVersion: 1.0.0\n')).toEqual([
      "repo 'ftp://x.io' must be an http://, https:// or oci:// URL",
    ]);
  });

  it('refuses version fields on local and git charts, and ambiguous git refs', async () => {
    expect(await problems('  path: chart\n  chartVersion: 1.0.0\n')).toEqual(["'chartVersion' can not be used with a local chart 'path'"]);
    expect(await problems('  git:\n    url: https://g.io/r\n    ref: {branch: a, tag: b}\n')).toEqual([
      "git.ref takes only one of 'branch', 'tag' and 'commit'",
    ]);
    expect(await problems('  git:\n    url: https://g.io/r\n    ref: {}\n')).toEqual(["git.ref needs one of 'branch', 'tag' or 'commit'"]);
    expect(await problems('  git: {url: https://g.io/r, subDir: ../x}\n')).toEqual(["git.subDir '../x' is not a valid folder path"]);
  });

  it('reports unknown fields by name', async () => {
    expect(await problems('  path: chart\n  chartVerison: 1\n')).toEqual(["helmChart: unknown field 'chartVerison'"]);
  });
});

describe('chart sources', () => {
  const source = (helmChart: Record<string, unknown>) =>
    chartSourceOf({ releaseName: 'r', ...helmChart }, 'helm-chart.yaml', '/p/apps/x', '/p');

  it('takes the chart name of OCI charts from the URL and of git charts from subDir or the repository', () => {
    expect(source({ repo: 'oci://r.io/charts/pepper/', chartVersion: '1.0.0' })).toEqual({
      kind: 'oci',
      repo: 'oci://r.io/charts/pepper',
      chartName: 'pepper',
      version: '1.0.0',
    });
    expect(source({ git: { url: 'https://g.io/org/salt.git', ref: { tag: 'v1' } } })).toMatchObject({
      kind: 'git',
      chartName: 'salt',
      subDir: '',
      ref: { tag: 'v1' },
    });
    expect(source({ git: { url: 'https://g.io/org/repo', subDir: 'charts/pepper/' } })).toMatchObject({
      chartName: 'pepper',
      subDir: 'charts/pepper',
      ref: {},
    });
    expect(source({ git: 'git@g.io:org/mono.git' })).toMatchObject({ url: 'git@g.io:org/mono.git', chartName: 'mono' });
  });

  it('resolves local paths against the helm-chart.yaml folder and keeps them inside the project', () => {
    expect(source({ path: '../../charts/app' })).toEqual({ kind: 'local', dir: '/p/charts/app' });
    expect(() => source({ path: '../../../outside' })).toThrow("helm-chart.yaml: local chart '../../../outside' is outside the project");
  });
});
