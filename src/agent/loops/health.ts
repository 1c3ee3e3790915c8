/**
 * The health loop: components keep changing after a sync (pods start, volumes bind), so every `healthIntervalMs`
 * the components of each service not yet all RUNNING and synced are read again from the cluster, and reported when
 * they changed.
 */
import { sleep } from '../../sleep.ts';
import type { AgentState } from '../agent-state.ts';
import { queueReport, sendPending } from '../reports.ts';
import type { Loop } from '../supervise.ts';
import { refreshComponents } from '../sync.ts';

export function healthLoop(state: AgentState): Loop {
  return {
    name: 'health',
    work: () => refreshHealth(state),
    wait: (ms) => sleep(ms, state.signal).catch(() => undefined),
    interval: () => state.options.healthIntervalMs,
  };
}

async function refreshHealth(state: AgentState): Promise<void> {
  for (const service of state.known ?? []) {
    const serviceState = state.services.get(service.id);
    const outcome = serviceState?.outcome;
    if (state.signal.aborted || !serviceState || !outcome || service.deleting) continue;
    if (outcome.components.every((component) => component.state === 'RUNNING' && component.synced)) continue;
    serviceState.outcome = { ...outcome, components: await refreshComponents(state.cluster, outcome.components) };
    queueReport(service, serviceState, serviceState.outcome);
    await sendPending(state, service);
  }
}
