/**
 * Previews (issue 43, part 1) over HTTP. Users: `POST /v1/clusters/:cluster/services/:name/previews {ref}` (writers of
 * the service; the source is resolved and packed as an update would, no revision is made) answers 202 with a
 * PENDING preview and kicks the agent; `GET …/previews/:id` (readers) shows it, DONE with the agent's result once
 * it reported. Agents: `GET /v1/agent/previews` lists their cluster's PENDING previews, each with the service as a
 * sync would get it but at the preview's source; `POST /v1/agent/previews/:id` reports the result (409 once done,
 * 404 for another cluster's). The tarball of a PENDING preview is served to its agent like a revision's.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { ErrorResponses } from '../../api/common.ts';
import { AgentPreviewSchema, NewPreviewSchema, PreviewReportSchema, PreviewSchema } from '../../api/previews.ts';
import { ServiceParams } from '../../api/services.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { HttpError } from '../../http/errors.ts';
import { getCluster } from '../../store/clusters.ts';
import { createPreview, finishPreview, getPreview, pendingPreviews, type Preview } from '../../store/previews.ts';
import { pinnedSpec } from '../../store/revisions.ts';
import type { Database } from '../../store/schema.ts';
import { getService, type Service } from '../../store/services.ts';
import { agentServices } from '../agent-services.ts';
import { agentCluster, authorize, requestUser, requireAgent, userAccess } from '../auth.ts';
import type { ServiceSources } from '../service-sources.ts';

export interface PreviewRouteDeps {
  db: Kysely<Database>;
  box: SecretBox;
  sources: ServiceSources;
  /** Kicks the service's agent: it lists its previews on the poll that follows. */
  onChange: (service: Service) => void;
}

export function previewRoutes(app: FastifyInstance, deps: PreviewRouteDeps): void {
  const { db, box, sources } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers } = userAccess(db);
  const agents = { onRequest: [requireAgent(db)] };
  const errors = ErrorResponses;
  const tags = ['services'];
  const path = '/v1/clusters/:cluster/services/:name/previews';

  api.post(
    path,
    { ...readers, schema: { tags, params: ServiceParams, body: NewPreviewSchema, response: { 202: PreviewSchema, ...errors } } },
    async (request, reply) => {
      const cluster = await getCluster(db, request.params.cluster);
      const service = await getService(db, cluster.id, request.params.name);
      // It runs on the service's cluster, as a sync does: a writer's right.
      authorize(request, 'write', { cluster, service });
      if (!service.spec.git || !service.spec.repositoryId)
        throw new HttpError(400, `service ${service.name} has no git source to preview at another ref`, 'body.ref');
      const spec = { ...service.spec, git: { ...service.spec.git, ref: request.body.ref } };
      const fields = { repository: 'body.ref', ref: 'body.ref', folder: 'body.ref', helm: 'body.ref' };
      const source = await sources.resolveSpec(spec, { fresh: true, fields });
      const preview = await createPreview(db, {
        serviceId: service.id,
        clusterId: cluster.id,
        ref: request.body.ref,
        commit: source.commit,
        digest: source.digest,
        spec: pinnedSpec(spec, { commit: source.commit, chartVersion: null }),
        requestedBy: requestUser(request).name,
      });
      deps.onChange(service);
      return reply.code(202).send(toApiPreview(preview, cluster.name, service.name));
    },
  );

  api.get(
    `${path}/:id`,
    {
      ...readers,
      schema: {
        tags,
        params: Type.Object({ cluster: Type.String(), name: Type.String(), id: Type.String() }),
        response: { 200: PreviewSchema, ...errors },
      },
    },
    async (request) => {
      const cluster = await getCluster(db, request.params.cluster);
      const service = await getService(db, cluster.id, request.params.name);
      authorize(request, 'read', { cluster, service });
      const preview = await getPreview(db, request.params.id);
      if (preview.serviceId !== service.id) throw new HttpError(404, `service ${service.name} has no preview ${request.params.id}`);
      return toApiPreview(preview, cluster.name, service.name);
    },
  );

  api.get(
    '/v1/agent/previews',
    { ...agents, schema: { tags: ['agent'], response: { 200: Type.Array(AgentPreviewSchema), ...errors } } },
    async (request) => {
      const cluster = agentCluster(request);
      const pending = await pendingPreviews(db, cluster.id);
      if (pending.length === 0) return [];
      const services = new Map((await agentServices(db, box, cluster)).map((service) => [service.id, service]));
      return pending.flatMap((preview) => {
        const service = services.get(preview.serviceId);
        if (!service) return [];
        const revision = { id: preview.id, number: 0, commit: preview.commit, digest: preview.digest };
        return [{ id: preview.id, service: { ...service, revision, folder: preview.spec.git?.folder ?? service.folder } }];
      });
    },
  );

  api.post(
    '/v1/agent/previews/:id',
    {
      ...agents,
      schema: {
        tags: ['agent'],
        params: Type.Object({ id: Type.String() }),
        body: PreviewReportSchema,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      const preview = await getPreview(db, request.params.id).catch(() => undefined);
      if (!preview || preview.clusterId !== agentCluster(request).id)
        throw new HttpError(404, `this cluster has no preview ${request.params.id}`);
      if (!(await finishPreview(db, preview.id, request.body))) throw new HttpError(409, `preview ${preview.id} is done already`);
      return reply.code(204).send(null);
    },
  );
}

/** The digest of a PENDING preview of the service, which its agent may download like a revision's. */
export async function previewDigest(db: Kysely<Database>, service: Service, digest: string): Promise<Preview | undefined> {
  return (await pendingPreviews(db, service.clusterId)).find((preview) => preview.serviceId === service.id && preview.digest === digest);
}

function toApiPreview(preview: Preview, cluster: string, service: string): Static<typeof PreviewSchema> {
  return {
    id: preview.id,
    cluster,
    service,
    ref: preview.ref,
    commit: preview.commit,
    state: preview.state,
    result: preview.result as Static<typeof PreviewSchema>['result'],
    requestedBy: preview.requestedBy,
    createdAt: preview.createdAt,
    finishedAt: preview.finishedAt,
  };
}
