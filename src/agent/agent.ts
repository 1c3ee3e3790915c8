/**
 * `gantry agent` as a function: the fleet's pull agent for one cluster, as a few supervised loops (supervise.ts) over
 * one shared state (agent-state.ts), in the shape of Plural's deployment-operator, each catching its own failures
 * and carrying on:
 * - ping (loops/ping.ts): reports the cluster's Kubernetes version and the agent's version;
 * - poll (loops/poll.ts): every interval plus random jitter, fetches the cluster's services from the server and
 *   syncs each one whose revision it has not applied, that is being deleted, or whose resync interval passed
 *   (drift repair; sync-when-due.ts);
 * - health (loops/health.ts): components not yet running are looked at again every few seconds and reported as
 *   they change;
 * - drift (loops/drift.ts): the watch of the agent's own objects tells which services changed in the cluster; their
 *   components are reported within about a second (deleted or edited objects as drift) and the drift repaired,
 *   rate-limited (repair.ts);
 * - push (loops/push.ts): a WebSocket on which the server kicks the agent when a service changes, which wakes the
 *   poll at once, and tunnels users' Kubernetes API requests (the auth proxy, api-proxy.ts) to be sent on
 *   impersonating them;
 * - gates (loops/gates.ts): the pipeline JOB gates of this cluster, listed on each poll, their Jobs followed every
 *   half second while any runs;
 * - provisioned agents (loops/provisioned-agents.ts): on a management cluster, the agent of each cluster its Cluster
 *   API made is installed once that cluster is available.
 * The agent dials out only. When the server cannot be reached it keeps syncing the services it last heard of from
 * the sources on its disk (also across its own restarts: desired-state.ts), and picks up again when the server
 * answers; reports are sent only when they change (reports.ts).
 */
import { type AgentOptions, AgentState } from './agent-state.ts';
import { driftLoop } from './loops/drift.ts';
import { gatesLoop } from './loops/gates.ts';
import { healthLoop } from './loops/health.ts';
import { pingLoop } from './loops/ping.ts';
import { pollLoop } from './loops/poll.ts';
import { previewsLoop } from './loops/previews.ts';
import { provisionedAgentsLoop } from './loops/provisioned-agents.ts';
import { runPush, startApiProxy } from './loops/push.ts';
import { supervise } from './supervise.ts';

export interface RunningAgent {
  /** Resolves when every loop has stopped; a sync under way is cancelled. */
  stop(): Promise<void>;
}

/**
 * Starts the agent: the auth proxy, then the ping, health, drift, gates, previews, provisioned-agents and poll loops, each running its first round at
 * once, and the push channel when `options.pushChannel`. Intervals are `options`' milliseconds (the poll's plus up
 * to `jitterMs`); files go under `options.dataDir` (`sources/`, `work/`, `services.sealed`).
 * Never throws and its loops never reject: every failure (server away, cluster unreachable, a sync or a report that
 * fails) is logged on `options.log` and tried again on the loop's next round.
 * @returns the running agent, whose `stop()` aborts every loop and request under way and closes the auth proxy.
 */
export function startAgent(options: AgentOptions): RunningAgent {
  const stopping = new AbortController();
  const state = new AgentState(options, stopping.signal);
  const proxy = startApiProxy(state);
  const loops = [
    ...[
      pingLoop(state),
      healthLoop(state),
      driftLoop(state),
      gatesLoop(state),
      previewsLoop(state),
      provisionedAgentsLoop(state),
      pollLoop(state),
    ].map((loop) => supervise(loop, options.log, stopping.signal)),
    ...(options.pushChannel ? [runPush(state, proxy)] : []),
  ];
  return {
    async stop() {
      stopping.abort(new Error('agent stopping'));
      await Promise.all(loops);
      await proxy.then((ready) => ready.close()).catch(() => undefined);
    },
  };
}
