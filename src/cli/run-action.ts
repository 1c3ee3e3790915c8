/**
 * The frame every command runs in: progress on stderr, the result on stdout, and the exit code (1 when the result
 * holds errors or the command failed before producing one, e.g. a render error, which applies nothing).
 */
import type { CommandResult } from '../deploy/result.ts';
import { stderrProgress, type Progress } from '../progress.ts';
import { errorResult, printResult } from './output.ts';
import type { OutputFormat } from './options.ts';

export async function runResultCommand(format: OutputFormat, action: (progress: Progress) => Promise<CommandResult>): Promise<void> {
  let result: CommandResult;
  try {
    result = await action(stderrProgress());
  } catch (error) {
    result = errorResult(error);
  }
  printResult(result, format);
  process.exitCode = result.errors.length > 0 ? 1 : 0;
}
