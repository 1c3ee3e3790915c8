/**
 * Which changes of a KluctlDeployment call for a reconcile, as Kluctl's controller filters them
 * (pkg/controllers/predicates.go with controller-runtime's GenerationChangedPredicate): a new generation (the spec
 * changed), deletion, or a manual request annotation that was added or changed. The controller's own status and
 * annotation-removal patches do not, or every reconcile would start the next one.
 */
import { REQUEST_ANNOTATIONS } from '../../api/kluctl-deployment.ts';
import type { KubeObject } from '../../kube/object.ts';

export function needsReconcile(object: KubeObject, previous: KubeObject): boolean {
  if (object.metadata.generation !== previous.metadata.generation) return true;
  if (object.metadata.deletionTimestamp !== previous.metadata.deletionTimestamp) return true;
  const now = object.metadata.annotations ?? {};
  const before = previous.metadata.annotations ?? {};
  return Object.values(REQUEST_ANNOTATIONS).some((annotation) => now[annotation] !== undefined && now[annotation] !== before[annotation]);
}
