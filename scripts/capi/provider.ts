/**
 * The test's Cluster API provider: the infrastructure and control plane of a workload cluster are one of this
 * clone's local process clusters (scripts/cluster), so that Cluster API's real controllers provision a real API
 * server on this machine. This file and provider-crds.ts are the test's part; everything the `cluster.x-k8s.io`
 * objects do (topology from a ClusterClass, phases, conditions, deletion order) is Cluster API's.
 *
 * Contract (v1beta2, sigs.k8s.io/cluster-api docs/book/src/developer/providers/contracts):
 * - LocalCluster (infra-cluster.md): `status.initialization.provisioned` once reconciled; it provides no endpoint,
 *   the control plane does.
 * - LocalControlPlane (control-plane.md): starts the cluster, writes `spec.controlPlaneEndpoint`, the Secret
 *   `<cluster>-kubeconfig` ("Cluster kubeconfig management"), and `status.initialization.controlPlaneInitialized`,
 *   `status.version`, the replica counts and the `Available` condition. Deleting it stops the cluster and removes
 *   its files. It runs only the Kubernetes version setup builds; another `spec.version` stalls with a reason.
 * Objects of a paused Cluster (`spec.paused`, or the `cluster.x-k8s.io/paused` annotation) are left alone.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { clusterDown, clusterUp } from '../cluster/cluster.ts';
import { clusterLayout, type ClusterLayout } from '../cluster/layout.ts';
import { KUBERNETES_VERSION } from '../setup/tools.ts';
import type { Cluster } from '../../src/kube/cluster.ts';
import { type KubeObject, refOf } from '../../src/kube/object.ts';
import type { Logger } from '../../src/logger.ts';
import { CONTROL_PLANE_GROUP } from './provider-crds.ts';

/** The field manager of every write of the provider. */
export const PROVIDER_FIELD_MANAGER = 'local-gantry-provider';
const FINALIZER = `${CONTROL_PLANE_GROUP}/cluster`;
const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';
const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
/** How often a ready control plane is looked at again (its cluster may have been stopped by hand). */
const RECHECK_MS = 30_000;

interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

interface Owner {
  /** The `cluster.x-k8s.io` Cluster's name. */
  name: string;
  paused: boolean;
}

export interface ProviderContext {
  cluster: Cluster;
  log: Logger;
}

/**
 * The local cluster a LocalControlPlane runs (in the `.cluster/` of the clone this file is in): named after its namespace and name, hashed when that is no DNS label
 * of at most 32 characters (scripts/cluster/layout.ts), so two Clusters never share one.
 */
export function workloadClusterName(namespace: string, name: string): string {
  const plain = `${namespace}-${name}`;
  if (/^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/.test(plain)) return plain;
  const hash = createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, 8);
  return `${name
    .slice(0, 23)
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/-+$/, '')}-${hash}`.replace(/^-+/, 'c');
}

/** Marks a LocalCluster provisioned: there is nothing to make, the control plane brings its own endpoint. */
export async function reconcileInfraCluster(object: KubeObject, context: ProviderContext): Promise<void> {
  if (object.metadata.deletionTimestamp) return;
  const owner = await ownerCluster(object, context.cluster);
  if (!owner || owner.paused || isPaused(object)) return;
  const status = object['status'] as { initialization?: { provisioned?: boolean } } | undefined;
  if (status?.initialization?.provisioned === true) return;
  await context.cluster.patchMerge(
    refOf(object),
    {
      status: {
        initialization: { provisioned: true },
        conditions: [condition(object, undefined, 'Ready', 'True', 'Provisioned', '')],
      },
    },
    { fieldManager: PROVIDER_FIELD_MANAGER, subresource: 'status' },
  );
}

/**
 * Brings a LocalControlPlane's cluster up (or, deleted, down) and reports it.
 * @returns when to look again, in ms; undefined when only a change should trigger the next reconcile.
 * @throws Error from clusterUp (naming the component's log) or KubeApiError; the controller retries with backoff.
 */
export async function reconcileControlPlane(object: KubeObject, context: ProviderContext): Promise<number | undefined> {
  const namespace = object.metadata.namespace!;
  const layout = clusterLayout(workloadClusterName(namespace, object.metadata.name!));
  if (object.metadata.deletionTimestamp) {
    await deleteControlPlane(object, layout, context);
    return undefined;
  }
  const owner = await ownerCluster(object, context.cluster);
  if (!owner || owner.paused || isPaused(object)) return undefined;
  const ref = refOf(object);
  if (!(object.metadata.finalizers ?? []).includes(FINALIZER)) {
    await context.cluster.patchMerge(
      ref,
      { metadata: { finalizers: [...(object.metadata.finalizers ?? []), FINALIZER] } },
      { fieldManager: PROVIDER_FIELD_MANAGER },
    );
  }
  const wanted = (object['spec'] as { version?: string } | undefined)?.version;
  if (wanted !== undefined && wanted !== KUBERNETES_VERSION) {
    const message = `this machine builds Kubernetes ${KUBERNETES_VERSION} only (scripts/setup/tools.ts); spec.version asks for ${wanted}`;
    await patchStatus(object, context, { conditions: [condition(object, undefined, 'Available', 'False', 'VersionNotBuilt', message)] });
    return undefined;
  }
  const state = await clusterUp({ layout, report: (line) => context.log.info({ workloadCluster: layout.name }, line) });
  const kubeconfig = await readFile(state.kubeconfig, 'utf8');
  await context.cluster.apply(kubeconfigSecret(object, owner.name, kubeconfig), { fieldManager: PROVIDER_FIELD_MANAGER, force: true });
  const port = Number(new URL(state.server).port);
  const endpoint = (object['spec'] as { controlPlaneEndpoint?: { host?: string; port?: number } } | undefined)?.controlPlaneEndpoint;
  if (endpoint?.host !== '127.0.0.1' || endpoint.port !== port) {
    await context.cluster.patchMerge(
      ref,
      { spec: { controlPlaneEndpoint: { host: '127.0.0.1', port } } },
      { fieldManager: PROVIDER_FIELD_MANAGER },
    );
  }
  await patchStatus(object, context, {
    initialization: { controlPlaneInitialized: true },
    version: KUBERNETES_VERSION,
    selector: `${CLUSTER_NAME_LABEL}=${owner.name}`,
    replicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    upToDateReplicas: 1,
    conditions: [condition(object, undefined, 'Available', 'True', 'Available', '')],
  });
  return RECHECK_MS;
}

async function deleteControlPlane(object: KubeObject, layout: ClusterLayout, context: ProviderContext): Promise<void> {
  if (!(object.metadata.finalizers ?? []).includes(FINALIZER)) return;
  await clusterDown({ layout, report: (line) => context.log.info({ workloadCluster: layout.name }, line) });
  await context.cluster.patchJson(
    refOf(object),
    [{ op: 'replace', path: '/metadata/finalizers', value: (object.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) }],
    { fieldManager: PROVIDER_FIELD_MANAGER },
  );
}

/** The Secret Cluster API and its users read the workload cluster's admin kubeconfig from, owned by the control plane. */
function kubeconfigSecret(controlPlane: KubeObject, clusterName: string, kubeconfig: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'cluster.x-k8s.io/secret',
    metadata: {
      name: `${clusterName}-kubeconfig`,
      namespace: controlPlane.metadata.namespace,
      labels: { [CLUSTER_NAME_LABEL]: clusterName },
      ownerReferences: [
        {
          apiVersion: controlPlane.apiVersion,
          kind: controlPlane.kind,
          name: controlPlane.metadata.name!,
          uid: controlPlane.metadata.uid!,
          controller: true,
        },
      ],
    },
    data: { value: Buffer.from(kubeconfig).toString('base64') },
  };
}

async function patchStatus(object: KubeObject, context: ProviderContext, status: Record<string, unknown>): Promise<void> {
  const conditions = (status['conditions'] as Condition[]).map((entry) =>
    condition(object, currentCondition(object, entry.type), entry.type, entry.status, entry.reason, entry.message),
  );
  await context.cluster.patchMerge(
    refOf(object),
    { status: { ...status, conditions, observedGeneration: object.metadata.generation } },
    { fieldManager: PROVIDER_FIELD_MANAGER, subresource: 'status' },
  );
}

function currentCondition(object: KubeObject, type: string): Condition | undefined {
  const conditions = (object['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  return conditions.find((entry) => entry.type === type);
}

/** A condition that keeps its lastTransitionTime while its status stays the same (metav1.Condition's rule). */
function condition(
  object: KubeObject,
  previous: Condition | undefined,
  type: string,
  status: Condition['status'],
  reason: string,
  message: string,
): Condition {
  const since = previous?.status === status ? previous.lastTransitionTime : new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return { type, status, reason, message, lastTransitionTime: since, observedGeneration: object.metadata.generation };
}

/** The owning `cluster.x-k8s.io` Cluster, which Cluster API sets as owner; undefined until it did. */
async function ownerCluster(object: KubeObject, cluster: Cluster): Promise<Owner | undefined> {
  const reference = (object.metadata.ownerReferences ?? []).find(
    (owner) => owner.kind === 'Cluster' && owner.apiVersion.startsWith('cluster.x-k8s.io/'),
  );
  if (!reference) return undefined;
  // Read as v1beta2 whatever version the reference names: spec.paused is where v1beta2 has it.
  const owner = await cluster.get({
    group: 'cluster.x-k8s.io',
    version: 'v1beta2',
    kind: 'Cluster',
    namespace: object.metadata.namespace!,
    name: reference.name,
  });
  if (!owner) return undefined;
  const paused = (owner['spec'] as { paused?: boolean } | undefined)?.paused === true || isPaused(owner);
  return { name: reference.name, paused };
}

function isPaused(object: KubeObject): boolean {
  return object.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined;
}
