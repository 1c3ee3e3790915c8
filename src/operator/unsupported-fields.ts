/**
 * The fields of a resource's spec that Gantry accepts but does not act on: the spec walked along its schema, whose
 * `unsupported` marks (src/api/fleet.ts) say which fields, or which of their values, and why. The operator names them
 * in the Supported condition and sends nothing while one that blocks is set (fleet-object.ts).
 */
import type { TSchema } from 'typebox';
import { UNSUPPORTED, type UnsupportedMark } from '../api/crd.ts';
import { isPlainObject } from '../values.ts';

/** A field set in a spec that Gantry does not act on. */
export interface UnsupportedField {
  /** Its field path, e.g. `spec.helm.luaScript` or `spec.edges[0].gates[1].spec`. */
  path: string;
  reason: string;
  /** Whether it stops the resource from being sent (UnsupportedMark.blocks). */
  blocks: boolean;
}

/** The unsupported fields set in `value` (a spec, or part of one at `path`), in schema order. */
export function unsupportedFields(schema: TSchema, value: unknown, path = 'spec'): UnsupportedField[] {
  if (value === undefined || value === null) return [];
  const node = schema as unknown as Record<string, unknown>;
  const mark = node[UNSUPPORTED] as UnsupportedMark | undefined;
  if (mark && isUnsupportedValue(mark, value)) return [{ path, reason: mark.reason, blocks: mark.blocks }];
  const items = node['items'] as TSchema | undefined;
  if (items && Array.isArray(value)) return value.flatMap((item, index) => unsupportedFields(items, item, `${path}[${index}]`));
  const properties = node['properties'] as Record<string, TSchema> | undefined;
  if (properties && isPlainObject(value)) {
    return Object.entries(properties).flatMap(([key, child]) => unsupportedFields(child, value[key], `${path}.${key}`));
  }
  return [];
}

function isUnsupportedValue(mark: UnsupportedMark, value: unknown): boolean {
  if (mark.when) return mark.when.includes(value);
  if (mark.unless) return !mark.unless.includes(value);
  return true;
}

/** One line per field, for a condition's message: `spec.helm.luaScript: Gantry runs no Lua: …`. */
export function describeFields(fields: readonly UnsupportedField[]): string {
  return fields.map((field) => `${field.path}: ${field.reason}`).join('; ');
}
