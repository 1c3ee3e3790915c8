/**
 * Pipeline → the server's release pipeline `spec.name` (default metadata.name), as Plural's Pipeline: stages whose
 * services are ServiceDeployment resources (serviceRef, and criteria.serviceRef for the service promoted from),
 * edges with gates, and a stage's `rollout` (Gantry's extension); a JOB gate's clusterRef is a Cluster resource. Each reference must be synced first (the
 * pipeline waits, watching them). A pipeline made elsewhere (`gantry pipeline set`) is adopted read-only. The gates'
 * states are mirrored into status.
 */
import type { ApiPipeline, FleetClient } from '../client/fleet-client.ts';
import { FLEET_GROUP, FLEET_VERSION, type ObjectReference, type PipelineSpec, type PipelineStatus } from '../api/fleet.ts';
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
    const { raw, containers, ...rest } = job;
    return {
      name: gate.name,
      type: 'JOB',
      ...timeout,
      job: {
        ...rest,
        cluster: await clusterNameOf(gate.clusterRef, namespace, `${field}.clusterRef`),
        ...(raw === undefined ? {} : { raw: raw as Record<string, unknown> }),
        ...(containers === undefined ? {} : { containers: containers as Array<Record<string, unknown>> }),
      },
    } satisfies GateBody;
  }

  const set = async ({ attributes }: DesiredPipeline) => await client.setPipeline(attributes.name, attributes.body);
  return {
    kind: 'Pipeline',
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
              return {
                ...(await serviceOf(service.serviceRef, namespace, `${field}.serviceRef`)),
                ...(criteria
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
          from: edge.from,
          to: edge.to,
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
