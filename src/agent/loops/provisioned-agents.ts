/**
 * The provisioned-agents loop: every `healthIntervalMs`, installs the agents of the clusters this management
 * cluster's Cluster API made once they are available (provisioned-agents.ts); nothing to do, and no request, on a
 * cluster that makes none.
 */
import { sleep } from '../../sleep.ts';
import type { AgentState } from '../agent-state.ts';
import { installProvisionedAgents } from '../provisioned-agents.ts';
import type { Loop } from '../supervise.ts';

export function provisionedAgentsLoop(state: AgentState): Loop {
  return {
    name: 'provisioned-agents',
    work: () => installProvisionedAgents(state),
    wait: (ms) => sleep(ms, state.signal).catch(() => undefined),
    interval: () => state.options.healthIntervalMs,
  };
}
