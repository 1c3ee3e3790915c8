/**
 * /v1/repositories: git repositories services are sourced from. Credentials go in, sealed, and never come out;
 * a new repository is fetched at once, so its health says within seconds whether the server can reach it.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { createRepository, deleteRepository, getRepository, listRepositories } from '../../store/repositories.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { userAccess } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import { checkOutboundUrl, type OutboundPolicy } from '../outbound.ts';
import type { RepositoryPoller } from '../repository-poller.ts';
import { ErrorResponses } from '../../api/common.ts';
import { NewRepositorySchema, RepositoryParams, RepositorySchema } from '../../api/repositories.ts';

/** How long adding a repository waits for its first fetch before answering with health still unknown. */
const FIRST_FETCH_WAIT_MS = 15_000;

export function repositoryRoutes(
  app: FastifyInstance,
  deps: { db: Kysely<Database>; box: SecretBox; poller: RepositoryPoller; outbound: OutboundPolicy },
): void {
  const { db, box, poller } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;
  const tags = ['repositories'];

  api.get('/v1/repositories', { ...readers, schema: { tags, response: { 200: Type.Array(RepositorySchema), ...errors } } }, async () =>
    listRepositories(db, box),
  );

  api.post(
    '/v1/repositories',
    { ...admins, schema: { tags, body: NewRepositorySchema, response: { 201: RepositorySchema, ...errors } } },
    async (request, reply) => {
      const { credentials } = request.body;
      if (credentials?.identity !== undefined && credentials.known_hosts === undefined) {
        throw new HttpError(
          400,
          'an SSH identity needs known_hosts: host keys are pinned, never trusted on first use',
          'body.credentials.known_hosts',
        );
      }
      // The server fetches it at once and at every poll: an admin's URL is held to the same policy as a chart's.
      await checkOutboundUrl(request.body.url, deps.outbound, 'body.url', 'pass');
      const repository = await createRepository(db, box, request.body);
      await Promise.race([poller.poll(repository.id, repository.url), delay(FIRST_FETCH_WAIT_MS)]);
      return reply.code(201).send(await getRepository(db, box, repository.id));
    },
  );

  api.get(
    '/v1/repositories/:id',
    { ...readers, schema: { tags, params: RepositoryParams, response: { 200: RepositorySchema, ...errors } } },
    async (request) => getRepository(db, box, request.params.id),
  );

  api.delete(
    '/v1/repositories/:id',
    { ...admins, schema: { tags, params: RepositoryParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await deleteRepository(db, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
