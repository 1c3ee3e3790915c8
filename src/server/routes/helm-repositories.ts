/**
 * Helm repositories with credentials (Plural's HelmRepository, basic auth): admins put a URL's username and
 * password, which the server seals and uses whenever a service's `helm.url` is that URL; readers list the URLs only.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { deleteHelmRepository, listHelmRepositories, upsertHelmRepository } from '../../store/helm-repositories.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { ErrorResponses, ServiceIdParams } from '../../api/common.ts';
import { HelmRepositorySchema, HelmRepositoryUpsertSchema } from '../../api/repositories.ts';

export function helmRepositoryRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; box: SecretBox }): void {
  const { db, box } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['helmrepositories'];

  api.get(
    '/v1/helmrepositories',
    { ...readers, schema: { tags, response: { 200: Type.Array(HelmRepositorySchema), ...errors } } },
    async () => listHelmRepositories(db),
  );
  api.put(
    '/v1/helmrepositories',
    { ...admins, schema: { tags, body: HelmRepositoryUpsertSchema, response: { 200: HelmRepositorySchema, ...errors } } },
    async (request) => {
      const { url, username, password } = request.body;
      if ((username === undefined) !== (password === undefined))
        throw new HttpError(400, 'username and password go together', username === undefined ? 'body.username' : 'body.password');
      return await upsertHelmRepository(db, box, { url, ...(username && password ? { credentials: { username, password } } : {}) });
    },
  );
  api.delete(
    '/v1/helmrepositories/:id',
    { ...admins, schema: { tags, params: ServiceIdParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      if (!(await deleteHelmRepository(db, request.params.id))) throw new HttpError(404, `helm repository ${request.params.id} not found`);
      return reply.code(204).send(null);
    },
  );
}
