/**
 * The frame every result command runs in: progress on stderr, the result to stdout and/or files, optionally the
 * result kept in the cluster, and the exit code (1 when the result holds errors or the command failed before
 * producing one, e.g. a render error, which applies nothing; 130 or 143 when SIGINT or SIGTERM stopped it, see
 * signals.ts, its result then holding what it did until then).
 */
import path from 'node:path';
import type { PreparedTarget } from '../target/prepare.ts';
import { PartialResultError, type CommandResult } from '../deploy/result.ts';
import { writeCommandResult } from '../deploy/result-store.ts';
import { Engine } from '../engine.ts';
import { cliEngineConfig } from '../engine-config.ts';
import { stderrProgress } from '../progress.ts';
import { checkOutputFiles, errorResult, parseOutputs, printResult } from './output.ts';
import type { ResultFlags } from './options.ts';
import { interruptedExitCode, stopOnSignals } from './signals.ts';
import type { CliRun } from './cli-run.ts';
import { messageOf } from '../problems.ts';

export interface CommandRun {
  result: CommandResult;
  /** The target the command ran against, when it got that far (needed to store the result). */
  prepared?: PreparedTarget;
}

/**
 * Runs `action` with an Engine made from the CLI's configuration, closed afterwards (Jinja2 workers stopped,
 * connections closed), also when `signal` stopped it.
 */
export async function withCliEngine<T>(action: (run: CliRun) => Promise<T>, signal?: AbortSignal): Promise<T> {
  const progress = stderrProgress();
  const engine = new Engine({ ...cliEngineConfig(), onNotice: (line) => progress.step('python', line) });
  try {
    return await action({ engine, progress, signal });
  } finally {
    await engine.close();
  }
}

/**
 * Runs a result command: `action`, then the result kept in the cluster when asked (a dry run's only with
 * `--force-write-command-result`, as in Kluctl), then printed; a dry run's output says nothing was changed. SIGINT
 * or SIGTERM stops the action through its run's signal: what it did until then is printed, not kept.
 * @throws Error for an unknown output format or an output file that cannot be written, before anything runs.
 */
export async function runResultCommand(
  command: string,
  flags: ResultFlags & { dryRun?: boolean },
  action: (run: CliRun) => Promise<CommandRun>,
): Promise<void> {
  const outputs = parseOutputs(flags.output);
  await checkOutputFiles(outputs);
  const dryRun = flags.dryRun ?? false;
  const startTime = new Date().toISOString();
  const signal = stopOnSignals();
  const run = await withCliEngine(async (cli) => {
    let run: CommandRun;
    try {
      run = await action(cli);
    } catch (error) {
      run = { result: failedResult(error, signal) };
    }
    if (flags.writeCommandResult && (!dryRun || flags.forceWriteCommandResult) && run.prepared?.cluster)
      await storeResult(command, run, startTime, flags, cli.engine.config.fieldManager);
    return run;
  }, signal);
  await printResult(run.result, outputs, { shortOutput: flags.shortOutput ?? false, dryRun });
  process.exitCode = interruptedExitCode(signal) ?? (run.result.errors.length > 0 ? 1 : 0);
}

/**
 * The result of an action that threw: what it had done by then (PartialResultError) or nothing, and why it stopped.
 * Once `signal` fired, the interruption stands for whatever the action threw: a request it abandoned, or a helm the
 * terminal's Ctrl-C killed too.
 */
function failedResult(error: unknown, signal: AbortSignal): CommandResult {
  const failed = errorResult(signal.aborted ? signal.reason : error);
  if (!(error instanceof PartialResultError)) return failed;
  return { ...error.partial, errors: [...error.partial.errors, ...failed.errors] };
}

async function storeResult(command: string, run: CommandRun, startTime: string, flags: ResultFlags, fieldManager: string): Promise<void> {
  const prepared = run.prepared as PreparedTarget;
  try {
    await writeCommandResult(
      prepared.cluster!,
      {
        projectKey: path.resolve(prepared.project.dir),
        commandInfo: {
          command,
          target: prepared.target.name,
          discriminator: prepared.target.discriminator,
          startTime,
          endTime: new Date().toISOString(),
        },
        result: run.result,
      },
      { namespace: flags.commandResultNamespace, keep: flags.keepCommandResultsCount, fieldManager },
    );
  } catch (error) {
    run.result.warnings.push({
      message: `the command result could not be written to the cluster: ${messageOf(error)}`,
    });
  }
}
