/**
 * One service's sync from the poll loop, when it is due: its revision changed, it is being deleted, a drift repair
 * is due (repair.ts), its resync interval passed (the safety net of drift repair: the service's
 * `syncConfig.resyncInterval`, at least a minute, else the agent's; neither with `selfHeal: false`),
 * or a failed revision's backoff is over (5 s, doubling, at most 5 min; a failing revision is not tried on every
 * poll). A service waiting for its dependencies to be healthy is not synced, nor the agent's own Deployment when it
 * is not this agent's (own-service.ts). The outcome is recorded in the service's
 * state with what its objects should look like from now on (observe.ts), its report queued (reports.ts), and the
 * drift loop asked to look at it again (a change made during the sync was not drift it could judge).
 */
import type { AgentService } from '../api/agent.ts';
import { type AgentState, type ServiceState } from './agent-state.ts';
import { expectationsOf } from './observe.ts';
import { queueReport } from './reports.ts';
import { deleteService, type SyncOutcome, syncService } from './sync.ts';
import { messageOf } from '../problems.ts';
import { ownServiceRefusal } from './own-service.ts';
import { parseDuration } from '../duration.ts';

/** Syncs (or deletes) `service` when due; never throws (a failed sync is logged, one cut short by the stop is not). */
export async function syncWhenDue(state: AgentState, service: AgentService): Promise<void> {
  const { log: agentLog, resyncIntervalMs } = state.options;
  const serviceState: ServiceState = state.services.get(service.id) ?? { syncedAt: 0, failures: 0, repairs: [] };
  const now = Date.now();
  const failing = serviceState.failedRevisionId === service.revision.id;
  const retryDue = failing && now >= (serviceState.retryAt ?? 0);
  const changed = serviceState.appliedRevisionId !== service.revision.id && !failing;
  const repairDue = serviceState.repairAt !== undefined && now >= serviceState.repairAt;
  const resyncDue = service.syncConfig?.selfHeal !== false && now - serviceState.syncedAt >= resyncIntervalOf(service, resyncIntervalMs);
  if (!(service.deleting || changed || retryDue || repairDue || resyncDue)) return;
  if (service.waitingFor.length > 0 && !service.deleting) {
    agentLog.info({ service: service.name, waitingFor: service.waitingFor }, 'waiting for dependencies to be healthy');
    return;
  }
  const log = agentLog.child({ service: service.name, revision: service.revision.number });
  try {
    state.syncing = service.id;
    const refusal = ownServiceRefusal(service, state.options.deployment);
    const outcome: SyncOutcome = refusal
      ? { applied: false, components: [], errors: [{ source: 'sync', message: refusal }] }
      : service.deleting
        ? await deleteService(service, state.context)
        : await syncSource(state, service);
    if (outcome.applied) {
      // A new revision starts the repair window afresh: its objects may no longer be fought over.
      if (serviceState.appliedRevisionId !== service.revision.id) serviceState.repairs = [];
      serviceState.appliedRevisionId = service.revision.id;
      serviceState.expected = await expectationsOf(state, service, outcome);
    }
    if (repairDue) serviceState.repairs.push(now);
    serviceState.repairAt = undefined;
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
  } finally {
    state.syncing = undefined;
    state.driftDirty.add(service.id);
    state.driftWakeup.wake();
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

/** The service's own resync interval, at least a minute (a shorter one would make its agent apply all the time); else `agentMs`. */
export function resyncIntervalOf(service: Pick<AgentService, 'syncConfig'>, agentMs: number): number {
  const own = service.syncConfig?.resyncInterval;
  return own ? Math.max(60_000, parseDuration(own)) : agentMs;
}

/** Backoff after failed syncs of one revision: 5 s, doubling, at most 5 min. */
function retryDelayMs(failures: number): number {
  return Math.min(5 * 60_000, 5_000 * 2 ** Math.max(0, failures - 1));
}
