/**
 * The repair plan's rate limit: at once, then one backoff, then six after the one before; a fourth drift within the
 * window is held (CHANGED reported as CONFLICT) until the window has room; selfHeal false and conflicts the apply
 * left are never repaired.
 */
import { describe, expect, it } from 'vitest';
import type { AgentReport, AgentService } from '../api/agent.ts';
import type { ServiceState } from './agent-state.ts';
import { planRepair, REPAIR_WINDOW_MS } from './repair.ts';

type Component = AgentReport['components'][number];

const BACKOFF = 1_000;
const service = (selfHeal?: boolean) => ({ syncConfig: selfHeal === undefined ? undefined : { selfHeal } }) as unknown as AgentService;
const component = (drift?: Component['drift']): Component => ({
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  namespace: 'shop',
  name: 'settings',
  state: 'RUNNING',
  synced: drift === undefined,
  ...(drift ? { drift } : {}),
});
const changed = component({ state: 'CHANGED', fields: ['data.value'], managers: ['kubectl-patch'] });
const fresh = (): ServiceState => ({ syncedAt: 0, failures: 0, repairs: [] });

describe('planRepair', () => {
  it('repairs the first drift at once, the second one backoff after the first, the third six after the second', () => {
    const state = fresh();
    expect(planRepair(service(), state, [changed], 10_000, BACKOFF).nextCheckAt).toBe(10_000);
    expect(state.repairAt).toBe(10_000);
    state.repairs.push(10_000);
    state.repairAt = undefined;
    expect(planRepair(service(), state, [changed], 10_100, BACKOFF).nextCheckAt).toBe(11_000);
    state.repairs.push(11_000);
    state.repairAt = undefined;
    planRepair(service(), state, [changed], 11_050, BACKOFF);
    expect(state.repairAt).toBe(17_000);
  });

  it('holds a fourth drift within the window as a conflict, and repairs again once the window has room', () => {
    const state = { ...fresh(), repairs: [0, 1_000, 7_000] };
    const held = planRepair(service(), state, [changed], 8_000, BACKOFF);
    expect(state.repairAt).toBeUndefined();
    expect(held.components[0]?.drift?.state).toBe('CONFLICT');
    expect(held.nextCheckAt).toBe(REPAIR_WINDOW_MS);
    planRepair(service(), state, [changed], REPAIR_WINDOW_MS + 1, BACKOFF);
    expect(state.repairs).toEqual([1_000, 7_000]);
    expect(state.repairAt).toBe(REPAIR_WINDOW_MS + 1);
  });

  it('never repairs with selfHeal false, nor a conflict the apply left, and forgets a due repair once the drift is gone', () => {
    const state = fresh();
    expect(planRepair(service(false), state, [changed], 5_000, BACKOFF)).toEqual({ components: [changed] });
    expect(state.repairAt).toBeUndefined();
    const given = component({ state: 'CONFLICT', fields: ['data.value'], managers: ['rival'] });
    planRepair(service(), state, [given], 5_000, BACKOFF);
    expect(state.repairAt).toBeUndefined();
    planRepair(service(), state, [changed], 5_000, BACKOFF);
    expect(state.repairAt).toBe(5_000);
    planRepair(service(), state, [component()], 5_001, BACKOFF);
    expect(state.repairAt).toBeUndefined();
  });
});
