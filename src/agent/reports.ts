/**
 * The agent's reports of each service (its revision, components and errors) to the server: a report is queued only
 * when it differs from the last one the server accepted (by hashOf, SHA-256 of its canonical JSON), and a queued
 * report is sent again on every poll and health round until the server accepts it.
 */
import type { AgentReport, AgentService } from '../api/agent.ts';
import { type AgentState, type ServiceState } from './agent-state.ts';
import type { SyncOutcome } from './sync.ts';
import { messageOf } from '../problems.ts';
import { hashOf } from '../values.ts';

/** Queues the report of `outcome` in `serviceState.pending`, or clears it when the server already has the same one. */
export function queueReport(service: AgentService, serviceState: ServiceState, outcome: SyncOutcome): void {
  const payload: AgentReport = {
    // After a render error the last applied revision still runs; its id is what the server should see.
    revisionId: serviceState.appliedRevisionId ?? service.revision.id,
    components: outcome.components,
    errors: outcome.errors,
  };
  // The same as the server has: an older report still queued (the server was away) must not be sent over it.
  serviceState.pending = hashOf(payload) === serviceState.reported ? undefined : payload;
}

/**
 * Sends the service's queued report, if any; a report the server does not take is logged and kept for the next
 * round. Once a deleted service's last report is accepted, the agent forgets the service.
 */
export async function sendPending(state: AgentState, service: AgentService): Promise<void> {
  const serviceState = state.services.get(service.id);
  const report = serviceState?.pending;
  if (!serviceState || !report) return;
  try {
    await state.options.client.report(service.id, report, state.signal);
  } catch (error) {
    if (!state.signal.aborted) state.log.warn({ service: service.name, error: messageOf(error) }, 'report not delivered; will retry');
    return;
  }
  serviceState.reported = hashOf(report);
  // Another loop may have queued a newer report meanwhile (or sent this one too): that one still goes.
  if (serviceState.pending === report) serviceState.pending = undefined;
  if (service.deleting) state.services.delete(service.id);
}
