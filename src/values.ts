/**
 * Plain-data helpers for vars and args, with Kluctl's merge semantics (kluctl's uo.Merge): objects merge key by
 * key, recursively; anything else (lists included) is replaced by the newer value.
 */
import { createHash } from 'node:crypto';

export type Values = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Values {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Returns a new object: `base` with `overlay` merged over it. Neither input is modified. */
export function deepMerge(base: Values, overlay: Values): Values {
  const result: Values = { ...base };
  for (const [key, value] of Object.entries(overlay)) {
    const existing = result[key];
    result[key] = isPlainObject(existing) && isPlainObject(value) ? deepMerge(existing, value) : structuredClone(value);
  }
  return result;
}

/** Sets `value` at a dotted path (`a.b.c`), creating objects on the way. Modifies `target`. */
export function setPath(target: Values, dottedPath: string, value: unknown): void {
  const keys = dottedPath.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = isPlainObject(next) ? next : (node[key] = {});
  }
  node[keys[keys.length - 1] as string] = value;
}

/** Reads the value at a dotted path, or undefined when any step is missing. */
export function getPath(source: Values, dottedPath: string): unknown {
  let node: unknown = source;
  for (const key of dottedPath.split('.')) {
    if (!isPlainObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** JSON with the keys of every object sorted, so equal values give equal text (for hashes). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .filter((key) => value[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Hex sha256 of `value`'s canonicalJson: equal values, whatever their key order, give the same hash. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
