/**
 * A cluster's services as its agent gets them (GET /v1/agent/services, AgentServiceSchema): each service's current
 * revision (the tarball digest to download), folder and renderer, its configuration and secret values in clear, what
 * its templates bind (the cluster, the service contexts its spec names), the dependencies it still waits for (those
 * not healthy), and whether it is being deleted.
 */
import type { Kysely } from 'kysely';
import type { Cluster } from '../store/clusters.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { contextConfigurations } from '../store/service-contexts.ts';
import { servicesForAgent } from '../store/services.ts';
import type { AgentService } from '../api/agent.ts';

/** The services of `cluster`, by name, as its agent applies them; sealed values are opened with `box`. */
export async function agentServices(db: Kysely<Database>, box: SecretBox, cluster: Cluster): Promise<AgentService[]> {
  const services = await servicesForAgent(db, box, cluster.id);
  const healthy = new Set(services.filter(({ service }) => service.status === 'healthy').map(({ service }) => service.name));
  const templateCluster = {
    id: cluster.id,
    name: cluster.name,
    handle: cluster.handle,
    tags: cluster.tags,
    distro: cluster.distro,
    version: cluster.kubernetesVersion,
  };
  const contexts = await contextConfigurations(db, [...new Set(services.flatMap(({ service }) => service.revision.spec.contexts ?? []))]);
  return services.map(({ service, secrets }) => ({
    id: service.id,
    name: service.name,
    namespace: service.spec.namespace,
    cluster: templateCluster,
    revision: {
      id: service.revision.id,
      number: service.revision.number,
      commit: service.revision.commit,
      digest: service.revision.digest ?? '',
    },
    // A helm service's tarball is the wrapper project, whatever folder its valuesFiles came from.
    folder: service.revision.spec.helm ? '' : (service.revision.spec.git?.folder ?? ''),
    renderer: service.revision.spec.renderer,
    ...(service.revision.spec.renderers ? { renderers: service.revision.spec.renderers } : {}),
    configuration: secrets.configuration,
    secretValues: secrets.secretValues,
    contexts: pick(contexts, service.revision.spec.contexts ?? []),
    waitingFor: service.dependencies.filter((name) => !healthy.has(name)),
    ...(service.revision.spec.syncConfig ? { syncConfig: service.revision.spec.syncConfig } : {}),
    templated: service.revision.spec.templated !== false,
    deleting: service.deletedAt !== null,
    ...(service.revision.spec.agent ? { agent: service.revision.spec.agent } : {}),
    ...(service.revision.spec.capi ? { provisions: service.revision.spec.capi.cluster } : {}),
  }));
}

/** The entries of `record` named in `names` (those it has). */
function pick<T>(record: Record<string, T>, names: readonly string[]): Record<string, T> {
  return Object.fromEntries(names.flatMap((name) => (name in record ? [[name, record[name] as T]] : [])));
}
