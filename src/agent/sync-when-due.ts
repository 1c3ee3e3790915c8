/**
 * One service's sync from the poll loop, when it is due: its revision changed, it is being deleted, its resync
 * interval passed (drift repair), or a failed revision's backoff is over (5 s, doubling, at most 5 min; a failing
 * revision is not tried on every poll). A service waiting for its dependencies to be healthy is not synced. The
 * outcome is recorded in the service's state and its report queued (reports.ts).
 */
import type { AgentService } from '../api/agent.ts';
import { type AgentState, type ServiceState } from './agent-state.ts';
import { queueReport } from './reports.ts';
import { deleteService, type SyncOutcome, syncService } from './sync.ts';
import { messageOf } from '../problems.ts';

/** Syncs (or deletes) `service` when due; never throws (a failed sync is logged, one cut short by the stop is not). */
export async function syncWhenDue(state: AgentState, service: AgentService): Promise<void> {
  const { log: agentLog, resyncIntervalMs } = state.options;
  const serviceState: ServiceState = state.services.get(service.id) ?? { syncedAt: 0, failures: 0 };
  const now = Date.now();
  const failing = serviceState.failedRevisionId === service.revision.id;
  const retryDue = failing && now >= (serviceState.retryAt ?? 0);
  const changed = serviceState.appliedRevisionId !== service.revision.id && !failing;
  if (!(service.deleting || changed || retryDue || now - serviceState.syncedAt >= resyncIntervalMs)) return;
  if (service.waitingFor.length > 0 && !service.deleting) {
    agentLog.info({ service: service.name, waitingFor: service.waitingFor }, 'waiting for dependencies to be healthy');
    return;
  }
  const log = agentLog.child({ service: service.name, revision: service.revision.number });
  try {
    const outcome = service.deleting ? await deleteService(service, state.context) : await syncSource(state, service);
    if (outcome.applied) serviceState.appliedRevisionId = service.revision.id;
    const failed = !outcome.applied || outcome.errors.length > 0;
    serviceState.failures = failed ? (serviceState.failedRevisionId === service.revision.id ? serviceState.failures + 1 : 1) : 0;
    serviceState.failedRevisionId = failed ? service.revision.id : undefined;
    serviceState.retryAt = failed ? Date.now() + retryDelayMs(serviceState.failures) : undefined;
    serviceState.syncedAt = Date.now();
    serviceState.outcome = outcome;
    state.services.set(service.id, serviceState);
    log.info(
      { components: outcome.components.length, errors: outcome.errors.length, renderReused: outcome.renderReused },
      service.deleting ? 'deleted' : 'synced',
    );
    queueReport(service, serviceState, outcome);
  } catch (error) {
    if (state.signal.aborted) return;
    log.error({ error: messageOf(error) }, 'sync failed');
  }
}

/** Syncs the revision's source, downloaded into the source cache first when not there; a failed download is an error of the outcome. */
async function syncSource(state: AgentState, service: AgentService): Promise<SyncOutcome> {
  const { sources, signal } = state;
  const { digest } = service.revision;
  let dir = await sources.find(digest);
  if (!dir) {
    try {
      dir = await sources.add(digest, await state.options.client.tarball(service.id, digest, signal, sources.limits.maxTarballBytes));
    } catch (error) {
      if (signal.aborted) throw error;
      return { applied: false, components: [], errors: [{ source: 'download', message: messageOf(error) }] };
    }
  }
  return await syncService(service, dir, state.context);
}

/** Backoff after failed syncs of one revision: 5 s, doubling, at most 5 min. */
function retryDelayMs(failures: number): number {
  return Math.min(5 * 60_000, 5_000 * 2 ** Math.max(0, failures - 1));
}
