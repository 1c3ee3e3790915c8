/**
 * The agents' reports of their services (Plural's updateServiceComponents): each sets a service's components,
 * errors, applied revision and the status derived from them, which the fleet's metrics count.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { type Component, type ServiceError, type ServiceStatus, serviceRow } from './services.ts';

/** What an agent reports after a sync (Plural's updateServiceComponents). */
export interface ServiceReport {
  revisionId: string;
  components: Component[];
  errors: ServiceError[];
}

/**
 * Stores an agent's report and derives the status as Plural's console does: any FAILED component or error →
 * failed; a revision older than the newest, or an object out of sync → stale; any not running → synced;
 * all running → healthy. A deleted service whose agent reports no components left is removed.
 */
export async function recordServiceReport(db: Kysely<Database>, serviceId: string, report: ServiceReport, now = new Date()): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await serviceRow(trx, serviceId);
    if (row.deleted_at !== null && report.components.length === 0 && report.errors.length === 0) {
      await trx.deleteFrom('services').where('id', '=', serviceId).execute();
      return;
    }
    await trx.deleteFrom('service_components').where('service_id', '=', serviceId).execute();
    if (report.components.length > 0) {
      await trx
        .insertInto('service_components')
        .values(report.components.map((c) => ({ service_id: serviceId, ...c, synced: c.synced ? 1 : 0 })))
        .execute();
    }
    await trx
      .updateTable('services')
      .set({
        applied_revision_id: report.revisionId,
        errors: JSON.stringify(report.errors),
        status: deriveStatus(report, row.revision_id),
        updated_at: now.toISOString(),
      })
      .where('id', '=', serviceId)
      .execute();
  });
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
