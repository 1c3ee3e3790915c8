/**
 * NotificationRouter → the server's notification router `spec.name` (default metadata.name), as Plural's: the fleet
 * events it names go to its sinks when they pass its filters. Sinks are NotificationSink resources, filters may name
 * a Cluster or a ServiceDeployment; each must be synced first (the router waits, watching them). A router made
 * elsewhere is adopted read-only.
 */
import type { ApiRouter, FleetClient } from '../client/fleet-client.ts';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  type NotificationRouterSpec,
  type NotificationRouterStatus,
  type ObjectReference,
} from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { RouterUpsertBody } from '../api/notifications.ts';
import { type FleetKind, Waiting } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { referencedId } from './references.ts';

const kindOf = (kind: string) => ({ group: FLEET_GROUP, version: FLEET_VERSION, kind, namespaced: true });

interface DesiredRouter {
  attributes: { name: string; body: RouterUpsertBody };
}

export function notificationRouterKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<NotificationRouterSpec, NotificationRouterStatus, DesiredRouter, ApiRouter> {
  /** The server name of a synced NotificationSink resource. @throws Waiting until it is synced. */
  async function sinkName(ref: ObjectReference, namespace: string, field: string): Promise<string> {
    await referencedId(cluster, ref, kindOf('NotificationSink'), namespace, field);
    const ns = ref.namespace ?? namespace;
    const sink = await cluster.get({ group: FLEET_GROUP, version: FLEET_VERSION, kind: 'NotificationSink', namespace: ns, name: ref.name });
    if (!sink) throw new Waiting(`NotificationSink ${ns}/${ref.name} (${field}) not found`);
    return (sink['spec'] as { name?: string }).name ?? ref.name;
  }

  const set = async ({ attributes }: DesiredRouter) => await client.setRouter(attributes.name, attributes.body);
  return {
    kind: 'NotificationRouter',
    async desired(resource) {
      const { spec } = resource;
      const namespace = resource.metadata.namespace ?? 'default';
      const sinks = await Promise.all(spec.sinks.map((ref, index) => sinkName(ref, namespace, `spec.sinks[${index}]`)));
      const filters = await Promise.all(
        (spec.filters ?? []).map(async (filter, index) => ({
          ...(filter.regex ? { regex: filter.regex } : {}),
          ...(filter.clusterRef
            ? {
                clusterId: await referencedId(
                  cluster,
                  filter.clusterRef,
                  kindOf('Cluster'),
                  namespace,
                  `spec.filters[${index}].clusterRef`,
                ),
              }
            : {}),
          ...(filter.serviceRef
            ? {
                serviceId: await referencedId(
                  cluster,
                  filter.serviceRef,
                  kindOf('ServiceDeployment'),
                  namespace,
                  `spec.filters[${index}].serviceRef`,
                ),
              }
            : {}),
        })),
      );
      return { attributes: { name: spec.name ?? resource.metadata.name, body: { events: spec.events, filters, sinks } } };
    },
    find: async ({ attributes }) => (await client.listRouters()).find((router) => router.name === attributes.name),
    create: set,
    update: async (_remote, desired) => await set(desired),
    async remove(resource) {
      const remote = (await client.listRouters()).find((router) => router.id === resource.status?.id);
      if (remote) await client.deleteRouter(remote.name).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => ({
      status: {},
      readiness: { ready: true, reason: 'Synced', message: `${remote.events.join(', ')} → ${remote.sinks.join(', ')}` },
    }),
  };
}
