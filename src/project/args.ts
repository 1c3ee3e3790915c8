/**
 * Command-line args, as kluctl's external args define them: `-a name=value` where the name may be dotted to set a
 * nested value and the value is parsed as YAML (`-a replicas=3` is a number, `-a flags={a: 1}` an object);
 * `-a name=@file` takes the value from a file (`\@` escapes a literal @); `--args-from-file` loads a YAML file of
 * args first, which `-a` then overrides.
 */
import { readFile } from 'node:fs/promises';
import { parseYaml } from '../yaml.ts';
import { deepMerge, isPlainObject, setPath, type Values } from '../values.ts';

const ARG_PATTERN = /^([a-zA-Z0-9_./-]+)=(.*)$/s;

/**
 * Parses `name=value` strings into a nested args object, over the args of `argsFiles`.
 * @throws Error naming the malformed argument or the unreadable/invalid file.
 */
export async function parseArgs(argList: readonly string[], argsFiles: readonly string[] = []): Promise<Values> {
  let args: Values = {};
  for (const file of argsFiles) args = deepMerge(args, await readArgsFile(file));
  for (const arg of argList) {
    const match = ARG_PATTERN.exec(arg);
    if (!match) throw new Error(`invalid argument '${arg}': expected name=value`);
    const [, name, raw] = match as unknown as [string, string, string];
    checkArgName(name, `invalid argument '${arg}'`);
    setPath(args, name, await argValue(raw, name));
  }
  return args;
}

/**
 * Refuses an arg name (a dotted path) with a `__proto__` step: setting it would reach Object.prototype and give every
 * object of the process that key.
 * @throws Error starting with `label`.
 */
export function checkArgName(name: string, label: string): void {
  if (name.split('.').includes('__proto__')) throw new Error(`${label}: '__proto__' cannot be part of an argument name`);
}

async function argValue(raw: string, name: string): Promise<unknown> {
  if (raw.startsWith('@')) return parseYaml(await readArgFile(raw.slice(1), name), raw.slice(1)) ?? null;
  const text = raw.startsWith('\\@') ? raw.slice(1) : raw;
  if (text === '') return '';
  return parseYaml(text, `argument ${name}`) ?? null;
}

async function readArgFile(file: string, name: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => {
    throw new Error(`argument ${name}: cannot read file '${file}'`);
  });
}

async function readArgsFile(file: string): Promise<Values> {
  const value = parseYaml(await readArgFile(file, `--args-from-file`), file) ?? {};
  if (!isPlainObject(value)) throw new Error(`${file}: an args file must hold a YAML mapping`);
  return value;
}
