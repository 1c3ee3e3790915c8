/**
 * Finding the files of a release's chart for rendering (kluctl's Release.getPulledChart): a local chart is used in
 * place; a chart with `skipPrePull` is pulled on demand into the cache; any other chart must be pre-pulled into
 * the nearest `.helm-charts` folder, at the version helm-chart.yaml asks for (git charts: at the commit the ref
 * points to now), or rendering fails and tells the user to run `gantry helm-pull`.
 */
import path from 'node:path';
import { isDirectory, isFile } from '../files.ts';
import type { ChartTools } from './helm-cli.ts';
import { describeChart, describeVersion, type ChartSource, type RemoteChartSource } from './chart-config.ts';
import { HELM_CHARTS_DIR, nearestHelmChartsDir, versionDir } from './layout.ts';
import { chartYamlVersion, pullCached, pulledGitCommit } from './pull.ts';

/**
 * The folder holding the chart's Chart.yaml.
 * @param chartFileDir the helm-chart.yaml's folder in the project; `.helm-charts` is searched from there upwards.
 * @param projectRoot the search stops there.
 * @throws Error (without the file name; the caller adds it) when the chart is missing or stale.
 */
export async function locateChart(
  source: ChartSource,
  skipPrePull: boolean,
  chartFileDir: string,
  projectRoot: string,
  charts: ChartTools,
): Promise<string> {
  if (source.kind === 'local') {
    if (!(await isFile(path.join(source.dir, 'Chart.yaml'))))
      throw new Error(`local chart ${path.relative(projectRoot, source.dir) || '.'} not found (no Chart.yaml there)`);
    return source.dir;
  }
  if (skipPrePull) return pullCached(source, charts);
  const chartsDir = await nearestHelmChartsDir(chartFileDir, projectRoot);
  const expected = chartsDir ? versionDir(source, chartsDir) : path.join(HELM_CHARTS_DIR, '…');
  if (!chartsDir || !(await isDirectory(expected)))
    throw notPrePulled(source, chartsDir ? path.relative(projectRoot, expected) : `${HELM_CHARTS_DIR}/ (none found)`);
  await checkPrePulledVersion(source, expected, path.relative(projectRoot, expected), charts);
  return expected;
}

async function checkPrePulledVersion(source: RemoteChartSource, dir: string, shownDir: string, charts: ChartTools): Promise<void> {
  if (source.kind === 'git') {
    const pulled = await pulledGitCommit(dir);
    if (!pulled) throw notPrePulled(source, `${shownDir}/.git-info.yaml`);
    const current = await charts.git.resolve(source.url, source.ref);
    if (pulled !== current) {
      throw new Error(
        `pre-pulled chart ${describeChart(source)} in ${shownDir} is commit ${pulled}, but ${describeVersion(source)} is at ${current} now: run 'gantry helm-pull'`,
      );
    }
    return;
  }
  const pulled = await chartYamlVersion(dir);
  if (pulled === undefined) throw notPrePulled(source, `${shownDir}/Chart.yaml`);
  if (pulled !== source.version) {
    throw new Error(
      `pre-pulled chart ${describeChart(source)} in ${shownDir} has version ${pulled}, but version ${source.version} is wanted: run 'gantry helm-pull'`,
    );
  }
}

function notPrePulled(source: RemoteChartSource, missing: string): Error {
  return new Error(
    `chart ${describeChart(source)} (${describeVersion(source)}) has not been pre-pulled (missing ${missing}): run 'gantry helm-pull', or set 'skipPrePull: true' to pull it on demand`,
  );
}
