/**
 * The README's demo, as the fleet's acceptance runs it: one server (SQLite, in this process), the two workload
 * clusters of the test run (support/workload-clusters.ts) each with its own agent, a git repository holding Kluctl's
 * microservices demo and a small raw service; the demo project on each cluster (target `test` on one, `prod` on the
 * other) and a global service on every cluster tagged `tier: web`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { type ApiService, FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { DISCRIMINATOR_LABEL } from '../../src/render/postprocess.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { testConfig } from '../support/engine.ts';
import { example } from '../support/fixtures.ts';
import { pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlJsonOn, WORKLOAD_CLUSTERS, type WorkloadCluster, workloadKubeConfig } from '../support/workload-clusters.ts';

const [DEV, PROD] = WORKLOAD_CLUSTERS;
const TARGETS: Partial<Record<WorkloadCluster, string>> = { [DEV]: 'test', [PROD]: 'prod' };
const PROJECT = 'microservices-demo/3-templating-and-multi-env';
const HELLO_NS = `hello-${randomBytes(3).toString('hex')}`;
const configMap = (value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  value: "${value}"\n`;
const helloDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec: {containers: [{name: hello, image: registry.invalid/hello:1}]}
`;

/** Every file below `dir`, by path relative to it, under `prefix`. */
async function filesOf(dir: string, prefix: string): Promise<Record<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files: Record<string, string> = {};
  for (const entry of entries.filter((e) => e.isFile())) {
    const full = path.join(entry.parentPath, entry.name);
    files[path.join(prefix, path.relative(dir, full))] = await readFile(full, 'utf8');
  }
  return files;
}

describe('the fleet on two workload clusters', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  const tokens = new Map<WorkloadCluster, string>();
  const agents = new Map<WorkloadCluster, RunningAgent>();
  const { log, lines } = capturedLogger('info');

  const startAgentOf = (cluster: WorkloadCluster) => {
    const token = tokens.get(cluster)!;
    agents.set(
      cluster,
      startAgent(
        pushedAgentOptions(
          {
            server: server.url,
            token,
            engine,
            kubeConfig: workloadKubeConfig(cluster),
            dataDir: path.join(dir, `agent-${cluster}`),
            log: log.child({ agent: cluster }),
          },
          { syncTimeoutMs: 120_000 },
        ),
      ),
    );
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-clusters-'));
    repo = await createRepo({
      ...(await filesOf(example(PROJECT), 'ms-demo')),
      'hello/deployment.yaml': helloDeployment,
      'hello/configmap.yaml': configMap('one'),
    });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { box: new SecretBox(randomBytes(32)), gitPollIntervalMs: 300 },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    engine = new Engine(testConfig());
    for (const cluster of WORKLOAD_CLUSTERS) {
      const env = TARGETS[cluster] === 'prod' ? 'prod' : 'dev';
      tokens.set(cluster, (await client.createCluster({ name: cluster, tags: { tier: 'web', env } })).deployToken);
      startAgentOf(cluster);
    }
    await waitFor('both push channels', () => server.channels.connected() === 2);
    await client.createRepository({ url: repo.url });
    for (const cluster of WORKLOAD_CLUSTERS) {
      await client.createService(cluster, {
        name: 'ms-demo',
        namespace: `ms-demo-${TARGETS[cluster]}`,
        repository: repo.url,
        git: { ref: 'main', folder: 'ms-demo' },
        renderer: { kind: 'kluctl', target: TARGETS[cluster] },
      });
    }
    await client.createGlobalService({
      name: 'hello',
      tags: { tier: 'web' },
      template: {
        name: 'hello',
        namespace: HELLO_NS,
        repository: repo.url,
        git: { ref: 'main', folder: 'hello' },
        renderer: { kind: 'raw' },
      },
    });
  });

  afterAll(async () => {
    for (const agent of agents.values()) await agent.stop();
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  /** Waits until every service is healthy at its newest revision; names the ones that are not on timeout. */
  async function allHealthy(count: number): Promise<ApiService[]> {
    let last: ApiService[] = [];
    try {
      return await waitFor(
        `${count} services healthy`,
        async () => {
          last = await client.listServices();
          const ready = last.length === count && last.every((s) => s.status === 'healthy' && s.appliedRevision === s.revision.number);
          return ready ? last : undefined;
        },
        240_000,
      );
    } catch (error) {
      const state = last.map((s) => `${s.cluster}/${s.name} ${s.status} ${JSON.stringify(s.errors)}`).join('; ');
      throw new Error(`${(error as Error).message}; last seen: ${state}`);
    }
  }

  /** resourceVersion by `kind/namespace/name` of every object a service's discriminator labels on `cluster`. */
  async function versionsOf(cluster: WorkloadCluster, service: ApiService): Promise<Map<string, string>> {
    const kinds = 'namespaces,deployments,statefulsets,services,configmaps,secrets,serviceaccounts';
    const list = await kubectlJsonOn<{
      items: Array<{ kind: string; metadata: { namespace?: string; name: string; resourceVersion: string } }>;
    }>(cluster, ['get', kinds, '--all-namespaces', '-l', `${DISCRIMINATOR_LABEL}=gantry-svc-${service.id}`]);
    return new Map(
      list.items.map((item) => [`${item.kind}/${item.metadata.namespace ?? ''}/${item.metadata.name}`, item.metadata.resourceVersion]),
    );
  }

  test('every service becomes healthy with each object a component; a second identical sync changes nothing', async () => {
    const services = await allHealthy(4);
    for (const cluster of WORKLOAD_CLUSTERS) {
      const demo = services.find((s) => s.cluster === cluster && s.name === 'ms-demo')!;
      const deployments = await kubectlJsonOn<{ items: Array<{ metadata: { name: string } }> }>(cluster, [
        'get',
        'deployments',
        '-n',
        `ms-demo-${TARGETS[cluster]}`,
      ]);
      const components = demo.components.filter((c) => c.kind === 'Deployment');
      expect(components.map((c) => c.name).sort()).toEqual(deployments.items.map((d) => d.metadata.name).sort());
      expect(components.length).toBeGreaterThan(5);
      expect(demo.components.every((c) => c.synced && c.state === 'RUNNING')).toBe(true);
    }

    const before = await Promise.all(services.map((s) => versionsOf(s.cluster as WorkloadCluster, s)));
    expect(before.every((versions) => versions.size > 0)).toBe(true);
    // A restarted agent has no memory of what it applied: it renders and applies every service again.
    const seen = lines.length;
    for (const cluster of WORKLOAD_CLUSTERS) {
      await agents.get(cluster)!.stop();
      startAgentOf(cluster);
    }
    await waitFor(
      'a sync of every service by the new agents',
      () => lines.slice(seen).filter((line) => line['msg'] === 'synced').length >= services.length,
      240_000,
    );
    const after = await Promise.all(services.map((s) => versionsOf(s.cluster as WorkloadCluster, s)));
    expect(after).toEqual(before);
  });

  test('a pushed commit reaches both clusters through the push channel, without a poll', async () => {
    await waitFor('both push channels', () => server.channels.connected() === 2);
    await repo.commit({ 'hello/configmap.yaml': configMap('two') }, 'hello two');
    for (const cluster of WORKLOAD_CLUSTERS) {
      await waitFor(
        `the new value on ${cluster}`,
        async () => {
          const map = await kubectlJsonOn<{ data: { value: string } }>(cluster, ['get', 'configmap', 'hello', '-n', HELLO_NS]).catch(
            () => undefined,
          );
          return map?.data.value === 'two';
        },
        60_000,
      );
    }
  });

  test('the global service follows tags: untagging a cluster removes its copy there, tagging it again brings it back', async () => {
    const helloOn = (cluster: WorkloadCluster) =>
      kubectlJsonOn<{ items: unknown[] }>(cluster, ['get', 'deployments', '-n', HELLO_NS, '--field-selector', 'metadata.name=hello']).then(
        (list) => list.items.length,
        () => 0,
      );
    await client.setClusterTags(PROD, { env: 'prod' }, true);
    await waitFor(`hello gone from ${PROD}`, async () => (await helloOn(PROD)) === 0, 60_000);
    expect(await helloOn(DEV)).toBe(1);
    // The copy's record goes once its agent has reported the deletion, after the objects went.
    const prodServices = async () => (await client.listServices(PROD)).map((s) => s.name);
    await waitFor(`hello's copy on ${PROD} forgotten`, async () => JSON.stringify(await prodServices()) === '["ms-demo"]', 60_000);
    expect(await prodServices()).toEqual(['ms-demo']);

    await client.setClusterTags(PROD, { tier: 'web', env: 'prod' });
    await waitFor(`hello back on ${PROD}`, async () => (await helloOn(PROD)) === 1, 60_000);
    await allHealthy(4);
  });

  test('deleting the services removes their objects from both clusters', async () => {
    await client.deleteGlobalService('hello', { detach: false, confirm: true });
    for (const cluster of WORKLOAD_CLUSTERS) await client.deleteService(cluster, 'ms-demo', false);
    await waitFor('every service gone', async () => (await client.listServices()).length === 0, 180_000);
    for (const cluster of WORKLOAD_CLUSTERS) {
      const left = await kubectlJsonOn<{ items: unknown[] }>(cluster, ['get', 'deployments', '-n', `ms-demo-${TARGETS[cluster]}`]).catch(
        () => ({
          items: [],
        }),
      );
      expect(left.items).toEqual([]);
    }
  });
});
