/**
 * Which labelled objects Gantry may delete (prune, delete), as Kluctl decides it: an object is left alone when
 * something else owns it (ownerReferences: a controller copied our labels onto it), when Gantry's field manager
 * never applied it (e.g. Endpoints copying a Service's labels), or when it asks to be kept
 * (`kluctl.io/skip-delete`, `helm.sh/resource-policy: keep`).
 */
import type { KubeObject } from '../kube/object.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';

/** The reason `object` must not be deleted, or undefined when Gantry owns it. */
export function deletionBlocker(object: KubeObject, fieldManager: string): string | undefined {
  if ((object.metadata.ownerReferences ?? []).length > 0) return 'it has ownerReferences';
  if (!(object.metadata.managedFields ?? []).some((entry) => entry.manager === fieldManager)) return `field manager '${fieldManager}' does not manage it`;
  if (isTrueAnnotation(object, 'kluctl.io/skip-delete')) return 'it is annotated kluctl.io/skip-delete';
  if (object.metadata.annotations?.['helm.sh/resource-policy'] === 'keep') return 'it is annotated helm.sh/resource-policy: keep';
  return undefined;
}
