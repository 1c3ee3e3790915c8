/**
 * The Cluster API objects Gantry makes for a cluster it provisions: one `cluster.x-k8s.io/v1beta2` Cluster with a
 * managed topology of a ClusterClass on the management cluster (Cluster API's "Cluster topology": spec.topology
 * classRef, version, controlPlane.replicas, workers.machineDeployments, variables). Cluster API and the class's
 * providers do the rest; Gantry never calls a cloud API. They are a service of the management cluster
 * (server/provisioned-clusters.ts), applied by its agent like any other.
 */
import type { KubeObject } from '../kube/object.ts';

/** How a fleet cluster is made through Cluster API (the API's ClusterProvisioning). */
export interface CapiClusterSpec {
  /** The fleet cluster whose Cluster API makes it. */
  management: string;
  /** Namespace of its Cluster API objects and of the ClusterClass, on the management cluster. */
  namespace: string;
  /** The ClusterClass. */
  class: string;
  /** Kubernetes version, e.g. v1.35.4. */
  version: string;
  controlPlaneReplicas?: number;
  /** Machine deployments: a worker class of the ClusterClass, a name, a replica count. */
  workers?: Array<{ class: string; name: string; replicas: number }>;
  /** Values of the ClusterClass's variables by name. */
  variables?: Record<string, unknown>;
}

/** What the management cluster's service renders: the spec, for the fleet cluster `cluster`. */
export interface CapiClusterSource extends CapiClusterSpec {
  cluster: string;
}

/** Labels each object with the fleet cluster it makes, so the objects of one cluster can be found by label. */
export const FLEET_CLUSTER_LABEL = 'gantry.dev/cluster';

/** The objects of `source`: its Cluster, named as the fleet cluster. */
export function capiClusterManifests(source: CapiClusterSource): KubeObject[] {
  const topology: Record<string, unknown> = { classRef: { name: source.class }, version: source.version };
  if (source.controlPlaneReplicas !== undefined) topology['controlPlane'] = { replicas: source.controlPlaneReplicas };
  if (source.workers?.length) {
    topology['workers'] = {
      machineDeployments: source.workers.map(({ class: kind, name, replicas }) => ({ class: kind, name, replicas })),
    };
  }
  const variables = Object.entries(source.variables ?? {});
  if (variables.length > 0) topology['variables'] = variables.map(([name, value]) => ({ name, value }));
  return [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: source.cluster, namespace: source.namespace, labels: { [FLEET_CLUSTER_LABEL]: source.cluster } },
      spec: { topology },
    },
  ];
}
