/**
 * What the cluster holds for a target before a command changes anything: every object carrying the target's
 * discriminator label, plus rendered objects that exist without the label (fetched one by one, so "new" really means
 * new). A long-running role finds the labelled objects in its cluster's watched cache (Cluster.labelled); a command
 * lists them, one list per listable resource in parallel, and kinds the render does not produce as metadata only
 * (PartialObjectMetadata: labels, annotations, owners, managedFields), which is all prune and delete look at, so a
 * cluster full of large objects of other kinds costs little.
 */
import pLimit from 'p-limit';
import type { Cluster } from '../kube/cluster.ts';
import { KubeApiError } from '../kube/client.ts';
import { refKey, refOf, type KubeObject, type ObjectRef } from '../kube/object.ts';
import { DISCRIMINATOR_LABEL } from '../render/postprocess.ts';

/**
 * A snapshot of a target's objects in the cluster, read once per command with `load` (labelled objects) and
 * `fetchMissing` (rendered ones without the label), then looked up by ref with `get`. Later changes in the cluster
 * are not seen. Holds nothing to close.
 */
export class RemoteObjects {
  private readonly byKey = new Map<string, KubeObject>();
  /** Objects that carry the discriminator label (candidates for orphans, prune and delete). */
  readonly labelled: KubeObject[];

  private constructor(labelled: KubeObject[]) {
    this.labelled = labelled;
    for (const object of labelled) this.byKey.set(refKey(refOf(object)), object);
  }

  /**
   * Lists every object labelled with `discriminator`; with an empty discriminator nothing can be attributed to
   * the target, so the list is empty.
   * @param wholeKinds `group/Kind` of the kinds whose objects are wanted whole (to diff against), or 'all' while
   *   the rendered kinds are not known yet; the others are read as metadata only.
   * @param listed false when the labelled objects are not needed (no orphans to find, as in drift detection): they
   *   are still taken from a watched cache, which has them for free and then spares fetchMissing its reads, but a
   *   command lists nothing.
   */
  static async load(
    cluster: Cluster,
    discriminator: string,
    wholeKinds: ReadonlySet<string> | 'all' = new Set(),
    listed = true,
  ): Promise<RemoteObjects> {
    if (!discriminator) return new RemoteObjects([]);
    if (cluster.labelled) return new RemoteObjects(await cluster.labelled.withValue(discriminator));
    if (!listed) return new RemoteObjects([]);
    const selector = `${DISCRIMINATOR_LABEL}=${discriminator}`;
    // Each list in flight at once needs a connection of its own (HTTP/1.1, see kube/transport.ts), and a new TLS
    // connection costs more than the list: the ~60 lists of a command's first run took 169 ms at 32 at once, 119 ms
    // at 16 and 95 ms at 4 (medians, local API server); 16 keeps a distant API server's round trips few.
    const limit = pLimit(16);
    const lists = await Promise.all(
      (await cluster.discovery.listable()).map((resource) =>
        limit(() =>
          listTolerant(cluster, resource, selector, wholeKinds !== 'all' && !wholeKinds.has(`${resource.group}/${resource.kind}`)),
        ),
      ),
    );
    const unique = new Map<string, KubeObject>();
    for (const object of lists.flat()) unique.set(object.metadata.uid ?? refKey(refOf(object)), object);
    return new RemoteObjects([...unique.values()]);
  }

  /**
   * Fetches the rendered objects the label list did not find (objects created before, or by someone else). Nothing
   * can exist in a namespace that does not, so their namespaces are read first: a first deploy reads its namespaces,
   * not every object it is about to create.
   */
  async fetchMissing(cluster: Cluster, refs: readonly ObjectRef[]): Promise<void> {
    const limit = pLimit(16);
    const read = new Set<string>();
    const fetch = (ref: ObjectRef) =>
      limit(async () => {
        const object = await cluster.get(ref);
        read.add(refKey(ref));
        if (object) this.byKey.set(refKey(ref), object);
        return object;
      });
    const missing = refs.filter((ref) => !this.byKey.has(refKey(ref)));
    const namespaces = [...new Set(missing.map((ref) => ref.namespace).filter((namespace) => namespace !== ''))];
    const absent = new Set<string>();
    await Promise.all(
      namespaces.map(async (name) => {
        const ref = { group: '', version: 'v1', kind: 'Namespace', namespace: '', name };
        // A namespace that cannot be read (forbidden) may still hold objects this command can read.
        const exists =
          this.byKey.has(refKey(ref)) ||
          (await fetch(ref).then(
            (namespace) => namespace !== undefined,
            () => true,
          ));
        if (!exists) absent.add(name);
      }),
    );
    // A rendered Namespace was read with the namespaces already, found or not (one that could not be read is tried again).
    await Promise.all(missing.filter((ref) => !absent.has(ref.namespace) && !read.has(refKey(ref))).map(fetch));
  }

  /**
   * For an object annotated `kluctl.io/diff-name` (whose real name changes with its content), the youngest labelled
   * object of the same kind and namespace with the same diff-name, to diff against.
   */
  byDiffName(object: KubeObject): KubeObject | undefined {
    const diffName = object.metadata.annotations?.['kluctl.io/diff-name'];
    if (!diffName) return undefined;
    const ref = refOf(object);
    return this.labelled
      .filter((candidate) => {
        const other = refOf(candidate);
        return (
          other.group === ref.group &&
          other.kind === ref.kind &&
          other.namespace === ref.namespace &&
          candidate.metadata.annotations?.['kluctl.io/diff-name'] === diffName
        );
      })
      .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''))[0];
  }

  /** The object as it was before the command, or undefined when it did not exist. */
  get(ref: ObjectRef): KubeObject | undefined {
    return this.byKey.get(refKey(ref));
  }
}

/** Some resources cannot be listed by everyone (403) or only look listable (405); they hold nothing of ours. */
async function listTolerant(
  cluster: Cluster,
  resource: Parameters<Cluster['list']>[0],
  selector: string,
  metadataOnly: boolean,
): Promise<KubeObject[]> {
  try {
    return await cluster.list(resource, selector, undefined, { metadataOnly });
  } catch (error) {
    if (error instanceof KubeApiError && [403, 404, 405].includes(error.status)) return [];
    throw error;
  }
}
