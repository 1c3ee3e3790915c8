/**
 * A service's revisions beyond the one each change adds (services.ts): a revision with the service's current
 * content when something outside it changed (reviseService), and rollback, which adds a revision with an old one's
 * content and pins the service at it until released, so the next commit on the branch does not undo it (Argo CD
 * users' rollback-versus-auto-sync complaint): while pinned, new commits, updates and promotions are recorded as
 * revisions that wait, and release makes the newest of them current. Revisions are immutable and numbered from 1
 * per service.
 */
import type { Kysely, Selectable } from 'kysely';
import { inTransaction } from './database.ts';
import { NotFoundError } from './errors.ts';
import { rejectedDigests } from './rejections.ts';
import type { Database, RevisionTable } from './schema.ts';
import {
  addRevision,
  type Author,
  getServiceById,
  type Pin,
  type Revision,
  type Service,
  type ServiceSpec,
  recordSourceRepositories,
  resolvedSourceOf,
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
    await addRevision(trx, serviceId, resolvedSourceOf(current), author, now.toISOString());
  });
  return await getServiceById(db, serviceId);
}

/**
 * Adds a revision with the content of revision `number` (spec, configuration, secret values, commit, digest, chart
 * version; the spec as the service declared it, so that a rollback to a rollback still follows the service's ref once
 * released: the commit and digest hold the content), makes it current and pins the service
 * there (`pinned`: who, when) until releaseService. The service keeps following its ref: what comes meanwhile waits.
 * @throws NotFoundError when the service has no such revision.
 */
export async function rollbackService(
  db: Kysely<Database>,
  serviceId: string,
  number: number,
  author: Author,
  now = new Date(),
  options: { pin: boolean } = { pin: true },
): Promise<Service> {
  const time = now.toISOString();
  await inTransaction(db, async (trx) => {
    const old = await trx
      .selectFrom('revisions')
      .selectAll()
      .where('service_id', '=', serviceId)
      .where('number', '=', number)
      .executeTakeFirst();
    if (!old) throw new NotFoundError('revision', String(number));
    const pinnedBefore = (await serviceRow(trx, serviceId)).pinned;
    const spec = JSON.parse(old.spec) as ServiceSpec;
    // Unpinned for a moment, so that the copy becomes current (addRevision leaves a pinned service where it is).
    await trx
      .updateTable('services')
      .set({
        spec: old.spec,
        namespace: spec.namespace,
        repository_id: spec.repositoryId ?? null,
        configuration: old.configuration,
        secret_values: old.secret_values,
        pinned: null,
        updated_at: time,
      })
      .where('id', '=', serviceId)
      .execute();
    await addRevision(
      trx,
      serviceId,
      resolvedSourceOf(old),
      { by: author.by, message: author.message ?? `rollback to revision ${number}` },
      time,
      {
        spec: old.spec,
        configuration: old.configuration,
        secretValues: old.secret_values,
      },
    );
    await recordSourceRepositories(trx, [{ id: serviceId, spec }]);
    // A move back from a rejected revision (pin false) leaves a pin as it was.
    await trx
      .updateTable('services')
      .set({ pinned: options.pin ? JSON.stringify({ by: author.by, at: time } satisfies Pin) : pinnedBefore })
      .where('id', '=', serviceId)
      .execute();
  });
  return await getServiceById(db, serviceId);
}

/**
 * Ends a rollback's pin: the newest revision that is not rejected (one that waited, if any) becomes current, and the
 * agent applies it.
 * A service not pinned (any more) is left as it is.
 * @returns the service, and whether its current revision changed.
 * @throws NotFoundError
 */
export async function releaseService(
  db: Kysely<Database>,
  serviceId: string,
  now = new Date(),
): Promise<{ service: Service; moved: boolean }> {
  const moved = await db.transaction().execute(async (trx) => {
    const row = await serviceRow(trx, serviceId);
    if (row.pinned === null) return false;
    const rejected = await rejectedDigests(trx, { id: serviceId, spec: JSON.parse(row.spec) as ServiceSpec });
    const revisions = await trx
      .selectFrom('revisions')
      .select(['id', 'digest'])
      .where('service_id', '=', serviceId)
      .orderBy('number', 'desc')
      .execute();
    // The newest revision that is not rejected: a rejected one waiting behind the pin never runs.
    const newest = revisions.find((revision) => revision.digest === null || !rejected.has(revision.digest)) ?? revisions[0]!;
    const changes = newest.id === row.revision_id ? {} : { revision_id: newest.id, status: 'stale' };
    await trx
      .updateTable('services')
      .set({ pinned: null, ...changes, updated_at: now.toISOString() })
      .where('id', '=', serviceId)
      .execute();
    return newest.id !== row.revision_id;
  });
  return { service: await getServiceById(db, serviceId), moved };
}

/**
 * `spec` fixed to what `revision` resolved: the git ref to its commit, each extra source's ref to its commit, a helm
 * version (range) to its chart version, so that the source no longer moves (rollback) and its tarball can be built
 * again byte for byte.
 */
export function pinnedSpec(
  spec: ServiceSpec,
  revision: Pick<Revision, 'commit' | 'chartVersion'> & { sourceCommits?: string[] | null },
): ServiceSpec {
  const commits = revision.sourceCommits;
  return {
    ...spec,
    ...(spec.git && revision.commit ? { git: { ...spec.git, ref: revision.commit } } : {}),
    ...(spec.helm && revision.chartVersion ? { helm: { ...spec.helm, version: revision.chartVersion } } : {}),
    ...(spec.sources && commits?.length === spec.sources.length
      ? { sources: spec.sources.map((source, index) => ({ ...source, git: { ...source.git, ref: commits[index]! } })) }
      : {}),
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
