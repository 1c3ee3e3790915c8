/**
 * Previews (issue 43, part 1) over HTTP. Users: `POST /v1/clusters/:cluster/services/:name/previews {ref}` (writers of
 * the service; the source is resolved and packed as an update would, no revision is made) answers 202 with a
 * PENDING preview and kicks the agent, or with a DONE one of the same source and live state that is still good; `GET …/previews/:id` (readers) shows it, DONE with the agent's result once
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
import { HttpError } from '../../http/errors.ts';
import { getCluster } from '../../store/clusters.ts';
import { getPreview, type Preview } from '../../store/previews.ts';
import type { Database } from '../../store/schema.ts';
import { getService } from '../../store/services.ts';
import { agentCluster, authorize, requestUser, requireAgent, userAccess } from '../auth.ts';
import type { Previews } from '../previews.ts';

export interface PreviewRouteDeps {
  db: Kysely<Database>;
  previews: Previews;
  /** See DeployTokenPolicy.overlapMs. */
  tokenOverlapMs: number;
}

export function previewRoutes(app: FastifyInstance, deps: PreviewRouteDeps): void {
  const { db, previews } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers } = userAccess(db);
  const agents = { onRequest: [requireAgent(db, deps.tokenOverlapMs)] };
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
      const preview = await previews.ofRef(service, request.body.ref, requestUser(request).name);
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
    async (request) => await previews.forAgent(agentCluster(request)),
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
      await previews.reported(agentCluster(request), request.params.id, request.body);
      return reply.code(204).send(null);
    },
  );
}

export function toApiPreview(preview: Preview, cluster: string, service: string): Static<typeof PreviewSchema> {
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
    expiresAt: preview.expiresAt,
  };
}
