/**
 * Previews (issue 43, part 1): what a service's source at another ref would do to its cluster, as the service's agent
 * finds with a server-side dry run against the live cluster. The server makes a PENDING row and kicks the agent; the
 * agent reports the result (objects to create, change with their diff, delete; render or admission errors), which
 * makes it DONE, or FAILED with the error.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { NotFoundError } from './errors.ts';
import type { Database, PreviewTable } from './schema.ts';
import type { ServiceSpec } from './services.ts';

export type PreviewState = 'PENDING' | 'DONE' | 'FAILED';

export interface Preview {
  id: string;
  serviceId: string;
  clusterId: string;
  ref: string;
  commit: string;
  digest: string;
  spec: ServiceSpec;
  state: PreviewState;
  result: unknown;
  requestedBy: string;
  createdAt: string;
  finishedAt: string | null;
}

export async function createPreview(
  db: Kysely<Database>,
  preview: Pick<Preview, 'serviceId' | 'clusterId' | 'ref' | 'commit' | 'digest' | 'spec' | 'requestedBy'>,
  now = new Date(),
): Promise<Preview> {
  const row: Selectable<PreviewTable> = {
    id: randomUUID(),
    service_id: preview.serviceId,
    cluster_id: preview.clusterId,
    ref: preview.ref,
    commit_sha: preview.commit,
    digest: preview.digest,
    spec: JSON.stringify(preview.spec),
    state: 'PENDING',
    result: null,
    requested_by: preview.requestedBy,
    created_at: now.toISOString(),
    finished_at: null,
  };
  await db.insertInto('previews').values(row).execute();
  return toPreview(row);
}

/** @throws NotFoundError */
export async function getPreview(db: Kysely<Database>, id: string): Promise<Preview> {
  const row = await db.selectFrom('previews').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('preview', id);
  return toPreview(row);
}

/** The previews of a cluster its agent has still to run, oldest first. */
export async function pendingPreviews(db: Kysely<Database>, clusterId: string): Promise<Preview[]> {
  const rows = await db
    .selectFrom('previews')
    .selectAll()
    .where('cluster_id', '=', clusterId)
    .where('state', '=', 'PENDING')
    .orderBy('created_at')
    .execute();
  return rows.map(toPreview);
}

/** Records the agent's result. @returns false when the preview is not PENDING any more (or gone). */
export async function finishPreview(
  db: Kysely<Database>,
  id: string,
  outcome: { state: 'DONE' | 'FAILED'; result: unknown },
  now = new Date(),
): Promise<boolean> {
  const updated = await db
    .updateTable('previews')
    .set({ state: outcome.state, result: JSON.stringify(outcome.result), finished_at: now.toISOString() })
    .where('id', '=', id)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

function toPreview(row: Selectable<PreviewTable>): Preview {
  return {
    id: row.id,
    serviceId: row.service_id,
    clusterId: row.cluster_id,
    ref: row.ref,
    commit: row.commit_sha,
    digest: row.digest,
    spec: JSON.parse(row.spec) as ServiceSpec,
    state: row.state as PreviewState,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    requestedBy: row.requested_by,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
}
