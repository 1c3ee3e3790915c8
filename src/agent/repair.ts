/**
 * When the agent repairs a service's drift, as Argo CD's self-heal does, but so that two controllers fighting over
 * a field do not loop: the first repair is at once, the second waits the backoff (5 s by default) after the first,
 * the third six backoffs after the second; a fourth drift within the 10-minute window is not repaired. Its changed objects are then reported as a CONFLICT with the
 * managers that keep changing them, until the window has room again or a new revision comes (its apply starts
 * afresh). A service with `syncConfig.selfHeal: false` only reports drift.
 */
import type { AgentService, AgentReport } from '../api/agent.ts';
import type { ServiceState } from './agent-state.ts';

type Component = AgentReport['components'][number];

/** Repairs counted against the limit are those of the last 10 minutes. */
export const REPAIR_WINDOW_MS = 10 * 60_000;
/** How many backoffs after the previous repair the next may run, by how many the window holds; past the list: none. */
const REPAIR_DELAYS = [0, 1, 6];

/** What `planRepair` decided: the components to report, and when the next look is due (epoch ms), if one is. */
export interface RepairPlan {
  components: Component[];
  /** When the service must be looked at again: a repair falls due, or the window makes room. */
  nextCheckAt?: number;
}

/**
 * Sets `serviceState.repairAt` when `components` drifted and the service may be repaired (see the module's comment),
 * and clears it when the drift went away by itself. Held repairs turn CHANGED components into CONFLICT.
 * @param now epoch ms.
 * @param backoffMs the delay of the second repair in the window (AgentOptions.repairBackoffMs).
 */
export function planRepair(
  service: AgentService,
  serviceState: ServiceState,
  components: readonly Component[],
  now: number,
  backoffMs: number,
): RepairPlan {
  // A CONFLICT the apply itself left (fields given up to another controller) is not repaired: the next apply would
  // give them up again.
  const drifted = components.some((component) => component.drift && component.drift.state !== 'CONFLICT');
  if (!drifted || service.syncConfig?.selfHeal === false) {
    serviceState.repairAt = undefined;
    return { components: [...components] };
  }
  serviceState.repairs = serviceState.repairs.filter((at) => now - at < REPAIR_WINDOW_MS);
  const { repairs } = serviceState;
  const delays = REPAIR_DELAYS[repairs.length];
  if (delays === undefined) {
    serviceState.repairAt = undefined;
    return { components: components.map(asConflict), nextCheckAt: repairs[0]! + REPAIR_WINDOW_MS };
  }
  serviceState.repairAt ??= Math.max(now, (repairs.at(-1) ?? 0) + delays * backoffMs);
  return { components: [...components], nextCheckAt: serviceState.repairAt };
}

function asConflict(component: Component): Component {
  return component.drift?.state === 'CHANGED' ? { ...component, drift: { ...component.drift, state: 'CONFLICT' } } : component;
}
