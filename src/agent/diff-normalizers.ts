/**
 * Plural's syncConfig.diffNormalizers, applied to a service's rendered objects before they are applied: fields that
 * something else in the cluster owns (an autoscaler's replicas, an injected caBundle) are left to it. A normalizer
 * matches objects by kind, name and namespace (each optional: absent matches any); its JSON pointers (RFC 6901) are
 * then removed from the rendered object, so the agent's field manager stops claiming them, or, with `backfill`, set
 * to the live object's values, so the agent keeps them as they are in the cluster. As Plural's deployment operator
 * does it (ignoreUpdateFields: IgnoreJSONPaths / BackFillJSONPaths).
 */
import jsonPatch from 'fast-json-patch';
import type { AgentService } from '../api/agent.ts';
import type { KubeObject, ObjectRef } from '../kube/object.ts';
import { refOf } from '../kube/object.ts';

/** One of syncConfig.diffNormalizers: kind, name, namespace, backfill, jsonPointers (e.g. `/spec/replicas`). */
export type DiffNormalizer = NonNullable<NonNullable<AgentService['syncConfig']>['diffNormalizers']>[number];

/** Reads the live object of a ref; undefined when the cluster has none. */
export type LiveReader = (ref: ObjectRef) => Promise<KubeObject | undefined>;

/**
 * Applies the normalizers matching each object, in place. A pointer the rendered object does not have is skipped
 * when removing; when backfilling, the rendered value stays when the live object lacks the pointer (the first
 * apply, or a field nobody set yet), and a live value whose parent the rendered object lacks is not carried.
 */
export async function normalizeObjects(
  objects: readonly KubeObject[],
  normalizers: readonly DiffNormalizer[],
  live: LiveReader,
): Promise<void> {
  for (const object of objects) {
    const matching = normalizers.filter((normalizer) => matches(normalizer, object));
    if (matching.length === 0) continue;
    const backfilled = matching.filter((normalizer) => normalizer.backfill).flatMap((normalizer) => normalizer.jsonPointers);
    const ignored = matching.filter((normalizer) => !normalizer.backfill).flatMap((normalizer) => normalizer.jsonPointers);
    const current = backfilled.length > 0 ? await live(refOf(object)) : undefined;
    for (const pointer of backfilled) backfill(object, current, pointer);
    for (const pointer of ignored) remove(object, pointer);
  }
}

/** The objects with the normalizers applied (see normalizeObjects), as copies: `objects` stay as they are. */
export async function normalizedObjects(
  objects: readonly KubeObject[],
  normalizers: readonly DiffNormalizer[],
  live: LiveReader,
): Promise<KubeObject[]> {
  const copies = structuredClone([...objects]);
  await normalizeObjects(copies, normalizers, live);
  return copies;
}

/** The JSON pointers of every normalizer matching `object` (removed or backfilled alike: the cluster's fields). */
export function matchingPointers(object: KubeObject, normalizers: readonly DiffNormalizer[]): string[] {
  return normalizers.filter((normalizer) => matches(normalizer, object)).flatMap((normalizer) => normalizer.jsonPointers);
}

function matches(normalizer: DiffNormalizer, object: KubeObject): boolean {
  return (
    (!normalizer.kind || normalizer.kind === object.kind) &&
    (!normalizer.name || normalizer.name === object.metadata.name) &&
    (!normalizer.namespace || normalizer.namespace === (object.metadata.namespace ?? ''))
  );
}

function backfill(object: KubeObject, live: KubeObject | undefined, pointer: string): void {
  const value = live && valueAt(live, pointer);
  if (value === undefined) return;
  const op = valueAt(object, pointer) === undefined ? 'add' : 'replace';
  try {
    jsonPatch.applyOperation(object, { op, path: pointer, value: structuredClone(value) }, true, true);
  } catch {
    // The rendered object has no parent for the pointer: it never claims the field, so the live value stays anyway.
  }
}

function remove(object: KubeObject, pointer: string): void {
  if (valueAt(object, pointer) !== undefined) jsonPatch.applyOperation(object, { op: 'remove', path: pointer }, true, true);
}

/** The value at `pointer`, undefined when a step of it is missing. */
function valueAt(document: object, pointer: string): unknown {
  try {
    return jsonPatch.getValueByPointer(document, pointer);
  } catch {
    return undefined;
  }
}
