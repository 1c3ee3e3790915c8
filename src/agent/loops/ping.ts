/**
 * The ping loop: every `pingIntervalMs`, tells the server the cluster's Kubernetes version (without its `v`) and the
 * agent's version, which is also how the server knows the agent is alive, and how it runs when it is the install's
 * Deployment (the server then keeps it as a service: server/kept-agents.ts); the answer may ask it to rotate its
 * deploy token, which it does at once (token-rotation.ts).
 */
import { sleep } from '../../sleep.ts';
import { GANTRY_VERSION } from '../../version.ts';
import type { AgentState } from '../agent-state.ts';
import { rotateDeployToken } from '../token-rotation.ts';
import type { Loop } from '../supervise.ts';

export function pingLoop(state: AgentState): Loop {
  return {
    name: 'ping',
    work: async () => {
      const version = (await state.cluster.version()).replace(/^v/, '');
      const { deployment } = state.options;
      const agentVersion = state.options.version ?? GANTRY_VERSION;
      const ping = { kubernetesVersion: version, agentVersion, ...(deployment ? { deployment } : {}) };
      const answer = await state.options.client.ping(ping, state.signal);
      if (answer.rotateToken) await rotateDeployToken(state);
    },
    wait: (ms) => sleep(ms, state.signal).catch(() => undefined),
    interval: () => state.options.pingIntervalMs,
  };
}
