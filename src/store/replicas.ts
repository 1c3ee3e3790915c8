/**
 * The server replicas that are up, as each records itself: a row per process start, its heartbeat renewed every few
 * seconds. Liveness is a heartbeat newer than a cut-off the caller picks; nothing else is agreed between replicas.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export interface Replica {
  id: string;
  url: string;
  startedAt: string;
  heartbeatAt: string;
}

/** Records the replica's heartbeat at `now`, adding its row when missing (first beat, or removed while it was away). */
export async function recordHeartbeat(db: Kysely<Database>, replica: { id: string; url: string }, now = new Date()): Promise<void> {
  const time = now.toISOString();
  await db
    .insertInto('server_replicas')
    .values({ id: replica.id, url: replica.url, started_at: time, heartbeat_at: time })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: time }))
    .execute();
}

/** Replicas whose last heartbeat is at or after `since`, by id. */
export async function liveReplicas(db: Kysely<Database>, since: Date): Promise<Replica[]> {
  const rows = await db.selectFrom('server_replicas').selectAll().where('heartbeat_at', '>=', since.toISOString()).orderBy('id').execute();
  return rows.map((row) => ({ id: row.id, url: row.url, startedAt: row.started_at, heartbeatAt: row.heartbeat_at }));
}

/** Forgets replicas silent since before `before` (crashed ones never remove themselves). */
export async function removeSilentReplicas(db: Kysely<Database>, before: Date): Promise<void> {
  await db.deleteFrom('server_replicas').where('heartbeat_at', '<', before.toISOString()).execute();
}

/** A replica stopping cleanly hands its work over at once rather than after its heartbeat expires. */
export async function removeReplica(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('server_replicas').where('id', '=', id).execute();
}
