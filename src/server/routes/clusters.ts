/**
 * /v1/clusters: the fleet's clusters and their agents' deploy tokens. Each is read by those with a role on it;
 * creating, tagging, deleting, token rotation and the agent version need an admin of the whole fleet. A token revoked here, or a cluster
 * deleted, closes this replica's push channels opened with its tokens at once (the other replicas' within 30 s).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { createCluster, deleteCluster, getCluster, listClusters } from '../../store/clusters.ts';
import { requestTokenRotation, rotateDeployToken } from '../../store/deploy-tokens.ts';
import type { PushChannels } from '../push-channels.ts';
import type { GlobalServices } from '../global-services.ts';
import type { KeptAgents } from '../kept-agents.ts';
import type { ProvisionedClusters } from '../provisioned-clusters.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { authorize, mayDo, userAccess } from '../auth.ts';
import type { FleetChange } from '../../api/events.ts';
import type { FleetEvent, Notifier } from '../notifier.ts';
import {
  AgentVersionPinSchema,
  ClusterNameParams,
  ClusterSchema,
  CreatedClusterSchema,
  DeployTokenSchema,
  NewClusterSchema,
  RotateTokenSchema,
  TagsUpdateSchema,
} from '../../api/clusters.ts';
import { ConfirmQuery, ErrorResponses } from '../../api/common.ts';

export function clusterRoutes(
  app: FastifyInstance,
  deps: {
    db: Kysely<Database>;
    globals: GlobalServices;
    /** Revises a cluster's agent service when its pin changes. */
    agents: KeptAgents;
    /** Registers clusters Cluster API makes, and reads how far they are. */
    provisioned: ProvisionedClusters;
    notifier: Notifier;
    announce: (change: FleetChange) => void;
    channels: PushChannels;
  },
): void {
  const { db, globals } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const { readers, admins } = userAccess(db);
  const errors = ErrorResponses;

  api.get(
    '/v1/clusters',
    { ...readers, schema: { tags: ['clusters'], response: { 200: Type.Array(ClusterSchema), ...errors } } },
    async (request) => await deps.provisioned.withStatus((await listClusters(db)).filter((cluster) => mayDo(request, 'read', { cluster }))),
  );

  api.post(
    '/v1/clusters',
    { ...admins, schema: { tags: ['clusters'], body: NewClusterSchema, response: { 201: CreatedClusterSchema, ...errors } } },
    async (request, reply) => {
      const { provisioning, ...plain } = request.body;
      // With a provisioning spec its management cluster's agent gets the Cluster API objects at once.
      const created = provisioning ? await deps.provisioned.create({ ...plain, provisioning }) : await createCluster(db, plain);
      await globals.clusterAdded();
      deps.notifier.notify(clusterEvent('cluster.create', created.cluster));
      deps.announce({ kind: 'cluster', id: created.cluster.id });
      return reply.code(201).send(created);
    },
  );

  api.get(
    '/v1/clusters/:name',
    { ...readers, schema: { tags: ['clusters'], params: ClusterNameParams, response: { 200: ClusterSchema, ...errors } } },
    async (request) => {
      const cluster = await getCluster(db, request.params.name);
      authorize(request, 'read', { cluster });
      return (await deps.provisioned.withStatus([cluster]))[0];
    },
  );

  api.put(
    '/v1/clusters/:name/tags',
    {
      ...admins,
      schema: {
        tags: ['clusters'],
        params: ClusterNameParams,
        querystring: ConfirmQuery,
        body: TagsUpdateSchema,
        response: { 200: ClusterSchema, ...errors },
      },
    },
    // Global services follow the tags; a change that would delete too many of one's copies is held (409).
    async (request) => {
      const cluster = await globals.setClusterTags(request.params.name, request.body.tags, request.query.confirm === 'true');
      deps.announce({ kind: 'cluster', id: cluster.id });
      return cluster;
    },
  );

  api.put(
    '/v1/clusters/:name/agent-version',
    {
      ...admins,
      schema: {
        tags: ['clusters'],
        description:
          "Holds the cluster's agent at a version (null: the server's own). An agent running as the install's Deployment " +
          'gets a revision of its service gantry-agent at once, and its Deployment rolls to the image of that version.',
        params: ClusterNameParams,
        body: AgentVersionPinSchema,
        response: { 200: ClusterSchema, ...errors },
      },
    },
    async (request) => {
      const cluster = await deps.agents.pin(request.params.name, request.body.version);
      deps.announce({ kind: 'cluster', id: cluster.id });
      return cluster;
    },
  );

  api.delete(
    '/v1/clusters/:name',
    { ...admins, schema: { tags: ['clusters'], params: ClusterNameParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      const cluster = await getCluster(db, request.params.name);
      await deps.provisioned.beforeDelete(cluster);
      await deleteCluster(db, request.params.name);
      await deps.channels.checkTokens();
      deps.notifier.notify(clusterEvent('cluster.delete', cluster));
      deps.announce({ kind: 'cluster', id: cluster.id });
      return reply.code(204).send(null);
    },
  );

  api.post(
    '/v1/clusters/:name/token',
    {
      ...admins,
      schema: {
        tags: ['clusters'],
        params: ClusterNameParams,
        body: Type.Optional(RotateTokenSchema),
        response: { 201: DeployTokenSchema, ...errors },
      },
    },
    async (request, reply) => {
      const cluster = await getCluster(db, request.params.name);
      const revokeOthers = request.body?.revokeOthers ?? false;
      const deployToken = await rotateDeployToken(db, cluster.id, { revokeOthers });
      if (revokeOthers) await deps.channels.checkTokens();
      return reply.code(201).send({ deployToken });
    },
  );

  api.post(
    '/v1/clusters/:name/token-rotation',
    {
      ...admins,
      schema: {
        tags: ['clusters'],
        description:
          "Asks the cluster's agent to rotate its deploy token by itself at its next ping: it fetches a new token, " +
          'stores it where it reads its token from, and switches; the old token expires an overlap after that.',
        params: ClusterNameParams,
        response: { 200: ClusterSchema, ...errors },
      },
    },
    async (request) => {
      const cluster = await getCluster(db, request.params.name);
      await requestTokenRotation(db, cluster.id);
      deps.announce({ kind: 'cluster', id: cluster.id });
      return await getCluster(db, cluster.name);
    },
  );
}

function clusterEvent(type: 'cluster.create' | 'cluster.delete', cluster: { id: string; name: string }): FleetEvent {
  const verb = type === 'cluster.create' ? 'registered' : 'deleted';
  return { type, severity: 'info', cluster: { id: cluster.id, name: cluster.name }, message: `cluster ${cluster.name} ${verb}` };
}
