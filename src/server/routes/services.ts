/**
 * Services of a cluster: /v1/clusters/{cluster}/services/{name}, with their revisions, rollback and release (a rollback pins), and
 * /v1/services to list across clusters. Each write resolves the source (ref → commit, folder → tarball; helm
 * version → chart version, chart → wrapper project tarball) before anything is stored, so a bad ref, folder,
 * chart or version is a 400 naming the field and no revision. Reading a service needs a role on it (or its
 * cluster), writing one a writer's or admin's (rights.ts); lists show only what the caller may read.
 */
import { AGENT_SERVICE_NAME } from '../kept-agents.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { getCluster, listClusters } from '../../store/clusters.ts';
import { ConflictError } from '../../store/errors.ts';
import { listRepositories } from '../../store/repositories.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { listRevisions, pinnedSpec, releaseService, rollbackService } from '../../store/revisions.ts';
import { refuseRejected, rejectRevision } from '../rejections.ts';
import { rejectedDigests } from '../../store/rejections.ts';
import { clusterNamesById, toApiRejection } from './rejections.ts';
import {
  serviceSecrets,
  createService,
  getService,
  listServices,
  markServiceDeleted,
  removeService,
  type Revision,
  type Service,
  type ServiceSpec,
  updateService,
} from '../../store/services.ts';
import { authorize, mayDo, requestUser, userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { revisionDiff } from '../revision-diff.ts';
import { serviceDocs } from '../service-docs.ts';
import type { TarballStore } from '../tarballs.ts';
import { ErrorResponses } from '../../api/common.ts';
import {
  ClusterParams,
  DeleteServiceQuery,
  NewServiceSchema,
  RevisionDiffQuery,
  RevisionDiffSchema,
  RevisionSchema,
  RejectOutcomeSchema,
  RejectSchema,
  RevisionParams,
  RollbackSchema,
  ServiceDocsSchema,
  ServiceParams,
  ServiceSchema,
  type ServiceUpdateBody,
  ServiceUpdateSchema,
} from '../../api/services.ts';
import type { ServiceSources } from '../service-sources.ts';
import { checkedSpec, checkSecretValues, type SourceInput } from '../service-specs.ts';
import type { OutboundPolicy } from '../outbound.ts';
import { checkSourceRights } from '../source-rights.ts';
import { checkedContexts } from './contexts.ts';

export interface ServiceRouteDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** Source tarballs, compared by the revisions' diff. */
  tarballs: TarballStore;
  /** Called after a service changed, so its agent hears of it at once. */
  onChange: (service: Service) => void;
  /** The special addresses chart URLs may reach. */
  outbound: OutboundPolicy;
}

type ApiService = Static<typeof ServiceSchema>;

export function serviceRoutes(app: FastifyInstance, deps: ServiceRouteDeps): void {
  const { db, box, sources } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['services'];
  const path = '/v1/clusters/:cluster/services/:name';

  api.get(
    '/v1/services',
    {
      ...readers,
      schema: {
        tags,
        querystring: Type.Object({ cluster: Type.Optional(Type.String()) }),
        response: { 200: Type.Array(ServiceSchema), ...errors },
      },
    },
    async (request) => {
      const clusters = request.query.cluster ? [await getCluster(db, request.query.cluster)] : await listClusters(db);
      const visible = await Promise.all(
        clusters.map(async (cluster) =>
          (await listServices(db, { clusterId: cluster.id })).filter((service) => mayDo(request, 'read', { cluster, service })),
        ),
      );
      return await toApiServices(db, box, visible.flat());
    },
  );

  api.post(
    '/v1/clusters/:cluster/services',
    { ...readers, schema: { tags, params: ClusterParams, body: NewServiceSchema, response: { 201: ServiceSchema, ...errors } } },
    async (request, reply) => {
      const cluster = await getCluster(db, request.params.cluster);
      const body = request.body;
      // Creating needs write on the cluster itself, not a binding on the name alone (rights.ts).
      authorize(request, 'write', { cluster, service: { name: body.name }, creating: true });
      if (body.name === AGENT_SERVICE_NAME)
        throw new HttpError(
          400,
          `the name ${AGENT_SERVICE_NAME} is kept for the cluster's own agent (the server makes that service)`,
          'body.name',
        );
      await checkedContexts(db, body.contexts, 'body.contexts');
      const spec = await checkedSpec(sources, body, body.name, 'body');
      await checkSourceRights(request, deps, spec, undefined, 'body');
      checkSecretValues(spec, body.secretValues, 'body');
      const source = await sources.resolveSpec(spec, { fresh: true });
      await refuseRejected(db, { id: '', spec }, source.digest);
      const service = await createService(
        db,
        box,
        {
          clusterId: cluster.id,
          name: body.name,
          spec,
          configuration: body.configuration,
          secretValues: body.secretValues,
          dependencies: body.dependencies,
          protect: body.protect,
        },
        source,
        { by: requestUser(request).name, message: 'created' },
      );
      deps.onChange(service);
      return reply.code(201).send(await toApiService(db, box, service));
    },
  );

  api.get(path, { ...readers, schema: { tags, params: ServiceParams, response: { 200: ServiceSchema, ...errors } } }, async (request) =>
    toApiService(db, box, await authorizedService(db, request, 'read')),
  );

  api.patch(
    path,
    { ...readers, schema: { tags, params: ServiceParams, body: ServiceUpdateSchema, response: { 200: ServiceSchema, ...errors } } },
    async (request) => {
      const service = await authorizedService(db, request, 'write');
      const body = request.body;
      await checkedContexts(db, body.contexts, 'body.contexts');
      const spec = await checkedSpec(sources, mergedSource(service.spec, body), service.name, 'body');
      await checkSourceRights(request, deps, spec, service.spec, 'body');
      checkSecretValues(spec, body.secretValues, 'body');
      const source = await sources.resolveSpec(spec, { fresh: true });
      await refuseRejected(db, { id: service.id, spec }, source.digest);
      const { service: updated, revised } = await updateService(
        db,
        box,
        service.id,
        {
          spec,
          configuration: body.configuration,
          // Secret values belong to the chart: a service leaving helm drops them.
          secretValues: spec.helm ? body.secretValues : {},
          dependencies: body.dependencies,
          protect: body.protect,
        },
        source,
        { by: requestUser(request).name, message: 'updated' },
      );
      if (revised) deps.onChange(updated);
      return await toApiService(db, box, updated);
    },
  );

  api.delete(
    path,
    {
      ...readers,
      schema: {
        tags,
        params: ServiceParams,
        querystring: DeleteServiceQuery,
        response: { 202: ServiceSchema, 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      const service = await authorizedService(db, request, 'write');
      if (service.protect) throw new ConflictError('protected service', 'name', service.name);
      if (request.query.detach === 'true') {
        await removeService(db, service.id);
        return reply.code(204).send(null);
      }
      await markServiceDeleted(db, service.id);
      const marked = await getService(db, service.clusterId, service.name);
      deps.onChange(marked);
      // 202: the agent deletes the objects, then reports, and the service is gone.
      return reply.code(202).send(await toApiService(db, box, marked));
    },
  );

  api.get(
    `${path}/revisions`,
    { ...readers, schema: { tags, params: ServiceParams, response: { 200: Type.Array(RevisionSchema), ...errors } } },
    async (request) => {
      const service = await authorizedService(db, request, 'read');
      const rejected = await rejectedDigests(db, service);
      return (await listRevisions(db, service.id)).map((revision) => {
        const rejection = revision.digest === null ? undefined : rejected.get(revision.digest);
        const marked = rejection ? { rejected: { id: rejection.id, reason: rejection.reason, by: rejection.by, at: rejection.at } } : {};
        return { ...toApiRevision(revision), ...marked };
      });
    },
  );

  api.post(
    `${path}/revisions/:number/reject`,
    {
      ...readers,
      schema: { tags, params: RevisionParams, body: RejectSchema, response: { 200: RejectOutcomeSchema, ...errors } },
    },
    async (request) => {
      const service = await authorizedService(db, request, 'write');
      const fleetWide = request.body.fleetWide ?? false;
      // Fleet-wide reaches services the caller may not write: an admin's decision.
      if (fleetWide) authorize(request, 'administer');
      const outcome = await rejectRevision(db, service, Number(request.params.number), {
        fleetWide,
        reason: request.body.reason,
        by: requestUser(request).name,
      });
      for (const { service: moved } of outcome.moved) deps.onChange(moved);
      const names = await clusterNamesById(db);
      const named = (entry: Service) => ({ cluster: names.get(entry.clusterId) ?? entry.clusterId, name: entry.name });
      return {
        rejection: await toApiRejection(db, box, outcome.rejection),
        movedBack: outcome.moved.map(({ service: moved, from, to }) => ({ ...named(moved), from, to })),
        stuck: outcome.stuck.map(named),
      };
    },
  );

  api.get(
    `${path}/revisions/diff`,
    {
      ...readers,
      schema: { tags, params: ServiceParams, querystring: RevisionDiffQuery, response: { 200: RevisionDiffSchema, ...errors } },
    },
    async (request) => {
      const revisions = await listRevisions(db, (await authorizedService(db, request, 'read')).id);
      const numbered = (field: 'from' | 'to') => {
        const revision = revisions.find((candidate) => candidate.number === Number(request.query[field]));
        if (!revision) throw new HttpError(404, `the service has no revision ${request.query[field]}`, `querystring.${field}`);
        return revision;
      };
      const [from, to] = [numbered('from'), numbered('to')];
      const ensure = async (revision: Revision) => void (await sources.resolveSpec(pinnedSpec(revision.spec, revision)));
      return { from: from.number, to: to.number, files: await revisionDiff(deps.tarballs, from, to, ensure) };
    },
  );

  api.get(
    `${path}/docs`,
    { ...readers, schema: { tags, params: ServiceParams, response: { 200: ServiceDocsSchema, ...errors } } },
    async (request) => {
      const service = await authorizedService(db, request, 'read');
      const { revision } = service;
      const docsPath = service.spec.docsPath ?? null;
      if (!docsPath || !revision.digest) return { docsPath, revision: revision.number, files: [], truncated: false };
      const ensure = async () => void (await sources.resolveSpec(pinnedSpec(revision.spec, revision)));
      return { docsPath, revision: revision.number, ...(await serviceDocs(deps.tarballs, revision, docsPath, ensure)) };
    },
  );

  api.post(
    `${path}/rollback`,
    { ...readers, schema: { tags, params: ServiceParams, body: RollbackSchema, response: { 200: ServiceSchema, ...errors } } },
    async (request) => {
      const service = await authorizedService(db, request, 'write');
      const rolledBack = await rollbackService(db, service.id, request.body.revision, { by: requestUser(request).name });
      deps.onChange(rolledBack);
      return await toApiService(db, box, rolledBack);
    },
  );

  api.post(
    `${path}/release`,
    { ...readers, schema: { tags, params: ServiceParams, response: { 200: ServiceSchema, ...errors } } },
    async (request) => {
      const service = await authorizedService(db, request, 'write');
      if (!service.pinned) throw new HttpError(409, `service ${service.name} is not pinned: only a rollback pins a service`);
      const { service: released, moved } = await releaseService(db, service.id);
      if (moved) deps.onChange(released);
      return await toApiService(db, box, released);
    },
  );
}

/** The service the route's params name, once the caller may do `action` on it. @throws HttpError 403, NotFoundError */
async function authorizedService(
  db: Kysely<Database>,
  request: FastifyRequest<{ Params: { cluster: string; name: string } }>,
  action: 'read' | 'write',
): Promise<Service> {
  const cluster = await getCluster(db, request.params.cluster);
  const service = await getService(db, cluster.id, request.params.name);
  authorize(request, action, { cluster, service });
  if (action === 'write' && service.spec.agent) throw keptAgentError(cluster.name);
  if (action === 'write' && service.spec.capi) throw provisioningServiceError(cluster.name, service.spec.capi.cluster);
  return service;
}

/** A provisioned cluster's Cluster API objects are the server's to change (provisioned-clusters.ts), from the cluster's spec. */
function provisioningServiceError(management: string, cluster: string): HttpError {
  return new HttpError(
    409,
    `this service of cluster ${management} holds the Cluster API objects that make cluster ${cluster}, which the server keeps: ` +
      `change cluster ${cluster} instead`,
  );
}

/** The cluster's own agent service is the server's to change (kept-agents.ts); a change by hand could cut the agent off. */
function keptAgentError(cluster: string): HttpError {
  return new HttpError(
    409,
    `service ${AGENT_SERVICE_NAME} of cluster ${cluster} is its agent, which the server keeps: change the agent's version with ` +
      `gantry cluster agent-version ${cluster} VERSION (PUT /v1/clusters/${cluster}/agent-version)`,
  );
}

/**
 * The update's source fields merged over the current spec: git and helm merge field by field (helm values are
 * replaced whole), null drops one; the renderer is kept unless the update names one or helm comes or goes.
 */
function mergedSource(current: ServiceSpec, body: ServiceUpdateBody): SourceInput {
  const git = body.git === null ? undefined : body.git || current.git ? { ...current.git, ...body.git } : undefined;
  const helm = body.helm === null ? undefined : body.helm || current.helm ? { ...current.helm, ...body.helm } : undefined;
  const helmChanged = (helm === undefined) !== (current.helm === undefined);
  return {
    namespace: body.namespace ?? current.namespace,
    repository: body.repository ?? (git ? current.repositoryId : undefined),
    git,
    helm,
    renderer: body.renderer ?? (helmChanged ? undefined : current.renderer),
    contexts: body.contexts ?? current.contexts,
    syncConfig: body.syncConfig === null ? undefined : (body.syncConfig ?? current.syncConfig),
    templated: body.templated ?? current.templated,
    version: body.version === null ? undefined : (body.version ?? current.version),
    docsPath: body.docsPath === null ? undefined : (body.docsPath ?? current.docsPath),
    sources:
      body.sources === null
        ? undefined
        : (body.sources ?? current.sources?.map(({ path, repositoryId, git }) => ({ path, repository: repositoryId, git }))),
    renderers: body.renderers === null ? undefined : (body.renderers ?? current.renderers),
  };
}

async function toApiService(db: Kysely<Database>, box: SecretBox, service: Service): Promise<ApiService> {
  return (await toApiServices(db, box, [service]))[0]!;
}

/** The API's view of services: their clusters, repositories, configuration and secret value keys read once for all. */
async function toApiServices(db: Kysely<Database>, box: SecretBox, services: readonly Service[]): Promise<ApiService[]> {
  const [clusters, repositories, secrets] = await Promise.all([
    listClusters(db),
    listRepositories(db, box),
    serviceSecrets(
      db,
      box,
      services.map((service) => service.id),
    ),
  ]);
  const clusterNames = new Map(clusters.map((cluster) => [cluster.id, cluster.name]));
  const repositoryUrls = new Map(repositories.map((repository) => [repository.id, repository.url]));
  return services.map((service) => ({
    id: service.id,
    cluster: clusterNames.get(service.clusterId) ?? service.clusterId,
    name: service.name,
    namespace: service.spec.namespace,
    repository:
      service.spec.repositoryId === undefined
        ? null
        : { id: service.spec.repositoryId, url: repositoryUrls.get(service.spec.repositoryId) ?? '' },
    git: service.spec.git ?? null,
    helm: service.spec.helm ?? null,
    ...(service.spec.agent ? { agent: service.spec.agent } : {}),
    ...(service.spec.capi ? { provisions: service.spec.capi.cluster } : {}),
    renderer: service.spec.renderer,
    ...(service.spec.syncConfig ? { syncConfig: service.spec.syncConfig } : {}),
    templated: service.spec.templated !== false,
    ...(service.spec.version ? { version: service.spec.version } : {}),
    ...(service.spec.docsPath ? { docsPath: service.spec.docsPath } : {}),
    ...(service.spec.sources
      ? {
          sources: service.spec.sources.map(({ path, repositoryId, git }) => ({
            path,
            repository: { id: repositoryId, url: repositoryUrls.get(repositoryId) ?? '' },
            git,
          })),
        }
      : {}),
    ...(service.spec.renderers ? { renderers: service.spec.renderers } : {}),
    configuration: Object.keys(secrets.get(service.id)?.configuration ?? {}).sort(),
    secretValues: Object.keys(secrets.get(service.id)?.secretValues ?? {}).sort(),
    contexts: service.spec.contexts ?? [],
    dependencies: service.dependencies,
    protect: service.protect,
    status: service.status,
    errors: service.errors,
    revision: toApiRevision(service.revision),
    pinned: service.pinned,
    pendingRevision: service.pendingRevisionNumber,
    appliedRevision: service.appliedRevisionNumber,
    components: service.components,
    deleting: service.deletedAt !== null,
    createdAt: service.createdAt,
  }));
}

function toApiRevision(revision: Revision): Static<typeof RevisionSchema> {
  return {
    id: revision.id,
    number: revision.number,
    commit: revision.commit,
    digest: revision.digest,
    chartVersion: revision.chartVersion,
    ...(revision.sourceCommits ? { sourceCommits: revision.sourceCommits } : {}),
    namespace: revision.spec.namespace,
    git: revision.spec.git ?? null,
    helm: revision.spec.helm ?? null,
    ...(revision.spec.agent ? { agent: revision.spec.agent } : {}),
    renderer: revision.spec.renderer,
    contexts: revision.spec.contexts ?? [],
    version: revision.spec.version ?? null,
    message: revision.message,
    createdBy: revision.createdBy,
    createdAt: revision.createdAt,
  };
}
