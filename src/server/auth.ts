/**
 * Who is calling: users by their browser session (the HttpOnly cookie `gantry_session`) or an API token, and
 * agents by their cluster's deploy token, tokens as `Authorization: Bearer <token>`. Route options pick one with
 * `onRequest: [requireUser(...)]` or `[requireAgent(...)]`; an agent's token is never accepted where a user's is
 * needed, and the reverse. What an identity may do is rights.ts's `allows`, asked through `authorize`.
 */
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Kysely } from 'kysely';
import { identityForApiToken } from '../store/api-tokens.ts';
import { type Cluster, clusterForDeployToken } from '../store/clusters.ts';
import { type DeployTokenUse, recordFirstUse } from '../store/deploy-tokens.ts';
import { grantsOf } from '../store/role-bindings.ts';
import type { Database } from '../store/schema.ts';
import { sessionUser } from '../store/sessions.ts';
import { getUserById } from '../store/users.ts';
import { HttpError } from '../http/errors.ts';
import { type Action, allows, type Grant, type Target } from '../rights.ts';

/** The session cookie's name. */
export const SESSION_COOKIE = 'gantry_session';

/** A user (logged in, or through a token acting as them) or a token with a role of its own. */
export interface Identity {
  kind: 'user' | 'token';
  id: string;
  name: string;
  groups: string[];
  grants: Grant[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser. */
    user?: Identity;
    /** Set by requireAgent: the cluster whose deploy token was presented. */
    agentCluster?: Cluster;
    /** Set by requireAgent: that deploy token's record. */
    agentToken?: DeployTokenUse;
  }
}

/** Any authenticated user or token; what they may do is checked with `authorize`. */
export function requireUser(db: Kysely<Database>): onRequestHookHandler {
  return async (request) => {
    request.user = await identify(db, request);
  };
}

/** Requires `action` on `target` of requireUser's identity. @throws HttpError 403 naming the identity and action. */
export function authorize(request: FastifyRequest, action: Action, target: Target = {}): void {
  const user = requestUser(request);
  if (allows(user.grants, action, target)) return;
  const on = describeTarget(target);
  const roles = [...new Set(user.grants.map((grant) => grant.role))].join(', ') || 'no role';
  throw new HttpError(403, `${user.kind} ${user.name} (${roles}) may not ${action}${on ? ` ${on}` : ''}: ${request.method} ${request.url}`);
}

/** Whether requireUser's identity may do `action` on `target`, for filtering lists. */
export function mayDo(request: FastifyRequest, action: Action, target: Target): boolean {
  return allows(requestUser(request).grants, action, target);
}

/** requireUser's identity. @throws HttpError 401 on a route without requireUser. */
export function requestUser(request: FastifyRequest): Identity {
  if (!request.user) throw new HttpError(401, 'this route needs a user');
  return request.user;
}

/**
 * Route options of the user API: `readers` for anyone with a role anywhere (lists are filtered by the route),
 * `admins` for the fleet's configuration (an admin bound to everything).
 */
export function userAccess(db: Kysely<Database>): {
  readers: { onRequest: onRequestHookHandler[] };
  admins: { onRequest: onRequestHookHandler[] };
} {
  const authenticate = requireUser(db);
  return {
    readers: { onRequest: [authenticate, async (request) => authorize(request, 'read')] },
    admins: { onRequest: [authenticate, async (request) => authorize(request, 'administer')] },
  };
}

/**
 * Agents: a valid deploy token of a cluster. A token's first request starts the expiry of its cluster's older tokens,
 * `overlapMs` later (deploy-tokens.ts).
 */
export function requireAgent(db: Kysely<Database>, overlapMs: number): onRequestHookHandler {
  return async (request) => {
    const found = await clusterForDeployToken(db, bearerToken(request));
    if (!found) throw new HttpError(401, 'unknown, revoked or expired deploy token');
    if (found.token.firstUsedAt === null) await recordFirstUse(db, found.cluster.id, found.token, overlapMs);
    request.agentCluster = found.cluster;
    request.agentToken = found.token;
  };
}

/** The deploy token requireAgent authenticated. @throws HttpError 401 on a route without requireAgent. */
export function agentToken(request: FastifyRequest): DeployTokenUse {
  if (!request.agentToken) throw new HttpError(401, 'this route needs a deploy token');
  return request.agentToken;
}

/** The cluster requireAgent authenticated. @throws HttpError 401 on a route without requireAgent. */
export function agentCluster(request: FastifyRequest): Cluster {
  if (!request.agentCluster) throw new HttpError(401, 'this route needs a deploy token');
  return request.agentCluster;
}

/** The caller by bearer token, else by session cookie. @throws HttpError 401 for missing or unknown credentials. */
async function identify(db: Kysely<Database>, request: FastifyRequest): Promise<Identity> {
  const session = request.cookies[SESSION_COOKIE];
  if (request.headers.authorization === undefined && session !== undefined) {
    const userId = await sessionUser(db, session);
    const user = userId === undefined ? undefined : await userIdentity(db, userId);
    if (!user) throw new HttpError(401, 'your session has ended: log in again');
    return user;
  }
  const token = await identityForApiToken(db, bearerToken(request));
  if (!token) throw new HttpError(401, 'unknown or revoked API token');
  if (token.userId === undefined)
    return { kind: 'token', id: token.id, name: token.name, groups: [], grants: [{ role: token.role, scope: 'all' }] };
  const user = await userIdentity(db, token.userId);
  if (!user) throw new HttpError(401, 'the user of this API token is gone');
  return user;
}

/** A user, whether by session or by a token acting as them. */
async function userIdentity(db: Kysely<Database>, userId: string): Promise<Identity | undefined> {
  const user = await getUserById(db, userId);
  if (!user) return undefined;
  return { kind: 'user', id: user.id, name: user.name, groups: user.groups, grants: await grantsOf(db, user) };
}

function describeTarget(target: Target): string {
  if (target.pipeline !== undefined) return `pipeline ${target.pipeline}`;
  if (target.service && target.cluster) return `service ${target.cluster.name}/${target.service.name}`;
  if (target.cluster) return `cluster ${target.cluster.name}`;
  return '';
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw new HttpError(401, 'missing credentials: log in, or send Authorization: Bearer <token>');
  return match[1];
}
