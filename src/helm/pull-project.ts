/**
 * `helm-pull` (kluctl's doHelmPull): every version the project's releases ask for (except those with
 * `skipPrePull`) is pulled into `<project>/.helm-charts`, and versions of the same charts that no release asks for
 * any more are removed (for git charts: tags only, as Kluctl does).
 */
import { readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pLimit from 'p-limit';
import { isFile, relativeSlashPath } from '../files.ts';
import { problemsOf } from '../problems.ts';
import type { Progress } from '../progress.ts';
import type { ChartTools } from './helm-cli.ts';
import { chartKey, describeVersion, type RemoteChartSource } from './chart-config.ts';
import { chartDir, HELM_CHARTS_DIR, versionDir, versionName } from './layout.ts';
import { findProjectReleases, type ProjectRelease } from './project-charts.ts';
import { pullChart } from './pull.ts';

export interface PulledChart {
  chart: string;
  /** Repository, registry or git URL. */
  source: string;
  /** Chart version, or git ref name (`refs/tags/v1.0.0`). */
  version: string;
  /** Folder relative to the project, slash-separated. */
  dir: string;
}

export interface HelmPullResult {
  pulled: PulledChart[];
  removed: PulledChart[];
  errors: string[];
}

export interface HelmPullOptions {
  /** Pull versions that are already there too (`helm-pull` itself; helm-update pulls only what is missing). */
  force: boolean;
  /** Only count what would be done. */
  dryRun: boolean;
}

/**
 * Pre-pulls the charts of the project at `projectDir`, up to four at a time.
 * @throws Error or ProblemList when the project or one of its helm-chart.yaml files is invalid (nothing is pulled);
 *   failed pulls are reported in `errors` instead.
 */
export async function pullProjectCharts(
  projectDir: string,
  options: HelmPullOptions,
  charts: ChartTools,
  progress: Progress,
): Promise<HelmPullResult> {
  return pullReleases(projectDir, await findProjectReleases(projectDir, 'helm-pull'), options, charts, progress);
}

/** As pullProjectCharts, for releases already read. */
export async function pullReleases(
  projectDir: string,
  releases: readonly ProjectRelease[],
  options: HelmPullOptions,
  charts: ChartTools,
  progress: Progress,
): Promise<HelmPullResult> {
  const baseDir = path.join(projectDir, HELM_CHARTS_DIR);
  const result: HelmPullResult = { pulled: [], removed: [], errors: [] };
  const limit = pLimit(Math.min(4, os.availableParallelism()));
  const pulls: Array<Promise<void>> = [];
  for (const { chart, wanted } of groupByChart(releases)) {
    for (const removed of await unusedVersions(chart, baseDir, wanted)) {
      result.removed.push(describe(chart, removed.name, removed.dir, projectDir));
      if (!options.dryRun) {
        progress.step(chart.chartName, `removing unused version ${removed.name}`);
        await rm(removed.dir, { recursive: true, force: true });
      }
    }
    for (const { source, files } of wanted.values()) {
      const dir = versionDir(source, baseDir);
      if (!options.force && (await isFile(path.join(dir, 'Chart.yaml')))) continue;
      const entry = describe(source, versionName(source), dir, projectDir);
      if (options.dryRun) {
        result.pulled.push(entry);
        continue;
      }
      pulls.push(
        limit(async () => {
          progress.step(source.chartName, `pulling ${describeVersion(source)}`);
          try {
            await pullChart(source, dir, charts);
            result.pulled.push(entry);
          } catch (error) {
            result.errors.push(...problemsOf(error).map((problem) => `${files.join(', ')}: ${problem}`));
          }
        }),
      );
    }
  }
  await Promise.all(pulls);
  result.pulled.sort((a, b) => a.dir.localeCompare(b.dir));
  return result;
}

interface WantedVersion {
  source: RemoteChartSource;
  /** helm-chart.yaml files asking for it, relative to the project. */
  files: string[];
}

/** Releases grouped per chart: one source of the chart, and the versions to pull keyed by version name. */
function groupByChart(releases: readonly ProjectRelease[]): Array<{ chart: RemoteChartSource; wanted: Map<string, WantedVersion> }> {
  const groups = new Map<string, { chart: RemoteChartSource; wanted: Map<string, WantedVersion> }>();
  for (const release of releases) {
    const key = chartKey(release.source);
    const group = groups.get(key) ?? { chart: release.source, wanted: new Map() };
    groups.set(key, group);
    if (release.config.skipPrePull) continue;
    const version = versionName(release.source);
    const wanted = group.wanted.get(version) ?? { source: release.source, files: [] };
    group.wanted.set(version, wanted);
    wanted.files.push(release.relFile);
  }
  return [...groups.values()];
}

/** Pulled versions of the chart no release wants (kluctl's cleanupUnusedCharts). */
async function unusedVersions(
  source: RemoteChartSource,
  baseDir: string,
  wanted: ReadonlyMap<string, WantedVersion>,
): Promise<Array<{ name: string; dir: string }>> {
  const parent = source.kind === 'git' ? path.join(chartDir(source, baseDir), 'refs', 'tags') : chartDir(source, baseDir);
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => ({ name: source.kind === 'git' ? `refs/tags/${entry.name}` : entry.name, dir: path.join(parent, entry.name) }))
    .filter((entry) => !wanted.has(entry.name));
}

function describe(source: RemoteChartSource, version: string, dir: string, projectDir: string): PulledChart {
  return {
    chart: source.chartName,
    source: source.kind === 'git' ? source.url : source.repo,
    version,
    dir: relativeSlashPath(projectDir, dir),
  };
}
