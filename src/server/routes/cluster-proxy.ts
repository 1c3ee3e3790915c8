/**
 * The auth proxy (Plural's): `/v1/clusters/{name}/proxy/*` is the cluster's Kubernetes API, reached through the
 * tunnel its agent holds open to this server, so a user reaches a cluster that takes no inbound connection.
 * Anyone with a role on the cluster may use it (rights.ts, action `proxy`); the agent sends each request on
 * impersonating the user and the groups their roles map to there (clusterGroups), so the cluster's own RBAC
 * decides the rest: by default the agent's ClusterRoles let readers read (never Secrets) and writers also act on
 * KluctlDeployments. Bodies stream both ways, so watches and `kubectl logs -f` work. Mutating requests are
 * recorded in the audit log with the status the cluster answered.
 */
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { recordAuditEvent } from '../../store/audit.ts';
import { getCluster } from '../../store/clusters.ts';
import { NotFoundError } from '../../store/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { TunnelRequest } from '../../tunnel/mux.ts';
import { authorize, type Identity, requestUser, requireUser } from '../auth.ts';
import { HttpError } from '../errors.ts';
import type { PushChannels } from '../push-channels.ts';
import { clusterGroups } from '../../rights.ts';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const STATUS_REASONS: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 503: 'ServiceUnavailable' };
/** The caller's headers that stay on this side: its credentials for Gantry, and hop-by-hop ones. */
const LOCAL_HEADERS = /^(authorization|cookie|host|connection|keep-alive|transfer-encoding|upgrade|proxy-.*|te|trailer)$/i;

export async function clusterProxyRoutes(app: FastifyInstance, deps: { db: Kysely<Database>; channels: PushChannels }): Promise<void> {
  await app.register(async (scope) => {
    // Bodies pass through unread: the cluster's API server parses them.
    scope.removeAllContentTypeParsers();
    // kubectl reads errors as Kubernetes Status objects, so Gantry's refusals are printed as the API server's are.
    scope.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
      const code = error.statusCode ?? (error instanceof NotFoundError ? 404 : 500);
      const message = code === 500 ? 'internal error; see the server log' : error.message;
      if (code === 500) reply.log.error({ err: error }, 'proxy request failed');
      return reply
        .code(code)
        .send({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: STATUS_REASONS[code] ?? 'InternalError', code });
    });
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url: '/v1/clusters/:name/proxy/*',
      schema: { hide: true },
      onRequest: [requireUser(deps.db)],
      handler: (request, reply) => proxy(deps, request as FastifyRequest<{ Params: { name: string; '*': string } }>, reply),
    });
  });
}

async function proxy(
  deps: { db: Kysely<Database>; channels: PushChannels },
  request: FastifyRequest<{ Params: { name: string; '*': string } }>,
  reply: FastifyReply,
): Promise<void> {
  const cluster = await getCluster(deps.db, request.params.name);
  authorize(request, 'proxy', { cluster });
  const tunnel = deps.channels.tunnel(cluster.id);
  if (!tunnel) throw new HttpError(503, `the agent of cluster ${cluster.name} is not connected to this server`);
  const user = requestUser(request);
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const stream = tunnel.open({
    method: request.method,
    path: `/${request.params['*']}${query}`,
    headers: passedHeaders(request.headers),
    user: impersonatedUser(user),
    groups: clusterGroups(user.grants, cluster),
  } satisfies TunnelRequest);
  reply.hijack();
  const response = reply.raw;
  response.once('close', () => {
    if (!response.writableFinished) stream.destroy(new Error('the caller went away'));
  });
  void pipeline(request.raw, stream, { end: true }).catch(() => undefined);
  try {
    const head = await stream.head;
    response.writeHead(head.status, head.headers);
    response.flushHeaders();
    await pipeline(stream, response);
  } catch (error) {
    if (!response.headersSent) {
      response.writeHead(502, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: `cluster ${cluster.name}: ${error instanceof Error ? error.message : String(error)}` }));
    } else {
      response.destroy();
    }
  }
  if (!READ_METHODS.has(request.method)) await audit(deps.db, request, user, response.statusCode);
}

/** Kubernetes user names: a user's own name; a token with a role of its own is `gantry:token:<name>`. */
function impersonatedUser(user: Identity): string {
  return user.kind === 'user' ? user.name : `gantry:token:${user.name}`;
}

function passedHeaders(headers: FastifyRequest['headers']): Record<string, string | string[]> {
  const passed: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !LOCAL_HEADERS.test(name)) passed[name] = value;
  return passed;
}

async function audit(db: Kysely<Database>, request: FastifyRequest, user: Identity, status: number): Promise<void> {
  const target = request.url.split('?')[0] ?? request.url;
  await recordAuditEvent(db, {
    at: new Date().toISOString(),
    actor: `${user.kind}:${user.name}`,
    action: `${request.method} /v1/clusters/:name/proxy/*`,
    target,
    status,
  }).catch((error: unknown) => request.log.error({ err: error }, 'audit event not recorded'));
}
