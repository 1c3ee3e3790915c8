/**
 * Clusters, and which cluster a deploy token authenticates. An agent authenticates with its cluster's deploy token,
 * shown once when made (deploy-tokens.ts: rotation and expiry).
 */
import type { CapiClusterSpec } from '../capi/cluster-manifests.ts';
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from './database.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import type { ClusterTable, Database } from './schema.ts';
import { hashToken } from '../crypto/tokens.ts';
import { GANTRY_VERSION } from '../version.ts';
import { DEPLOY_TOKEN_PREFIX, type DeployTokenUse, insertDeployToken } from './deploy-tokens.ts';

export interface Cluster {
  id: string;
  name: string;
  handle: string;
  tags: Record<string, string>;
  distro: string | null;
  kubernetesVersion: string | null;
  agentVersion: string | null;
  /** ISO time of the agent's last ping, or null before the first. */
  pingedAt: string | null;
  /** See clusterHealth. */
  health: ClusterHealth;
  createdAt: string;
  /** When an admin last asked the agent to rotate its deploy token; done once deployTokenCreatedAt is later. */
  tokenRotationRequestedAt: string | null;
  /** When the newest deploy token the agent has used was made; null before its first request. */
  deployTokenCreatedAt: string | null;
  /** The agent version an admin holds the cluster at; null: it follows the server's own. */
  agentVersionPin: string | null;
  /** The version its agent should run: the pin, else the server's own (GANTRY_VERSION). */
  wantedAgentVersion: string;
  /** How Cluster API makes it (server/provisioned-clusters.ts); null for a cluster made elsewhere. */
  provisioning: CapiClusterSpec | null;
}

export type ClusterHealth = 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN';

/**
 * An agent that pinged within this long counts as up. Plural's console uses 4, 5 and 20 minutes in different places
 * (fleet stats, the health filter, Cluster.healthy?); one threshold here: two of the agent's 2-minute pings missed.
 */
export const CLUSTER_PING_HEALTHY_MS = 5 * 60_000;

/** HEALTHY when the agent pinged within CLUSTER_PING_HEALTHY_MS, UNHEALTHY after, UNKNOWN before its first ping. */
export function clusterHealth(pingedAt: string | null, now = new Date()): ClusterHealth {
  if (pingedAt === null) return 'UNKNOWN';
  return now.getTime() - Date.parse(pingedAt) <= CLUSTER_PING_HEALTHY_MS ? 'HEALTHY' : 'UNHEALTHY';
}

export interface NewCluster {
  name: string;
  /** Defaults to the name. */
  handle?: string;
  tags?: Record<string, string>;
  distro?: string;
  provisioning?: CapiClusterSpec;
}

/** A cluster just made, with the only copy of its first deploy token. */
export interface CreatedCluster {
  cluster: Cluster;
  deployToken: string;
}

/** What an agent reports with each ping. */
export interface ClusterPing {
  kubernetesVersion: string;
  agentVersion: string;
  distro?: string;
}

/**
 * @throws ConflictError when the name or handle is taken.
 */
export async function createCluster(db: Kysely<Database>, input: NewCluster, now = new Date()): Promise<CreatedCluster> {
  const time = now.toISOString();
  const row: Selectable<ClusterTable> = {
    id: randomUUID(),
    name: input.name,
    handle: input.handle ?? input.name,
    tags: JSON.stringify(input.tags ?? {}),
    distro: input.distro ?? null,
    kubernetes_version: null,
    agent_version: null,
    pinged_at: null,
    created_at: time,
    updated_at: time,
    token_rotation_requested_at: null,
    deploy_token_created_at: null,
    agent_version_pin: null,
    provisioning: input.provisioning ? JSON.stringify(input.provisioning) : null,
  };
  let deployToken: string;
  try {
    deployToken = await db.transaction().execute(async (trx) => {
      await trx.insertInto('clusters').values(row).execute();
      return await insertDeployToken(trx, row.id, now);
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    const nameTaken = await db.selectFrom('clusters').select('id').where('name', '=', row.name).executeTakeFirst();
    throw nameTaken ? new ConflictError('cluster', 'name', row.name) : new ConflictError('cluster', 'handle', row.handle);
  }
  return { cluster: toCluster(row), deployToken };
}

export async function listClusters(db: Kysely<Database>): Promise<Cluster[]> {
  const rows = await db.selectFrom('clusters').selectAll().orderBy('name').execute();
  return rows.map(toCluster);
}

/** @throws NotFoundError */
export async function getCluster(db: Kysely<Database>, name: string): Promise<Cluster> {
  const row = await db.selectFrom('clusters').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('cluster', name);
  return toCluster(row);
}

/** Replaces the cluster's tags. @throws NotFoundError */
export async function setClusterTags(db: Kysely<Database>, name: string, tags: Record<string, string>, now = new Date()): Promise<Cluster> {
  const result = await db
    .updateTable('clusters')
    .set({ tags: JSON.stringify(tags), updated_at: now.toISOString() })
    .where('name', '=', name)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('cluster', name);
  return await getCluster(db, name);
}

/**
 * Holds the cluster's agent at `version` (an image tag), or lets it follow the server's own with null.
 * @throws NotFoundError
 */
export async function setAgentVersionPin(db: Kysely<Database>, name: string, version: string | null, now = new Date()): Promise<Cluster> {
  const result = await db
    .updateTable('clusters')
    .set({ agent_version_pin: version, updated_at: now.toISOString() })
    .where('name', '=', name)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('cluster', name);
  return await getCluster(db, name);
}

/** Deletes the cluster with its tokens and services' records (not the objects in the cluster). @throws NotFoundError */
export async function deleteCluster(db: Kysely<Database>, name: string): Promise<void> {
  const result = await db.deleteFrom('clusters').where('name', '=', name).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw new NotFoundError('cluster', name);
}

/**
 * The cluster a deploy token belongs to and the token's record, or undefined for an unknown, revoked or expired token
 * (deploy-tokens.ts).
 */
export async function clusterForDeployToken(
  db: Kysely<Database>,
  token: string,
  now = new Date(),
): Promise<{ cluster: Cluster; token: DeployTokenUse } | undefined> {
  if (!token.startsWith(DEPLOY_TOKEN_PREFIX)) return undefined;
  const row = await db
    .selectFrom('deploy_tokens')
    .innerJoin('clusters', 'clusters.id', 'deploy_tokens.cluster_id')
    .selectAll('clusters')
    .select(['deploy_tokens.id as token_id', 'deploy_tokens.created_at as token_created_at', 'deploy_tokens.first_used_at'])
    .where('deploy_tokens.token_hash', '=', hashToken(token))
    .where('deploy_tokens.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('deploy_tokens.expires_at', 'is', null), eb('deploy_tokens.expires_at', '>', now.toISOString())]))
    .executeTakeFirst();
  if (!row) return undefined;
  const { token_id, token_created_at, first_used_at, ...cluster } = row;
  return { cluster: toCluster(cluster), token: { id: token_id, createdAt: token_created_at, firstUsedAt: first_used_at } };
}

/** Records an agent's ping. */
export async function recordPing(db: Kysely<Database>, clusterId: string, ping: ClusterPing, now = new Date()): Promise<void> {
  await db
    .updateTable('clusters')
    .set({
      kubernetes_version: ping.kubernetesVersion,
      agent_version: ping.agentVersion,
      pinged_at: now.toISOString(),
      ...(ping.distro === undefined ? {} : { distro: ping.distro }),
    })
    .where('id', '=', clusterId)
    .execute();
}

function toCluster(row: Selectable<ClusterTable>): Cluster {
  return {
    id: row.id,
    name: row.name,
    handle: row.handle,
    tags: JSON.parse(row.tags) as Record<string, string>,
    distro: row.distro,
    kubernetesVersion: row.kubernetes_version,
    agentVersion: row.agent_version,
    pingedAt: row.pinged_at,
    health: clusterHealth(row.pinged_at),
    createdAt: row.created_at,
    tokenRotationRequestedAt: row.token_rotation_requested_at,
    deployTokenCreatedAt: row.deploy_token_created_at,
    agentVersionPin: row.agent_version_pin,
    wantedAgentVersion: row.agent_version_pin ?? GANTRY_VERSION,
    provisioning: row.provisioning === null ? null : (JSON.parse(row.provisioning) as CapiClusterSpec),
  };
}

/**
 * How many clusters there are, how many agents pinged at or after `pingedSince`, and how many agents reported a
 * version other than the one they should run (their pin, else GANTRY_VERSION): the fleet's version skew.
 */
export async function countClusters(db: Kysely<Database>, pingedSince: Date): Promise<{ total: number; pinged: number; skewed: number }> {
  const row = await db
    .selectFrom('clusters')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('total'),
      eb.fn.count<number | string>(eb.case().when('pinged_at', '>=', pingedSince.toISOString()).then(1).end()).as('pinged'),
      eb.fn
        .count<number | string>(
          eb
            .case()
            .when('agent_version', '<>', eb.fn.coalesce('agent_version_pin', eb.val(GANTRY_VERSION)))
            .then(1)
            .end(),
        )
        .as('skewed'),
    ])
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), pinged: Number(row.pinged), skewed: Number(row.skewed) };
}
