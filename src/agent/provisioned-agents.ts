/**
 * A management cluster's part in a cluster the fleet makes through Cluster API (server/provisioned-clusters.ts):
 * once the Cluster API Cluster that one of this cluster's services holds (AgentService.provisions) is available,
 * the agent installs the new cluster's agent into it, with the objects `gantry agent install` makes
 * (install/agent.ts), through the admin kubeconfig Cluster API's control plane provider wrote (the Secret
 * `<cluster>-kubeconfig` of the Cluster's namespace, Cluster API's contract) and with a fresh deploy token of that
 * cluster from the server. The new agent's first ping makes the cluster a healthy fleet member, and the server keeps
 * it from then on (kept-agents.ts). The kubeconfig never leaves this cluster; the server hands out the token only
 * to the agent of the management cluster and only until the new agent pinged.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { AgentService } from '../api/agent.ts';
import { ApiError } from '../client/fleet-client.ts';
import { agentInstallManifests } from '../install/agent.ts';
import { KubeClient } from '../kube/client.ts';
import { Cluster } from '../kube/cluster.ts';
import { messageOf } from '../problems.ts';
import { AGENT_FIELD_MANAGER, type AgentState } from './agent-state.ts';

/**
 * Installs the agent of every provisioned cluster that is available and not yet installed; a failure is logged and
 * the install tried again next round. A cluster is done once its install was applied, or once the server says its
 * agent already pinged (409).
 */
export async function installProvisionedAgents(state: AgentState): Promise<void> {
  for (const service of state.known ?? []) {
    const cluster = service.provisions;
    if (state.signal.aborted || !cluster || service.deleting || state.installedAgents.has(cluster)) continue;
    if (!clusterAvailable(state, service, cluster)) continue;
    try {
      await installAgent(state, service, cluster);
      state.installedAgents.add(cluster);
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        state.installedAgents.add(cluster);
        continue;
      }
      state.log.warn({ cluster, error: messageOf(error) }, 'could not install the agent of a provisioned cluster; trying again');
    }
  }
}

/** Whether the agent's last look at the service's Cluster API Cluster found it RUNNING (Cluster API's Available). */
function clusterAvailable(state: AgentState, service: AgentService, cluster: string): boolean {
  const components = state.services.get(service.id)?.outcome?.components ?? [];
  return components.some((c) => c.group === 'cluster.x-k8s.io' && c.kind === 'Cluster' && c.name === cluster && c.state === 'RUNNING');
}

/**
 * Reads the cluster's kubeconfig, makes sure its API server answers (before a token is asked for), takes a fresh
 * deploy token and applies the install's objects, the namespace first.
 * @throws Error naming the missing Secret; ApiError from the server; KubeApiError or ClusterUnreachableError from the
 *   new cluster.
 */
async function installAgent(state: AgentState, service: AgentService, cluster: string): Promise<void> {
  const secretName = `${cluster}-kubeconfig`;
  const secret = await state.cluster.get({ group: '', version: 'v1', kind: 'Secret', namespace: service.namespace, name: secretName });
  const value = (secret?.['data'] as { value?: string } | undefined)?.value;
  if (!value) throw new Error(`no kubeconfig of cluster ${cluster} yet: Secret ${service.namespace}/${secretName} has no value`);
  const config = new KubeConfig();
  config.loadFromString(Buffer.from(value, 'base64').toString());
  const target = new Cluster(new KubeClient(config).withSignal(state.signal));
  try {
    await target.version();
    const install = await state.options.client.provisionedAgentInstall(cluster, state.signal);
    const objects = agentInstallManifests({
      server: install.server ?? state.options.client.server,
      token: { value: install.deployToken },
      image: install.image,
    });
    for (const object of objects) await target.apply(object, { fieldManager: AGENT_FIELD_MANAGER, force: true });
    state.log.info({ cluster, image: install.image }, 'agent installed into a cluster this cluster provisioned');
  } finally {
    await target.close();
  }
}
