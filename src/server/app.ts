/**
 * The fleet server's HTTP API (fastify): JSON under /v1, request and response shapes in TypeBox (src/api/),
 * the OpenAPI document generated from them at /v1/openapi.json, plus /healthz, /readyz and /metrics.
 */
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import { fastify, LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { registerWebhookRoutes } from '../gitops/webhooks.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/database.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { RepositoryPoller } from './repository-poller.ts';
import type { Service, ServiceRef } from '../store/services.ts';
import type { ServiceSources } from './service-sources.ts';
import type { TarballStore } from './tarballs.ts';
import type { PushChannels } from './push-channels.ts';
import type { ReplicaSet } from './replica-set.ts';
import { serviceRoutes } from './routes/services.ts';
import { GlobalServices } from './global-services.ts';
import { KeptAgents } from './kept-agents.ts';
import { ProvisionedClusters } from './provisioned-clusters.ts';
import { globalServiceRoutes } from './routes/global-services.ts';
import { registerErrorHandlers } from '../http/errors.ts';
import type { Notifier } from './notifier.ts';
import { registerFleetMetrics } from './fleet-metrics.ts';
import { agentRoutes } from './routes/agent.ts';
import { agentRolloutRoutes } from './routes/agent-rollouts.ts';
import { clusterRoutes } from './routes/clusters.ts';
import { contextRoutes } from './routes/contexts.ts';
import { helmRepositoryRoutes } from './routes/helm-repositories.ts';
import { notificationRoutes } from './routes/notifications.ts';
import { pipelineRoutes } from './routes/pipelines.ts';
import { previewRoutes } from './routes/previews.ts';
import type { Previews } from './previews.ts';
import type { RolloutRunner } from './rollouts.ts';
import { rejectionRoutes } from './routes/rejections.ts';
import type { PipelineRunner } from './pipelines.ts';
import { replicaRoutes } from './routes/replicas.ts';
import { repositoryRoutes } from './routes/repositories.ts';
import { userRoutes } from './routes/users.ts';
import { eventRoutes } from './routes/events.ts';
import { registerWebUi } from '../http/web-ui.ts';
import type { FleetChange } from '../api/events.ts';
import type { FleetChanges } from './fleet-changes.ts';
import { clusterProxyRoutes } from './routes/cluster-proxy.ts';
import { registerAuditLog } from './audit-log.ts';
import { registerOriginCheck } from './origin-check.ts';
import { messageOf } from '../problems.ts';
import type { DeployTokenPolicy } from '../store/deploy-tokens.ts';

export interface AppOptions {
  store: Store;
  /** Seals and opens the secrets the database holds. */
  box: SecretBox;
  poller: RepositoryPoller;
  sources: ServiceSources;
  tarballs: TarballStore;
  /** A service changed (new revision, deletion): its agent should hear of it now. */
  onServiceChange: (service: ServiceRef) => void;
  channels: PushChannels;
  replicas: ReplicaSet;
  /** Fleet events to notification routers. */
  notifier: Notifier;
  /** Release pipelines: told of agents' reports, deciding gates. */
  pipelines: PipelineRunner;
  /** Previews of pending changes, dry-run by the agents. */
  previews: Previews;
  /** Progressive rollouts of global services and stages: told of agents' reports, paused, resumed and aborted by users. */
  rollouts: RolloutRunner;
  /** This replica's browsers' event streams (GET /v1/events). */
  changes: FleetChanges;
  /** Tells every replica's browsers of a change. */
  announce: (change: FleetChange) => void;
  /** See GlobalServiceDeps.maxDeleteShare. */
  maxDeleteShare: number;
  /** Turns on POST /hooks/git (GitHub, GitLab, Gitea pushes), checked against this secret, as the controller's. */
  webhookSecret?: string | undefined;
  log: Logger;
  /** Gantry's version, in the OpenAPI document. */
  version: string;
  /**
   * Proxies (an ingress terminating TLS) whose X-Forwarded-Proto and X-Forwarded-For are believed, as fastify's
   * trustProxy takes them: addresses or CIDRs, comma-separated; none by default. Session cookies are marked Secure
   * when the request, as the proxy saw it, was https.
   */
  trustProxy?: string | undefined;
  /**
   * Where browsers reach the server (`--public-url`, e.g. https://gantry.example.com): the only origin mutating
   * cookie-authenticated requests may come from (origin-check.ts), and, when https, session cookies are always
   * Secure, whatever the hop to the server was.
   */
  publicUrl?: URL | undefined;
  /** Special addresses (loopback, link-local, …) chart and repository URLs may still reach: outbound.ts. None by default. */
  outboundAllow?: readonly string[] | undefined;
  /** Deploy tokens' overlap and maximum age. */
  deployTokens: DeployTokenPolicy;
  /** The agents' image repository (kept-agents.ts). */
  agentImage: string;
}

const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Builds the app with every route; the caller listens (or injects) and closes it. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: (request) => PROBE_PATHS.has(request.url.split('?')[0] ?? '') }),
    forceCloseConnections: true,
    ...(options.trustProxy ? { trustProxy: options.trustProxy } : {}),
    bodyLimit: 4 * 1024 * 1024,
    // fastify's Ajv drops unknown properties and coerces types by default; a misspelt field or a number where a
    // string belongs must be an error instead.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  });
  registerErrorHandlers(app);
  await app.register(swagger, {
    openapi: {
      info: { title: 'Gantry fleet API', version: options.version },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  await app.register(cookie);
  registerOriginCheck(app, options.publicUrl);
  registerProbes(app, options.store, options.channels);
  const { db } = options.store;
  registerAuditLog(app, db);
  const globals = new GlobalServices({
    db,
    box: options.box,
    sources: options.sources,
    log: options.log.child({ component: 'global-services' }),
    onChange: options.onServiceChange,
    maxDeleteShare: options.maxDeleteShare,
    previews: options.previews,
    rollouts: options.rollouts,
  });
  const agents = new KeptAgents({
    db,
    box: options.box,
    sources: options.sources,
    imageRepository: options.agentImage,
    onChange: options.onServiceChange,
    rollouts: options.rollouts,
    log: options.log.child({ component: 'kept-agents' }),
  });
  const provisioned = new ProvisionedClusters({
    db,
    box: options.box,
    sources: options.sources,
    onChange: options.onServiceChange,
    log: options.log.child({ component: 'provisioned-clusters' }),
  });
  agentRolloutRoutes(app, { db, agents, rollouts: options.rollouts });
  clusterRoutes(app, {
    db,
    globals,
    agents,
    provisioned,
    notifier: options.notifier,
    announce: options.announce,
    channels: options.channels,
  });
  const outbound = { allow: options.outboundAllow ?? [] };
  globalServiceRoutes(app, { db, box: options.box, globals, sources: options.sources, outbound, rollouts: options.rollouts });
  agentRoutes(app, {
    db,
    box: options.box,
    tarballs: options.tarballs,
    channels: options.channels,
    tokens: options.deployTokens,
    agents,
    provisioned,
    agentImage: options.agentImage,
    publicUrl: options.publicUrl,
    replicaId: options.replicas.id,
    onServiceChange: options.onServiceChange,
    notifier: options.notifier,
    pipelines: options.pipelines,
    rollouts: options.rollouts,
    announce: options.announce,
    rebuildTarball: async (spec) => {
      await options.sources.resolveSpec(spec);
    },
  });
  serviceRoutes(app, {
    db,
    box: options.box,
    sources: options.sources,
    tarballs: options.tarballs,
    onChange: options.onServiceChange,
    outbound,
  });
  previewRoutes(app, { db, previews: options.previews, tokenOverlapMs: options.deployTokens.overlapMs });
  repositoryRoutes(app, { db: options.store.db, box: options.box, poller: options.poller, outbound });
  replicaRoutes(app, { db, box: options.box, replicas: options.replicas });
  contextRoutes(app, { db, onServiceChange: options.onServiceChange });
  pipelineRoutes(app, { db, runner: options.pipelines, rollouts: options.rollouts });
  rejectionRoutes(app, { db, box: options.box });
  notificationRoutes(app, { db, box: options.box });
  helmRepositoryRoutes(app, { db, box: options.box });
  userRoutes(app, { db, publicUrl: options.publicUrl });
  eventRoutes(app, { db, changes: options.changes });
  await clusterProxyRoutes(app, { db, channels: options.channels, replicas: options.replicas });
  if (options.webhookSecret) {
    await registerWebhookRoutes(app, {
      secret: options.webhookSecret,
      onPush: async (urls) => void (await options.poller.pollPushed(urls)),
    });
  }
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await registerWebUi(app);
  return app;
}

function registerProbes(app: FastifyInstance, store: Store, channels: PushChannels): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerFleetMetrics(registry, { db: store.db, channels });
  const requests = new Counter({
    name: 'gantry_server_requests_total',
    help: 'API requests answered, by route and status code.',
    labelNames: ['method', 'route', 'code'],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    requests.inc({ method: request.method, route: request.routeOptions.url ?? 'unknown', code: String(reply.statusCode) });
  });
  app.get('/healthz', { schema: { hide: true } }, async () => 'ok');
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await sql`select 1`.execute(store.db);
      return 'ok';
    } catch (error) {
      return reply.code(503).send(`not ready: database: ${messageOf(error)}`);
    }
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
