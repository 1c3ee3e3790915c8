/**
 * `helm-update` (kluctl's helmUpdateCmd): for every release of the project, the newest version its chart offers
 * within `updateConstraints` (pre-releases only when the constraint asks for them). Releases with `skipUpdate` are
 * reported and left alone; git charts can only move when their ref is a tag (Kluctl's docs). With `upgrade`, the
 * new version is written into helm-chart.yaml and helm-pull runs; with `commit`, each chart's upgrade becomes one
 * git commit, which needs a clean work tree and an up-to-date `.helm-charts` first.
 * Every version is looked up before anything is written, so a failing lookup changes no file.
 */
import path from 'node:path';
import { isDirectory, relativeSlashPath } from '../files.ts';
import { ProblemList, problemsOf } from '../problems.ts';
import type { Progress } from '../progress.ts';
import type { ChartTools } from './helm-cli.ts';
import { chartKey } from './chart-config.ts';
import { writeVersion } from './chart-file-edit.ts';
import { HELM_CHARTS_DIR } from './layout.ts';
import { findProjectReleases, type ProjectRelease } from './project-charts.ts';
import { pullReleases, type PulledChart } from './pull-project.ts';
import { newestVersion } from '../semver.ts';
import { availableVersions } from './versions.ts';

export type UpdateStatus = 'up-to-date' | 'update-available' | 'skipped' | 'updated' | 'not-updatable';

export interface ChartUpdate {
  /** helm-chart.yaml relative to the project. */
  file: string;
  chart: string;
  /** Repository, registry or git URL. */
  source: string;
  /** Chart version or git tag; absent for a git chart on a branch or commit. */
  currentVersion?: string;
  newestVersion?: string;
  status: UpdateStatus;
}

export interface HelmUpdateResult {
  charts: ChartUpdate[];
  pulled: PulledChart[];
  removed: PulledChart[];
  commits: Array<{ chart: string; from: string; to: string; commit: string }>;
  errors: string[];
}

export interface HelmUpdateOptions {
  /** Write new versions into helm-chart.yaml and pull them. */
  upgrade: boolean;
  /** One git commit per upgraded chart. */
  commit: boolean;
}

/**
 * @throws Error or ProblemList for an invalid project or helm-chart.yaml, a repository that can not be read, a
 *   constraint nothing satisfies, or (with `commit`) a dirty work tree; in each case before any file is written.
 */
export async function updateProjectCharts(
  projectDir: string,
  options: HelmUpdateOptions,
  charts: ChartTools,
  progress: Progress,
): Promise<HelmUpdateResult> {
  const releases = await findProjectReleases(projectDir, 'helm-update');
  if (options.commit) {
    await checkCleanWorkTree(projectDir, charts);
    await checkChartsPulled(projectDir, releases, charts, progress);
  }
  const newest = await newestVersions(
    releases.filter((release) => currentVersion(release) !== undefined),
    charts,
    progress,
  );
  const result: HelmUpdateResult = { charts: [], pulled: [], removed: [], commits: [], errors: [] };
  const upgrades = new Map<string, Array<{ release: ProjectRelease; update: ChartUpdate }>>();
  for (const release of releases) {
    const update = decide(release, newest.get(release));
    result.charts.push(update);
    const where = path.posix.dirname(release.relFile);
    if (update.status === 'skipped') progress.step(where, `skipped update to version ${update.newestVersion}`);
    if (update.status !== 'update-available') continue;
    progress.step(where, `chart ${update.chart} (old version ${update.currentVersion}) has new version ${update.newestVersion} available`);
    const key = `${chartKey(release.source)}\0${update.currentVersion}\0${update.newestVersion}`;
    upgrades.set(key, [...(upgrades.get(key) ?? []), { release, update }]);
  }
  if (!options.upgrade) return result;
  for (const group of upgrades.values()) {
    const outcome = await upgrade(projectDir, group, options.commit, charts, progress);
    result.pulled.push(...outcome.pulled);
    result.removed.push(...outcome.removed);
    if (outcome.commit) result.commits.push(outcome.commit);
    if (outcome.errors.length > 0) {
      result.errors.push(...outcome.errors);
      break;
    }
  }
  return result;
}

/** The newest allowed version per release, querying each chart once. */
async function newestVersions(
  releases: readonly ProjectRelease[],
  charts: ChartTools,
  progress: Progress,
): Promise<Map<ProjectRelease, string>> {
  const queries = new Map<string, Promise<string[]>>();
  for (const release of releases) {
    const key = chartKey(release.source);
    if (!queries.has(key)) {
      progress.step(release.source.chartName, 'querying versions');
      queries.set(key, availableVersions(release.source, charts.git));
    }
  }
  await Promise.allSettled(queries.values());
  const problems: string[] = [];
  const newest = new Map<ProjectRelease, string>();
  for (const release of releases) {
    try {
      const versions = await (queries.get(chartKey(release.source)) as Promise<string[]>);
      const constraint = release.config.updateConstraints;
      const found = newestVersion(versions, constraint);
      if (!found)
        throw new Error(constraint === undefined ? 'no released version found' : `no version satisfies updateConstraints '${constraint}'`);
      newest.set(release, found);
    } catch (error) {
      problems.push(...problemsOf(error).map((problem) => `${release.relFile}: ${problem}`));
    }
  }
  if (problems.length > 0) throw new ProblemList(problems);
  return newest;
}

/** The version helm-update can move: the chart version, or a git chart's tag (branches and commits stay). */
function currentVersion(release: ProjectRelease): string | undefined {
  return release.source.kind === 'git' ? release.source.ref.tag : release.config.chartVersion;
}

function decide(release: ProjectRelease, newest: string | undefined): ChartUpdate {
  const { source, config } = release;
  const current = currentVersion(release);
  const base = {
    file: release.relFile,
    chart: source.chartName,
    source: source.kind === 'git' ? source.url : source.repo,
    currentVersion: current,
    newestVersion: newest,
  };
  if (current === undefined || newest === undefined) return { ...base, status: 'not-updatable' };
  if (current === newest) return { ...base, status: 'up-to-date' };
  return { ...base, status: config.skipUpdate ? 'skipped' : 'update-available' };
}

/** Writes the group's new version, pulls, and commits when asked to. */
async function upgrade(
  projectDir: string,
  group: ReadonlyArray<{ release: ProjectRelease; update: ChartUpdate }>,
  commit: boolean,
  charts: ChartTools,
  progress: Progress,
): Promise<{ pulled: PulledChart[]; removed: PulledChart[]; errors: string[]; commit?: HelmUpdateResult['commits'][number] }> {
  const { update: first } = group[0] as { update: ChartUpdate };
  const to = first.newestVersion as string;
  for (const { release, update } of group) {
    await writeVersion(release.file, release.source.kind === 'git' ? 'gitTag' : 'chartVersion', to);
    update.status = 'updated';
    progress.step(path.posix.dirname(release.relFile), `updated chart version to ${to}`);
  }
  const pull = await pullReleases(
    projectDir,
    await findProjectReleases(projectDir, 'helm-update'),
    { force: false, dryRun: false },
    charts,
    progress,
  );
  if (pull.errors.length > 0 || !commit) return pull;
  const message = `Updated helm chart ${first.chart} from version ${first.currentVersion} to version ${to}`;
  const hash = await commitUpgrade(
    charts,
    projectDir,
    group.map(({ release }) => release.file),
    message,
  );
  progress.step(first.chart, `committed ${hash.slice(0, 12)}: ${message}`);
  return { ...pull, commit: { chart: first.chart, from: first.currentVersion as string, to, commit: hash } };
}

/** Checks the work tree has no staged or unstaged change and nothing untracked in `.helm-charts` (kluctl's rules for --commit). */
async function checkCleanWorkTree(projectDir: string, charts: ChartTools): Promise<void> {
  const root = (
    await gitIn(charts, projectDir, ['rev-parse', '--show-toplevel']).catch(() => {
      throw new Error(`--commit needs the project in a git work tree; ${projectDir} is not in one`);
    })
  ).trim();
  const chartsPrefix = `${relativeSlashPath(root, path.join(projectDir, HELM_CHARTS_DIR))}/`;
  const entries = (await gitIn(charts, root, ['status', '--porcelain=v1', '-z', '--untracked-files=all'])).split('\0').filter(Boolean);
  for (const entry of entries) {
    const file = entry.slice(3);
    if (file.startsWith(chartsPrefix)) throw new Error(`--commit needs a clean ${HELM_CHARTS_DIR} folder; ${file} is changed or untracked`);
    if (!entry.startsWith('??')) throw new Error(`--commit needs an unmodified git work tree; ${file} is changed`);
  }
}

/** --commit needs `.helm-charts` up to date, so each commit holds only its chart's change. */
async function checkChartsPulled(
  projectDir: string,
  releases: readonly ProjectRelease[],
  charts: ChartTools,
  progress: Progress,
): Promise<void> {
  const pending = await pullReleases(projectDir, releases, { force: false, dryRun: true }, charts, progress);
  if (pending.pulled.length + pending.removed.length > 0)
    throw new Error(`${HELM_CHARTS_DIR} is not up to date: run 'gantry helm-pull' first`);
}

/** Stages the helm-chart.yaml files and `.helm-charts`, commits, returns the commit. Uses the user's git setup. */
async function commitUpgrade(charts: ChartTools, projectDir: string, files: readonly string[], message: string): Promise<string> {
  await gitIn(charts, projectDir, ['add', '--', ...files]);
  if (await isDirectory(path.join(projectDir, HELM_CHARTS_DIR))) await gitIn(charts, projectDir, ['add', '--all', '--', HELM_CHARTS_DIR]);
  await gitIn(charts, projectDir, ['commit', '--quiet', '-m', message]);
  return (await gitIn(charts, projectDir, ['rev-parse', 'HEAD'])).trim();
}

/**
 * git in the user's own work tree, with the user's configuration (identity, hooks, signing), unlike the git cache's
 * fetches, which must not depend on it.
 */
async function gitIn(charts: ChartTools, cwd: string, args: readonly string[]): Promise<string> {
  return (await charts.tools.run('git', args, { cwd })).stdout;
}
