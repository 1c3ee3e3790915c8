/**
 * Rejecting a revision (issue 43: "a revision can be rejected for a service or a repository folder fleet-wide: it is
 * never applied anywhere, never promoted, and the next commit after it flows normally"). A rejection names the
 * revision's folder content (store/rejections.ts); every live service it applies to that runs that content now
 * moves back to its newest earlier revision that is not rejected (a new revision, as a rollback makes, without a
 * pin); the commit tracker, promotions and users' updates then refuse that content, so only a change of the folder
 * runs again. The rejection and every move back are one transaction: a crash between them never leaves a rejection
 * whose services still run what it rejects.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.ts';
import { addRejection, type Rejection, rejectedDigests, rejectionsFor, listRejections } from '../store/rejections.ts';
import { listRevisions, rollbackService } from '../store/revisions.ts';
import { listServices, type Service } from '../store/services.ts';
import { inTransaction } from '../store/database.ts';
import { HttpError } from '../http/errors.ts';

/** What a rejection did: the services moved back (from → to revision number), those with no good revision to go to. */
export interface RejectionOutcome {
  rejection: Rejection;
  moved: Array<{ service: Service; from: number; to: number }>;
  stuck: Service[];
}

/**
 * Rejects revision `number` of `service` for it alone, or for its repository folder fleet-wide, and moves back every
 * service it applies to that runs it now.
 * @throws HttpError 404 for no such revision; 400 for a revision with no repository folder content (a chart).
 */
export async function rejectRevision(
  db: Kysely<Database>,
  service: Service,
  number: number,
  options: { fleetWide: boolean; reason: string; by: string },
): Promise<RejectionOutcome> {
  const revision = (await listRevisions(db, service.id)).find((candidate) => candidate.number === number);
  if (!revision) throw new HttpError(404, `the service has no revision ${number}`, 'params.number');
  const { repositoryId, git } = revision.spec;
  if (!repositoryId || !git || !revision.commit || !revision.digest)
    throw new HttpError(400, `revision ${number} has no repository folder to reject (a Helm chart's revision)`, 'params.number');
  return await inTransaction(db, async (trx) => {
    const rejection = await addRejection(trx, {
      repositoryId,
      folder: git.folder ?? '',
      digest: revision.digest!,
      commit: revision.commit!,
      serviceId: options.fleetWide ? null : service.id,
      reason: options.reason,
      by: options.by,
    });
    const affected = options.fleetWide
      ? (await listServices(trx, { repositoryId })).filter((candidate) => rejectionsFor([rejection], candidate).length > 0)
      : [service];
    const outcome: RejectionOutcome = { rejection, moved: [], stuck: [] };
    for (const target of affected) {
      if (target.deletedAt !== null || target.revision.digest !== rejection.digest) continue;
      const moved = await moveBack(trx, target, rejection);
      if (moved) outcome.moved.push({ service: moved, from: target.revision.number, to: moved.revision.number });
      else outcome.stuck.push(target);
    }
    return outcome;
  });
}

/** Moves the service back to its newest earlier revision that is not rejected. @returns it, or undefined when none. */
async function moveBack(db: Kysely<Database>, service: Service, rejection: Rejection): Promise<Service | undefined> {
  const rejected = await rejectedDigests(db, service);
  const good = (await listRevisions(db, service.id)).find(
    (candidate) => candidate.number < service.revision.number && candidate.digest !== null && !rejected.has(candidate.digest),
  );
  if (!good) return undefined;
  const message = `revision ${service.revision.number} rejected (${rejection.reason}): back to revision ${good.number}`;
  return await rollbackService(db, service.id, good.number, { by: rejection.by, message }, new Date(), { pin: false });
}

/**
 * The rejection of `digest` for a service (by id and spec; a service not created yet has id ''), if any.
 * @returns one read of the repository's rejections.
 */
export async function rejectionOf(
  db: Kysely<Database>,
  service: Pick<Service, 'id' | 'spec'>,
  digest: string,
): Promise<Rejection | undefined> {
  if (!service.spec.repositoryId) return undefined;
  const all = await listRejections(db, { repositoryId: service.spec.repositoryId });
  return rejectionsFor(all, service).find((rejection) => rejection.digest === digest);
}

/** @throws HttpError 409 naming the rejection when `digest` is rejected for the service. */
export async function refuseRejected(db: Kysely<Database>, service: Pick<Service, 'id' | 'spec'>, digest: string): Promise<void> {
  const rejection = await rejectionOf(db, service, digest);
  if (rejection)
    throw new HttpError(
      409,
      `the folder's content at commit ${rejection.commit.slice(0, 12)} was rejected by ${rejection.by}: ${rejection.reason} (rejection ${rejection.id})`,
    );
}
