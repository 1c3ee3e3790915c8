/**
 * Addressing fields inside objects, for conflict resolution and diff rules: Kluctl's rules name fields with JSON
 * paths (`spec.replicas`, `webhooks.*.clientConfig`, `..` for every field; evaluated by jsonpath-plus) or with
 * regular expressions over a field's path written as Kluctl writes it (`spec.template.spec.containers[0].image`,
 * `metadata.labels["kluctl.io/tag-0"]`).
 */
import { JSONPath } from 'jsonpath-plus';
import { splitApiVersion, type KubeObject } from '../kube/object.ts';
import { isPlainObject } from '../values.ts';

/** A field's location: object keys and list indexes from the root. */
export type FieldPath = Array<string | number>;

/**
 * Every field of `value` that the JSON path `expression` matches (`..` matches every field).
 * @throws Error for an invalid expression.
 */
export function matchJsonPath(value: unknown, expression: string): FieldPath[] {
  if (expression === '..') return allFieldPaths(value);
  const path = expression.startsWith('$') ? expression : `$.${expression}`;
  const results = JSONPath({ path, json: value as object, resultType: 'path', wrap: true }) as string[];
  return results.map((result) => toFieldPath(value, JSONPath.toPathArray(result).slice(1)));
}

/** Every field below the root (not the root itself). */
export function allFieldPaths(value: unknown, prefix: FieldPath = []): FieldPath[] {
  const children: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((entry, index) => [index, entry])
    : isPlainObject(value)
      ? Object.entries(value)
      : [];
  return children.flatMap(([key, child]) => [[...prefix, key], ...allFieldPaths(child, [...prefix, key])]);
}

/** Writes a path as Kluctl does: dotted names, `["..."]` for names that are not plain words, `[n]` for indexes. */
export function formatFieldPath(path: FieldPath): string {
  return path
    .map((part, index) => {
      if (typeof part === 'number') return `[${part}]`;
      if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(part)) return index === 0 ? part : `.${part}`;
      return `[${JSON.stringify(part)}]`;
    })
    .join('');
}

/** True when both paths name the same field. */
export function samePath(a: FieldPath, b: FieldPath): boolean {
  return a.length === b.length && a.every((part, index) => String(part) === String(b[index]));
}

/** Removes the field at `path` from `value` (in place); a missing field is no error. */
export function deleteField(value: unknown, path: FieldPath): void {
  const parent = getField(value, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else if (isPlainObject(parent) && last !== undefined) delete parent[String(last)];
}

/** The value at `path` in `value` (a number indexes a list, anything else names a key); undefined when missing. */
export function getField(value: unknown, path: FieldPath): unknown {
  let node = value;
  for (const part of path) {
    if (Array.isArray(node) && typeof part === 'number') node = node[part];
    else if (isPlainObject(node)) node = node[String(part)];
    else return undefined;
  }
  return node;
}

/** A rule field that Kluctl accepts as one string or a list of them. */
export function asList(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** Whether a rule's optional group/kind/namespace/name all match the object (unset means any). */
export function matchesObject(rule: { group?: string; kind?: string; namespace?: string; name?: string }, object: KubeObject): boolean {
  const checks: Array<[string | undefined, string]> = [
    [rule.group, splitApiVersion(object.apiVersion).group],
    [rule.kind, object.kind],
    [rule.namespace, object.metadata.namespace ?? ''],
    [rule.name, object.metadata.name ?? ''],
  ];
  return checks.every(([wanted, actual]) => wanted === undefined || wanted === actual);
}

/** jsonpath-plus gives every step as a string; list indexes become numbers again. */
function toFieldPath(root: unknown, steps: string[]): FieldPath {
  const path: FieldPath = [];
  let node = root;
  for (const step of steps) {
    const part = Array.isArray(node) ? Number(step) : step;
    path.push(part);
    node = getField(node, [part]);
  }
  return path;
}
