/**
 * /v1/replicas: the server replicas that are up (heartbeat within the live window) and the git repositories each
 * fetches, so an operator can see how the work is spread and that a stopped replica's share moved.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { listRepositories } from '../../store/repositories.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { userAccess } from '../auth.ts';
import { type ReplicaSet, rendezvousOwner } from '../replica-set.ts';
import { ErrorResponses } from '../../api/common.ts';
import { ReplicaSchema } from '../../api/repositories.ts';

export function replicaRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; box: SecretBox; replicas: ReplicaSet }): void {
  const { db, box, replicas } = deps;
  const { readers } = userAccess(db);
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get(
      '/v1/replicas',
      { ...readers, schema: { tags: ['replicas'], response: { 200: Type.Array(ReplicaSchema), ...ErrorResponses } } },
      async () => {
        const [live, repositories] = await Promise.all([replicas.live(), listRepositories(db, box)]);
        const ids = live.map((replica) => replica.id);
        return live.map((replica) => ({
          ...replica,
          repositories: repositories.filter((repository) => rendezvousOwner(repository.id, ids) === replica.id).map((r) => r.url),
        }));
      },
    );
}
