/**
 * Clusters the fleet makes through Cluster API (issue 42), for real: a gantry server, the agent of a management
 * cluster that runs Cluster API's controllers (`npm run cluster -- up --capi`, with the test's local provider), and
 * `gantry cluster create --management --class --wait`. The server hands the Cluster API Cluster to the management
 * cluster's agent as a protected service; the agent applies it and reports its readiness, which `cluster get` shows
 * until Cluster API reports the new API server available. Then the management agent installs the new cluster's
 * agent through Cluster API's kubeconfig Secret with a fresh deploy token; the new agent (run by the test's agent
 * runner, which plays the kubelet: the local clusters run no containers) pings, and a global service arrives on
 * the new cluster without anything run against it by hand. A version the provider cannot run stalls with its
 * reason; bad specs are refused naming the field; the objects' service is the server's to change, and its install
 * tokens are the management agent's alone.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { capiUp } from '../../scripts/capi/capi.ts';
import { localClusterClass } from '../../scripts/capi/local-class.ts';
import { workloadClusterName } from '../../scripts/capi/provider.ts';
import { clusterStatus } from '../../scripts/cluster/cluster.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { KUBERNETES_VERSION } from '../../scripts/setup/tools.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { run } from '../../src/exec.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { toYamlDocuments } from '../../src/yaml.ts';
import { GANTRY_VERSION } from '../../src/version.ts';
import { type AgentRunner, runAgentDeployment } from '../support/agent-runner.ts';
import { gantry } from '../support/cli.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { configMapYaml } from '../support/manifests.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions, userToken } from '../support/fleet.ts';

const MANAGEMENT = clusterLayout('test-capi');
const NS = 'fleet-capi';

async function kubectl(args: readonly string[], input?: string): Promise<string> {
  return (await run('kubectl', ['--kubeconfig', MANAGEMENT.kubeconfig, ...args], input === undefined ? {} : { input })).stdout;
}

describe('clusters made through Cluster API', () => {
  let dir: string;
  let server: FleetServer;
  let agent: RunningAgent;
  let admin: string;
  let mgmtToken: string;
  let runner: AgentRunner | undefined;
  const repos: TestRepo[] = [];
  const { log } = capturedLogger('info');
  const env = () => ({ XDG_CONFIG_HOME: path.join(dir, 'config') });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-capi-'));
    await capiUp({ layout: MANAGEMENT });
    await kubectl(['create', 'namespace', NS]).catch(() => undefined);
    await kubectl(['apply', '--server-side', '-f', '-'], toYamlDocuments(localClusterClass(NS)));
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300 },
      ),
    );
    admin = server.adminToken!;
    const made = await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'mgmt' });
    mgmtToken = made.body.deployToken;
    agent = startAgent(
      pushedAgentOptions({
        server: server.url,
        token: mgmtToken,
        engine: new Engine(testConfig({ watchDiscriminated: true })),
        kubeConfig: loadKubeConfig({ kubeconfig: MANAGEMENT.kubeconfig }),
        dataDir: path.join(dir, 'agent'),
        log,
      }),
    );
    expect((await gantry(['login', '--server', server.url, '--token', admin], { env: env() })).code).toBe(0);
  });

  afterAll(async () => {
    await runner?.stop();
    await agent?.stop();
    for (const repo of repos) await repo.remove();
    await server?.close();
    await kubectl(['delete', 'clusters.v1beta2.cluster.x-k8s.io', '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(
      () => undefined,
    );
    await rm(dir, { recursive: true, force: true });
  });

  test('cluster create --class hands the Cluster to the management cluster, and cluster get follows it until available', async () => {
    const created = await gantry(
      [
        'cluster',
        'create',
        'alpha',
        '--management',
        'mgmt',
        '--class',
        'local',
        '--kubernetes-version',
        KUBERNETES_VERSION,
        '--namespace',
        NS,
      ],
      { env: { ...env() } },
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Cluster API makes it on cluster mgmt (class local)');
    // The deploy token is not printed for a cluster whose agent Gantry installs.
    expect(created.stdout).not.toContain('deploy token');

    const json = await gantry(['cluster', 'get', 'alpha', '-o', 'json'], { env: env() });
    expect(JSON.parse(json.stdout)).toMatchObject({
      provisioning: { management: 'mgmt', class: 'local', namespace: NS, version: KUBERNETES_VERSION },
      provisioningStatus: { service: 'capi-alpha' },
    });
    const available = await waitFor(
      'alpha available',
      async () => {
        const cluster = (await apiCall(server, 'GET', '/v1/clusters/alpha', admin)).body;
        return cluster.provisioningStatus?.state === 'RUNNING' ? cluster : undefined;
      },
      180_000,
    );
    expect(available.provisioningStatus).toEqual({ service: 'capi-alpha', state: 'RUNNING', message: 'available' });
    const shown = await gantry(['cluster', 'get', 'alpha'], { env: env() });
    expect(shown.stdout).toMatch(/made by: +Cluster API on mgmt: class local \(namespace fleet-capi\), Kubernetes v1\.\d+\.\d+/);
    expect(shown.stdout).toMatch(/provisioned: +RUNNING: available \(service capi-alpha of mgmt\)/);
    // The management cluster's agent applied the Cluster API Cluster, labelled with the fleet cluster it makes.
    const objects = JSON.parse(
      await kubectl(['get', 'clusters.v1beta2.cluster.x-k8s.io', '-n', NS, '-l', 'gantry.dev/cluster=alpha', '-o', 'json']),
    );
    expect(objects.items.map((item: { metadata: { name: string } }) => item.metadata.name)).toEqual(['alpha']);
  });

  test("the management cluster's agent installs the new cluster's agent; it pings, and a global service arrives", async () => {
    const repo = await createRepo({ 'web/settings.yaml': configMapYaml('settings', 'from-the-fleet') });
    repos.push(repo);
    expect((await apiCall(server, 'POST', '/v1/repositories', admin, { url: repo.url })).status).toBe(201);
    expect(
      (
        await apiCall(server, 'POST', '/v1/globalservices', admin, {
          name: 'edge-web',
          tags: { tier: 'edge' },
          template: { name: 'web', namespace: 'edge-web', repository: repo.url, git: { ref: 'main', folder: 'web' } },
        })
      ).status,
    ).toBe(201);
    expect((await apiCall(server, 'PUT', '/v1/clusters/alpha/tags', admin, { tags: { tier: 'edge' } })).status).toBe(200);

    const secret = JSON.parse(await kubectl(['get', 'secret', 'alpha-kubeconfig', '-n', NS, '-o', 'json'])) as { data: { value: string } };
    const alphaKubeconfig = path.join(dir, 'alpha.kubeconfig');
    await writeFile(alphaKubeconfig, Buffer.from(secret.data.value, 'base64'), { mode: 0o600 });
    runner = runAgentDeployment({
      cluster: 'alpha',
      kubeConfig: loadKubeConfig({ kubeconfig: alphaKubeconfig }),
      engine: new Engine(testConfig({ watchDiscriminated: true })),
      pullable: new Set([GANTRY_VERSION]),
      dataDir: path.join(dir, 'alpha-agents'),
      log,
    });
    const healthy = await waitFor(
      'alpha healthy',
      async () => {
        const cluster = (await apiCall(server, 'GET', '/v1/clusters/alpha', admin)).body;
        return cluster.health === 'HEALTHY' ? cluster : undefined;
      },
      120_000,
    );
    expect(healthy.agentVersion).toBe(GANTRY_VERSION);
    const alpha = async (args: string[]) => (await run('kubectl', ['--kubeconfig', alphaKubeconfig, ...args])).stdout;
    const deployment = JSON.parse(await alpha(['get', 'deployment', 'gantry-agent', '-n', 'gantry-agent', '-o', 'json']));
    expect(deployment.spec.template.spec.containers[0].image).toMatch(new RegExp(`:${GANTRY_VERSION.replace(/\./g, '\\.')}$`));
    const settings = await waitFor(
      'the global service on alpha',
      async () => (await alpha(['get', 'configmap', 'settings', '-n', 'edge-web', '-o', 'json', '--ignore-not-found'])) || undefined,
      120_000,
    );
    expect(JSON.parse(settings).data).toEqual({ value: 'from-the-fleet' });
    // Its install token is the management agent's alone, and only until the new agent pinged.
    expect((await apiCall(server, 'POST', '/v1/agent/provisioned-clusters/alpha/agent-install', mgmtToken)).status).toBe(409);
  });

  test("a cluster's install token is not for another cluster's agent, nor for a cluster the agent's cluster does not make", async () => {
    const other = await apiCall(server, 'POST', '/v1/clusters', admin, { name: 'bystander' });
    expect((await apiCall(server, 'POST', '/v1/agent/provisioned-clusters/alpha/agent-install', other.body.deployToken)).status).toBe(404);
    expect((await apiCall(server, 'POST', '/v1/agent/provisioned-clusters/bystander/agent-install', mgmtToken)).status).toBe(404);
    expect((await apiCall(server, 'POST', '/v1/agent/provisioned-clusters/nowhere/agent-install', mgmtToken)).status).toBe(404);
    expect((await apiCall(server, 'POST', '/v1/agent/provisioned-clusters/alpha/agent-install', admin)).status).toBe(401);
  });

  test('--wait prints each state and a version Cluster API cannot make stalls with the reason', async () => {
    const waited = await gantry(
      [
        'cluster',
        'create',
        'beta',
        '--management',
        'mgmt',
        '--class',
        'local',
        '--kubernetes-version',
        'v1.30.0',
        '--namespace',
        NS,
        '--wait',
        '--timeout',
        '20s',
      ],
      { env: env() },
    );
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain('beta: WAITING');
    expect(waited.stderr).toMatch(
      /cluster beta was not provisioned within 20 s: PENDING: .*ControlPlaneAvailable: this machine builds Kubernetes v1\.\d+\.\d+ only/,
    );
  });

  test('bad specs are refused naming the field, and nothing is registered', async () => {
    const body = (provisioning: Record<string, unknown>) => ({
      name: 'gamma',
      provisioning: { management: 'mgmt', class: 'local', version: KUBERNETES_VERSION, ...provisioning },
    });
    const unknown = await apiCall(server, 'POST', '/v1/clusters', admin, body({ management: 'nowhere' }));
    expect(unknown).toMatchObject({ status: 400, body: { field: 'body.provisioning.management' } });
    expect(unknown.body.message).toContain('management cluster nowhere is not registered');
    const itself = await apiCall(server, 'POST', '/v1/clusters', admin, body({ management: 'gamma' }));
    expect(itself).toMatchObject({ status: 400, body: { field: 'body.provisioning.management' } });
    const version = await apiCall(server, 'POST', '/v1/clusters', admin, body({ version: 'latest' }));
    expect(version.status).toBe(400);
    expect(JSON.stringify(version.body)).toContain('version');
    const flags = await gantry(['cluster', 'create', 'gamma', '--class', 'local'], { env: env() });
    expect(flags.code).not.toBe(0);
    expect(flags.stderr).toContain('needs --management, --class and --kubernetes-version');
    expect((await apiCall(server, 'GET', '/v1/clusters/gamma', admin)).status).toBe(404);
  });

  test("the Cluster API objects' service is the server's: neither an admin nor a writer of the management cluster changes it", async () => {
    const writer = await userToken(server, 'capi-writer', 'writer', { clusters: ['mgmt'] });
    for (const token of [admin, writer]) {
      const changed = await apiCall(server, 'PATCH', '/v1/clusters/mgmt/services/capi-alpha', token, { namespace: 'elsewhere' });
      expect(changed.status).toBe(409);
      expect(changed.body.message).toContain('holds the Cluster API objects that make cluster alpha');
      expect((await apiCall(server, 'DELETE', '/v1/clusters/mgmt/services/capi-alpha', token)).status).toBe(409);
    }
    // A writer may not make clusters at all.
    const made = await apiCall(server, 'POST', '/v1/clusters', writer, {
      name: 'delta',
      provisioning: { management: 'mgmt', class: 'local', version: KUBERNETES_VERSION },
    });
    expect(made.status).toBe(403);
  });

  test('deleting the cluster has the management agent delete its Cluster API objects, and Cluster API tears it down', async () => {
    await runner?.stop();
    runner = undefined;
    const capiCluster = JSON.parse(await kubectl(['get', 'clusters.v1beta2.cluster.x-k8s.io', 'alpha', '-n', NS, '-o', 'json']));
    const workload = clusterLayout(workloadClusterName(NS, capiCluster.spec.controlPlaneRef.name));
    expect((await clusterStatus(workload)).state).toBe('running');
    const deleted = await gantry(['cluster', 'delete', 'alpha'], { env: env() });
    expect(deleted.code, deleted.stderr).toBe(0);
    await waitFor(
      'the Cluster API Cluster alpha gone',
      async () =>
        (await kubectl(['get', 'clusters.v1beta2.cluster.x-k8s.io', 'alpha', '-n', NS, '--ignore-not-found', '-o', 'name'])) === '',
      120_000,
    );
    expect((await clusterStatus(workload)).state).toBe('stopped');
    await waitFor(
      'the service capi-alpha gone',
      async () => (await apiCall(server, 'GET', '/v1/clusters/mgmt/services/capi-alpha', admin)).status === 404,
      60_000,
    );
  });
});
