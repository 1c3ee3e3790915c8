/**
 * Step 4 of rendering: Kluctl's metadata on every object (kluctl's deployment item postprocessObjects):
 * objects annotated `kluctl.io/ignore` are dropped; commonLabels, the discriminator label and one
 * `kluctl.io/tag-<i>` label per tag are added; commonAnnotations and `kluctl.io/deployment-item-dir` too.
 * Then namespaces are settled (kluctl's fixNamespaces): a namespaced object without one gets its Helm release's
 * namespace or `default`; a cluster-scoped object loses any namespace.
 */
import type { DeploymentItem } from '../project/deployment-project.ts';
import type { KubeObject } from '../kube/object.ts';
import { splitApiVersion } from '../kube/object.ts';
import type { ScopeResolver } from '../kube/scope.ts';
import { HELM_NAMESPACE_ANNOTATION } from './helm.ts';

export const DISCRIMINATOR_LABEL = 'kluctl.io/discriminator';
const ITEM_DIR_ANNOTATION = 'kluctl.io/deployment-item-dir';

/** Go's strconv.ParseBool truth values, which Kluctl uses for boolean annotations. */
export function isTrueAnnotation(object: KubeObject, name: string): boolean {
  return ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(object.metadata.annotations?.[name] ?? '');
}

/** Applies Kluctl's labels and annotations for `item`; returns the objects that are kept. */
export function addKluctlMetadata(objects: readonly KubeObject[], item: DeploymentItem, discriminator: string): KubeObject[] {
  const labels: Record<string, string> = { ...item.commonLabels };
  if (discriminator) labels[DISCRIMINATOR_LABEL] = discriminator;
  item.tags.forEach((tag, index) => (labels[`kluctl.io/tag-${index}`] = tag));
  const annotations: Record<string, string> = { ...item.commonAnnotations, [ITEM_DIR_ANNOTATION]: item.relDir ?? '' };
  if (item.skipDeleteIfTags) annotations['kluctl.io/skip-delete-if-tags'] = 'true';
  return objects
    .filter((object) => !isTrueAnnotation(object, 'kluctl.io/ignore'))
    .map((object) => ({
      ...object,
      metadata: {
        ...object.metadata,
        labels: { ...object.metadata.labels, ...labels },
        annotations: { ...object.metadata.annotations, ...annotations },
      },
    }));
}

/** Settles every object's namespace in place; kinds `scope` does not know keep what they have. */
export function settleNamespaces(objects: readonly KubeObject[], scope: ScopeResolver): void {
  for (const object of objects) {
    const annotations = object.metadata.annotations ?? {};
    const fallback = annotations[HELM_NAMESPACE_ANNOTATION] ?? 'default';
    if (HELM_NAMESPACE_ANNOTATION in annotations) {
      delete annotations[HELM_NAMESPACE_ANNOTATION];
      if (Object.keys(annotations).length === 0) delete object.metadata.annotations;
    }
    const namespaced = scope.isNamespaced(splitApiVersion(object.apiVersion).group, object.kind);
    if (namespaced === true && !object.metadata.namespace) object.metadata.namespace = fallback;
    if (namespaced === false) delete object.metadata.namespace;
  }
}
