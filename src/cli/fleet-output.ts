/**
 * Printing for the fleet's client commands (login, cluster, …): a kubectl-style table or `key: value` lines by
 * default, or the API's own JSON or YAML with `-o json|yaml`; errors as `error: …` on stderr with exit code 1.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiError, FleetClient } from '../client/fleet-client.ts';
import { readLogin } from '../client/login.ts';
import { toYaml } from '../yaml.ts';
import { messageOf } from '../problems.ts';

export type FleetOutput = 'text' | 'json' | 'yaml';

export function addFleetOutputFlag(command: Command): Command {
  return command.addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json', 'yaml']).default('text'));
}

/** Prints `value` as JSON or YAML, or as `text` (made only when asked for). */
export function printFleet(output: FleetOutput, value: unknown, text: () => string): void {
  if (output === 'json') process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else if (output === 'yaml') process.stdout.write(toYaml(value));
  else process.stdout.write(text());
}

/** Columns padded to their widest cell, headers in capitals, as kubectl prints lists. */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('   ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

/** Runs a client command with the logged-in client; reports failures as `error: …` (naming the field of bad input). */
export async function withFleetClient(action: (client: FleetClient) => Promise<void>): Promise<void> {
  try {
    await action(new FleetClient(await readLogin(process.env)));
  } catch (error) {
    const message = messageOf(error);
    const field = error instanceof ApiError && error.field ? ` (${error.field})` : '';
    process.stderr.write(`error: ${message}${field}\n`);
    process.exitCode = 1;
  }
}

/** Parses a repeatable `key=value` flag into an object. */
export function keyValueArg(value: string, previous: Record<string, string>): Record<string, string> {
  const separator = value.indexOf('=');
  if (separator <= 0) throw new InvalidArgumentError(`'${value}' is not key=value`);
  return { ...previous, [value.slice(0, separator)]: value.slice(separator + 1) };
}
