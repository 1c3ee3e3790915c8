/**
 * Flags shared by the target commands, named as Kluctl names them (common-arguments docs), and their parsing.
 */
import { createInterface } from 'node:readline/promises';
import { Option, type Command } from 'commander';
import type { TargetOptions } from '../deploy/prepare.ts';

export interface TargetFlags {
  target?: string;
  arg: string[];
  projectDir: string;
  kubeconfig?: string;
  context?: string;
  output: OutputFormat;
}

export type OutputFormat = 'text' | 'json';

export function addTargetFlags(command: Command): Command {
  return command
    .option('-t, --target <name>', 'target to run against')
    .option('-a, --arg <name=value>', 'template argument (repeatable; the value is parsed as YAML)', collect, [])
    .option('--project-dir <dir>', 'folder of the Kluctl project', '.')
    .option('--kubeconfig <file>', 'kubeconfig to use instead of $KUBECONFIG / ~/.kube/config')
    .option('--context <name>', "kubeconfig context, overriding the target's");
}

export function addOutputFlag(command: Command): Command {
  return command.addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'));
}

export function toTargetOptions(flags: TargetFlags, offline = false): TargetOptions {
  return { projectDir: flags.projectDir, target: flags.target, args: flags.arg, kubeconfig: flags.kubeconfig, context: flags.context, offline };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a Go-style duration (`90s`, `10m`, `1h30m`) into milliseconds, the form Kluctl's flags take.
 * @throws Error for anything else.
 */
export function parseDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text) throw new Error(`invalid duration '${text}' (examples: 30s, 10m, 1h30m)`);
  return parts.reduce((total, part) => total + Number(part[1]) * (UNIT_MS[part[2] as string] as number), 0);
}

/**
 * Asks a yes/no question on the terminal; `--yes` answers for the user.
 * @throws Error when stdin is not a terminal and `--yes` was not given.
 */
export async function confirm(question: string, yes: boolean): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new Error(`${question} Refusing without a terminal to ask on: pass --yes`);
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await prompt.question(`${question} [y/N] `)).trim());
  } finally {
    prompt.close();
  }
}
