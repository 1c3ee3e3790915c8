/**
 * Pipeline → the server's release pipeline `spec.name` (default metadata.name), as Plural's Pipeline: stages whose
 * services are ServiceDeployment resources (serviceRef, and criteria.serviceRef for the service promoted from),
 * edges with gates, and a stage's `rollout` (Gantry's extension); a JOB gate's clusterRef is a Cluster resource. Each reference must be synced first (the
 * pipeline waits, watching them). A pipeline made elsewhere (`gantry pipeline set`) is adopted read-only. The gates'
 * states are mirrored into status.
 */
import type { ApiPipeline, FleetClient } from '../client/fleet-client.ts';
import {
  FLEET_GROUP,
  FLEET_VERSION,
  type GateJobResources,
  type ObjectReference,
  PipelineSpecSchema,
  type PipelineSpec,
  type PipelineStatus,
} from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { PipelineUpsertBody } from '../api/pipelines.ts';
import { type FleetKind, InvalidSpec, Waiting } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { referencedId } from './references.ts';

const kindOf = (kind: string) => ({ group: FLEET_GROUP, version: FLEET_VERSION, kind, namespaced: true });

interface DesiredPipeline {
  attributes: { name: string; body: PipelineUpsertBody };
}

type GateBody = NonNullable<PipelineUpsertBody['edges'][number]['gates']>[number];

export function pipelineKind(client: FleetClient, cluster: Cluster): FleetKind<PipelineSpec, PipelineStatus, DesiredPipeline, ApiPipeline> {
  /** The server's cluster and name of a synced ServiceDeployment. @throws Waiting until it is synced. */
  async function serviceOf(ref: ObjectReference, namespace: string, field: string): Promise<{ cluster: string; name: string }> {
    const id = await referencedId(cluster, ref, kindOf('ServiceDeployment'), namespace, field);
    const service = (await client.listServices()).find((candidate) => candidate.id === id);
    if (!service) throw new Waiting(`the server has no service ${id} (${field} ${ref.name})`);
    return { cluster: service.cluster, name: service.name };
  }

  async function clusterNameOf(ref: ObjectReference | undefined, namespace: string, field: string): Promise<string> {
    if (!ref) throw new InvalidSpec(`${field} is required for a JOB gate`);
    const id = await referencedId(cluster, ref, kindOf('Cluster'), namespace, field);
    const found = (await client.listClusters()).find((candidate) => candidate.id === id);
    if (!found) throw new Waiting(`the server has no cluster ${id} (${field} ${ref.name})`);
    return found.name;
  }

  async function gateBody(
    gate: NonNullable<NonNullable<PipelineSpec['edges']>[number]['gates']>[number],
    namespace: string,
    field: string,
  ) {
    const timeout = gate.timeout === undefined ? {} : { timeout: gate.timeout };
    if (gate.type === 'APPROVAL') return { name: gate.name, type: 'APPROVAL', ...timeout } satisfies GateBody;
    if (gate.type === 'WINDOW') {
      if (!gate.spec?.window) throw new InvalidSpec(`${field}.spec.window is required for a WINDOW gate`);
      return { name: gate.name, type: 'WINDOW', window: gate.spec.window, ...timeout } satisfies GateBody;
    }
    if (gate.type === 'HEALTH') {
      if (!gate.spec?.health) throw new InvalidSpec(`${field}.spec.health is required for a HEALTH gate`);
      return { name: gate.name, type: 'HEALTH', health: gate.spec.health, ...timeout } satisfies GateBody;
    }
    const job = gate.spec?.job;
    if (!job) throw new InvalidSpec(`${field}.spec.job is required for a JOB gate`);
    const { raw, containers, resources, ...rest } = job;
    return {
      name: gate.name,
      type: 'JOB',
      ...timeout,
      job: {
        ...rest,
        cluster: await clusterNameOf(gate.clusterRef, namespace, `${field}.clusterRef`),
        ...(raw === undefined ? {} : { raw: raw as Record<string, unknown> }),
        ...(containers === undefined
          ? {}
          : { containers: containers.map((container, index) => corev1Container(container, index, resources)) }),
      },
    } satisfies GateBody;
  }

  const set = async ({ attributes }: DesiredPipeline) => await client.setPipeline(attributes.name, attributes.body);
  return {
    kind: 'Pipeline',
    schema: PipelineSpecSchema,
    async desired(resource) {
      const { spec } = resource;
      const namespace = resource.metadata.namespace ?? 'default';
      const stages = await Promise.all(
        spec.stages.map(async (stage, stageIndex) => ({
          name: stage.name,
          ...(stage.rollout ? { rollout: stage.rollout } : {}),
          services: await Promise.all(
            stage.services.map(async (service, index) => {
              const field = `spec.stages[${stageIndex}].services[${index}]`;
              const criteria = service.criteria;
              if (criteria && !criteria.serviceRef) throw new InvalidSpec(`${field}.criteria.serviceRef is required`);
              return {
                ...(await serviceOf(service.serviceRef, namespace, `${field}.serviceRef`)),
                ...(criteria?.serviceRef
                  ? {
                      criteria: {
                        ...(await serviceOf(criteria.serviceRef, namespace, `${field}.criteria.serviceRef`)),
                        ...(criteria.secrets ? { secrets: criteria.secrets } : {}),
                      },
                    }
                  : {}),
              };
            }),
          ),
        })),
      );
      const edges = await Promise.all(
        (spec.edges ?? []).map(async (edge, edgeIndex) => ({
          from: stageOf(edge.from, edge.fromId, `spec.edges[${edgeIndex}].from`),
          to: stageOf(edge.to, edge.toId, `spec.edges[${edgeIndex}].to`),
          gates: await Promise.all(
            (edge.gates ?? []).map((gate, index) => gateBody(gate, namespace, `spec.edges[${edgeIndex}].gates[${index}]`)),
          ),
        })),
      );
      return { attributes: { name: spec.name ?? resource.metadata.name, body: { stages, edges } } };
    },
    find: async ({ attributes }) => await client.getPipeline(attributes.name).catch(notFound),
    create: set,
    update: async (_remote, desired) => await set(desired),
    async remove(resource) {
      const remote = (await client.listPipelines()).find((pipeline) => pipeline.id === resource.status?.id);
      if (remote) await client.deletePipeline(remote.name).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    bindings: (remote) => ({ scope: { pipelines: [remote.name] }, writeRole: 'approver' }),
    observe: (remote) => {
      const gates = remote.edges.flatMap((edge) =>
        edge.gates.map((gate) => ({
          edge: `${edge.from} → ${edge.to}`,
          name: gate.name,
          state: gate.contextId ? gate.state : 'WAITING',
          ...(gate.reason ? { reason: gate.reason } : {}),
        })),
      );
      const pending = gates.filter((gate) => gate.state === 'PENDING').map((gate) => `${gate.name} (${gate.edge})`);
      const waitingFor = remote.edges.flatMap((edge) => edge.waitingFor.map((reason) => ({ edge: `${edge.from} → ${edge.to}`, reason })));
      return {
        // waitingFor always set: the status is merged over the last one, and an edge that waits no more must leave it.
        status: { gates, waitingFor },
        readiness: {
          ready: true,
          reason: 'Synced',
          message:
            pending.length > 0 ? `gates pending: ${pending.join(', ')}` : `${remote.stages.length} stages, ${remote.edges.length} edges`,
        },
      };
    },
  };
}

/**
 * The stage an edge names with `name`, or with `id` as Plural allows (here a stage name too: Gantry's stages have no
 * ids of their own). @throws InvalidSpec for neither, or two that differ.
 */
function stageOf(name: string | undefined, id: string | undefined, field: string): string {
  if (name && id && name !== id) throw new InvalidSpec(`${field} and ${field}Id name different stages (${name}, ${id})`);
  const stage = name ?? id;
  if (!stage) throw new InvalidSpec(`${field} (or ${field}Id) is required`);
  return stage;
}

/**
 * A gate job's container as corev1 has it. One with a `name` is corev1's already; Plural's have none and name their
 * env sources `{secret, configMap}`: they become `gate-<index>` with `envFrom: [{secretRef}, {configMapRef}]`.
 * `resources` (the job's) go to a container that gives none (Plural's implicit container resources).
 */
export function corev1Container(container: unknown, index: number, resources: GateJobResources | undefined): Record<string, unknown> {
  const given = container as Record<string, unknown>;
  const withResources = given['resources'] === undefined && resources ? { ...given, resources } : given;
  if (typeof given['name'] === 'string') return withResources;
  const envFrom = (given['envFrom'] as Array<{ secret?: string; configMap?: string }> | undefined)?.flatMap((source) => [
    ...(source.secret ? [{ secretRef: { name: source.secret } }] : []),
    ...(source.configMap ? [{ configMapRef: { name: source.configMap } }] : []),
  ]);
  return { ...withResources, name: `gate-${index}`, ...(envFrom ? { envFrom } : {}) };
}
