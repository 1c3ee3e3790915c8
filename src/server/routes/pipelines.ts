/**
 * /v1/pipelines: release pipelines (Plural's Pipeline). Admins define them (PUT, the whole pipeline: stages of
 * services by cluster and name, edges with gates; 400 naming the offending stage, edge or service) and delete them;
 * those whose scope names the pipeline (or is `all`) read it with each stage's promotion context, each gate's state
 * and its promotions (others get it left out of lists and 403 on its routes, as services and clusters answer); approvers, writers and
 * admins bound to the pipeline approve or reject APPROVAL gates, admins force any gate open (recorded as forced).
 * Promotions are listed newest first. A stage's rollout (the promoted services moving wave by wave) is read with the
 * pipeline, and paused, resumed or aborted by those who may approve its gates.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { parseDuration } from '../../duration.ts';
import { messageOf } from '../../problems.ts';
import { pipelineProblem } from '../../pipeline/graph.ts';
import { healthProblem } from '../../pipeline/health-gate.ts';
import { windowProblem } from '../../pipeline/window.ts';
import { listClusters } from '../../store/clusters.ts';
import {
  currentContexts,
  deletePipeline,
  type Gate,
  getPipeline,
  listGates,
  listPipelines,
  listPromotions,
  type GateSpec,
  type Pipeline,
  type PipelineSpec,
  type PromotionContext,
  upsertPipeline,
  wasPromoted,
} from '../../store/pipelines.ts';
import type { Database } from '../../store/schema.ts';
import { listServices, type Service } from '../../store/services.ts';
import { authorize, mayDo, requestUser, userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { gateJobName, type PipelineRunner } from '../pipelines.ts';
import { toApiPreview } from './previews.ts';
import { PreviewSchema } from '../../api/previews.ts';
import type { Preview } from '../../store/previews.ts';
import { type EdgeFacts, waitingFor } from '../../pipeline/explain.ts';
import { ErrorResponses } from '../../api/common.ts';
import { RolloutSchema } from '../../api/rollouts.ts';
import { rolloutProblem } from '../../rollout/plan.ts';
import { type RolloutRunner, stageSubject } from '../rollouts.ts';
import {
  GateParams,
  PipelineParams,
  PipelineSchema,
  type PipelineUpsertBody,
  PipelineUpsertSchema,
  PromotionSchema,
} from '../../api/pipelines.ts';

export interface PipelineRouteDeps {
  db: Kysely<Database>;
  runner: PipelineRunner;
  rollouts: RolloutRunner;
}

type ApiPipeline = Static<typeof PipelineSchema>;

const EdgeParams = Type.Object({ name: Type.String(), from: Type.String(), to: Type.String() });
const StageParams = Type.Object({ name: Type.String(), stage: Type.String() });
const StageActionParams = Type.Object({
  name: Type.String(),
  stage: Type.String(),
  action: Type.Union([Type.Literal('pause'), Type.Literal('resume'), Type.Literal('abort')]),
});

/** The newest of each service's previews (they come newest first). */
function newestPerService(previews: readonly Preview[]): Preview[] {
  const newest = new Map<string, Preview>();
  for (const preview of previews) if (!newest.has(preview.serviceId)) newest.set(preview.serviceId, preview);
  return [...newest.values()];
}
type JobGateBody = Extract<NonNullable<PipelineUpsertBody['edges'][number]['gates']>[number], { type: 'JOB' }>['job'];

export function pipelineRoutes(app: FastifyInstance, deps: PipelineRouteDeps): void {
  const { db, runner } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['pipelines'];
  const path = '/v1/pipelines/:name';

  api.get('/v1/pipelines', { ...readers, schema: { tags, response: { 200: Type.Array(PipelineSchema), ...errors } } }, async (request) => {
    // A pipeline shows services of every stage, so it is read by a binding on the pipeline, not on one stage's cluster.
    const pipelines = (await listPipelines(db)).filter((pipeline) => mayDo(request, 'read', { pipeline: pipeline.name }));
    const names = await serviceNames(db);
    return await Promise.all(pipelines.map((pipeline) => toApiPipeline(deps, pipeline, names)));
  });

  api.get(path, { ...readers, schema: { tags, params: PipelineParams, response: { 200: PipelineSchema, ...errors } } }, async (request) => {
    const pipeline = await getPipeline(db, request.params.name);
    authorize(request, 'read', { pipeline: pipeline.name });
    return await toApiPipeline(deps, pipeline, await serviceNames(db));
  });

  api.put(
    path,
    { ...admins, schema: { tags, params: PipelineParams, body: PipelineUpsertSchema, response: { 200: PipelineSchema, ...errors } } },
    async (request) => {
      const problem =
        pipelineProblem({ stages: request.body.stages, edges: request.body.edges }) ??
        gateProblem(request.body) ??
        stageRolloutProblem(request.body);
      if (problem) throw new HttpError(400, problem.message, `body.${problem.field}`);
      const pipeline = await upsertPipeline(db, request.params.name, await resolvedSpec(db, request.body));
      await runner.evaluate(pipeline);
      return await toApiPipeline(deps, await getPipeline(db, pipeline.name), await serviceNames(db));
    },
  );

  api.delete(
    path,
    { ...admins, schema: { tags, params: PipelineParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await deletePipeline(db, request.params.name);
      return reply.code(204).send(null);
    },
  );

  api.post(
    `${path}/edges/:from/:to/gates/:gate/:decision`,
    { ...readers, schema: { tags, params: GateParams, response: { 200: PipelineSchema, ...errors } } },
    async (request) => {
      const { name, from, to, gate, decision } = request.params;
      authorize(request, decision === 'force' ? 'force' : 'approve', { pipeline: name });
      const pipeline = await getPipeline(db, name);
      await runner.decide(pipeline, { from, to, name: gate }, decision, requestUser(request).name);
      return await toApiPipeline(deps, pipeline, await serviceNames(db));
    },
  );

  api.post(
    `${path}/edges/:from/:to/previews`,
    { ...readers, schema: { tags, params: EdgeParams, response: { 202: Type.Array(PreviewSchema), ...errors } } },
    async (request, reply) => {
      const { name, from, to } = request.params;
      // Whoever may decide the edge's gates may see what it would do; the agents of the target clusters run it.
      authorize(request, 'approve', { pipeline: name });
      const pipeline = await getPipeline(db, name);
      const previews = await runner.previewPromotion(pipeline, from, to, requestUser(request).name);
      const names = await serviceNames(db);
      return reply.code(202).send(
        previews.map((preview) => {
          const { cluster, name: service } = nameOf(names, preview.serviceId);
          return toApiPreview(preview, cluster, service);
        }),
      );
    },
  );

  api.get(
    `${path}/stages/:stage/rollout`,
    { ...readers, schema: { tags, params: StageParams, response: { 200: RolloutSchema, ...errors } } },
    async (request) => {
      const { pipeline, stage } = await pipelineStage(db, request.params);
      authorize(request, 'read', { pipeline: pipeline.name });
      return await deps.rollouts.status(stageSubject(pipeline, stage.name), !!stage.rollout);
    },
  );

  api.post(
    `${path}/stages/:stage/rollout/:action`,
    { ...readers, schema: { tags, params: StageActionParams, response: { 200: RolloutSchema, ...errors } } },
    async (request) => {
      const { pipeline, stage } = await pipelineStage(db, request.params);
      // Those who decide the gates into the stage steer what a promotion does to it.
      authorize(request, 'approve', { pipeline: pipeline.name });
      const subject = stageSubject(pipeline, stage.name);
      await deps.rollouts.act(subject, request.params.action, requestUser(request).name);
      return await deps.rollouts.status(subject, !!stage.rollout);
    },
  );

  api.get(
    `${path}/promotions`,
    { ...readers, schema: { tags, params: PipelineParams, response: { 200: Type.Array(PromotionSchema), ...errors } } },
    async (request) => {
      const pipeline = await getPipeline(db, request.params.name);
      authorize(request, 'read', { pipeline: pipeline.name });
      const names = await serviceNames(db);
      return (await listPromotions(db, pipeline.id)).map((promotion) => ({
        ...promotion,
        services: promotion.services.map(({ serviceId, sourceId, ...rest }) => ({
          ...nameOf(names, serviceId),
          source: (({ cluster, name }) => `${cluster}/${name}`)(nameOf(names, sourceId)),
          ...rest,
        })),
      }));
    },
  );
}

/** The first gate whose timeout, or WINDOW or HEALTH spec, is bad, by field. */
function gateProblem(body: PipelineUpsertBody): { field: string; message: string } | undefined {
  for (const [edgeIndex, edge] of body.edges.entries()) {
    for (const [index, gate] of (edge.gates ?? []).entries()) {
      const timeout = gate.timeout === undefined ? undefined : timeoutProblem(gate.timeout);
      if (timeout) return { field: `edges[${edgeIndex}].gates[${index}].timeout`, message: `gate ${gate.name}: ${timeout}` };
      const [at, problem] =
        gate.type === 'WINDOW'
          ? ['window', windowProblem(gate.window)]
          : gate.type === 'HEALTH'
            ? ['health', healthProblem(gate.health)]
            : [];
      if (problem)
        return { field: `edges[${edgeIndex}].gates[${index}].${at}.${problem.field}`, message: `gate ${gate.name}: ${problem.message}` };
    }
  }
  return undefined;
}

/** The first stage rollout whose spec is bad, by field. */
function stageRolloutProblem(body: PipelineUpsertBody): { field: string; message: string } | undefined {
  for (const [index, stage] of body.stages.entries()) {
    const problem = stage.rollout && rolloutProblem(stage.rollout);
    if (problem) return { field: `stages[${index}].rollout.${problem.field}`, message: `stage ${stage.name}: ${problem.message}` };
  }
  return undefined;
}

/** The pipeline and its stage. @throws HttpError 404 when the pipeline has no such stage. */
async function pipelineStage(db: Kysely<Database>, params: { name: string; stage: string }) {
  const pipeline = await getPipeline(db, params.name);
  const stage = pipeline.spec.stages.find((candidate) => candidate.name === params.stage);
  if (!stage) throw new HttpError(404, `pipeline ${pipeline.name} has no stage ${params.stage}`);
  return { pipeline, stage };
}

/** A service's cluster and name by id (deleted ones absent), with the service itself. */
type ServiceNames = Map<string, { cluster: string; name: string; service: Service }>;

function timeoutProblem(timeout: string): string | undefined {
  try {
    return parseDuration(timeout) > 0 ? undefined : 'the timeout must be longer than 0';
  } catch (error) {
    return messageOf(error);
  }
}

/** Every service's cluster and name by id (deleted ones are absent). */
async function serviceNames(db: Kysely<Database>): Promise<ServiceNames> {
  const [clusters, services] = await Promise.all([listClusters(db), listServices(db)]);
  const clusterNames = new Map(clusters.map((cluster) => [cluster.id, cluster.name]));
  return new Map(
    services.map((service) => [
      service.id,
      { cluster: clusterNames.get(service.clusterId) ?? service.clusterId, name: service.name, service },
    ]),
  );
}

function nameOf(names: Map<string, { cluster: string; name: string }>, id: string): { cluster: string; name: string } {
  const found = names.get(id);
  return found ? { cluster: found.cluster, name: found.name } : { cluster: '?', name: id };
}

/**
 * The spec with services and JOB gates' clusters by id, and each JOB gate's JobSpec whole.
 * @throws HttpError 400 naming a service or cluster the server does not have, or a JOB gate with neither raw nor
 *   containers.
 */
async function resolvedSpec(db: Kysely<Database>, body: PipelineUpsertBody): Promise<PipelineSpec> {
  const names = await serviceNames(db);
  const clusterIds = new Map((await listClusters(db)).map((cluster) => [cluster.name, cluster.id]));
  const idOf = new Map([...names].map(([id, { cluster, name }]) => [`${cluster}/${name}`, id]));
  const lookup = (service: { cluster: string; name: string }, field: string): string => {
    const id = idOf.get(`${service.cluster}/${service.name}`);
    if (!id) throw new HttpError(400, `cluster ${service.cluster} has no service ${service.name}`, field);
    return id;
  };
  return {
    stages: body.stages.map((stage, stageIndex) => ({
      name: stage.name,
      ...(stage.rollout ? { rollout: stage.rollout } : {}),
      services: stage.services.map((service, index) => {
        const field = `body.stages[${stageIndex}].services[${index}]`;
        return {
          serviceId: lookup(service, field),
          ...(service.criteria
            ? { criteria: { sourceId: lookup(service.criteria, `${field}.criteria`), secrets: service.criteria.secrets ?? [] } }
            : {}),
        };
      }),
    })),
    edges: body.edges.map((edge, edgeIndex) => ({
      from: edge.from,
      to: edge.to,
      gates: (edge.gates ?? []).map((gate, index): GateSpec => {
        if (gate.type !== 'JOB') return gate;
        const field = `body.edges[${edgeIndex}].gates[${index}].job`;
        const clusterId = clusterIds.get(gate.job.cluster);
        if (!clusterId) throw new HttpError(400, `gate ${gate.name}: no cluster ${gate.job.cluster}`, `${field}.cluster`);
        const job = { clusterId, namespace: gate.job.namespace, spec: jobSpecOf(gate.job, field) };
        return { name: gate.name, type: 'JOB', job, ...(gate.timeout ? { timeout: gate.timeout } : {}) };
      }),
    })),
  };
}

/**
 * A JOB gate's JobSpec: `raw` as given, or one Pod of `containers` that is not restarted and not retried (as
 * Plural's gate job spec builds it), with the labels, annotations, service account, node selector and tolerations.
 */
function jobSpecOf(job: JobGateBody, field: string): Record<string, unknown> {
  if (job.raw && job.containers) throw new HttpError(400, 'give raw or containers, not both', field);
  if (job.raw) return job.raw;
  if (!job.containers) throw new HttpError(400, 'a JOB gate needs raw (a JobSpec) or containers', field);
  const metadata = { ...(job.labels ? { labels: job.labels } : {}), ...(job.annotations ? { annotations: job.annotations } : {}) };
  return {
    backoffLimit: 0,
    template: {
      ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
      spec: {
        containers: job.containers,
        restartPolicy: 'Never',
        ...(job.serviceAccount ? { serviceAccountName: job.serviceAccount } : {}),
        ...(job.nodeSelector ? { nodeSelector: job.nodeSelector } : {}),
        ...(job.tolerations ? { tolerations: job.tolerations } : {}),
      },
    },
  };
}

/** What pipeline/explain.ts reads of an edge, from the pipeline, its gates' rows and the services. */
function edgeFacts(
  pipeline: Pipeline,
  edge: PipelineSpec['edges'][number],
  known: {
    context: PromotionContext | undefined;
    promoted: boolean;
    rows: readonly Gate[];
    names: ServiceNames;
    clusterNames: Map<string, string>;
  },
): EdgeFacts {
  const stage = (name: string) => pipeline.spec.stages.find((candidate) => candidate.name === name)?.services ?? [];
  const { context, rows, names } = known;
  return {
    from: edge.from,
    context,
    promoted: known.promoted,
    sources: stage(edge.from).map(({ serviceId }) => ({
      ...nameOf(names, serviceId),
      status: names.get(serviceId)?.service.status ?? 'missing',
    })),
    gates: edge.gates.flatMap((spec) => {
      const row = rows.find((candidate) => candidate.name === spec.name);
      if (!row) return [];
      const job =
        spec.type === 'JOB' && context
          ? {
              name: gateJobName(pipeline.id, edge, spec.name, context.id),
              cluster: known.clusterNames.get(spec.job.clusterId) ?? spec.job.clusterId,
            }
          : undefined;
      return [
        {
          spec,
          state: row.state,
          contextId: row.contextId,
          reason: row.reason,
          decidedBy: row.decidedBy,
          updatedAt: row.updatedAt,
          ...(job ? { job } : {}),
        },
      ];
    }),
    targets: stage(edge.to)
      .filter((target) => target.criteria)
      .map(({ serviceId }) => {
        const service = names.get(serviceId)?.service;
        return {
          ...nameOf(names, serviceId),
          pinnedBy: service?.pinned?.by ?? null,
          pendingRevision: service?.pendingRevisionNumber ?? null,
        };
      }),
  };
}

async function toApiPipeline(deps: PipelineRouteDeps, pipeline: Pipeline, names: ServiceNames): Promise<ApiPipeline> {
  const { db, runner } = deps;
  const [contexts, gates, clusters] = await Promise.all([currentContexts(db, pipeline.id), listGates(db, pipeline.id), listClusters(db)]);
  const clusterNames = new Map(clusters.map((cluster) => [cluster.id, cluster.name]));
  const apiContext = (context: PromotionContext | undefined) =>
    context
      ? {
          id: context.id,
          createdAt: context.createdAt,
          services: context.services.map(({ serviceId, revision, commit, chartVersion }) => ({
            ...nameOf(names, serviceId),
            revision,
            commit,
            chartVersion,
          })),
        }
      : null;
  return {
    id: pipeline.id,
    name: pipeline.name,
    stages: await Promise.all(
      pipeline.spec.stages.map(async (stage) => ({
        name: stage.name,
        services: stage.services.map(({ serviceId, criteria }) => ({
          ...nameOf(names, serviceId),
          status: names.get(serviceId)?.service.status ?? 'missing',
          revision: names.get(serviceId)?.service.revision.number ?? null,
          criteria: criteria ? { ...nameOf(names, criteria.sourceId), secrets: criteria.secrets } : null,
        })),
        context: apiContext(contexts.get(stage.name)),
        rollout: stage.rollout ?? null,
        rolloutStatus: (await deps.rollouts.latest(stageSubject(pipeline, stage.name))) ?? null,
      })),
    ),
    edges: await Promise.all(
      pipeline.spec.edges.map(async (edge) => {
        const context = contexts.get(edge.from);
        const rows = gates.filter((gate) => gate.from === edge.from && gate.to === edge.to);
        const promoted = context ? await wasPromoted(db, pipeline.id, edge, context.id) : false;
        return {
          from: edge.from,
          to: edge.to,
          gates: rows.map(({ name, type, state, contextId, decidedBy, reason, logs, forced, updatedAt }) => ({
            name,
            type,
            state,
            contextId,
            decidedBy,
            reason,
            logs,
            timeout: edge.gates.find((gate) => gate.name === name)?.timeout ?? null,
            forced,
            updatedAt,
          })),
          promoted,
          waitingFor: waitingFor(edgeFacts(pipeline, edge, { context, promoted, rows, names, clusterNames })),
          previews: newestPerService(await runner.promotionPreviews(pipeline, edge)).map((preview) => {
            const { cluster, name } = nameOf(names, preview.serviceId);
            return toApiPreview(preview, cluster, name);
          }),
        };
      }),
    ),
    createdAt: pipeline.createdAt,
    updatedAt: pipeline.updatedAt,
  };
}
