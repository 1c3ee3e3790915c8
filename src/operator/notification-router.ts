/**
 * NotificationRouter → the server's notification router `spec.name` (default metadata.name), as Plural's: the fleet
 * events it names (default `*`; names Gantry's fleet does not send are named in the Supported condition) go to its
 * sinks when they pass its filters. Sinks are NotificationSink resources, filters may name a Cluster, a
 * ServiceDeployment or a Pipeline; each must be synced first (the router waits, watching them). A router made
 * elsewhere is adopted read-only.
 */
import type { ApiRouter, FleetClient } from '../client/fleet-client.ts';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  NotificationRouterSpecSchema,
  type NotificationRouterSpec,
  type NotificationRouterStatus,
  type ObjectReference,
} from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { RouterUpsertBody } from '../api/notifications.ts';
import { type FleetKind, InvalidSpec, Waiting } from './fleet-object.ts';
import { FLEET_EVENTS } from '../api/events.ts';
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

  /**
   * A pipelineRef filter as the server filters pipeline events: a regular expression over `pipeline/<name>`, and
   * `pipeline/<name>/<stage>` for the rollouts of its stages.
   * @throws InvalidSpec beside a regex (one filter holds one regex); Waiting until the Pipeline is synced.
   */
  async function pipelineRegex(filter: NonNullable<NotificationRouterSpec['filters']>[number], namespace: string, field: string) {
    if (filter.regex) throw new InvalidSpec(`${field}: give regex or pipelineRef, not both (or two filters)`);
    const ref = filter.pipelineRef as ObjectReference;
    await referencedId(cluster, ref, kindOf('Pipeline'), namespace, `${field}.pipelineRef`);
    const ns = ref.namespace ?? namespace;
    const pipeline = await cluster.get({ group: FLEET_GROUP, version: FLEET_VERSION, kind: 'Pipeline', namespace: ns, name: ref.name });
    if (!pipeline) throw new Waiting(`Pipeline ${ns}/${ref.name} (${field}.pipelineRef) not found`);
    const name = (pipeline['spec'] as { name?: string }).name ?? ref.name;
    return `^pipeline/${name}(/|$)`;
  }

  const set = async ({ attributes }: DesiredRouter) => await client.setRouter(attributes.name, attributes.body);
  return {
    kind: 'NotificationRouter',
    schema: NotificationRouterSpecSchema,
    async desired(resource) {
      const { spec } = resource;
      const namespace = resource.metadata.namespace ?? 'default';
      if (!spec.sinks?.length) throw new InvalidSpec('spec.sinks: a router needs at least one NotificationSink');
      const sinks = await Promise.all(spec.sinks.map((ref, index) => sinkName(ref, namespace, `spec.sinks[${index}]`)));
      const events = routedEvents(spec.events);
      const filters = await Promise.all(
        (spec.filters ?? []).map(async (filter, index) => ({
          ...(filter.regex ? { regex: filter.regex } : {}),
          ...(filter.pipelineRef ? { regex: await pipelineRegex(filter, namespace, `spec.filters[${index}]`) } : {}),
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
      return { attributes: { name: spec.name ?? resource.metadata.name, body: { events, filters, sinks } } };
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

/**
 * The events the server routes: those of `names` Gantry's fleet sends (the others are named in the Supported
 * condition), `*` when none is given (Plural's default).
 * @throws InvalidSpec when every name given is one Gantry's fleet never sends (the router would route nothing).
 */
export function routedEvents(names: readonly string[] | undefined): RouterUpsertBody['events'] {
  if (!names?.length) return ['*'];
  const known = names.filter(
    (name): name is RouterUpsertBody['events'][number] => name === '*' || (FLEET_EVENTS as readonly string[]).includes(name),
  );
  if (known.length === 0)
    throw new InvalidSpec(`spec.events: Gantry's fleet sends none of ${names.join(', ')} (it sends ${FLEET_EVENTS.join(', ')})`);
  return [...new Set(known)];
}
