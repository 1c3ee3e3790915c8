/**
 * ServiceContext → the server's service context `spec.name` (default metadata.name): configuration shared across
 * services (Plural's ServiceContext, e.g. terraform outputs), bound into the templates of every service that names
 * it in `contexts`. A context made elsewhere (`gantry context set`) is adopted read-only. Deleting the resource
 * deletes the context; the server refuses while services still bind it, and the resource waits.
 */
import type { ApiServiceContext, FleetClient } from '../client/fleet-client.ts';
import { ServiceContextSpecSchema, type ServiceContextSpec, type ServiceContextStatus } from '../api/fleet.ts';
import { type FleetKind, InvalidSpec } from './fleet-object.ts';
import { notFound } from './git-repository.ts';

interface DesiredContext {
  attributes: { name: string; configuration: Record<string, unknown> };
}

export function serviceContextKind(
  client: FleetClient,
): FleetKind<ServiceContextSpec, ServiceContextStatus, DesiredContext, ApiServiceContext> {
  return {
    kind: 'ServiceContext',
    schema: ServiceContextSpecSchema,
    async desired(resource) {
      const { configuration = {} } = resource.spec;
      if (typeof configuration !== 'object' || configuration === null || Array.isArray(configuration))
        throw new InvalidSpec('spec.configuration must be an object');
      return {
        attributes: { name: resource.spec.name ?? resource.metadata.name, configuration: configuration as Record<string, unknown> },
      };
    },
    find: async ({ attributes }) => await client.getContext(attributes.name).catch(notFound),
    create: async ({ attributes }) => await client.setContext(attributes.name, { configuration: attributes.configuration }),
    update: async (_remote, { attributes }) => await client.setContext(attributes.name, { configuration: attributes.configuration }),
    async remove(resource) {
      const remote = (await client.listContexts()).find((context) => context.id === resource.status?.id);
      if (remote) await client.deleteContext(remote.name).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => ({
      status: { boundBy: remote.boundBy },
      readiness: { ready: true, reason: 'Synced', message: `bound by ${remote.boundBy.length} service(s)` },
    }),
  };
}
