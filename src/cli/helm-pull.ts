import path from 'node:path';
import { Command } from 'commander';
import { pullProjectCharts, type HelmPullResult, type PulledChart } from '../helm/pull-project.ts';
import { problemsOf } from '../problems.ts';
import { addOutputFlag, type OutputFormat } from './options.ts';
import { withCliEngine } from './run-action.ts';

interface HelmPullFlags {
  projectDir: string;
  output: OutputFormat;
}

/**
 * `gantry helm-pull`, as kluctl's: pre-pulls the chart of every helm-chart.yaml (except `skipPrePull` ones) into
 * `.helm-charts` and removes versions no release uses. `-o json` prints {pulled, removed, errors}, charts as
 * {chart, source, version, dir}; the exit code is 1 when anything failed.
 */
export function helmPullCommand(): Command {
  const command = new Command('helm-pull');
  addOutputFlag(command.option('--project-dir <dir>', 'folder of the Kluctl project', '.')).action(async (flags: HelmPullFlags) => {
    let result: HelmPullResult;
    try {
      result = await withCliEngine(({ engine, progress }) =>
        pullProjectCharts(path.resolve(flags.projectDir), { force: true, dryRun: false }, engine.charts, progress),
      );
    } catch (error) {
      result = { pulled: [], removed: [], errors: problemsOf(error) };
    }
    process.stdout.write(
      flags.output === 'json'
        ? `${JSON.stringify(result, null, 2)}\n`
        : formatSections([
            ['Pulled charts', result.pulled.map(formatPulled)],
            ['Removed unused charts', result.removed.map(formatPulled)],
            ['Errors', result.errors],
          ]),
    );
    process.exitCode = result.errors.length > 0 ? 1 : 0;
  });
  return command;
}

function formatPulled(chart: PulledChart): string {
  return `${chart.dir} (${chart.chart} ${chart.version} from ${chart.source})`;
}

/** Titled, indented lists; empty ones left out; `Nothing to do.` when all are empty. */
export function formatSections(sections: ReadonlyArray<readonly [string, readonly string[]]>): string {
  const lines = sections
    .filter(([, entries]) => entries.length > 0)
    .flatMap(([title, entries]) => ['', `${title}:`, ...entries.map((entry) => `  ${entry}`)]);
  return `${lines.length > 0 ? lines.join('\n').trimStart() : 'Nothing to do.'}\n`;
}
