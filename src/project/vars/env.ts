/**
 * The `systemEnvVars` vars source, as kluctl's variable-sources docs define it: a tree (mappings and lists) whose
 * leaves name environment variables, `NAME` or `NAME:default`; each value (or default) is parsed as YAML, so `42` is a
 * number and `'42'` a string, and an empty default is the empty string. Sensitive by default, as in Kluctl. The
 * variables are those the engine's configuration lets templates see (all of the CLI's; the allowed ones in a server
 * role), never read from this process directly.
 */
import { parseYamlDocuments } from '../../yaml.ts';
import { isPlainObject, type Values } from '../../values.ts';
import type { LoadedVars, SourceRequest } from './source.ts';

/**
 * Replaces each leaf of `tree` by the value of the variable it names, from the environment's SystemEnv.
 * With ignoreMissing, a leaf naming an unset variable without default is left out.
 * @throws Error naming the leaf's path for a non-string leaf, an unset variable (with the role's hint), or a value
 *   that is not YAML.
 */
export function loadSystemEnvVars(tree: Values, request: SourceRequest): LoadedVars {
  const label = `${request.label}: systemEnvVars`;
  const { variables, missingHint } = request.scope.environment.systemEnv;
  const missing = (name: string, at: string) =>
    new Error(`${label}: environment variable ${name} not found for ${at}${missingHint ? ` (${missingHint})` : ''}`);
  return {
    value: mapLeaves(tree, '', (leaf, at) => envValue(leaf, at, variables, request.ignoreMissing, label, missing)),
    sensitive: true,
  };
}

/** Left out of the result: a missing variable under ignoreMissing. */
const OMIT = Symbol('omit');

function mapLeaves(node: unknown, at: string, leaf: (value: unknown, at: string) => unknown): unknown {
  if (Array.isArray(node)) return node.map((entry, index) => mapLeaves(entry, `${at}[${index}]`, leaf)).filter((entry) => entry !== OMIT);
  if (isPlainObject(node)) {
    const entries = Object.entries(node).map(([key, entry]) => [key, mapLeaves(entry, at ? `${at}.${key}` : key, leaf)] as const);
    return Object.fromEntries(entries.filter(([, entry]) => entry !== OMIT));
  }
  return leaf(node, at);
}

function envValue(
  leaf: unknown,
  at: string,
  env: Readonly<Record<string, string>>,
  ignoreMissing: boolean,
  label: string,
  missing: (name: string, at: string) => Error,
): unknown {
  if (typeof leaf !== 'string') throw new Error(`${label}: value at ${at} is not a string (an environment variable name)`);
  const colon = leaf.indexOf(':');
  const name = colon < 0 ? leaf : leaf.slice(0, colon);
  let text = env[name];
  if (text === undefined && colon >= 0) text = leaf.slice(colon + 1) || `''`;
  if (text === undefined) {
    if (ignoreMissing) return OMIT;
    throw missing(name, at);
  }
  try {
    return parseYamlDocuments(text, name)[0] ?? null;
  } catch {
    throw new Error(`${label}: the value of environment variable ${name} (for ${at}) is not valid YAML`);
  }
}
