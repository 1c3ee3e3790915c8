/**
 * GlobalService → the server's global service `spec.name` (default metadata.name): a service every cluster whose
 * tags include `spec.tags` (and of `spec.distro`) gets, as Plural's GlobalService. The service is `spec.template`,
 * or the service of the ServiceDeployment `spec.serviceRef` names (less its cluster). A global service made
 * elsewhere (`gantry globalservice create`) is adopted read-only. Deleting the resource deletes the copies and their
 * objects, or with `cascade.detach` forgets them and leaves the objects. `reconciliation` is the copies' agents'
 * drift detection (as a ServiceDeployment's); `interval` how often the operator looks at the global service again.
 */
import type { ApiGlobalService, FleetClient } from '../client/fleet-client.ts';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  GlobalServiceSpecSchema,
  type GlobalServiceSpec,
  type GlobalServiceStatus,
  type ServiceDeploymentSpec,
} from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { NewGlobalServiceBody } from '../api/global-services.ts';
import { type FleetKind, InvalidSpec, Waiting } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { serviceTemplateResolver } from './service-deployment.ts';
import { referencedNamespace } from './references.ts';

interface DesiredGlobalService {
  attributes: NewGlobalServiceBody;
}

export function globalServiceKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<GlobalServiceSpec, GlobalServiceStatus, DesiredGlobalService, ApiGlobalService> {
  const resolveTemplate = serviceTemplateResolver(client, cluster);

  /** The template's body: spec.template, or the referenced ServiceDeployment's service. */
  async function templateOf(spec: GlobalServiceSpec, name: string, namespace: string): Promise<NewGlobalServiceBody['template']> {
    if (spec.template && spec.serviceRef) throw new InvalidSpec('give spec.template or spec.serviceRef, not both');
    if (spec.template) return await resolveTemplate(spec.template, name, namespace, spec.reconciliation);
    if (!spec.serviceRef) throw new InvalidSpec('spec.template or spec.serviceRef is required');
    const refNamespace = referencedNamespace(cluster, spec.serviceRef, namespace, 'spec.serviceRef');
    const referenced = await cluster.get({
      group: FLEET_GROUP,
      version: FLEET_VERSION,
      kind: 'ServiceDeployment',
      namespace: refNamespace,
      name: spec.serviceRef.name,
    });
    if (!referenced) throw new Waiting(`ServiceDeployment ${refNamespace}/${spec.serviceRef.name} (spec.serviceRef) not found`);
    const service = referenced['spec'] as ServiceDeploymentSpec;
    return await resolveTemplate(service, spec.serviceRef.name, refNamespace, spec.reconciliation ?? service.reconciliation);
  }

  return {
    kind: 'GlobalService',
    schema: GlobalServiceSpecSchema,
    // spec.reconciliation is the copies' agents' (templateOf); Plural's GlobalService times its own look with interval.
    reconciliation: (resource) => ({ interval: resource.spec.interval }),
    async desired(resource) {
      const { spec } = resource;
      const name = spec.name ?? resource.metadata.name;
      return {
        attributes: {
          name,
          tags: spec.tags ?? {},
          ...(spec.distro ? { distro: spec.distro } : {}),
          ...(spec.ignoreClusters?.length ? { ignoreClusters: [...new Set(spec.ignoreClusters)] } : {}),
          template: await templateOf(spec, name, resource.metadata.namespace ?? 'default'),
          ...(spec.rollout ? { rollout: spec.rollout } : {}),
        },
      };
    },
    find: async ({ attributes }) => await client.getGlobalService(attributes.name).catch(notFound),
    create: async ({ attributes }) => await client.createGlobalService(attributes),
    // Not confirmed: a change that would delete more than the server's share of the copies is refused (Refused,
    // with the server's message) until someone confirms it with `gantry globalservice update --confirm`.
    update: async (remote, { attributes }) =>
      await client.updateGlobalService(
        remote.name,
        {
          tags: attributes.tags,
          distro: attributes.distro ?? null,
          template: attributes.template,
          rollout: attributes.rollout ?? null,
          ignoreClusters: attributes.ignoreClusters ?? [],
        },
        false,
      ),
    async remove(resource) {
      const remote = (await client.listGlobalServices()).find((global) => global.id === resource.status?.id);
      if (remote)
        await client.deleteGlobalService(remote.name, { detach: resource.spec.cascade?.detach === true, confirm: true }).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => {
      const healthy = remote.services.filter((service) => service.status === 'healthy').length;
      const total = remote.services.length;
      return {
        status: { services: remote.services.map(({ cluster, status }) => ({ cluster, status })) },
        readiness:
          total === 0
            ? { ready: false, reason: 'NoClusters', message: 'no cluster matches spec.tags and spec.distro (yet)' }
            : healthy === total
              ? { ready: true, reason: 'Healthy', message: `${total} cluster(s), every copy healthy` }
              : { ready: false, reason: 'Progressing', message: `${healthy} of ${total} copies healthy` },
      };
    },
  };
}
