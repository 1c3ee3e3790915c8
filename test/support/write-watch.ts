/**
 * Proof that nothing was written: a watch on every resource the cluster serves, scoped to one namespace (and, for
 * cluster-scoped kinds, to the objects carrying one discriminator, plus that Namespace itself), together with a
 * snapshot of every such object's uid and resourceVersion. A dry run that persists anything shows up as a watch
 * event and as a changed or missing object, whichever way it wrote (apply, patch, replace, create, delete).
 */
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { Cluster } from '../../src/kube/cluster.ts';
import type { ApiResource } from '../../src/kube/discovery.ts';
import type { KubeObject } from '../../src/kube/object.ts';

export interface WriteScope {
  /** Every namespaced object in it is watched, whoever labelled it. */
  namespace: string;
  /** Cluster-scoped objects carrying `labelKey=discriminator` are watched too. */
  labelKey: string;
  discriminator: string;
}

/** One change the API server persisted: `ADDED`, `MODIFIED` or `DELETED`, and the object as `kind ns/name`. */
export interface Write {
  type: string;
  object: string;
}

export interface WriteWatch {
  /** Writes seen since the watch started. */
  readonly writes: readonly Write[];
  /**
   * Ends the watches and compares the scope's objects with the snapshot taken at the start.
   * @returns the watch events, then one line per object whose uid or resourceVersion changed, or that appeared or went.
   */
  stop(): Promise<string[]>;
}

/** Snapshots the scope and starts its watches; resolves once every watch is open. */
export async function watchWrites(cluster: Cluster, scope: WriteScope): Promise<WriteWatch> {
  const resources = (await cluster.discovery.listable()).filter((resource) => resource.verbs.includes('watch'));
  const before = await snapshot(cluster, resources, scope);
  const writes: Write[] = [];
  const streams = await Promise.all(
    resources.flatMap((resource) => watchQueries(resource, scope).map((query) => openWatch(cluster, resource, query, writes))),
  );
  return {
    writes,
    async stop() {
      for (const stream of streams) stream.destroy();
      const after = await snapshot(cluster, resources, scope);
      const changed = [...new Set([...before.keys(), ...after.keys()])]
        .filter((key) => before.get(key) !== after.get(key))
        .map((key) => `${key}: ${before.get(key) ?? 'absent'} -> ${after.get(key) ?? 'absent'}`);
      return [...writes.map((write) => `${write.type} ${write.object}`), ...changed];
    },
  };
}

interface WatchQuery {
  path: string;
  query: Record<string, string>;
}

/** What to watch (and list) of `resource` in the scope: the namespace's objects, or the labelled cluster-wide ones. */
function watchQueries(resource: ApiResource, scope: WriteScope): WatchQuery[] {
  const base = resource.group ? `/apis/${resource.group}/${resource.version}` : `/api/${resource.version}`;
  if (resource.namespaced) return [{ path: `${base}/namespaces/${scope.namespace}/${resource.resource}`, query: {} }];
  const queries: WatchQuery[] = [
    { path: `${base}/${resource.resource}`, query: { labelSelector: `${scope.labelKey}=${scope.discriminator}` } },
  ];
  if (resource.group === '' && resource.kind === 'Namespace') {
    queries.push({ path: `${base}/${resource.resource}`, query: { fieldSelector: `metadata.name=${scope.namespace}` } });
  }
  return queries;
}

/** uid/resourceVersion of every object in the scope, by `kind namespace/name`. */
async function snapshot(cluster: Cluster, resources: readonly ApiResource[], scope: WriteScope): Promise<Map<string, string>> {
  const versions = new Map<string, string>();
  await Promise.all(
    resources.flatMap((resource) =>
      watchQueries(resource, scope).map(async ({ path, query }) => {
        const list = await cluster.client.request<{ items: KubeObject[] | null }>('GET', path, { query });
        for (const item of list.items ?? [])
          versions.set(describe(resource, item), `${item.metadata.uid}@${item.metadata.resourceVersion}`);
      }),
    ),
  );
  return versions;
}

/** Lists once for the resourceVersion to start from, then streams every later event into `writes`. */
async function openWatch(cluster: Cluster, resource: ApiResource, { path, query }: WatchQuery, writes: Write[]): Promise<Readable> {
  const list = await cluster.client.request<{ metadata: { resourceVersion: string } }>('GET', path, { query });
  const stream = await cluster.client.stream(path, {
    query: { ...query, watch: '1', resourceVersion: list.metadata.resourceVersion },
  });
  // Ending the watch destroys the stream, which errors it (and the reader of its lines) with an AbortError.
  stream.on('error', () => undefined);
  const lines = createInterface({ input: stream });
  lines.on('error', () => undefined);
  lines.on('line', (line) => {
    const event = JSON.parse(line) as { type: string; object: KubeObject };
    if (event.type === 'ERROR') writes.push({ type: 'ERROR', object: `${resource.kind}: ${JSON.stringify(event.object)}` });
    else if (event.type !== 'BOOKMARK') writes.push({ type: event.type, object: describe(resource, event.object) });
  });
  return stream;
}

function describe(resource: ApiResource, object: KubeObject): string {
  const namespace = object.metadata.namespace ? `${object.metadata.namespace}/` : '';
  return `${resource.group ? `${resource.group}/` : ''}${resource.kind} ${namespace}${object.metadata.name}`;
}
