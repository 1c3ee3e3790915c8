/**
 * Where each cluster's agent socket is held: the replica that accepted it records itself, and forgets it when the
 * socket closes (only if no newer socket moved it elsewhere meanwhile). A crashed replica's rows stay until the
 * agent reconnects; readers check the replica is live (replicas.ts) before trusting a row.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export async function recordTunnel(db: Kysely<Database>, clusterId: string, replicaId: string, now = new Date()): Promise<void> {
  const connected_at = now.toISOString();
  await db
    .insertInto('agent_tunnels')
    .values({ cluster_id: clusterId, replica_id: replicaId, connected_at })
    .onConflict((conflict) => conflict.column('cluster_id').doUpdateSet({ replica_id: replicaId, connected_at }))
    .execute();
}

/** Forgets the tunnel when `replicaId` still holds it. */
export async function removeTunnel(db: Kysely<Database>, clusterId: string, replicaId: string): Promise<void> {
  await db.deleteFrom('agent_tunnels').where('cluster_id', '=', clusterId).where('replica_id', '=', replicaId).execute();
}

/** The replica id holding the cluster's tunnel, if one is recorded. */
export async function tunnelHolder(db: Kysely<Database>, clusterId: string): Promise<string | undefined> {
  const row = await db.selectFrom('agent_tunnels').select('replica_id').where('cluster_id', '=', clusterId).executeTakeFirst();
  return row?.replica_id;
}
