/**
 * An agent's report of one of its services (POST /v1/agent/services/:id/report), and what follows from it: the
 * report is recorded (store/reports.ts), or, for a deleted service whose agent reports nothing left of it and no
 * error, the service is removed, in one transaction with the read of the service it is judged on. Browsers are
 * told; then, against the service as it was before the report, a status change is notified (Plural's
 * `service.update`, naming the objects that drifted, if any) and may settle a pipeline stage, and a service turning
 * healthy kicks its agent, whose services waiting for it may now sync.
 */
import type { Kysely } from 'kysely';
import type { Cluster } from '../store/clusters.ts';
import { recordServiceReport, reportedService, type ServiceReport } from '../store/reports.ts';
import type { Database } from '../store/schema.ts';
import { getServiceById, removeService, type Service } from '../store/services.ts';
import type { FleetChange } from '../api/events.ts';
import type { FleetEvent, Notifier } from './notifier.ts';
import type { PipelineRunner } from './pipelines.ts';
import type { RolloutRunner } from './rollouts.ts';

export interface ServiceReportDeps {
  db: Kysely<Database>;
  /** Kicks the service's agent, on whichever replica holds its channel. */
  onServiceChange: (service: Service) => void;
  /** Tells browsers of a change. */
  announce: (change: FleetChange) => void;
  /** Fleet events to notification routers. */
  notifier: Notifier;
  /** A service turning healthy may settle a pipeline stage. */
  pipelines: PipelineRunner;
  /** A copy turning healthy or failed may move its global service's rollout on, or stop it. */
  rollouts: RolloutRunner;
}

/**
 * Records `report` of `before` (the service as read before it, of the agent's `cluster`) and announces what it
 * changed. Promotions the report settles run in the background: the agent is answered without waiting for them.
 * @throws NotFoundError when the service went away since `before` was read.
 */
export async function recordReport(deps: ServiceReportDeps, cluster: Cluster, before: Service, report: ServiceReport): Promise<void> {
  const { db } = deps;
  await db.transaction().execute(async (trx) => {
    const service = await reportedService(trx, before.id);
    // The agent deleted everything the service applied: it is done.
    if (service.deleting && report.components.length === 0 && report.errors.length === 0) await removeService(trx, before.id);
    else await recordServiceReport(trx, before.id, report, service.revisionId);
  });
  deps.announce({ kind: 'service', id: before.id });
  // A service turning healthy may release services that depend on it: the agent should look again now.
  const after = await getServiceById(db, before.id).catch(() => undefined);
  if (after?.status === 'healthy' && before.status !== 'healthy') deps.onServiceChange(after);
  if (after && after.status !== before.status) {
    deps.notifier.notify(serviceUpdate(cluster, after));
    // In the background: the agent's report is answered without waiting for promotions.
    void deps.pipelines.serviceReported(after);
    void deps.rollouts.serviceReported(after);
  }
}

/** A service's status changed, as its agent reported: Plural's `service.update`. */
function serviceUpdate(cluster: { id: string; name: string }, service: Service): FleetEvent {
  const failed = service.status === 'failed';
  return {
    type: 'service.update',
    severity: failed ? 'error' : 'info',
    cluster: { id: cluster.id, name: cluster.name },
    service: {
      id: service.id,
      name: service.name,
      namespace: service.spec.namespace,
      status: service.status,
      revision: service.revision.number,
    },
    message: failed
      ? `${service.name} failed: ${service.errors.map((error) => error.message).join('; ')}`
      : `${service.name} is ${service.status} at revision ${service.revision.number}${driftText(service)}`,
  };
}

/** `: Deployment shop/web deleted in the cluster, ConfigMap shop/settings changed (data.value)`, or '' without drift. */
function driftText(service: Service): string {
  const drifted = service.components.flatMap((component) => {
    const { drift } = component;
    if (!drift) return [];
    const what = { MISSING: 'deleted in the cluster', CHANGED: 'changed', CONFLICT: 'in conflict' }[drift.state];
    const fields =
      drift.fields.length > 0 ? ` (${drift.fields.join(', ')}${drift.managers.length > 0 ? ` by ${drift.managers.join(', ')}` : ''})` : '';
    return [`${component.kind} ${component.namespace}/${component.name} ${what}${fields}`];
  });
  return drifted.length > 0 ? `: ${drifted.join(', ')}` : '';
}
