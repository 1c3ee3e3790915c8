/**
 * Validating a file's content against its TypeBox schema, with every problem named by the file and the field's path
 * (`deployment.yaml: deployments[0].path: …`), as every config file Gantry reads is checked.
 */
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { ProblemList } from './problems.ts';

/**
 * Checks `value` against `schema` and returns it typed.
 * @throws ProblemList with every problem as `<file>: <json path>: <message>`.
 */
export function validate<S extends TSchema>(schema: S, value: unknown, file: string): Static<S> {
  if (Value.Check(schema, value)) return value as Static<S>;
  const errors = [...Value.Errors(schema, value)];
  // An unknown field gives an additionalProperties error and a `false`-schema one; TypeBox stops after 8 errors, so
  // past 8 unknown fields only the latter come, and then they are what names the fields.
  const named = errors.some((error) => error.keyword === 'additionalProperties');
  const problems = errors.flatMap((error) => {
    if (error.keyword !== 'boolean') return [`${file}: ${describePath(error.instancePath)}${describeError(error)}`];
    if (named) return [];
    const slash = error.instancePath.lastIndexOf('/');
    return [`${file}: ${describePath(error.instancePath.slice(0, slash))}unknown field '${error.instancePath.slice(slash + 1)}'`];
  });
  throw new ProblemList([...new Set(problems)]);
}

function describePath(instancePath: string): string {
  if (!instancePath) return '';
  const path = instancePath
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  return `${path}: `;
}

function describeError(error: { keyword: string; message: string; params: Record<string, unknown> }): string {
  if (error.keyword === 'additionalProperties') {
    const names = (error.params['additionalProperties'] as string[] | undefined) ?? [];
    return `unknown field${names.length > 1 ? 's' : ''} ${names.map((name) => `'${name}'`).join(', ')}`;
  }
  return error.message;
}
