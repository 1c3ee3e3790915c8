/**
 * Which labelled objects Gantry may delete (prune, delete), as Kluctl decides it: only objects inside the tag and
 * folder selection, and of those not the ones something else owns (ownerReferences: a controller copied our labels
 * onto it), nor those Gantry's field manager never applied (e.g. Endpoints copying a Service's labels) — unless
 * `kluctl.io/force-managed` says otherwise —, nor those asking to be kept (`kluctl.io/skip-delete`,
 * `helm.sh/resource-policy: keep`, and `kluctl.io/skip-delete-if-tags` while selecting by tags).
 */
import type { KubeObject } from '../kube/object.ts';
import { isIncluded, objectKeys, selectsByTags, type Inclusion } from '../project/inclusion.ts';
import { isTrueAnnotation } from '../render/postprocess.ts';

/** The reason `object` must not be deleted, or undefined when Gantry owns it and it is selected. */
export function deletionBlocker(object: KubeObject, fieldManager: string, inclusion: Inclusion): string | undefined {
  if (!isIncluded(objectKeys(object), inclusion)) return 'it is outside the tag/folder selection';
  if (!isTrueAnnotation(object, 'kluctl.io/force-managed')) {
    if ((object.metadata.ownerReferences ?? []).length > 0) return 'it has ownerReferences';
    if (!(object.metadata.managedFields ?? []).some((entry) => entry.manager === fieldManager))
      return `field manager '${fieldManager}' does not manage it`;
  }
  if (selectsByTags(inclusion) && isTrueAnnotation(object, 'kluctl.io/skip-delete-if-tags'))
    return 'it is annotated kluctl.io/skip-delete-if-tags';
  if (isTrueAnnotation(object, 'kluctl.io/skip-delete')) return 'it is annotated kluctl.io/skip-delete';
  if (object.metadata.annotations?.['helm.sh/resource-policy'] === 'keep') return 'it is annotated helm.sh/resource-policy: keep';
  return undefined;
}
