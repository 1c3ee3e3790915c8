/**
 * Printing command results: Kluctl's text sections, or one JSON document for machines (`-o json`):
 * {newObjects, changedObjects, deletedObjects, orphanObjects, warnings, errors}, objects as
 * {group, version, kind, namespace, name} (changed objects also carry their diff).
 */
import { styleText } from 'node:util';
import { formatRef } from '../kube/object.ts';
import type { CommandResult, ResultMessage } from '../deploy/result.ts';
import type { OutputFormat } from './options.ts';
import { problemsOf } from '../problems.ts';

export function printResult(result: CommandResult, format: OutputFormat): void {
  process.stdout.write(format === 'json' ? `${JSON.stringify(result, null, 2)}\n` : formatText(result));
}

/** A result holding only errors, for failures before any object was touched. */
export function errorResult(error: unknown): CommandResult {
  return { newObjects: [], changedObjects: [], deletedObjects: [], orphanObjects: [], appliedHooks: [], warnings: [], errors: problemsOf(error).map((message) => ({ message })) };
}

function formatText(result: CommandResult): string {
  const lines: string[] = [];
  section(lines, 'New objects', result.newObjects.map(formatRef));
  section(lines, 'Changed objects', result.changedObjects.map(formatRef));
  for (const changed of result.changedObjects) {
    lines.push('', heading(`Diff for object ${formatRef(changed)}`), ...changed.diff.split('\n').map(colorDiffLine));
  }
  section(lines, 'Applied hooks', result.appliedHooks.map(formatRef));
  section(lines, 'Deleted objects', result.deletedObjects.map(formatRef));
  section(lines, 'Orphan objects', result.orphanObjects.map(formatRef));
  section(lines, 'Warnings', result.warnings.map(formatMessage));
  section(lines, 'Errors', result.errors.map(formatMessage));
  if (lines.length === 0) lines.push('No changes.');
  return `${lines.join('\n').trimStart()}\n`;
}

function section(lines: string[], title: string, entries: string[]): void {
  if (entries.length === 0) return;
  lines.push('', heading(`${title}:`), ...entries.map((entry) => `  ${entry}`));
}

function formatMessage(message: ResultMessage): string {
  return message.object ? `${formatRef(message.object)}: ${message.message}` : message.message;
}

function heading(text: string): string {
  return styled('bold', text);
}

function colorDiffLine(line: string): string {
  if (line.startsWith('+') && !line.startsWith('+++')) return styled('green', line);
  if (line.startsWith('-') && !line.startsWith('---')) return styled('red', line);
  return line;
}

function styled(format: 'bold' | 'green' | 'red', text: string): string {
  return process.stdout.isTTY ? styleText(format, text) : text;
}
