/**
 * /v1/rejections: the revisions (folder contents) rejected for a service or fleet-wide (server/rejections.ts),
 * newest first, for admins; an admin's DELETE lifts one, after which the content may run again (a new commit or an
 * update brings it; nothing moves at once). Rejecting is a service's route: POST …/revisions/:number/reject.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { ErrorResponses } from '../../api/common.ts';
import { RejectionSchema } from '../../api/services.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { listClusters } from '../../store/clusters.ts';
import { deleteRejection, listRejections, type Rejection } from '../../store/rejections.ts';
import { getRepository } from '../../store/repositories.ts';
import type { Database } from '../../store/schema.ts';
import { getServiceById } from '../../store/services.ts';
import { userAccess } from '../auth.ts';

export function rejectionRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; box: SecretBox }): void {
  const { db, box } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { admins } = userAccess(db);
  const tags = ['services'];
  api.get(
    '/v1/rejections',
    { ...admins, schema: { tags, response: { 200: Type.Array(RejectionSchema), ...ErrorResponses } } },
    async () => await Promise.all((await listRejections(db)).map((rejection) => toApiRejection(db, box, rejection))),
  );
  api.delete(
    '/v1/rejections/:id',
    { ...admins, schema: { tags, params: Type.Object({ id: Type.String() }), response: { 204: Type.Null(), ...ErrorResponses } } },
    async (request, reply) => {
      await deleteRejection(db, request.params.id);
      return reply.code(204).send(null);
    },
  );
}

/** A rejection as the API shows it: its repository by URL, its service by cluster and name. */
export async function toApiRejection(db: Kysely<Database>, box: SecretBox, rejection: Rejection): Promise<Static<typeof RejectionSchema>> {
  const repository = await getRepository(db, box, rejection.repositoryId).catch(() => undefined);
  const service = rejection.serviceId === null ? undefined : await getServiceById(db, rejection.serviceId).catch(() => undefined);
  const clusters = await clusterNamesById(db);
  return {
    id: rejection.id,
    repository: repository?.url ?? rejection.repositoryId,
    folder: rejection.folder,
    commit: rejection.commit,
    digest: rejection.digest,
    service: service ? { cluster: clusters.get(service.clusterId) ?? service.clusterId, name: service.name } : null,
    reason: rejection.reason,
    by: rejection.by,
    at: rejection.at,
  };
}

export async function clusterNamesById(db: Kysely<Database>): Promise<Map<string, string>> {
  return new Map((await listClusters(db)).map((cluster) => [cluster.id, cluster.name]));
}
