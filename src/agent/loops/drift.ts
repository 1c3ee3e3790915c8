/**
 * The drift loop: the watch of the agent's labelled objects (kube/labelled-objects.ts) tells which services' objects
 * changed; a burst of changes (a namespace deleted with everything in it) settles for 100 ms, then each of those
 * services is looked at (observe.ts): a deleted or edited object is reported within about a second, and its repair
 * planned (repair.ts), which wakes the poll to sync the service. A service whose repair waits for its backoff, or
 * whose repairs are held, is looked at again when that ends.
 */
import type { AgentState } from '../agent-state.ts';
import { refreshService } from '../observe.ts';
import { serviceIdOf } from '../service-project.ts';
import type { Loop } from '../supervise.ts';

const SETTLE_MS = 100;
/** With nothing to look at again, the loop waits for the watch this long between rounds (it is woken earlier). */
const IDLE_MS = 10 * 60_000;

export function driftLoop(state: AgentState): Loop {
  followWatch(state);
  return {
    name: 'drift',
    work: () => lookAtDirty(state),
    wait: (ms) => state.driftWakeup.wait(ms, state.signal),
    interval: () => {
      const next = Math.min(...state.driftChecks.values());
      return Number.isFinite(next) ? Math.max(0, next - Date.now()) : IDLE_MS;
    },
  };
}

/** Marks the services whose labelled objects the watch saw change, and wakes the loop once the burst settled. */
function followWatch(state: AgentState): void {
  const { labelled } = state.cluster;
  if (!labelled) return;
  let settling: NodeJS.Timeout | undefined;
  const unsubscribe = labelled.subscribe(({ value }) => {
    const id = serviceIdOf(value);
    if (id === undefined) return;
    state.driftDirty.add(id);
    settling ??= setTimeout(() => {
      settling = undefined;
      state.driftWakeup.wake();
    }, SETTLE_MS);
  });
  state.signal.addEventListener('abort', () => {
    unsubscribe();
    clearTimeout(settling);
  });
}

/** Looks at the services the watch marked and those whose check (state.driftChecks) is due. */
async function lookAtDirty(state: AgentState): Promise<void> {
  const now = Date.now();
  for (const [id, at] of state.driftChecks) {
    if (at > now) continue;
    state.driftChecks.delete(id);
    state.driftDirty.add(id);
  }
  const ids = [...state.driftDirty];
  state.driftDirty.clear();
  for (const id of ids) {
    const service = state.known?.find((known) => known.id === id);
    if (service && !state.signal.aborted) await refreshService(state, service);
  }
}
