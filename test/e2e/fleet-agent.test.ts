/**
 * The fleet end to end in this process: a real server (SQLite), a real git repository, and the agent deploying
 * services into the local cluster with the engine: raw YAML and a Kluctl project with configuration as args, new
 * commits, a render error, rollback, Liquid templates with a service context (and one that loops), and deletion.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AGENT_FIELD_MANAGER, type AgentOptions } from '../../src/agent/agent-state.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, type FleetServerOptions, startFleetServer } from '../../src/server/server.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { kubectl, kubectlJson } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { configMapYaml, webDeploymentYaml } from '../support/manifests.ts';

const suffix = randomBytes(3).toString('hex');
const RAW_NS = `fleet-raw-${suffix}`;
const KLUCTL_NS = `fleet-kluctl-${suffix}`;
const DEPS_NS = `fleet-deps-${suffix}`;
const LIQUID_NS = `fleet-liquid-${suffix}`;

const liquidConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: templated
data:
  greeting: "{{ configuration.greeting }}"
  cluster: "{{ cluster.name }}/{{ cluster.tags.tier }}"
  version: "{{ cluster.version }}"
  vpc: "{{ contexts.network.vpc }}"
  namespace: "{{ service.namespace }}"
`;

const configMap = configMapYaml;
const deployment = webDeploymentYaml(2);

const greetingConfigMap = (greeting: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: ${KLUCTL_NS}\ndata:\n  greeting: "${greeting}"\n  region: "{{ args.region }}"\n`;

describe('the fleet agent', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let agent: RunningAgent;
  let client: FleetClient;
  let agentOptions: () => AgentOptions;
  let serverOptions: (port: number) => FleetServerOptions;
  /** Made at the server's first start only. */
  let adminToken: string;
  let clusterId: string;
  const { log, lines } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-agent-'));
    repo = await createRepo({
      'raw/configmap.yaml': configMap('settings', 'one'),
      'raw/deployment.yaml': deployment,
      'kluctl/.kluctl.yaml': 'targets:\n  - name: edge\n    args:\n      greeting: hello\n',
      'kluctl/deployment.yaml': 'deployments:\n  - path: app\n',
      'kluctl/app/configmap.yaml': greetingConfigMap('{{ args.greeting }}'),
      'liquid/configmap.yaml.liquid': liquidConfigMap,
    });
    const box = new SecretBox(randomBytes(32));
    serverOptions = (port) =>
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { box, port, gitPollIntervalMs: 300 },
      );
    server = await startFleetServer(serverOptions(0));
    adminToken = server.adminToken!;
    client = new FleetClient({ server: server.url, token: adminToken });
    const { cluster, deployToken } = await client.createCluster({ name: 'local' });
    clusterId = cluster.id;
    await client.createRepository({ url: repo.url });
    engine = new Engine(testConfig());
    // Changes must arrive through the push channel (a test below cuts it to see polling take over).
    agentOptions = () =>
      pushedAgentOptions({
        server: server.url,
        token: deployToken,
        engine,
        kubeConfig: loadKubeConfig({}),
        dataDir: path.join(dir, 'agent'),
        log,
      });
    agent = startAgent(agentOptions());
    await waitFor('the push channel', () => server.channels.connected() === 1);
  });

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await kubectl(['delete', 'namespace', RAW_NS, KLUCTL_NS, DEPS_NS, LIQUID_NS, '--ignore-not-found', '--wait=false']);
    await rm(dir, { recursive: true, force: true });
  });

  async function service(name: string) {
    const response = await fetch(`${server.url}/v1/clusters/local/services/${name}`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    return (await response.json()) as {
      id: string;
      status: string;
      revision: { number: number; id: string; digest: string };
      appliedRevision: number | null;
      errors: Array<{ source: string; message: string }>;
      components: Array<{ kind: string; name: string; state: string; synced: boolean }>;
    };
  }

  async function healthyAt(name: string, revision: number) {
    let last: Awaited<ReturnType<typeof service>> | undefined;
    try {
      return await waitFor(
        `service ${name} healthy at revision ${revision}`,
        async () => {
          last = await service(name);
          return last.status === 'healthy' && last.appliedRevision === revision ? last : undefined;
        },
        40_000,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
    }
  }

  const configValue = async (namespace: string, name: string, key: string) =>
    (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', name, '-n', namespace])).data[key];

  test('deploys a raw service and reports each object as a healthy component', async () => {
    await fetch(`${server.url}/v1/clusters/local/services`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'raw', namespace: RAW_NS, repository: repo.url, git: { ref: 'main', folder: 'raw' } }),
    });
    const healthy = await healthyAt('raw', 1);
    expect(healthy.components.map((c) => `${c.kind}/${c.name}:${c.state}:${c.synced}`).sort()).toEqual([
      'ConfigMap/settings:RUNNING:true',
      'Deployment/web:RUNNING:true',
    ]);
    const live = await kubectlJson<{ metadata: { labels: Record<string, string>; managedFields: Array<{ manager: string }> } }>([
      'get',
      'configmap',
      'settings',
      '-n',
      RAW_NS,
      '--show-managed-fields',
    ]);
    expect(live.metadata.managedFields.map((field) => field.manager)).toContain(AGENT_FIELD_MANAGER);
    expect(live.metadata.labels['kluctl.io/discriminator']).toMatch(/^gantry-svc-[0-9a-f-]{36}$/);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('gantry_fleet_services{status="healthy"} 1');
    expect(metrics).toContain('gantry_fleet_agent_channels 1');
  });

  test('a pushed commit reaches the cluster as a new revision; a render error applies nothing and keeps it running', async () => {
    await repo.commit({ 'raw/configmap.yaml': configMap('settings', 'two') });
    await healthyAt('raw', 2);
    expect(await configValue(RAW_NS, 'settings', 'value')).toBe('two');

    await repo.commit({ 'raw/configmap.yaml': configMap('settings', 'three'), 'raw/broken.yaml': 'kind: [unclosed\n' });
    const failed = await waitFor(
      'the render error reported',
      async () => {
        const found = await service('raw');
        return found.status === 'failed' ? found : undefined;
      },
      60_000,
    );
    expect(failed.revision.number).toBe(3);
    expect(failed.appliedRevision).toBe(2);
    expect(failed.errors[0]).toMatchObject({ source: 'render', message: expect.stringContaining('broken.yaml') });
    expect(await configValue(RAW_NS, 'settings', 'value')).toBe('two');
  });

  test('rollback restores the previous objects', async () => {
    const response = await fetch(`${server.url}/v1/clusters/local/services/raw/rollback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ revision: 1 }),
    });
    expect(response.status).toBe(200);
    await healthyAt('raw', 4);
    expect(await configValue(RAW_NS, 'settings', 'value')).toBe('one');
  });

  test('a Kluctl project gets its target and the configuration as args, with the service discriminator', async () => {
    await fetch(`${server.url}/v1/clusters/local/services`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'greeter',
        namespace: KLUCTL_NS,
        repository: repo.url,
        git: { ref: 'main', folder: 'kluctl' },
        renderer: { kind: 'kluctl', target: 'edge' },
        configuration: { region: 'eu-west' },
      }),
    });
    await healthyAt('greeter', 1);
    expect(await configValue(KLUCTL_NS, 'greeting', 'greeting')).toBe('hello');
    expect(await configValue(KLUCTL_NS, 'greeting', 'region')).toBe('eu-west');
  });

  test('a raw service renders its .liquid files with configuration, cluster, contexts and service; a context update reaches the cluster', async () => {
    await client.setClusterTags('local', { tier: 'web' });
    await client.setContext('network', { configuration: { vpc: 'vpc-1' } });
    await client.createService('local', {
      name: 'templated',
      namespace: LIQUID_NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'liquid' },
      renderer: { kind: 'raw' },
      configuration: { greeting: 'hi' },
      contexts: ['network'],
    });
    await healthyAt('templated', 1);
    const data = (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', 'templated', '-n', LIQUID_NS])).data;
    expect(data).toMatchObject({ greeting: 'hi', cluster: 'local/web', vpc: 'vpc-1', namespace: LIQUID_NS });
    expect(data.version).toMatch(/^1\.\d+/);

    await client.setContext('network', { configuration: { vpc: 'vpc-2' } });
    const { revision } = await healthyAt('templated', 2);
    expect(await configValue(LIQUID_NS, 'templated', 'vpc')).toBe('vpc-2');
    // Templates are rendered into the wrapper project; the agent's source cache keeps the tarball's files as they were.
    expect(await readdir(path.join(dir, 'agent', 'sources', revision.digest))).toEqual(['configmap.yaml.liquid']);
  });

  test('a bad template is a render error naming file and line; nothing is applied', async () => {
    await repo.commit({
      'liquid/configmap.yaml.liquid': `${liquidConfigMap}  extra: "new"\n`,
      'liquid/broken.yaml.liquid': 'kind: ConfigMap\n{% if cluster.name %}\n',
    });
    const failed = await waitFor(
      'the template error reported',
      async () => {
        const found = await service('templated');
        return found.status === 'failed' ? found : undefined;
      },
      30_000,
    );
    expect(failed).toMatchObject({ appliedRevision: 2, revision: { number: 3 } });
    expect(failed.errors[0]).toMatchObject({ source: 'render', message: expect.stringContaining('template broken.yaml.liquid:2:1:') });
    expect(await configValue(LIQUID_NS, 'templated', 'extra')).toBeUndefined();
  });

  test('a template that loops a billion times fails naming its file, within the Liquid limits; another service keeps syncing', async () => {
    await repo.commit({ 'looping/configmap.yaml.liquid': '{% for i in (1..1000000000) %}x{% endfor %}\n' });
    await client.createService('local', {
      name: 'looping',
      namespace: LIQUID_NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'looping' },
      renderer: { kind: 'raw' },
    });
    const failed = await waitFor(
      'the loop reported',
      async () => {
        const found = await service('looping');
        return found.status === 'failed' ? found : undefined;
      },
      30_000,
    );
    expect(failed.errors[0]).toMatchObject({
      source: 'render',
      message: expect.stringContaining('template configmap.yaml.liquid:1:1: memory alloc limit exceeded'),
    });
    await repo.commit({ 'kluctl/app/configmap.yaml': greetingConfigMap('beside a loop') });
    await waitFor(
      'greeter synced beside it',
      async () => (await configValue(KLUCTL_NS, 'greeting', 'greeting')) === 'beside a loop',
      30_000,
    );
    const detached = await fetch(`${server.url}/v1/clusters/local/services/looping?detach=true`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(detached.status).toBe(204);
  });

  test('a dependency holds a service back until the dependency is healthy', async () => {
    await repo.commit({
      'backend/claim.yaml': `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  storageClassName: not-yet\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n`,
      'frontend/configmap.yaml': configMap('frontend', 'up'),
    });
    const create = (name: string, dependencies: string[]) =>
      fetch(`${server.url}/v1/clusters/local/services`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, namespace: DEPS_NS, repository: repo.url, git: { ref: 'main', folder: name }, dependencies }),
      });
    await create('backend', []);
    await create('frontend', ['backend']);
    await waitFor('backend applied, not healthy', async () => (await service('backend')).status === 'synced', 30_000);
    // The agent is told twice to look again (as a change of a service tells it) and passes frontend over each time.
    // Its polls run one at a time, so the second one listed the services after backend was applied but not healthy.
    const frontendId = (await service('frontend')).id;
    for (const time of ['first', 'second']) {
      const from = lines.length;
      server.channels.kick(clusterId, frontendId);
      await waitFor(
        `the agent to pass frontend over a ${time} time`,
        () => lines.slice(from).some((line) => line.msg === 'waiting for dependencies to be healthy' && line.service === 'frontend'),
        30_000,
      );
    }
    expect((await service('frontend')).appliedRevision).toBeNull();
    const configMaps = await kubectlJson<{ items: Array<{ metadata: { name: string } }> }>(['get', 'configmap', '-n', DEPS_NS]);
    expect(configMaps.items.map((item) => item.metadata.name)).not.toContain('frontend');

    await repo.commit({ 'backend/claim.yaml': null, 'backend/configmap.yaml': configMap('backend', 'ready') });
    await healthyAt('frontend', 1);
    expect(await configValue(DEPS_NS, 'frontend', 'value')).toBe('up');
  });

  test('with no push channel, a change arrives by polling', async () => {
    await agent.stop();
    agent = startAgent({ ...agentOptions(), pushChannel: false, pollIntervalMs: 300, jitterMs: 100 });
    await repo.commit({ 'kluctl/app/configmap.yaml': greetingConfigMap('polled') });
    await waitFor('the polled commit applied', async () => (await configValue(KLUCTL_NS, 'greeting', 'greeting')) === 'polled', 30_000);
    // The server sees the stopped agent's socket close on its own time.
    await waitFor('no push channel', () => server.channels.connected() === 0);
    expect(server.channels.connected()).toBe(0);
  });

  test('with the server away, the agent repairs drift from its disk, also after it restarts; what changed meanwhile arrives when it returns', async () => {
    await agent.stop();
    agent = startAgent({ ...agentOptions(), pollIntervalMs: 500, jitterMs: 100, resyncIntervalMs: 1_000 });
    await waitFor('the restarted agent synced', async () => (await service('greeter')).status === 'healthy', 30_000);
    const port = Number(new URL(server.url).port);
    await server.close();

    const resyncedFrom = lines.length;
    await kubectl(['delete', 'configmap', 'greeting', '-n', KLUCTL_NS]);
    await waitFor(
      'drift repaired without the server',
      async () => (await configValue(KLUCTL_NS, 'greeting', 'greeting').catch(() => undefined)) === 'polled',
      30_000,
    );
    // Later resyncs render nothing: the revision and the cluster are as they were, so the render kept in memory serves.
    await waitFor(
      'a resync of greeter reusing its render',
      () => lines.slice(resyncedFrom).some((line) => line.msg === 'synced' && line.service === 'greeter' && line.renderReused === true),
      30_000,
    );
    // The desired state it restarts from holds configuration values: on disk they are sealed.
    expect(await readFile(path.join(dir, 'agent', 'services.sealed'), 'utf8')).not.toContain('eu-west');
    await agent.stop();
    agent = startAgent({ ...agentOptions(), pollIntervalMs: 500, jitterMs: 100, resyncIntervalMs: 1_000 });
    await kubectl(['delete', 'configmap', 'greeting', '-n', KLUCTL_NS]);
    await waitFor(
      'drift repaired by the restarted agent without the server',
      async () => (await configValue(KLUCTL_NS, 'greeting', 'greeting').catch(() => undefined)) === 'polled',
      30_000,
    );
    const pushed = await repo.commit({ 'kluctl/app/configmap.yaml': greetingConfigMap('while away') });

    server = await startFleetServer(serverOptions(port));
    await waitFor(
      'the change made while the server was away',
      async () => (await configValue(KLUCTL_NS, 'greeting', 'greeting')) === 'while away',
      30_000,
    );
    const revision = await waitFor(
      'the report of the new revision',
      async () => {
        const found = await service('greeter');
        return found.status === 'healthy' && found.appliedRevision === found.revision.number ? found.revision : undefined;
      },
      30_000,
    );
    expect(revision).toMatchObject({ createdBy: 'git' });
    expect(pushed).toMatch(/^[0-9a-f]{40}$/);
  });

  test('deleting a service deletes its objects, then the service', async () => {
    const response = await fetch(`${server.url}/v1/clusters/local/services/raw`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(response.status).toBe(202);
    await waitFor(
      'the service gone',
      async () =>
        (await fetch(`${server.url}/v1/clusters/local/services/raw`, { headers: { authorization: `Bearer ${adminToken}` } })).status ===
        404,
      60_000,
    );
    const left = await kubectlJson<{ items: unknown[] }>([
      'get',
      'configmap,deployment',
      '-n',
      RAW_NS,
      '-l',
      'app.kubernetes.io/managed-by!=none',
    ]);
    expect(left.items.filter((item) => (item as { metadata: { name: string } }).metadata.name !== 'kube-root-ca.crt')).toEqual([]);
  });
});
