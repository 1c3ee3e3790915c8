/**
 * The health loop: components keep changing after a sync (pods start, volumes bind), so every `healthIntervalMs`
 * the components of each service not yet all RUNNING and synced are looked at again (observe.ts), and reported when
 * they changed. The drift loop sees most changes sooner, as the watch brings them; this loop is its safety net and
 * the only one on a cluster without the watched cache.
 */
import { sleep } from '../../sleep.ts';
import type { AgentState } from '../agent-state.ts';
import { refreshService } from '../observe.ts';
import type { Loop } from '../supervise.ts';

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
    const components = state.services.get(service.id)?.outcome?.components;
    if (state.signal.aborted || !components) continue;
    if (components.every((component) => component.state === 'RUNNING' && component.synced)) continue;
    await refreshService(state, service);
  }
}
