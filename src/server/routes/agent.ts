/**
 * /v1/agent: what an agent may do with its cluster's deploy token, and nothing else: read its own cluster, ping
 * (Kubernetes and agent versions, as Plural's pingCluster; the answer says when its token is due for rotation; an
 * agent running as the install's Deployment says so, and the server keeps its agent service: kept-agents.ts),
 * fetch a new deploy token when one is due (deploy-tokens.ts), hold a push channel (push-channels.ts), list its
 * services with their configuration in clear and what their templates bind (the cluster, bound contexts),
 * download a service's tarball by digest, and report a service's components. A service of another cluster is a 403.
 */
import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { getCluster, recordPing } from '../../store/clusters.ts';
import { type DeployTokenPolicy, insertDeployToken, rotationDue } from '../../store/deploy-tokens.ts';
import { NotFoundError } from '../../store/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { getServiceById, type Service, type ServiceSpec } from '../../store/services.ts';
import { pinnedSpec } from '../../store/revisions.ts';
import { agentServices } from '../agent-services.ts';
import { agentCluster, agentToken, requireAgent } from '../auth.ts';
import { HttpError } from '../../http/errors.ts';
import type { FleetChange } from '../../api/events.ts';
import { recordTunnel, removeTunnel } from '../../store/agent-tunnels.ts';
import type { Notifier } from '../notifier.ts';
import type { PipelineRunner } from '../pipelines.ts';
import type { RolloutRunner } from '../rollouts.ts';
import {
  AgentGateSchema,
  AgentServiceSchema,
  GateReportSchema,
  PingAnswerSchema,
  PingSchema,
  ProvisionedAgentInstallSchema,
  ReportSchema,
  TarballQuery,
} from '../../api/agent.ts';
import { ClusterNameParams, ClusterSchema, DeployTokenSchema } from '../../api/clusters.ts';
import { ErrorResponses, ServiceIdParams } from '../../api/common.ts';
import type { PushChannels } from '../push-channels.ts';
import { recordReport } from '../service-reports.ts';
import { pendingPreviewOf } from '../../store/previews.ts';
import type { TarballStore } from '../tarballs.ts';
import type { KeptAgents } from '../kept-agents.ts';
import type { ProvisionedClusters } from '../provisioned-clusters.ts';

export interface AgentRouteDeps {
  db: Kysely<Database>;
  box: SecretBox;
  tarballs: TarballStore;
  /** Packs the tarball of a spec pinned to its commit again (it was packed on another replica). */
  rebuildTarball: (spec: ServiceSpec) => Promise<void>;
  channels: PushChannels;
  /** How long an older deploy token lives on after a newer one's first use, and when a token is due for rotation. */
  tokens: DeployTokenPolicy;
  /** Keeps the agent service of a cluster whose agent runs as the install's Deployment. */
  agents: KeptAgents;
  /** Hands a management cluster's agent the deploy tokens of the clusters its Cluster API made. */
  provisioned: ProvisionedClusters;
  /** The agents' image repository (`gantry server --agent-image`). */
  agentImage: string;
  /** The server's public URL, which the agents of provisioned clusters dial when it is set. */
  publicUrl: URL | undefined;
  /** This replica's id, recorded as the holder of the agents' sockets it accepts (the auth proxy's tunnels). */
  replicaId: string;
  /** Kicks the service's agent, on whichever replica holds its channel. */
  onServiceChange: (service: Service) => void;
  /** Tells browsers of a change (a report, a ping). */
  announce: (change: FleetChange) => void;
  /** Fleet events to notification routers. */
  notifier: Notifier;
  /** A service turning healthy may settle a pipeline stage. */
  pipelines: PipelineRunner;
  /** A copy's report may move its global service's rollout on. */
  rollouts: RolloutRunner;
}

export function agentRoutes(app: FastifyInstance, deps: AgentRouteDeps): void {
  const { db, box, tarballs } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const agents = { onRequest: [requireAgent(db, deps.tokens.overlapMs)] };
  const errors = ErrorResponses;
  const tags = ['agent'];

  api.get('/v1/agent/cluster', { ...agents, schema: { tags, response: { 200: ClusterSchema, ...errors } } }, async (request) =>
    getCluster(db, agentCluster(request).name),
  );

  api.get('/v1/agent/socket', { ...agents, websocket: true, schema: { tags } }, (socket, request) => {
    const cluster = agentCluster(request);
    deps.channels.add(cluster.id, agentToken(request).id, socket);
    const warn = (error: unknown) => request.log.warn({ err: error, cluster: cluster.name }, 'tunnel holder not recorded');
    recordTunnel(db, cluster.id, deps.replicaId).catch(warn);
    socket.on('close', () => {
      // A reconnected agent may already hold a newer socket here.
      if (!deps.channels.tunnel(cluster.id)) removeTunnel(db, cluster.id, deps.replicaId).catch(warn);
    });
  });

  api.post(
    '/v1/agent/ping',
    { ...agents, schema: { tags, body: PingSchema, response: { 200: PingAnswerSchema, ...errors } } },
    async (request) => {
      const cluster = agentCluster(request);
      await recordPing(db, cluster.id, request.body);
      deps.announce({ kind: 'cluster', id: cluster.id });
      const pinged = await getCluster(db, cluster.name);
      const { deployment } = request.body;
      // The ping is answered whatever becomes of the agent service: a failure shows in the log, and the next ping tries again.
      if (deployment) {
        await deps.agents.keep(pinged, deployment).catch((error: unknown) => {
          request.log.error({ err: error, cluster: cluster.name }, 'the agent service could not be kept');
        });
        // A new agent's first ping is what an agents' rollout waits for.
        if (cluster.agentVersion !== request.body.agentVersion) await deps.rollouts.agentPinged(cluster);
      }
      return { ...pinged, rotateToken: rotationDue(pinged, agentToken(request), deps.tokens.maxAgeMs) };
    },
  );

  // Only a token due for rotation gets a successor, so a token cannot mint tokens at will.
  api.post('/v1/agent/token', { ...agents, schema: { tags, response: { 201: DeployTokenSchema, ...errors } } }, async (request, reply) => {
    const cluster = agentCluster(request);
    if (!rotationDue(cluster, agentToken(request), deps.tokens.maxAgeMs))
      throw new HttpError(409, `the deploy token of cluster ${cluster.name} is not due for rotation`);
    const deployToken = await insertDeployToken(db, cluster.id);
    request.log.info({ cluster: cluster.name }, 'deploy token issued to the agent for rotation');
    return reply.code(201).send({ deployToken });
  });

  api.post(
    '/v1/agent/provisioned-clusters/:name/agent-install',
    { ...agents, schema: { tags, params: ClusterNameParams, response: { 201: ProvisionedAgentInstallSchema, ...errors } } },
    async (request, reply) => {
      const install = await deps.provisioned.agentInstall(agentCluster(request), request.params.name, deps.agentImage);
      return reply.code(201).send({ ...install, server: deps.publicUrl ? deps.publicUrl.toString().replace(/\/$/, '') : null });
    },
  );

  api.get(
    '/v1/agent/services',
    { ...agents, schema: { tags, response: { 200: Type.Array(AgentServiceSchema), ...errors } } },
    async (request) => {
      return await agentServices(db, box, agentCluster(request));
    },
  );

  api.get(
    '/v1/agent/services/:id/tarball',
    { ...agents, schema: { tags, params: ServiceIdParams, querystring: TarballQuery } },
    async (request, reply) => {
      const service = await ownService(db, request, request.params.id);
      const { digest } = request.query;
      // Only the current revision's tarball, or a pending preview's: a digest the service moved away from is refused.
      const preview = service.revision.digest === digest ? undefined : await pendingPreviewOf(db, service.id, digest);
      if (service.revision.digest !== digest && !preview) {
        throw new HttpError(
          409,
          `service ${service.name} is at revision ${service.revision.number} (digest ${service.revision.digest}), not ${digest}`,
        );
      }
      if (request.headers['if-none-match'] === `"${digest}"`) return reply.code(304).send();
      // Another replica may have packed it: this one packs it again from the spec (pinned to its commit).
      if (!(await tarballs.find(digest))) await deps.rebuildTarball(preview?.spec ?? pinnedSpec(service.revision.spec, service.revision));
      const file = await tarballs.find(digest);
      if (!file) throw new HttpError(500, `tarball ${digest} could not be rebuilt`);
      return reply
        .header('content-type', 'application/gzip')
        .header('etag', `"${digest}"`)
        .header('x-gantry-digest', digest)
        .send(createReadStream(file));
    },
  );

  api.get('/v1/agent/gates', { ...agents, schema: { tags, response: { 200: Type.Array(AgentGateSchema), ...errors } } }, async (request) =>
    deps.pipelines.jobGates(agentCluster(request).id),
  );

  api.post(
    '/v1/agent/gates/report',
    { ...agents, schema: { tags, body: GateReportSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await deps.pipelines.jobReported(agentCluster(request).id, request.body);
      return reply.code(204).send(null);
    },
  );

  api.post(
    '/v1/agent/services/:id/report',
    { ...agents, schema: { tags, params: ServiceIdParams, body: ReportSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await recordReport(deps, agentCluster(request), await ownService(db, request, request.params.id), request.body);
      return reply.code(204).send(null);
    },
  );
}

/** The service, when it belongs to the agent's cluster. @throws HttpError 403 for another cluster's service. */
async function ownService(db: Kysely<Database>, request: FastifyRequest, id: string): Promise<Service> {
  const service = await getServiceById(db, id).catch((error: unknown) => {
    if (error instanceof NotFoundError) throw new HttpError(404, `service ${id} not found`);
    throw error;
  });
  if (service.clusterId !== agentCluster(request).id) throw new HttpError(403, `service ${id} belongs to another cluster`);
  return service;
}
