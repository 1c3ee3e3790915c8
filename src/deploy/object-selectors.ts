/**
 * The `deleteObjects` and `waitReadinessObjects` entries of deployment.yaml name objects by group (optional), kind,
 * name and namespace, without a version; as in Kluctl, each matches the preferred version of every served
 * resource with that group and kind.
 */
import type { Cluster } from '../kube/cluster.ts';
import type { ObjectRef } from '../kube/object.ts';
import type { ObjectSelector } from '../project/schema.ts';

/**
 * The refs `selectors` name.
 * @throws Error naming the selector when the cluster serves no such kind.
 */
export async function resolveSelectors(cluster: Cluster, selectors: readonly ObjectSelector[]): Promise<ObjectRef[]> {
  const resources = (await cluster.discovery.resources()).filter((resource) => resource.preferred);
  return selectors.flatMap((selector) => {
    const matching = resources.filter(
      (resource) =>
        (selector.group === undefined || resource.group === selector.group) &&
        (selector.kind === undefined || resource.kind === selector.kind),
    );
    if (matching.length === 0) {
      const kind = [selector.group, selector.kind].filter((part) => part !== undefined).join('/');
      throw new Error(`${selector.namespace ? `${selector.namespace}/` : ''}${selector.name ?? ''}: the cluster serves no kind ${kind}`);
    }
    return matching.map((resource) => ({
      group: resource.group,
      version: resource.version,
      kind: resource.kind,
      namespace: resource.namespaced ? (selector.namespace ?? '') : '',
      name: selector.name ?? '',
    }));
  });
}
