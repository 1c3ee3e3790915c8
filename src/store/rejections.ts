/**
 * Rejected revisions: a folder's content at a commit (its tarball digest) that must never run, for one service or,
 * fleet-wide, for every service sourced from that repository folder. Keyed by digest, not commit: a later commit
 * that leaves the folder as the rejected one left it is the same content and stays rejected, while the next commit
 * that changes the folder flows again. What follows from a rejection (services moved back, commits and promotions
 * skipped, updates refused) is the server's (server/rejections.ts); this module keeps the rows.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { NotFoundError } from './errors.ts';
import type { Database, RejectionTable } from './schema.ts';
import type { ServiceSpec } from './services.ts';

export interface Rejection {
  id: string;
  repositoryId: string;
  /** The folder of the repository, as services name it (`git.folder`). */
  folder: string;
  /** The sha256 of the folder's tarball: what is rejected. */
  digest: string;
  /** The commit it was found at, for people. */
  commit: string;
  /** Only this service; null: every service of the repository folder (fleet-wide). */
  serviceId: string | null;
  reason: string;
  by: string;
  at: string;
}

export type NewRejection = Omit<Rejection, 'id' | 'at'>;

export async function addRejection(db: Kysely<Database>, rejection: NewRejection, now = new Date()): Promise<Rejection> {
  const row: Selectable<RejectionTable> = {
    id: randomUUID(),
    repository_id: rejection.repositoryId,
    folder: rejection.folder,
    digest: rejection.digest,
    commit_sha: rejection.commit,
    service_id: rejection.serviceId,
    reason: rejection.reason,
    created_by: rejection.by,
    created_at: now.toISOString(),
  };
  await db.insertInto('rejections').values(row).execute();
  return toRejection(row);
}

/** Every rejection, newest first; of one repository, or of some, when given. */
export async function listRejections(
  db: Kysely<Database>,
  filter: { repositoryId?: string; repositoryIds?: readonly string[] } = {},
): Promise<Rejection[]> {
  let query = db.selectFrom('rejections').selectAll().orderBy('created_at', 'desc');
  if (filter.repositoryId !== undefined) query = query.where('repository_id', '=', filter.repositoryId);
  if (filter.repositoryIds !== undefined) {
    if (filter.repositoryIds.length === 0) return [];
    query = query.where('repository_id', 'in', filter.repositoryIds);
  }
  return (await query.execute()).map(toRejection);
}

/** @throws NotFoundError */
export async function deleteRejection(db: Kysely<Database>, id: string): Promise<Rejection> {
  const row = await db.selectFrom('rejections').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFoundError('rejection', id);
  await db.deleteFrom('rejections').where('id', '=', id).execute();
  return toRejection(row);
}

/** The rejections that apply to a service: its own, and those of its repository folder. */
export function rejectionsFor(rejections: readonly Rejection[], service: { id: string; spec: ServiceSpec }): Rejection[] {
  const { repositoryId, git } = service.spec;
  if (!repositoryId || !git) return [];
  return rejections.filter(
    (rejection) =>
      rejection.repositoryId === repositoryId &&
      sameFolder(rejection.folder, git.folder) &&
      (rejection.serviceId === null || rejection.serviceId === service.id),
  );
}

/** The rejections of `service` by digest (its own and its folder's), read in one query. */
export async function rejectedDigests(db: Kysely<Database>, service: { id: string; spec: ServiceSpec }): Promise<Map<string, Rejection>> {
  if (!service.spec.repositoryId) return new Map();
  const all = await listRejections(db, { repositoryId: service.spec.repositoryId });
  return new Map(rejectionsFor(all, service).map((rejection) => [rejection.digest, rejection]));
}

/** `''`, `.` and `./a/` name the same folders as `a` does with or without slashes. */
function sameFolder(a: string | undefined, b: string | undefined): boolean {
  const normal = (folder: string | undefined) => (folder ?? '').replace(/^\.\/?/, '').replace(/\/+$/, '');
  return normal(a) === normal(b);
}

function toRejection(row: Selectable<RejectionTable>): Rejection {
  return {
    id: row.id,
    repositoryId: row.repository_id,
    folder: row.folder,
    digest: row.digest,
    commit: row.commit_sha,
    serviceId: row.service_id,
    reason: row.reason,
    by: row.created_by,
    at: row.created_at,
  };
}
