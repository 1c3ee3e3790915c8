/**
 * JSON paths in vars sources, as kluctl's variable-sources docs use them: `targetPath` says where loaded vars go
 * (Kluctl: "only simple paths ... that do not contain wildcards or lists"; Gantry also takes list indexes), and
 * clusterObject `path` and http `jsonPath` select values (any JSONPath, `$` optional, as Kluctl's ojg reads it).
 */
import { JSONPath } from 'jsonpath-plus';
import { deepMerge, isPlainObject, type Values } from '../../values.ts';

/** A key of a mapping, or an index of a list. */
export type PathSegment = string | number;

/** One step of a simple path: `.key` (the dot optional), `[0]`, `['key']` or `["key"]`. */
const SEGMENT = /^(?:\.?([^.[\]*'"\s]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;

/**
 * Parses a simple path: `a.b`, `$.a.b`, `a['x.y']`, `a["x"]`, `a.b[0].c`.
 * @throws Error naming the path for wildcards, filters, recursive descent, slices, or a path that does not start
 *   with a key.
 */
export function parseTargetPath(text: string): PathSegment[] {
  const segments: PathSegment[] = [];
  let rest = text.trim().replace(/^\$/, '');
  while (rest) {
    const match = SEGMENT.exec(rest);
    if (!match) throw new Error(`targetPath '${text}': only keys and list indexes are supported (at '${rest}')`);
    const [whole, key, index, single, double] = match;
    segments.push(index !== undefined ? Number(index) : (key ?? single ?? double ?? ''));
    rest = rest.slice(whole.length);
  }
  if (typeof segments[0] !== 'string') throw new Error(`targetPath '${text}': must start with a key`);
  return segments;
}

/**
 * The vars to merge for `value` placed at `path`: nested mappings, where an index takes a copy of the list found at
 * that place in `context` with the element set (merged into an existing mapping element), so merging the result
 * over `context` changes that one element.
 * @throws Error when an index lies beyond the end of the list (it may be the list's length, to append).
 */
export function placeAtPath(path: readonly PathSegment[], value: unknown, context: Values, text: string): Values {
  return build(path, 0, value, context, text) as Values;
}

function build(path: readonly PathSegment[], at: number, value: unknown, existing: unknown, text: string): unknown {
  const segment = path[at];
  if (segment === undefined) return value;
  if (typeof segment === 'string')
    return { [segment]: build(path, at + 1, value, isPlainObject(existing) ? existing[segment] : undefined, text) };
  const list = Array.isArray(existing) ? [...(existing as unknown[])] : [];
  if (segment > list.length)
    throw new Error(`targetPath '${text}': index ${segment} is beyond the end of the list (length ${list.length})`);
  const current: unknown = list[segment];
  const element = build(path, at + 1, value, current, text);
  list[segment] = isPlainObject(current) && isPlainObject(element) ? deepMerge(current, element) : element;
  return list;
}

/**
 * Every value `path` selects in `value` (an empty list when nothing matches).
 * JSONPath filters run in jsonpath-plus's safe evaluator, never as JavaScript.
 */
export function queryJsonPath(value: unknown, path: string): unknown[] {
  if (value === null || value === undefined) return [];
  return (JSONPath({ path, json: value as object, wrap: true, eval: 'safe' }) as unknown[] | undefined) ?? [];
}
