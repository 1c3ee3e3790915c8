/**
 * One agent at work per cluster (`gantry agent run --leader-elect`): a rolling upgrade runs the new pod beside the old
 * one, so the agents of a cluster campaign for a Lease (kube/lease.ts, client-go's leader election) and only the
 * leader runs the agent: syncs, reports, pings, push channel, gates. A candidate waits, ready (it passed the startup
 * check with the server), until the leader stops, which releases the Lease on its way out. On taking over it reads
 * its deploy token from its store again, since the leader may have rotated it; on losing the Lease it stops its agent
 * and campaigns again.
 */
import { type RunningAgent, startAgent } from './agent.ts';
import type { AgentOptions } from './agent-state.ts';
import { LeaderElector } from '../kube/lease.ts';
import { messageOf } from '../problems.ts';

/** The Lease the agents of one cluster campaign for. */
export interface AgentLease {
  namespace: string;
  name: string;
}

/**
 * Starts campaigning for `lease`; the agent starts once this candidate leads.
 * @returns the candidate, whose `stop()` stops its agent (when it leads) and releases the Lease.
 */
export function startElectedAgent(options: AgentOptions, lease: AgentLease): RunningAgent {
  const cluster = options.engine.clusters.get(options.kubeConfig, options.kubeConfig.getCurrentContext());
  let term: Promise<RunningAgent | undefined> | undefined;
  const elector = new LeaderElector({
    client: cluster.client,
    ...lease,
    log: options.log.child({ component: 'leader-election' }),
    onStartedLeading: () => {
      term = startTerm(options);
    },
    onStoppedLeading: async () => {
      const agent = await term;
      term = undefined;
      await agent?.stop();
    },
  });
  elector.start();
  return {
    async stop() {
      await elector.stop();
    },
  };
}

/** The leader's agent, on the token its store holds now; undefined when that cannot be read (the next term tries again). */
async function startTerm(options: AgentOptions): Promise<RunningAgent | undefined> {
  try {
    if (options.tokenStore) options.client.useToken(await options.tokenStore.read());
  } catch (error) {
    options.log.error({ error: messageOf(error) }, 'the deploy token cannot be read: the agent does not start');
    return undefined;
  }
  options.log.info('leading: the agent starts');
  return startAgent(options);
}
