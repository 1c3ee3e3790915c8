/**
 * The auth proxy (Plural's): `/v1/clusters/{name}/proxy/*` is the cluster's Kubernetes API, reached through the
 * tunnel its agent holds open to this server, so a user reaches a cluster that takes no inbound connection.
 * Anyone with a role on the cluster may use it (rights.ts, action `proxy`); the agent sends each request on
 * impersonating the user and the groups their roles map to there (clusterGroups), so the cluster's own RBAC
 * decides the rest: by default the agent's ClusterRoles let readers read (never Secrets) and writers also act on
 * KluctlDeployments. Bodies stream both ways, so watches and `kubectl logs -f` work. Mutating requests are
 * recorded in the audit log with the status the cluster answered. With several replicas, a request reaching one
 * that does not hold the cluster's agent socket is passed on to the one that does (store/agent-tunnels.ts).
 * Answers carry only the headers and content types proxied-response.ts lets through: a workload's page reached
 * through a proxy subresource must not run or set cookies on Gantry's origin.
 */
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { auditRequest, isMutating } from '../audit-log.ts';
import { getCluster } from '../../store/clusters.ts';
import { NotFoundError } from '../../store/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { TunnelRequest } from '../../tunnel/mux.ts';
import { authorize, type Identity, requestUser, requireUser } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import type { PushChannels } from '../push-channels.ts';
import type { ReplicaSet } from '../replica-set.ts';
import { tunnelHolder } from '../../store/agent-tunnels.ts';
import { request as undiciRequest } from 'undici';
import { clusterGroups } from '../../rights.ts';
import { proxiedResponseHeaders } from '../../http/proxied-response.ts';
import { messageOf } from '../../problems.ts';

/** Marks a request one replica passed to the one holding the agent's socket. */
const HOP_HEADER = 'x-gantry-proxy-hop';
const HOP_BY_HOP = /^(host|connection|keep-alive|transfer-encoding|upgrade|te|trailer|proxy-.*)$/i;
/** What stays on this side of the tunnel: hop-by-hop headers, and the caller's credentials for Gantry. */
const LOCAL_HEADERS = new RegExp(`${HOP_BY_HOP.source}|^(authorization|cookie)$`, 'i');
const STATUS_REASONS: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 503: 'ServiceUnavailable' };

interface ProxyDeps {
  db: Kysely<Database>;
  channels: PushChannels;
  replicas: ReplicaSet;
}

export async function clusterProxyRoutes(app: FastifyInstance, deps: ProxyDeps): Promise<void> {
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
  deps: ProxyDeps,
  request: FastifyRequest<{ Params: { name: string; '*': string } }>,
  reply: FastifyReply,
): Promise<void> {
  const cluster = await getCluster(deps.db, request.params.name);
  authorize(request, 'proxy', { cluster });
  const tunnel = deps.channels.tunnel(cluster.id);
  if (!tunnel) {
    // One hop at most: the replica a request was passed to answers it or says the agent is gone.
    const holder = request.headers[HOP_HEADER] === undefined ? await holderUrl(deps, cluster.id) : undefined;
    if (!holder) throw new HttpError(503, `the agent of cluster ${cluster.name} is not connected`);
    return await passToReplica(holder, request, reply);
  }
  const user = requestUser(request);
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const stream = tunnel.open({
    method: request.method,
    path: `/${request.params['*']}${query}`,
    headers: headersWithout(request.headers, LOCAL_HEADERS),
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
    response.writeHead(head.status, proxiedResponseHeaders(head.headers));
    response.flushHeaders();
    await pipeline(stream, response);
  } catch (error) {
    if (!response.headersSent) {
      response.writeHead(502, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: `cluster ${cluster.name}: ${messageOf(error)}` }));
    } else {
      response.destroy();
    }
  }
  if (isMutating(request.method)) await auditRequest(deps.db, request, `${user.kind}:${user.name}`, response.statusCode);
}

/** The URL of the live replica holding the cluster's agent socket, when another replica holds it. */
async function holderUrl(deps: ProxyDeps, clusterId: string): Promise<string | undefined> {
  const holder = await tunnelHolder(deps.db, clusterId);
  if (holder === undefined || holder === deps.replicas.id) return undefined;
  return (await deps.replicas.live()).find((replica) => replica.id === holder)?.url;
}

/**
 * Sends the request on to the replica at `url` as it came (its credentials too: that replica checks them again and
 * records the audit event), streaming both ways.
 */
async function passToReplica(url: string, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const abort = new AbortController();
  reply.hijack();
  const response = reply.raw;
  response.once('close', () => {
    if (!response.writableFinished) abort.abort(new Error('the caller went away'));
  });
  try {
    const passed = await undiciRequest(`${url}${request.url}`, {
      method: request.method as 'GET',
      headers: { ...headersWithout(request.headers, HOP_BY_HOP), [HOP_HEADER]: '1' },
      body: isMutating(request.method) ? request.raw : null,
      signal: abort.signal,
    });
    // The replica holding the tunnel filtered them already; filtered again, they come out the same.
    response.writeHead(passed.statusCode, proxiedResponseHeaders(passed.headers));
    response.flushHeaders();
    await pipeline(passed.body, response);
  } catch (error) {
    if (abort.signal.aborted) return;
    if (response.headersSent) return void response.destroy();
    response.writeHead(502, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        message: `the replica at ${url} holding the agent's tunnel: ${messageOf(error)}`,
      }),
    );
  }
}

/** Kubernetes user names: a user's own name; a token with a role of its own is `gantry:token:<name>`. */
function impersonatedUser(user: Identity): string {
  return user.kind === 'user' ? user.name : `gantry:token:${user.name}`;
}

/** The headers but those `dropped` names. */
function headersWithout(headers: Record<string, string | string[] | undefined>, dropped: RegExp): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !dropped.test(name)) kept[name] = value;
  return kept;
}
