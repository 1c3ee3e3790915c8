/**
 * Cluster → the server's cluster of the same handle (spec.handle, default metadata.name), as Plural's
 * cluster_controller.go adopts by handle: a cluster registered with `gantry cluster create` or by another tool is
 * adopted read-only. One this resource creates is named after it, and its agent's deploy token is written to the
 * Secret `<name>-deploy-token` (key `token`) beside it, owned by the resource, for `gantry agent install` or a
 * Deployment to mount; the token is never logged or put in status.
 */
import type { ApiCluster, FleetClient } from '../client/fleet-client.ts';
import { ClusterSpecSchema, FLEET_API_VERSION, type ClusterSpec, type ClusterStatus } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { FleetKind } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { deployTokenSecretName } from '../install/operator.ts';

interface DesiredCluster {
  attributes: { name: string; handle: string; tags: Record<string, string>; distro?: string };
}

export function clusterKind(
  client: FleetClient,
  cluster: Cluster,
  fieldManager: string,
): FleetKind<ClusterSpec, ClusterStatus, DesiredCluster, ApiCluster> {
  return {
    kind: 'Cluster',
    schema: ClusterSpecSchema,
    desired: async (resource) => ({
      attributes: {
        name: resource.metadata.name,
        handle: resource.spec.handle ?? resource.metadata.name,
        tags: resource.spec.tags ?? {},
        ...(resource.spec.distro ? { distro: resource.spec.distro } : {}),
      },
    }),
    find: async ({ attributes }) => (await client.listClusters()).find((c) => c.handle === attributes.handle),
    async create({ attributes }, resource) {
      const { cluster: created, deployToken } = await client.createCluster(attributes);
      await cluster.apply(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: deployTokenSecretName(resource.metadata.name),
            namespace: resource.metadata.namespace,
            ownerReferences: [
              { apiVersion: FLEET_API_VERSION, kind: 'Cluster', name: resource.metadata.name, uid: resource.metadata.uid! },
            ],
          },
          type: 'Opaque',
          stringData: { token: deployToken },
        },
        { fieldManager, force: true },
      );
      return created;
    },
    // Tags are what can change (the name and handle are the cluster's identity, the distro its agent's).
    update: async (remote, { attributes }) => await client.setClusterTags(remote.name, attributes.tags),
    async remove(resource) {
      const remote = resource.status?.id ? (await client.listClusters()).find((c) => c.id === resource.status!.id) : undefined;
      if (remote) await client.deleteCluster(remote.name).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    bindings: (remote) => ({ scope: { clusters: [remote.name] }, writeRole: 'writer' }),
    observe: (remote) => ({
      status: {
        ...(remote.kubernetesVersion ? { currentVersion: remote.kubernetesVersion } : {}),
        ...(remote.pingedAt ? { pingedAt: remote.pingedAt } : {}),
        health: remote.health,
      },
      readiness:
        remote.health === 'HEALTHY'
          ? { ready: true, reason: 'Healthy', message: `agent ${remote.agentVersion ?? ''} pinged at ${remote.pingedAt}` }
          : remote.health === 'UNKNOWN'
            ? { ready: false, reason: 'WaitingForAgent', message: 'no agent has pinged from this cluster yet' }
            : { ready: false, reason: 'Unhealthy', message: `its agent last pinged at ${remote.pingedAt}` },
    }),
  };
}
