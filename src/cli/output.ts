/**
 * Printing command results: Kluctl's text sections, YAML, or JSON (`-o json`), to stdout or to files
 * (`-o yaml=path`, repeatable, as Kluctl's --output). The JSON and YAML documents are the CommandResult:
 * {newObjects, changedObjects, deletedObjects, orphanObjects, appliedHooks, warnings, errors}, objects as
 * {group, version, kind, namespace, name} (changed objects also carry their diff).
 */
import { writeFile } from 'node:fs/promises';
import { styleText } from 'node:util';
import { formatRef } from '../kube/object.ts';
import type { CommandResult, ResultMessage } from '../deploy/result.ts';
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

/** Writes `result` to every target. */
export async function printResult(
  result: CommandResult,
  outputs: readonly OutputTarget[],
  options: { shortOutput?: boolean } = {},
): Promise<void> {
  for (const output of outputs) {
    const color = !output.path && Boolean(process.stdout.isTTY);
    const text =
      output.format === 'json'
        ? `${JSON.stringify(result, null, 2)}\n`
        : output.format === 'yaml'
          ? toYaml(result)
          : formatText(result, options.shortOutput ?? false, color);
    if (output.path) await writeFile(output.path, text);
    else process.stdout.write(text);
  }
}

/** A result holding only errors, for failures before any object was touched. */
export function errorResult(error: unknown): CommandResult {
  return {
    newObjects: [],
    changedObjects: [],
    deletedObjects: [],
    orphanObjects: [],
    appliedHooks: [],
    warnings: [],
    errors: problemsOf(error).map((message) => ({ message })),
  };
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
