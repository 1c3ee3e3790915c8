/**
 * /v1/agent: what an agent may do with its cluster's deploy token, and nothing else: read its own cluster and
 * ping (its Kubernetes and agent versions, as Plural's pingCluster).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { getCluster, recordPing } from '../../store/clusters.ts';
import type { Database } from '../../store/schema.ts';
import { agentCluster, requireAgent } from '../auth.ts';
import { ClusterSchema, ErrorSchema, PingSchema } from '../schemas.ts';

export function agentRoutes(app: FastifyInstance, db: Kysely<Database>): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const agents = { onRequest: [requireAgent(db)] };
  const errors = { 400: ErrorSchema, 401: ErrorSchema };

  api.get('/v1/agent/cluster', { ...agents, schema: { tags: ['agent'], response: { 200: ClusterSchema, ...errors } } }, async (request) =>
    getCluster(db, agentCluster(request).name),
  );

  api.post(
    '/v1/agent/ping',
    { ...agents, schema: { tags: ['agent'], body: PingSchema, response: { 200: ClusterSchema, ...errors } } },
    async (request) => {
      const cluster = agentCluster(request);
      await recordPing(db, cluster.id, request.body);
      return getCluster(db, cluster.name);
    },
  );
}
