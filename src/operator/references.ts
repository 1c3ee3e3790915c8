/**
 * References between fleet resources and to Secrets. A referent that is missing or not synced yet makes the
 * referring resource wait (Waiting), not fail: it proceeds when the referent's watch event reconciles it again.
 *
 * Cross-namespace references are refused unless the operator runs with `--allow-cross-namespace-refs`: the operator
 * reads with cluster-wide rights, so a reference into another namespace would let whoever may write a
 * ServiceDeployment in theirs use another tenant's Cluster, GitRepository credentials or Secrets. Flux gives the
 * same lock (`--no-cross-namespace-refs`, https://fluxcd.io/flux/installation/configuration/multitenancy/), off by
 * default there and recommended for multi-tenancy; here it is on by default (issue 39 §4: refused unless allowed).
 */
import { FLEET_GROUP, FLEET_VERSION, type ObjectReference, type SecretReference } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { KubeObject } from '../kube/object.ts';
import type { ApiResource } from '../kube/discovery.ts';
import { InvalidSpec, Waiting } from './fleet-object.ts';

/** The operators' Clusters that may follow references into other namespaces (startOperator sets it). */
const crossNamespaceAllowed = new WeakSet<Cluster>();

/** Lets references read through `cluster` reach other namespaces (`--allow-cross-namespace-refs`). */
export function allowCrossNamespaceRefs(cluster: Cluster): void {
  crossNamespaceAllowed.add(cluster);
}

/**
 * The namespace `ref` names (its own, else the referring resource's `namespace`), once the operator may follow it.
 * @throws InvalidSpec naming `<field>.namespace` and both namespaces, when it is another one and not allowed.
 */
export function referencedNamespace(cluster: Cluster, ref: { namespace?: string | undefined }, namespace: string, field: string): string {
  const ns = ref.namespace ?? namespace;
  if (ns !== namespace && !crossNamespaceAllowed.has(cluster)) {
    throw new InvalidSpec(
      `${field}.namespace ${ns} is not this resource's namespace ${namespace}: cross-namespace references are refused ` +
        '(the operator runs without --allow-cross-namespace-refs)',
    );
  }
  return ns;
}

/** Cluster resources, listed to find one by handle. */
const CLUSTERS: ApiResource = {
  group: FLEET_GROUP,
  version: FLEET_VERSION,
  kind: 'Cluster',
  resource: 'clusters',
  namespaced: true,
  verbs: ['list'],
  preferred: true,
};

/**
 * Checks that a server cluster's handle (a ServiceDeployment's `cluster`, Plural's) names no more than a clusterRef
 * could: without --allow-cross-namespace-refs, a Cluster resource of the referring resource's namespace must have
 * that handle (its spec.handle, default its name), so a tenant's handle reaches only the tenant's clusters.
 * @throws InvalidSpec when only another namespace has a Cluster of that handle; Waiting when none has.
 */
export async function checkHandleInNamespace(cluster: Cluster, handle: string, namespace: string, field: string): Promise<void> {
  if (crossNamespaceAllowed.has(cluster)) return;
  const handleOf = (resource: KubeObject) => (resource['spec'] as { handle?: string } | undefined)?.handle ?? resource.metadata.name;
  const withHandle = (await cluster.list(CLUSTERS, '')).filter((resource) => handleOf(resource) === handle);
  if (withHandle.some((resource) => resource.metadata.namespace === namespace)) return;
  const confinement = `a handle names a Cluster resource of this resource's namespace ${namespace} (the operator runs without --allow-cross-namespace-refs)`;
  if (withHandle.length > 0) throw new InvalidSpec(`${field} ${handle} is a Cluster of another namespace: ${confinement}`);
  throw new Waiting(`no Cluster resource with handle ${handle} (${field}): ${confinement}`);
}

/**
 * The Secret's data, decoded; the Secret is read in the referring resource's namespace unless cross-namespace
 * references are allowed. @throws Waiting when it does not exist (yet); InvalidSpec for a refused namespace.
 */
export async function secretOf(cluster: Cluster, ref: SecretReference, namespace: string, field: string): Promise<Record<string, string>> {
  const ns = referencedNamespace(cluster, ref, namespace, field);
  const secret = await cluster.get({ group: '', version: 'v1', kind: 'Secret', namespace: ns, name: ref.name });
  if (!secret) throw new Waiting(`Secret ${ns}/${ref.name} (${field}) not found`);
  const data = (secret['data'] as Record<string, string> | undefined) ?? {};
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
}

/**
 * The text under `ref.key` of the ConfigMap (in the referring resource's namespace); undefined for a missing
 * ConfigMap or key when the reference is `optional` (corev1 ConfigMapKeySelector's meaning).
 * @throws Waiting when the ConfigMap does not exist (yet); InvalidSpec when it lacks the key.
 */
export async function configMapKeyOf(
  cluster: Cluster,
  ref: { name: string; key: string; optional?: boolean | undefined },
  namespace: string,
  field: string,
): Promise<string | undefined> {
  const configMap = await cluster.get({ group: '', version: 'v1', kind: 'ConfigMap', namespace, name: ref.name });
  if (!configMap && ref.optional) return undefined;
  if (!configMap) throw new Waiting(`ConfigMap ${namespace}/${ref.name} (${field}) not found`);
  const value = (configMap['data'] as Record<string, string> | undefined)?.[ref.key];
  if (value === undefined && !ref.optional) throw new InvalidSpec(`ConfigMap ${namespace}/${ref.name} (${field}) has no key ${ref.key}`);
  return value;
}

/**
 * The text under `ref.key` of the Secret, as secretOf reads it; undefined for a missing Secret or key when the
 * reference is `optional` (corev1 SecretKeySelector's meaning).
 * @throws Waiting when the Secret does not exist (yet); InvalidSpec when it lacks the key or its namespace is refused.
 */
export async function secretKeyOf(
  cluster: Cluster,
  ref: SecretReference & { key: string; optional?: boolean | undefined },
  namespace: string,
  field: string,
): Promise<string | undefined> {
  let data: Record<string, string>;
  try {
    data = await secretOf(cluster, ref, namespace, field);
  } catch (error) {
    if (error instanceof Waiting && ref.optional) return undefined;
    throw error;
  }
  const value = data[ref.key];
  if (value === undefined && !ref.optional) throw new InvalidSpec(`Secret ${ref.name} (${field}) has no key ${ref.key}`);
  return value;
}

/**
 * The server id of the referenced fleet resource, from its status.
 * @throws Waiting when it does not exist or has no id yet; InvalidSpec when the reference names another kind or a
 *   namespace it may not follow.
 */
export async function referencedId(
  cluster: Cluster,
  ref: ObjectReference,
  expected: { group: string; version: string; kind: string; namespaced: boolean },
  namespace: string,
  field: string,
): Promise<string> {
  if (ref.kind && ref.kind !== expected.kind) throw new InvalidSpec(`${field}.kind must be ${expected.kind}, not ${ref.kind}`);
  const ns = expected.namespaced ? referencedNamespace(cluster, ref, namespace, field) : '';
  const where = `${expected.kind} ${ns ? `${ns}/` : ''}${ref.name} (${field})`;
  const { group, version, kind } = expected;
  const object: KubeObject | undefined = await cluster.get({ group, version, kind, namespace: ns, name: ref.name });
  if (!object) throw new Waiting(`${where} not found`);
  const id = (object['status'] as { id?: string } | undefined)?.id;
  if (!id) throw new Waiting(`${where} is not synced to the server yet`);
  return id;
}
