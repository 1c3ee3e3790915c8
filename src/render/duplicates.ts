/**
 * One object, one item. Two deployment items rendering the same object (same group, kind, namespace and name, in
 * any version) would each apply it: the later apply wins, the diff and the result show it twice, and pruning or
 * deleting one item's objects takes the other's. Such a project is refused as a render error, so nothing is applied.
 */
import path from 'node:path';
import { formatRef, refKey, refOf, type KubeObject, type ObjectRef } from '../kube/object.ts';
import type { DeploymentItem } from '../project/deployment-project.ts';

/** The objects one item rendered. */
export interface ItemObjects {
  item: DeploymentItem;
  objects: readonly KubeObject[];
}

/**
 * One problem for each object rendered by more than one item, naming the object and the folders of the items (as
 * `<source>/<folder>` for an item of a git or OCI include), in the order the items come.
 * @returns an empty list when every object comes from one item.
 */
export function duplicateObjectProblems(rendered: readonly ItemObjects[]): string[] {
  const owners = new Map<string, { ref: ObjectRef; items: string[] }>();
  for (const { item, objects } of rendered) {
    const label = itemLabel(item);
    for (const object of objects) {
      const ref = refOf(object);
      const entry = owners.get(refKey(ref)) ?? { ref, items: [] };
      if (!entry.items.includes(label)) entry.items.push(label);
      owners.set(refKey(ref), entry);
    }
  }
  return [...owners.values()]
    .filter((entry) => entry.items.length > 1)
    .map(
      ({ ref, items }) =>
        `${describe(ref)} is rendered by ${items.length} deployment items: ${items.join(', ')}; an object may come from one item only`,
    );
}

/** The item's folder as the user knows it: relative to the project, or below its include's source. */
function itemLabel(item: DeploymentItem): string {
  return path.posix.join(item.source.id, item.relDir ?? '');
}

/** `namespace/Kind.group/name` (kubectl's `kind.group`), the group left out for the core group. */
function describe(ref: ObjectRef): string {
  return formatRef({ ...ref, kind: ref.group ? `${ref.kind}.${ref.group}` : ref.kind });
}
