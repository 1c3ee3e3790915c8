/**
 * Command-line args (`-a name=value`), as kluctl's external args define them: the name may be dotted to set a
 * nested value, and the value is parsed as YAML, so `-a replicas=3` is a number and `-a flags={a: 1}` an object.
 */
import { parseYaml } from '../yaml.ts';
import { setPath, type Values } from './values.ts';

const ARG_PATTERN = /^([a-zA-Z0-9_./-]+)=(.*)$/s;

/**
 * Parses `name=value` strings into a nested args object.
 * @throws Error naming the malformed argument.
 */
export function parseArgs(argList: readonly string[]): Values {
  const args: Values = {};
  for (const arg of argList) {
    const match = ARG_PATTERN.exec(arg);
    if (!match) throw new Error(`invalid argument '${arg}': expected name=value`);
    const [, name, raw] = match as unknown as [string, string, string];
    setPath(args, name, parseArgValue(raw, name));
  }
  return args;
}

function parseArgValue(raw: string, name: string): unknown {
  if (raw === '') return '';
  return parseYaml(raw, `argument ${name}`) ?? null;
}
