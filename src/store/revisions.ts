/**
 * A service's revisions beyond the one each change adds (services.ts): a revision with the service's current
 * content when something outside it changed (reviseService), and rollback, which adds a revision with an old one's
 * content and pins the ref to that revision's commit, so the next commit on the branch does not undo it (Argo CD
 * users' rollback-versus-auto-sync complaint). Revisions are immutable and numbered from 1 per service.
 */
import type { Kysely, Selectable } from 'kysely';
import { NotFoundError } from './errors.ts';
import type { Database, RevisionTable } from './schema.ts';
import {
  addRevision,
  type Author,
  getServiceById,
  type Revision,
  type Service,
  type ServiceSpec,
  serviceRow,
  toRevision,
} from './services.ts';

/**
 * Adds a revision with the service's current content, for a change outside it that its agent must render again
 * (a bound context's configuration changed).
 */
export async function reviseService(db: Kysely<Database>, serviceId: string, author: Author, now = new Date()): Promise<Service> {
  await db.transaction().execute(async (trx) => {
    const current = await revisionRow(trx, (await serviceRow(trx, serviceId)).revision_id);
    await addRevision(
      trx,
      serviceId,
      { commit: current.commit_sha ?? '', digest: current.digest ?? '', chartVersion: current.chart_version ?? undefined },
      author,
      now.toISOString(),
    );
  });
  return await getServiceById(db, serviceId);
}

/**
 * Adds a revision with the content of revision `number` (spec, configuration, secret values, commit, digest, chart
 * version) and
 * pins the service's ref to that commit and its chart version to that version (see pinnedSpec).
 * @throws NotFoundError when the service has no such revision.
 */
export async function rollbackService(
  db: Kysely<Database>,
  serviceId: string,
  number: number,
  author: Author,
  now = new Date(),
): Promise<Service> {
  const time = now.toISOString();
  await db.transaction().execute(async (trx) => {
    const old = await trx
      .selectFrom('revisions')
      .selectAll()
      .where('service_id', '=', serviceId)
      .where('number', '=', number)
      .executeTakeFirst();
    if (!old) throw new NotFoundError('revision', String(number));
    const pinned = pinnedSpec(JSON.parse(old.spec) as ServiceSpec, toRevision(old));
    await trx
      .updateTable('services')
      .set({
        spec: JSON.stringify(pinned),
        namespace: pinned.namespace,
        repository_id: pinned.repositoryId ?? null,
        configuration: old.configuration,
        secret_values: old.secret_values,
        updated_at: time,
      })
      .where('id', '=', serviceId)
      .execute();
    await addRevision(
      trx,
      serviceId,
      { commit: old.commit_sha ?? '', digest: old.digest ?? '', chartVersion: old.chart_version ?? undefined },
      { by: author.by, message: author.message ?? `rollback to revision ${number}` },
      time,
      {
        spec: JSON.stringify(pinned),
        configuration: old.configuration,
        secretValues: old.secret_values,
      },
    );
  });
  return await getServiceById(db, serviceId);
}

/**
 * `spec` fixed to what `revision` resolved: the git ref to its commit, a helm version (range) to its chart version,
 * so that the source no longer moves (rollback) and its tarball can be built again byte for byte.
 */
export function pinnedSpec(spec: ServiceSpec, revision: Pick<Revision, 'commit' | 'chartVersion'>): ServiceSpec {
  return {
    ...spec,
    ...(spec.git && revision.commit ? { git: { ...spec.git, ref: revision.commit } } : {}),
    ...(spec.helm && revision.chartVersion ? { helm: { ...spec.helm, version: revision.chartVersion } } : {}),
  };
}

export async function listRevisions(db: Kysely<Database>, serviceId: string): Promise<Revision[]> {
  const rows = await db.selectFrom('revisions').selectAll().where('service_id', '=', serviceId).orderBy('number', 'desc').execute();
  return rows.map(toRevision);
}

async function revisionRow(db: Kysely<Database>, id: string | null): Promise<Selectable<RevisionTable>> {
  const row = id === null ? undefined : await db.selectFrom('revisions').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new Error(`service revision ${id} is missing`);
  return row;
}
