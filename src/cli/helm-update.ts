import path from 'node:path';
import { Command } from 'commander';
import { updateProjectCharts, type ChartUpdate, type HelmUpdateResult } from '../helm/update-project.ts';
import { problemsOf } from '../problems.ts';
import { formatSections } from './helm-pull.ts';
import { addOutputFlag, type OutputFormat } from './options.ts';
import { withCliEngine } from './run-action.ts';

interface HelmUpdateFlags {
  projectDir: string;
  upgrade?: boolean;
  commit?: boolean;
  output: OutputFormat;
}

/**
 * `gantry helm-update`, as kluctl's (without its interactive `-i`): reports newer chart versions allowed by
 * `updateConstraints`; `--upgrade` writes them into helm-chart.yaml and pulls them, `--commit` commits each chart's
 * upgrade. `-o json` prints {charts, pulled, removed, commits, errors}; each chart as {file, chart, source,
 * currentVersion, newestVersion, status: up-to-date|update-available|skipped|updated|not-updatable}.
 */
export function helmUpdateCommand(): Command {
  const command = new Command('helm-update');
  addOutputFlag(command.option('--project-dir <dir>', 'folder of the Kluctl project', '.'))
    .option('--upgrade', 'write new versions into helm-chart.yaml and perform helm-pull afterwards')
    .option('--commit', 'create a git commit for every updated chart')
    .action(async (flags: HelmUpdateFlags) => {
      let result: HelmUpdateResult;
      try {
        const options = { upgrade: flags.upgrade ?? false, commit: flags.commit ?? false };
        result = await withCliEngine(({ engine, progress }) =>
          updateProjectCharts(path.resolve(flags.projectDir), options, engine.charts, progress),
        );
      } catch (error) {
        result = { charts: [], pulled: [], removed: [], commits: [], errors: problemsOf(error) };
      }
      process.stdout.write(flags.output === 'json' ? `${JSON.stringify(result, null, 2)}\n` : formatText(result));
      process.exitCode = result.errors.length > 0 ? 1 : 0;
    });
  return command;
}

function formatText(result: HelmUpdateResult): string {
  const withStatus = (status: ChartUpdate['status']) => result.charts.filter((chart) => chart.status === status);
  const move = (chart: ChartUpdate) => `${chart.file}: ${chart.chart} ${chart.currentVersion} -> ${chart.newestVersion}`;
  return formatSections([
    ['Updated charts', withStatus('updated').map(move)],
    ['Updates available (run with --upgrade)', withStatus('update-available').map(move)],
    ['Skipped (skipUpdate)', withStatus('skipped').map(move)],
    ['Up to date', withStatus('up-to-date').map((chart) => `${chart.file}: ${chart.chart} ${chart.currentVersion}`)],
    ['Not updatable (git ref is not a tag)', withStatus('not-updatable').map((chart) => `${chart.file}: ${chart.chart}`)],
    ['Commits', result.commits.map((commit) => `${commit.commit.slice(0, 12)} ${commit.chart} ${commit.from} -> ${commit.to}`)],
    ['Errors', result.errors],
  ]);
}
