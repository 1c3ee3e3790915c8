/**
 * A live object seen through its manifest: only the fields the manifest sets, so that what the API server and
 * controllers add beside them (status, defaults, a Service's clusterIP) does not count as a difference, while anyone's
 * edit of a field the manifest sets does. The applied-object records (applied-objects.ts) and the agent's drift
 * report (agent/drift.ts) compare objects this way.
 */
import type { FieldPath } from './field-paths.ts';
import { isPlainObject } from '../values.ts';

/**
 * `live` cut down to the fields `manifest` has (a new value; leaves are shared with `live`). List items are matched
 * by position; items beyond the manifest's stay whole, since a re-apply of an atomic list would remove them.
 */
export function projection(live: unknown, manifest: unknown): unknown {
  if (Array.isArray(live) && Array.isArray(manifest)) {
    return live.map((item: unknown, index) => (index < manifest.length ? projection(item, manifest[index]) : item));
  }
  if (isPlainObject(live) && isPlainObject(manifest)) {
    return Object.fromEntries(Object.keys(manifest).map((key) => [key, projection(live[key], manifest[key])]));
  }
  return live;
}

/**
 * The deepest paths at which `a` and `b` differ, in the order of `a`'s keys then `b`'s extra ones: a field set in
 * one only, a list of another length (the list itself), or two different leaves. Equal values give none.
 */
export function differingFields(a: unknown, b: unknown, prefix: FieldPath = []): FieldPath[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((key) => differingFields(a[key], b[key], [...prefix, key]));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((item: unknown, index) => differingFields(item, b[index], [...prefix, index]));
  }
  return Object.is(a, b) ? [] : [prefix];
}
