/**
 * Printing command results: Kluctl's text sections, YAML, or JSON (`-o json`), to stdout or to files
 * (`-o yaml=path`, repeatable, as Kluctl's --output). The JSON and YAML documents are the CommandResult:
 * {newObjects, changedObjects, deletedObjects, orphanObjects, appliedHooks, warnings, errors}, objects as
 * {group, version, kind, namespace, name} (changed objects also carry their diff).
 */
import { access, constants, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { styleText } from 'node:util';
import { formatRef } from '../kube/object.ts';
import { emptyResult, type CommandResult, type ResultMessage } from '../deploy/result.ts';
import { problemsOf } from '../problems.ts';
import { toYaml } from '../yaml.ts';

export interface OutputTarget {
  format: 'text' | 'json' | 'yaml';
  /** A file to write to; stdout when absent. */
  path?: string;
}

/**
 * Parses `-o` values: `text`, `json`, `yaml`, each optionally `=path`. No value means text on stdout.
 * @throws Error naming an unknown format.
 */
export function parseOutputs(values: readonly string[]): OutputTarget[] {
  if (values.length === 0) return [{ format: 'text' }];
  return values.map((value) => {
    const [format, ...rest] = value.split('=');
    if (format !== 'text' && format !== 'json' && format !== 'yaml')
      throw new Error(`unknown output format '${value}' (text, json or yaml, optionally =path)`);
    return rest.length > 0 ? { format, path: rest.join('=') } : { format };
  });
}

/**
 * Checks that every output file can be written (its folder exists and is writable, and it is no folder itself), so
 * that a command never changes the cluster and then loses its result.
 * @throws Error naming the `-o` value and what is wrong with it.
 */
export async function checkOutputFiles(outputs: readonly OutputTarget[]): Promise<void> {
  for (const output of outputs) {
    if (!output.path) continue;
    const file = path.resolve(output.path);
    const named = `-o ${output.format}=${output.path}`;
    if ((await stat(file).catch(() => undefined))?.isDirectory()) throw new Error(`${named}: ${file} is a folder, not a file`);
    const folder = path.dirname(file);
    if (!(await stat(folder).catch(() => undefined))?.isDirectory()) throw new Error(`${named}: the folder ${folder} does not exist`);
    await access(folder, constants.W_OK).catch(() => {
      throw new Error(`${named}: the folder ${folder} is not writable`);
    });
  }
}

/**
 * Writes `result` to every target. A dry run's text ends saying nothing was changed, and its JSON and YAML carry
 * `dryRun: true` (as Kluctl's command info does).
 */
export async function printResult(
  result: CommandResult,
  outputs: readonly OutputTarget[],
  options: { shortOutput?: boolean; dryRun?: boolean } = {},
): Promise<void> {
  const document = options.dryRun ? { ...result, dryRun: true } : result;
  for (const output of outputs) {
    const color = !output.path && Boolean(process.stdout.isTTY);
    const text =
      output.format === 'json'
        ? `${JSON.stringify(document, null, 2)}\n`
        : output.format === 'yaml'
          ? toYaml(document)
          : formatText(result, options.shortOutput ?? false, color) + (options.dryRun ? DRY_RUN_NOTE : '');
    if (output.path) await writeFile(output.path, text);
    else process.stdout.write(text);
  }
}

const DRY_RUN_NOTE = '\nDry run: nothing was changed in the cluster.\n';

/** A result holding only errors, for failures before any object was touched. */
export function errorResult(error: unknown): CommandResult {
  return { ...emptyResult(), errors: problemsOf(error).map((message) => ({ message })) };
}

function formatText(result: CommandResult, shortOutput: boolean, color: boolean): string {
  const style = (format: 'bold' | 'green' | 'red', text: string) => (color ? styleText(format, text) : text);
  const lines: string[] = [];
  const section = (title: string, entries: string[]) => {
    if (entries.length > 0) lines.push('', style('bold', `${title}:`), ...entries.map((entry) => `  ${entry}`));
  };
  section('New objects', result.newObjects.map(formatRef));
  section('Changed objects', result.changedObjects.map(formatRef));
  if (!shortOutput) {
    for (const changed of result.changedObjects) {
      lines.push(
        '',
        style('bold', `Diff for object ${formatRef(changed)}`),
        ...changed.diff.split('\n').map((line) => colorDiffLine(line, style)),
      );
    }
  }
  section('Applied hooks', result.appliedHooks.map(formatRef));
  section('Deleted objects', result.deletedObjects.map(formatRef));
  section('Orphan objects', result.orphanObjects.map(formatRef));
  section('Warnings', result.warnings.map(formatMessage));
  section('Errors', result.errors.map(formatMessage));
  if (lines.length === 0) lines.push('No changes.');
  return `${lines.join('\n').trimStart()}\n`;
}

function formatMessage(message: ResultMessage): string {
  return message.object ? `${formatRef(message.object)}: ${message.message}` : message.message;
}

function colorDiffLine(line: string, style: (format: 'green' | 'red', text: string) => string): string {
  if (line.startsWith('+') && !line.startsWith('+++')) return style('green', line);
  if (line.startsWith('-') && !line.startsWith('---')) return style('red', line);
  return line;
}
