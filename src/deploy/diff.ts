/**
 * Object diffs as Kluctl shows them: both sides normalized (server bookkeeping removed: managedFields, the
 * last-applied annotation, creationTimestamp, generation, resourceVersion, uid, status), written as YAML with
 * sorted keys, then compared as a unified diff. An empty diff means no change.
 */
import { createTwoFilesPatch } from 'diff';
import { toYaml } from '../yaml.ts';
import { formatRef, refOf, type KubeObject } from '../kube/object.ts';
import { isPlainObject } from '../project/values.ts';

const DROPPED_METADATA = ['managedFields', 'creationTimestamp', 'generation', 'resourceVersion', 'uid', 'selfLink'];
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A copy of `object` without server bookkeeping, keys sorted at every level. */
export function normalizeObject(object: KubeObject): KubeObject {
  const copy = structuredClone(object) as KubeObject;
  delete copy['status'];
  for (const field of DROPPED_METADATA) delete copy.metadata[field];
  if (copy.metadata.annotations) {
    delete copy.metadata.annotations[LAST_APPLIED];
    if (Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations;
  }
  return sortKeys(copy) as KubeObject;
}

/** Unified diff from `before` to `after` (both normalized first); '' when they are equal. */
export function diffObjects(before: KubeObject, after: KubeObject): string {
  const oldText = toYaml(normalizeObject(before));
  const newText = toYaml(normalizeObject(after));
  if (oldText === newText) return '';
  const name = formatRef(refOf(after));
  return createTwoFilesPatch(name, name, oldText, newText, 'cluster', 'rendered', { context: 3 })
    .split('\n')
    .slice(2)
    .join('\n')
    .trimEnd();
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys(value[key])]));
}
