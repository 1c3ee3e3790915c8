/**
 * The agents part of the fleet bench (`--fleet-part agents`): an upgrade of 10 clusters' agents, `upgrade-1` to
 * `upgrade-10`, each running as the install's Deployment in a namespace of its own (five on dev's API server, five on
 * prod's). Their pods are played by test/support/agent-runner.ts as in the e2e test (kwok's nodes run no containers):
 * the real agent code, a `--leader-elect` candidate per pod, the same build reporting the image's tag as its version.
 * Measured: `POST /v1/agents/rollout` with the CLI's default rollout (upgrade-1 the canary, then a quarter of the rest
 * at a time, no soak) until DONE, every cluster's new agent having pinged with the version. Baseline: what a rollout
 * cannot avoid, one minReadySeconds of the agent's Deployment per step (canary, then each batch).
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiRollout } from '../../src/api/rollouts.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { KubeApiError, loadKubeConfig } from '../../src/kube/client.ts';
import { createLogger } from '../../src/logger.ts';
import { startFleetServer } from '../../src/server/server.ts';
import { GANTRY_VERSION } from '../../src/version.ts';
import { type AgentRunner, runAgentDeployment } from '../../test/support/agent-runner.ts';
import { testConfig } from '../../test/support/engine.ts';
import { testServerOptions } from '../../test/support/fleet.ts';
import type { BenchRow } from '../bench-controller.ts';

const CLUSTERS = Array.from({ length: 10 }, (_, index) => `upgrade-${index + 1}`);
const NEXT = '0.0.0-bench-next';
/** The agent Deployment's minReadySeconds (src/install/agent.ts). */
const MIN_READY_S = 5;

/**
 * Upgrades the 10 clusters' agents once; everything it made (server, agents, namespaces, bindings) is removed again.
 * @param kubeconfigs the local clusters dev and prod, running.
 */
export async function benchAgentUpgrade(
  kubeconfigs: { dev: string; prod: string },
  dir: string,
  report: (line: string) => void,
): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const log = createLogger({ level: 'warn' });
  const server = await startFleetServer(
    testServerOptions(
      { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log },
      { agentImage: 'registry.invalid/bench/gantry' },
    ),
  );
  const admin = new FleetClient({ server: server.url, token: server.adminToken! });
  const engine = new Engine(testConfig());
  const runners: AgentRunner[] = [];
  const placed = CLUSTERS.map((name, index) => {
    const kubeConfig = loadKubeConfig({ kubeconfig: index < CLUSTERS.length / 2 ? kubeconfigs.dev : kubeconfigs.prod });
    return { name, namespace: `bench-agent-${index + 1}`, kubeConfig };
  });
  try {
    for (const { name, namespace, kubeConfig } of placed) {
      const { deployToken } = await admin.createCluster({ name });
      await tokenSecret(engine, kubeConfig, namespace, deployToken);
      runners.push(
        runAgentDeployment({
          cluster: name,
          kubeConfig,
          engine,
          pullable: new Set([GANTRY_VERSION, NEXT]),
          dataDir: path.join(dir, name),
          log,
          namespace,
          first: { server: server.url, tokenSecret: `${namespace}/gantry-agent-token`, version: GANTRY_VERSION },
        }),
      );
    }
    await waitFor('every agent service healthy', async () => (await keptHealthy(admin)) === CLUSTERS.length, 300_000);
    report(`${CLUSTERS.length} agents kept, each on its Deployment; upgrading them to ${NEXT}`);

    const started = performance.now();
    await admin.startAgentRollout({
      version: NEXT,
      rollout: {
        waves: [{ name: 'canary', clusters: [CLUSTERS[0]!] }],
        maxUnavailable: '25%',
        soak: '0s',
        progressDeadline: '2m',
        onFailure: 'rollback',
      },
    });
    const done = await waitFor(
      'the agents’ rollout to end',
      async () => {
        const rollout = await admin.getAgentRollout();
        return rollout.state === 'RUNNING' ? undefined : rollout;
      },
      600_000,
    );
    const seconds = (performance.now() - started) / 1000;
    if (done.state !== 'DONE') throw new Error(`the agents' rollout ended ${done.state}: ${done.reason ?? ''}`);
    const steps = stepsOf(done);
    report(`agent fleet upgrade, ${CLUSTERS.length} clusters: ${seconds.toFixed(1)} s in ${steps} steps`);
    return {
      rows: [
        {
          measurement: `agent fleet upgrade, ${CLUSTERS.length} clusters (canary, then batches of 25%), until every new agent pinged`,
          value: seconds,
          baseline: steps * MIN_READY_S,
          unit: 's',
          baselineIs: `${steps} steps × the Deployment's minReadySeconds (${MIN_READY_S} s)`,
        },
      ],
      notes: [],
    };
  } finally {
    await Promise.all(runners.map((runner) => runner.stop()));
    await server.close();
    for (const { namespace, kubeConfig } of placed) await removeNamespace(engine, kubeConfig, namespace);
    await engine.close();
  }
}

/** How many agent services are healthy at their current revision. */
async function keptHealthy(admin: FleetClient): Promise<number> {
  const services = await admin.listServices();
  return services.filter((service) => service.agent && service.status === 'healthy' && service.appliedRevision === service.revision.number)
    .length;
}

/** The rollout's sequential steps: each wave's batches, one after another. */
function stepsOf(rollout: ApiRollout): number {
  const batches = new Set(rollout.copies.map((copy) => `${copy.wave}/${copy.batch}`));
  return batches.size;
}

/** The agent's namespace with its token Secret, as `gantry agent install` makes them. */
async function tokenSecret(engine: Engine, kubeConfig: KubeConfig, namespace: string, token: string): Promise<void> {
  const { client } = engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext());
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } });
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'gantry-agent-token' }, stringData: { token } };
  // The namespace's default ServiceAccount, which admission may want first, comes a moment after it.
  await waitFor(`Secret ${namespace}/gantry-agent-token`, async () =>
    client
      .request('POST', `/api/v1/namespaces/${namespace}/secrets`, { body: secret })
      .then(() => true)
      .catch(() => false),
  );
}

async function removeNamespace(engine: Engine, kubeConfig: KubeConfig, namespace: string): Promise<void> {
  const { client } = engine.clusters.get(kubeConfig, kubeConfig.getCurrentContext());
  const ignoreMissing = (error: unknown) => {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error;
  };
  await client.request('DELETE', `/api/v1/namespaces/${namespace}`).catch(ignoreMissing);
  await client
    .request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/gantry-agent-${namespace}-cluster-admin`)
    .catch(ignoreMissing);
}
