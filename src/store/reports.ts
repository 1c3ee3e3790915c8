/**
 * The agents' reports of their services (Plural's updateServiceComponents): each sets a service's components,
 * errors, applied revision and the status derived from them, which the fleet's metrics count. Whether a report
 * ends a deleted service instead is the server's rule (server/service-reports.ts).
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { ServiceStatus } from '../api/services.ts';
import { type Component, type ServiceError, serviceRow } from './services.ts';

/** What an agent reports after a sync (Plural's updateServiceComponents). */
export interface ServiceReport {
  revisionId: string;
  components: Component[];
  errors: ServiceError[];
}

/** What recording a report reads of its service first, in the report's transaction. */
export interface ReportedService {
  /** Marked for deletion (markServiceDeleted): its agent is deleting its objects. */
  deleting: boolean;
  /** The service's current revision, against which the report's status is derived. */
  revisionId: string | null;
}

/** @throws NotFoundError */
export async function reportedService(db: Kysely<Database>, serviceId: string): Promise<ReportedService> {
  const row = await serviceRow(db, serviceId);
  return { deleting: row.deleted_at !== null, revisionId: row.revision_id };
}

/**
 * Stores an agent's report and derives the status as Plural's console does: any FAILED component or error →
 * failed; a revision older than `currentRevisionId` (the newest), or an object out of sync → stale; any not running
 * → synced; all running → healthy. Its writes (components, then the service's row) belong in one transaction with
 * the read of `currentRevisionId` (reportedService): `db` is that transaction.
 */
export async function recordServiceReport(
  db: Kysely<Database>,
  serviceId: string,
  report: ServiceReport,
  currentRevisionId: string | null,
  now = new Date(),
): Promise<void> {
  await db.deleteFrom('service_components').where('service_id', '=', serviceId).execute();
  if (report.components.length > 0) {
    await db
      .insertInto('service_components')
      .values(
        report.components.map(({ drift, message, ...c }) => ({
          service_id: serviceId,
          ...c,
          message: message ?? null,
          synced: c.synced ? 1 : 0,
          drift: drift === undefined ? null : JSON.stringify(drift),
        })),
      )
      .execute();
  }
  await db
    .updateTable('services')
    .set({
      applied_revision_id: report.revisionId,
      errors: JSON.stringify(report.errors),
      status: deriveStatus(report, currentRevisionId),
      updated_at: now.toISOString(),
    })
    .where('id', '=', serviceId)
    .execute();
}

export function deriveStatus(report: ServiceReport, currentRevisionId: string | null): ServiceStatus {
  if (report.errors.length > 0 || report.components.some((c) => c.state === 'FAILED')) return 'failed';
  if (report.revisionId !== currentRevisionId || report.components.some((c) => !c.synced)) return 'stale';
  if (report.components.some((c) => c.state !== 'RUNNING')) return 'synced';
  return 'healthy';
}

/** Live (not deleted) services by status (stale, synced, healthy, failed); statuses with none are absent. */
export async function countServicesByStatus(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('services')
    .select((eb) => ['status', eb.fn.countAll<number | string>().as('count')])
    .where('deleted_at', 'is', null)
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
}
