/**
 * `gantry webui` as a function: the web UI's KluctlDeployments and Live pages for one kubeconfig, without a fleet
 * server, as Kluctl's `kluctl webui run` serves its UI. It serves web/dist and the few /v1 routes those pages call:
 *  - `/v1/clusters/local/proxy/*`: the kubeconfig's API server, forwarded with the kubeconfig's own credentials
 *    (agent/api-proxy.ts, as the agent forwards the auth proxy), so the cluster's RBAC for that user decides;
 *  - `/v1/me`: a local identity named after the kubeconfig's user, and `/v1/ui-config`, which tells the UI to show
 *    only cluster `local`'s KluctlDeployments and Live pages;
 *  - `/v1/access-review`: `write` is what a SelfSubjectAccessReview says of patching KluctlDeployments, so the
 *    action buttons show only to a user who may press them.
 * There is no login: whoever reaches the port acts with the kubeconfig's credentials. So it listens on 127.0.0.1 by
 * default, and answers only requests naming it as Host (a web page elsewhere cannot rebind a name to it) that a
 * page of its own sent (a browser's Sec-Fetch-Site and Origin say so).
 */
import { fastify, LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { KubeConfig } from '@kubernetes/client-node';
import { PassThrough, Readable } from 'node:stream';
import type { Static } from 'typebox';
import { apiServerForwarder, type ApiServerForwarder } from '../kube/api-forwarder.ts';
import type { Logger } from '../logger.ts';
import { registerErrorHandlers } from '../http/errors.ts';
import { AccessReviewSchema, IdentitySchema } from '../api/users.ts';
import { proxiedResponseHeaders } from '../http/proxied-response.ts';
import { registerWebUi } from '../http/web-ui.ts';
import { LOCAL_CLUSTER, type UiConfig } from './ui-config.ts';

export interface WebUiOptions {
  kubeConfig: KubeConfig;
  host: string;
  /** 0 picks a free port (see RunningWebUi.url). */
  port: number;
  log: Logger;
  /** The built UI; web/dist by default. */
  dist?: string;
}

export interface RunningWebUi {
  url: string;
  close(): Promise<void>;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const ANY_ADDRESS = new Set(['0.0.0.0', '::', '']);

export async function startWebUi(options: WebUiOptions): Promise<RunningWebUi> {
  const forwarder = await apiServerForwarder(options.kubeConfig, options.log.child({ component: 'api-proxy' }), 'gantry webui');
  const app = fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: () => true }),
    forceCloseConnections: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  });
  registerErrorHandlers(app);
  let allowedHosts = new Set<string>();
  app.addHook('onRequest', async (request, reply) => {
    const refusal = foreignRequest(request, allowedHosts);
    if (refusal) return reply.code(403).send({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: refusal, code: 403 });
  });
  const context = options.kubeConfig.getCurrentContext();
  const user = options.kubeConfig.getCurrentUser()?.name ?? context;
  app.get('/v1/ui-config', async (): Promise<UiConfig> => ({
    mode: 'local',
    cluster: LOCAL_CLUSTER,
    context,
    server: forwarder.server,
  }));
  // Every right as far as Gantry goes: the cluster's RBAC for the kubeconfig's user decides.
  app.get('/v1/me', async (): Promise<Static<typeof IdentitySchema>> => ({
    kind: 'user',
    name: user,
    groups: [],
    grants: [{ role: 'admin', scope: 'all' }],
  }));
  app.post<{ Body: Static<typeof AccessReviewSchema> }>('/v1/access-review', { schema: { body: AccessReviewSchema } }, async (request) => ({
    allowed: await Promise.all(request.body.checks.map((check) => allowedLocally(forwarder, check.action))),
  }));
  await proxyRoutes(app, forwarder);
  await registerWebUi(app, options.dist);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  allowedHosts = hostsOf(options.host, port);
  const shownHost = ANY_ADDRESS.has(options.host) ? '127.0.0.1' : options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}`,
    close: async () => {
      await app.close();
      await forwarder.close();
    },
  };
}

/**
 * `/v1/clusters/local/proxy/*` forwarded as it comes, bodies streamed both ways (watches, logs); the answer's
 * headers filtered as the fleet server's auth proxy filters them (http/proxied-response.ts).
 */
async function proxyRoutes(app: FastifyInstance, forwarder: ApiServerForwarder): Promise<void> {
  await app.register(async (scope) => {
    // Bodies pass through unread: the API server parses them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url: '/v1/clusters/:name/proxy/*',
      handler: (request, reply) => forward(forwarder, request as FastifyRequest<{ Params: { name: string; '*': string } }>, reply),
    });
  });
}

async function forward(
  forwarder: ApiServerForwarder,
  request: FastifyRequest<{ Params: { name: string; '*': string } }>,
  reply: FastifyReply,
): Promise<void> {
  if (request.params.name !== LOCAL_CLUSTER) {
    const message = `gantry webui serves one cluster, ${LOCAL_CLUSTER}, not ${request.params.name}`;
    return void reply.code(404).send({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason: 'NotFound', code: 404 });
  }
  reply.hijack();
  const response = reply.raw;
  const abort = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) abort.abort(new Error('the browser went away'));
  });
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  await forwarder.forward(
    { method: request.method, path: `/${request.params['*']}${query}`, headers: request.headers, body: request.raw },
    {
      respond: (status, headers) => {
        response.writeHead(status, proxiedResponseHeaders(headers));
        response.flushHeaders();
      },
      body: response,
    },
    abort.signal,
  );
}

/**
 * Whether the user may take `action` on the cluster: `write` is patching KluctlDeployments (the UI's actions), as
 * a SelfSubjectAccessReview answers it for every namespace; reading is whatever the API server lets them read.
 */
async function allowedLocally(forwarder: ApiServerForwarder, action: string): Promise<boolean> {
  if (action === 'read' || action === 'proxy') return true;
  if (action !== 'write') return false;
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { group: 'gitops.gantry.dev', resource: 'kluctldeployments', verb: 'patch' } },
  };
  const chunks: Buffer[] = [];
  let status = 0;
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => chunks.push(chunk));
  await forwarder.forward(
    {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      headers: { 'content-type': 'application/json' },
      body: Readable.from([JSON.stringify(review)]),
    },
    { respond: (code) => (status = code), body: sink },
    AbortSignal.timeout(10_000),
  );
  if (status !== 201 && status !== 200) return false;
  return (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status?: { allowed?: boolean } }).status?.allowed === true;
}

/** The Host headers a browser sends to reach this address; any, when listening on every interface. */
function hostsOf(host: string, port: number): Set<string> {
  if (ANY_ADDRESS.has(host)) return new Set();
  const named = host.includes(':') ? `[${host}]` : host;
  const names = LOOPBACK_NAMES.includes(named) ? LOOPBACK_NAMES : [named];
  return new Set(names.map((name) => `${name}:${port}`));
}

/**
 * Why a request must not be answered, or undefined: it names another host (DNS rebinding), or, for the API, a
 * browser says a page of another origin sent it (Sec-Fetch-Site, or Origin for browsers without it). The UI's
 * own files may be reached from anywhere, a link on another page included.
 */
function foreignRequest(request: FastifyRequest, allowedHosts: Set<string>): string | undefined {
  const host = request.headers.host ?? '';
  if (allowedHosts.size > 0 && !allowedHosts.has(host)) return `gantry webui answers requests for ${[...allowedHosts][0]}, not ${host}`;
  if (!request.url.startsWith('/v1/')) return undefined;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return 'gantry webui answers only its own pages';
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`) return 'gantry webui answers only its own pages';
  return undefined;
}
