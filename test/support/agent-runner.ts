/**
 * The test's part of an agent upgrade, not Gantry's (docs/fleet.md says which is which): the local clusters' kwok
 * nodes run no containers, so this plays the kubelet and the Deployment controller for the agent's Deployment
 * (gantry-agent in its namespace) on one cluster. It follows the Deployment's pod template; when its image's tag is one
 * the runner "can pull" (the same build, started as that version, as the issue allows), it starts a new agent (the
 * real agent code, in this process, as a candidate for the Lease as `--leader-elect` makes it, reporting that
 * version, with the Deployment's server and token Secret) once the server takes its token (the startup check after
 * which /readyz answers), then stops the agent it ran before (RollingUpdate with maxUnavailable 0), which releases
 * the Lease to the new one. An image it cannot pull is an ImagePullBackOff: the new pod never
 * turns ready, and the agent running goes on.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { AGENT_FIELD_MANAGER } from '../../src/agent/agent-state.ts';
import type { RunningAgent } from '../../src/agent/agent.ts';
import { startElectedAgent } from '../../src/agent/leader-election.ts';
import { AgentClient } from '../../src/client/agent-client.ts';
import { secretTokenStore } from '../../src/agent/token-store.ts';
import type { Engine } from '../../src/engine.ts';
import { AGENT_NAME, AGENT_NAMESPACE, imageTag } from '../../src/install/agent.ts';
import type { Logger } from '../../src/logger.ts';
import { pushedAgentOptions } from './fleet.ts';

export interface AgentRunnerOptions {
  /** The cluster's name on the server. */
  cluster: string;
  kubeConfig: KubeConfig;
  engine: Engine;
  /** The tags whose images can be pulled; any other is an ImagePullBackOff. */
  pullable: ReadonlySet<string>;
  /** Each agent's data folder is a new folder below this one (a new pod's emptyDir). */
  dataDir: string;
  log: Logger;
  /** The agent's namespace, where its Deployment is; default gantry-agent. */
  namespace?: string;
  /**
   * An agent to start before any Deployment exists, as the Deployment would run it (the bench's agents, which no
   * `gantry agent install` made): its first ping makes the agent service, which then applies the Deployment.
   */
  first?: { server: string; tokenSecret: string; version: string };
}

export interface AgentRunner {
  /** The versions started, in order, with when (epoch ms). */
  readonly started: ReadonlyArray<{ version: string; at: number }>;
  /** The version of the agent running now. */
  running(): string | undefined;
  stop(): Promise<void>;
}

interface Container {
  image: string;
  args: string[];
}

/** Follows the cluster's agent Deployment (every 300 ms) until stopped. */
export function runAgentDeployment(options: AgentRunnerOptions): AgentRunner {
  const cluster = options.engine.clusters.get(options.kubeConfig, options.kubeConfig.getCurrentContext());
  const started: Array<{ version: string; at: number }> = [];
  const stopping = new AbortController();
  let current: { version: string; agent: RunningAgent } | undefined;

  /** A new pod of `container`: its agent, a candidate once the server took its token; the pod before it stopped then. */
  async function roll(container: Container, version: string): Promise<void> {
    const flag = (name: string) => container.args[container.args.indexOf(name) + 1]!;
    const server = flag('--server');
    const tokenSecret = flag('--token-secret');
    const tokenStore = secretTokenStore(cluster, tokenSecret, AGENT_FIELD_MANAGER);
    const token = await tokenStore.read();
    // The startup check of `gantry agent run`, after which it serves its probes: the pod is ready.
    await new AgentClient({ server, token }).cluster();
    const agent = startElectedAgent(
      pushedAgentOptions(
        {
          server,
          token,
          engine: options.engine,
          kubeConfig: options.kubeConfig,
          dataDir: path.join(options.dataDir, `${version}-${started.length}`),
          log: options.log.child({ pod: `${options.cluster}/${version}` }),
        },
        { tokenStore, deployment: { server, tokenSecret }, version, pingIntervalMs: 1_000 },
      ),
      { namespace: tokenSecret.split('/')[0]!, name: AGENT_NAME },
    );
    started.push({ version, at: Date.now() });
    // The old pod goes once the new one is ready; its agent releases the Lease, and the new one takes over.
    await current?.agent.stop();
    current = { version, agent };
  }

  const deploymentPath = `/apis/apps/v1/namespaces/${options.namespace ?? AGENT_NAMESPACE}/deployments/${AGENT_NAME}`;
  const followed = (async () => {
    const { first } = options;
    if (first)
      await roll({ image: `first:${first.version}`, args: ['--server', first.server, '--token-secret', first.tokenSecret] }, first.version);
    while (!stopping.signal.aborted) {
      const deployment = await cluster.client
        .request<{ spec: { template: { spec: { containers: Container[] } } } }>('GET', deploymentPath)
        .catch(() => undefined);
      const container = deployment?.spec.template.spec.containers[0];
      const version = container && imageTag(container.image);
      if (container && version && version !== current?.version && options.pullable.has(version))
        await roll(container, version).catch((error: unknown) => options.log.error({ error: String(error) }, 'the new agent pod failed'));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  })();

  return {
    started,
    running: () => current?.version,
    async stop() {
      stopping.abort();
      await followed.catch(() => undefined);
      await current?.agent.stop();
    },
  };
}
