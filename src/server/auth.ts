/**
 * Who is calling: users with API tokens, agents with their cluster's deploy token, both as
 * `Authorization: Bearer <token>`. Route options pick one with `onRequest: [requireUser(...)]` or
 * `[requireAgent(...)]`; an agent's token is never accepted where a user's is needed, and the reverse.
 */
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Kysely } from 'kysely';
import { type ApiIdentity, identityForApiToken, type Role } from '../store/api-tokens.ts';
import { type Cluster, clusterForDeployToken } from '../store/clusters.ts';
import type { Database } from '../store/schema.ts';
import { HttpError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser. */
    user?: ApiIdentity;
    /** Set by requireAgent: the cluster whose deploy token was presented. */
    agentCluster?: Cluster;
  }
}

/** Users whose role is one of `roles` (admin is always allowed). */
export function requireUser(db: Kysely<Database>, roles: readonly Role[] = []): onRequestHookHandler {
  return async (request) => {
    const user = await identityForApiToken(db, bearerToken(request));
    if (!user) throw new HttpError(401, 'unknown or revoked API token');
    if (user.role !== 'admin' && !roles.includes(user.role))
      throw new HttpError(403, `role ${user.role} may not ${request.method} ${request.routeOptions.url}`);
    request.user = user;
  };
}

/**
 * Route options of the user API: anyone with a token reads (`readers`), admins write (`admins`), approvers and
 * admins decide pipeline gates (`approvers`).
 */
export function userAccess(db: Kysely<Database>): {
  readers: { onRequest: onRequestHookHandler[] };
  admins: { onRequest: onRequestHookHandler[] };
  approvers: { onRequest: onRequestHookHandler[] };
} {
  return {
    readers: { onRequest: [requireUser(db, ['reader', 'approver'])] },
    admins: { onRequest: [requireUser(db)] },
    approvers: { onRequest: [requireUser(db, ['approver'])] },
  };
}

/** Agents: the deploy token of a cluster. */
export function requireAgent(db: Kysely<Database>): onRequestHookHandler {
  return async (request) => {
    const cluster = await clusterForDeployToken(db, bearerToken(request));
    if (!cluster) throw new HttpError(401, 'unknown or revoked deploy token');
    request.agentCluster = cluster;
  };
}

/** The cluster requireAgent authenticated. @throws HttpError 401 on a route without requireAgent. */
export function agentCluster(request: FastifyRequest): Cluster {
  if (!request.agentCluster) throw new HttpError(401, 'this route needs a deploy token');
  return request.agentCluster;
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw new HttpError(401, 'missing credentials: send Authorization: Bearer <token>');
  return match[1];
}
